// Loaded on every page (_config.yml, html_js_files): equations wider than their column
// are scaled down to fit, figures open at full size when tapped on a narrow screen, and a
// table wider than its column (it scrolls in its own box, small_screens.css) says so.
(function () {
  "use strict";
  const MIN_SCALE = 0.5;

  // A display equation has its own box (as wide as the column); an inline one is fitted to
  // the width of the block of text it sits in.
  function fit(container) {
    container.style.fontSize = "";
    const display = container.getAttribute("display") === "true";
    const math = container.firstElementChild;
    const block = container.closest("p, li, dd, td, div, section");
    const available = display ? container.clientWidth : (block ? block.clientWidth : 0);
    if (!math || !available) return;
    const needed = math.getBoundingClientRect().width;
    if (needed > available + 1) {
      const scale = Math.max(MIN_SCALE, (available - 2) / needed);
      container.style.fontSize = (100 * scale).toFixed(1) + "%";
      container.dataset.fitScale = scale.toFixed(3);
    } else {
      delete container.dataset.fitScale;
    }
  }

  function fitAll() {
    document.querySelectorAll("article mjx-container").forEach(fit);
    document.documentElement.dataset.equationsFitted = "1";
  }

  // Tap-to-enlarge: a figure shown well below its own size (a phone, or a wide figure in the
  // text column) opens at full size (one image pixel per CSS pixel) in an overlay; a tap
  // anywhere closes it.
  function zoomable(img) {
    return img.closest("article") && !img.closest("a") && img.naturalWidth > img.clientWidth * 1.2;
  }
  function markZoomable() {
    document.querySelectorAll("article img").forEach(img => {
      const mark = () => img.classList.toggle("ac-zoomable", zoomable(img));
      if (img.complete) mark(); else img.addEventListener("load", mark);
    });
  }
  function openZoom(img) {
    const overlay = document.createElement("div");
    overlay.className = "ac-zoom-overlay";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-label", img.alt ? "Figure, full size: " + img.alt : "Figure, full size");
    const big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    big.style.width = img.naturalWidth + "px";
    overlay.appendChild(big);
    overlay.addEventListener("click", () => overlay.remove());
    document.addEventListener("keydown", function esc(e) {
      if (e.key === "Escape") { overlay.remove(); document.removeEventListener("keydown", esc); }
    });
    document.body.appendChild(overlay);
  }
  document.addEventListener("click", e => {
    const img = e.target.closest && e.target.closest("article img");
    if (img && zoomable(img)) {
      e.preventDefault();
      openZoom(img);
    }
  });

  // A table that scrolls sideways takes keyboard focus, so that it can be scrolled without a
  // mouse (WCAG 2.1.1; axe-core's scrollable-region-focusable), and has a cue above it that
  // more columns are to the side. One that fits loses both.
  function markScrolling() {
    document.querySelectorAll("article table").forEach(table => {
      const scrolls = table.scrollWidth > table.clientWidth + 1;
      let cue = table.previousElementSibling;
      if (!(cue && cue.classList.contains("ac-scroll-cue"))) cue = null;
      table.classList.toggle("ac-scrolls", scrolls);
      if (scrolls) {
        table.tabIndex = 0;
        if (!cue) {
          cue = document.createElement("div");
          cue.className = "ac-scroll-cue";
          cue.setAttribute("aria-hidden", "true");
          cue.textContent = "Scroll sideways for more columns \u2192";
          table.before(cue);
        }
      } else {
        table.removeAttribute("tabindex");
        if (cue) cue.remove();
      }
    });
    document.documentElement.dataset.tablesMarked = "1";
  }

  function start() {
    markZoomable();
    markScrolling();
    window.addEventListener("resize", markZoomable);
    window.addEventListener("resize", markScrolling);
    const mj = window.MathJax;
    if (!(mj && mj.startup && mj.startup.promise)) {
      // no mathematics on this page (MathJax is only loaded where there is some)
      if (!document.querySelector(".math")) { fitAll(); return; }
      setTimeout(start, 50);
      return;
    }
    mj.startup.promise.then(fitAll);
    let pending = null;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(fitAll, 100);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
