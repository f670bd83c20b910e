/* Says so when "Live Code" (Thebe, sphinx-thebe 0.3) cannot reach a kernel.
 *
 * sphinx-thebe loads Thebe from a CDN when the reader clicks "Live Code" and shows
 * "Loading thebe from CDN..." until it has; offline (or with the CDN blocked) that message
 * stays forever, and when Binder fails or the kernel dies Thebe only changes a class. This
 * script watches the launch: the CDN script failing to load (or loading without defining
 * Thebe), no Thebe after LOAD_TIMEOUT_MS, and Thebe's own status events ("failed", "dead"),
 * and then shows a message (role="alert") that the code cannot run here and that the
 * page's notebook can be downloaded and run on one's own machine instead.
 * tests/browser/test_live_code.py clicks Live Code with the network blocked.
 */
(() => {
  "use strict";
  const LOAD_TIMEOUT_MS = window.ATTNCLUST_THEBE_TIMEOUT_MS || 20000;
  const ALERT_ID = "ac-thebe-alert";
  let watching = false;
  let hooked = false;
  let timer = null;
  let observer = null;

  const notebookLink = () => {
    // the theme's download button (the reader edition, _ext/reader_notebooks.py)
    const link = document.querySelector('a.btn-download-notebook-button[href$=".ipynb"]')
      || document.querySelector(
        'a[href^="../"][href$=".ipynb"], a[href^="_sources/"][href$=".ipynb"]');
    return link ? link.getAttribute("href") : null;
  };

  const stop = () => {
    clearTimeout(timer);
    if (observer) observer.disconnect();
    timer = observer = null;
  };

  const fail = (why) => {
    stop();
    let box = document.getElementById(ALERT_ID);
    if (!box) {
      box = document.createElement("div");
      box.id = ALERT_ID;
      box.className = "admonition warning ac-thebe-alert";
      box.setAttribute("role", "alert");
      const anchor = document.querySelector("button.thebe-launch-button")
        || document.querySelector("article h1, main h1");
      if (anchor) anchor.insertAdjacentElement("afterend", box);
      else (document.querySelector("article, main") || document.body).prepend(box);
    }
    const href = notebookLink();
    box.textContent = "";
    const p = document.createElement("p");
    p.textContent = "Live code cannot run here: no Jupyter kernel could be reached ("
      + why + "). The page's outputs above were computed when the book was built. ";
    if (href) {
      const a = document.createElement("a");
      a.href = href;
      a.setAttribute("download", "");
      a.textContent = "Download the notebook (.ipynb)";
      p.appendChild(a);
      p.appendChild(document.createTextNode(" to run it on your own machine."));
    } else {
      p.appendChild(document.createTextNode(
        "Download the page's notebook to run it on your own machine."));
    }
    box.appendChild(p);
    document.querySelectorAll("button.thebe-launch-button").forEach((b) => {
      b.textContent = "Live code unavailable";
    });
  };

  const hook = () => {
    if (hooked || typeof window.thebelab === "undefined" || !window.thebelab.on) return false;
    hooked = true;
    clearTimeout(timer);  // Thebe is here: Binder may now take minutes, and says so itself
    window.thebelab.on("status", (evt, data) => {
      const status = data && data.status;
      if (status === "failed" || status === "dead") {
        fail(`Thebe reports "${status}"${data.message ? ": " + data.message : ""}`);
      }
    });
    return true;
  };

  const watchScript = (script) => {
    if (!script || script.dataset.acWatched) return;
    script.dataset.acWatched = "1";
    script.addEventListener("error", () => fail("Thebe could not be loaded from its CDN"));
    script.addEventListener("load", () => setTimeout(() => {
      if (!hook()) fail("the script loaded from the CDN did not start Thebe");
    }, 0));
  };

  const start = () => {
    if (watching) return;
    watching = true;
    hook();
    timer = setTimeout(() => {
      if (!hooked) fail(`Thebe did not load within ${Math.round(LOAD_TIMEOUT_MS / 1000)} s`);
    }, LOAD_TIMEOUT_MS);
    // sphinx-thebe appends its <script src=THEBE_JS_URL> to <head> right after the click
    const url = typeof THEBE_JS_URL === "string" ? THEBE_JS_URL : "thebe";
    const isThebe = (node) => node.tagName === "SCRIPT" && node.src && node.src.includes(url);
    Array.from(document.scripts).filter(isThebe).forEach(watchScript);
    observer = new MutationObserver((records) => records.forEach((r) =>
      r.addedNodes.forEach((node) => { if (isThebe(node)) watchScript(node); })));
    observer.observe(document.head, {childList: true});
  };

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (target && target.closest('[onclick*="initThebe"], .thebe-launch-button')) start();
  }, true);
})();
