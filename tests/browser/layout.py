"""How the built book fits a screen: sideways scrolling, display equations wider than
their column, figures whose text is too small to read.

Used by test_small_screens.py, and as a command that prints the counts for a built book
(any build, also one from before a change):

    .venv/bin/python tests/browser/layout.py [HTML_ROOT] [--widths 1280 390]

A figure's text size is that of matplotlib's default 10-point text as the reader sees
it: 10 pt at the PNG's resolution (its pHYs chunk, the savefig dpi), times the ratio of
the width it is shown at to its pixel width. Legends and tick labels are often smaller.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_checks  # noqa: E402

WIDTHS = (1280, 390)
PHONE = 390
MIN_TEXT_PX = 7.0
"""Smallest legible text height in CSS px for the 10-pt text of a figure."""
TEXT_PT = 10.0

_MEASURE = r"""
async (timeout) => {
  const t0 = Date.now();
  // MathJax typesets, then small_screens.js fits the equations (where the build has it)
  while (document.querySelector('.math') && !(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - t0 > timeout) break;
    await new Promise(r => setTimeout(r, 50));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    try { await MathJax.startup.promise; } catch (e) {}
  }
  const hasFit = Array.from(document.scripts).some(s => (s.src || '').includes('small_screens.js'));
  while (hasFit && !document.documentElement.dataset.equationsFitted && Date.now() - t0 < timeout) {
    await new Promise(r => setTimeout(r, 50));
  }
  await new Promise(r => setTimeout(r, 150));
  const article = document.querySelector('article') || document.body;
  const equations = Array.from(article.querySelectorAll('mjx-container[display="true"]')).map(c => {
    const math = c.firstElementChild;
    const box = c.getBoundingClientRect();
    const width = math ? math.getBoundingClientRect().width : box.width;
    // a box that does not scroll shows the whole equation, past its own edge
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(c).overflowX);
    return {tex: String((c.parentElement && c.parentElement.textContent) || '').slice(0, 60),
            width, available: c.clientWidth,
            right: box.left + (scrolls ? box.width : Math.max(width, box.width)),
            scale: parseFloat(c.dataset.fitScale || '1')};
  });
  const imgs = Array.from(article.querySelectorAll('img'));
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r); i.addEventListener('error', r); setTimeout(r, timeout);
  })));
  const images = imgs.filter(i => i.naturalWidth > 0 && i.offsetParent !== null).map(i => ({
    src: i.currentSrc || i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
    zoomable: i.classList.contains('ac-zoomable')}));
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
          equations, images};
}
"""

_ZOOM = """
async (src) => {
  const img = Array.from(document.querySelectorAll('article img')).find(i => (i.currentSrc || i.src) === src);
  if (!img) return null;
  img.scrollIntoView();
  img.click();
  await new Promise(r => setTimeout(r, 100));
  const big = document.querySelector('.ac-zoom-overlay img');
  if (!big) return null;
  if (!big.complete) await new Promise(r => big.addEventListener('load', r));
  const shown = big.getBoundingClientRect().width;
  document.querySelector('.ac-zoom-overlay').click();
  return shown;
}
"""


@dataclass
class Figure:
    src: str
    text_px: float
    zoomable: bool
    zoomed_text_px: float | None = None


@dataclass
class Layout:
    """What one page looks like at one width."""

    docname: str
    width: int
    sideways: float  # how far the page scrolls sideways (CSS px, 0 when it does not)
    # display equations whose box runs past the screen's edge
    offscreen_equations: list[str] = field(default_factory=list)
    # display equations wider than their box even when scaled down: they scroll in the box
    scrolling_equations: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)

    @property
    def small_figures(self) -> list[Figure]:
        return [f for f in self.figures if f.text_px < MIN_TEXT_PX]

    @property
    def unreadable_figures(self) -> list[Figure]:
        """Too small as shown and not readable once enlarged (no tap-to-enlarge)."""
        return [f for f in self.small_figures
                if f.zoomed_text_px is None or f.zoomed_text_px < MIN_TEXT_PX]


def png_dpi(path: Path) -> float:
    with Image.open(path) as im:
        dpi = im.info.get("dpi")
    return float(dpi[0]) if dpi else 72.0


def _local_file(html_root: Path, base_url: str, src: str) -> Path | None:
    if not src.startswith(base_url):
        return None
    path = html_root / unquote(urlsplit(src).path).lstrip("/")
    return path if path.is_file() else None


def measure(context, base_url: str, html_root: Path, docname: str, width: int) -> Layout:
    page, _ = book_checks.open_page(context, base_url + docname + ".html")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        state = page.evaluate(_MEASURE, book_checks.MATH_TIMEOUT_MS)
        layout = Layout(docname, width, max(0.0, state["scrollWidth"] - state["innerWidth"]))
        for eq in state["equations"]:
            if eq["right"] > state["innerWidth"] + 1:
                layout.offscreen_equations.append(eq["tex"].strip())
            elif eq["width"] > eq["available"] + 1:
                layout.scrolling_equations.append(eq["tex"].strip())
        for img in state["images"]:
            path = _local_file(html_root, base_url, img["src"])
            if path is None or path.suffix.lower() != ".png":
                continue
            px_per_pt = png_dpi(path) / 72.0
            fig = Figure(img["src"], TEXT_PT * px_per_pt * img["shown"] / img["natural"],
                         img["zoomable"])
            if fig.text_px < MIN_TEXT_PX and fig.zoomable:
                shown = page.evaluate(_ZOOM, img["src"])
                if shown:
                    fig.zoomed_text_px = TEXT_PT * px_per_pt * shown / img["natural"]
            layout.figures.append(fig)
        return layout
    finally:
        page.close()


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html_root", nargs="?", default=str(book_checks.REPO / "_build" / "html"))
    parser.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS))
    args = parser.parse_args(argv)
    root = Path(args.html_root)
    docnames = book_checks.toc_docnames(book_checks.REPO)
    with sync_playwright() as p, book_checks.serve_directory(root) as url:
        browser = book_checks.launch_browser(p)
        context = book_checks.new_context(browser, url, book_checks.OfflineAssets())
        for width in args.widths:
            layouts = [measure(context, url, root, d, width) for d in docnames
                       if (root / f"{d}.html").is_file()]
            eqs = sum(len(lay.offscreen_equations) for lay in layouts)
            scrolling = sum(len(lay.scrolling_equations) for lay in layouts)
            total_eqs_pages = [lay.docname for lay in layouts if lay.offscreen_equations]
            figs = sum(len(lay.figures) for lay in layouts)
            small = sum(len(lay.small_figures) for lay in layouts)
            unreadable = sum(len(lay.unreadable_figures) for lay in layouts)
            sideways = [f"{lay.docname} ({lay.sideways:.0f} px)" for lay in layouts if lay.sideways > 1]
            print(f"width {width}px: {len(layouts)} pages; display equations past the screen's "
                  f"edge: {eqs} (pages: {', '.join(total_eqs_pages) or 'none'}), scrolling in "
                  f"their own box: {scrolling}; "
                  f"figures with 10-pt text under {MIN_TEXT_PX:g} px: {small} of {figs}, "
                  f"of which not readable when tapped: {unreadable}; pages scrolling sideways: "
                  f"{', '.join(sideways) or 'none'}")
        context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
