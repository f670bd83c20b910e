"""How the built book fits a screen: sideways scrolling, display equations wider than
their column, figures whose text is too small to read.

Used by test_small_screens.py, and as a command that prints the counts for a built book
(any build, also one from before a change):

    .venv/bin/python tests/browser/layout.py [HTML_ROOT] [--widths 1280 390]

A figure's text size is that of its smallest text as the reader sees it, without zooming:
the figure's PNG carries that size in points in its text chunk ``_legibility.PNG_KEY``
(written by ``attnclust.book.figures._legibility.png``, which the book's figures are shown
through) and its resolution in its pHYs chunk, so the size in CSS px is
``pt / 72 * dpi * shown / natural``, with the width it is shown at measured in the page.
Images given as ``data:`` URIs (the explorers' frames) are decoded and read the same way.
A figure is too small below ``_legibility.FLOOR_PX`` (the desktop floor at 1280 px, the
phone's at 390 px); an image without the chunk cannot be measured and counts as a failure
(every figure of the book must carry it).
"""

from __future__ import annotations

import argparse
import base64
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_checks  # noqa: E402
from attnclust.book.figures._legibility import FLOOR_PX, PNG_KEY, shown_text_px  # noqa: E402

WIDTHS = (1280, 390)
PHONE = 390


def floor_px(width: int) -> float:
    """The smallest legible figure text, in CSS px, in a window ``width`` px wide: the
    phone's floor up to a phone-sized window, the desktop's above."""
    return FLOOR_PX["phone"] if width <= 600 else FLOOR_PX["desktop"]

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
    src: i.currentSrc || i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width}));
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
          equations, images};
}
"""



@dataclass
class Figure:
    """One PNG image as the page shows it."""

    src: str  # its address (a data: URI shortened)
    natural: int  # its width in pixels
    shown: float  # the width the page shows it at, in CSS px
    dpi: float  # its resolution (pHYs)
    pt: float | None  # its smallest text in points (PNG_KEY), None without the chunk

    @property
    def text_px(self) -> float | None:
        """The smallest text as shown, in CSS px (None if the PNG does not say its size)."""
        return None if self.pt is None else shown_text_px(self.pt, self.natural, self.shown, self.dpi)

    def describe(self) -> str:
        size = ("no smallest text size in the PNG" if self.pt is None
                else f"{self.text_px:.1f} px text ({self.pt:g} pt)")
        return f"{size}, {self.natural} px PNG at {self.dpi:g} dpi shown {self.shown:.0f} px wide: {self.src}"


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
    def floor_px(self) -> float:
        return floor_px(self.width)

    @property
    def small_figures(self) -> list[Figure]:
        """Figures whose smallest text is under the floor as shown (no zooming)."""
        return [f for f in self.figures if f.pt is not None and f.text_px < self.floor_px]

    @property
    def unmeasured_figures(self) -> list[Figure]:
        """PNGs without their smallest text size (PNG_KEY): every figure must carry it."""
        return [f for f in self.figures if f.pt is None]

    @property
    def unreadable_figures(self) -> list[Figure]:
        """Figures that fail: too small, or not measurable."""
        return self.unmeasured_figures + self.small_figures


def png_text_info(data: bytes | Path) -> tuple[float, float | None] | None:
    """(dpi, smallest text pt or None) of a PNG, or None if it is not a PNG."""
    with Image.open(io.BytesIO(data) if isinstance(data, bytes) else data) as im:
        if im.format != "PNG":
            return None
        info = dict(im.info)
    dpi = info.get("dpi")
    pt = info.get(PNG_KEY)
    return (float(dpi[0]) if dpi else 72.0), (float(pt) if pt is not None else None)


def _data_uri(src: str) -> bytes | None:
    """The bytes of a base64 ``data:image/png`` URI, None for any other."""
    head, _, payload = src.partition(",")
    if not head.startswith("data:image/png") or not head.endswith(";base64"):
        return None
    return base64.b64decode(payload)


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
            src = img["src"]
            if src.startswith("data:"):
                data, name = _data_uri(src), src[:40] + "..."
            else:
                path = _local_file(html_root, base_url, src)
                data, name = (path if path is not None and path.suffix.lower() == ".png" else None), src
            info = png_text_info(data) if data is not None else None
            if info is None:
                continue
            layout.figures.append(Figure(name, img["natural"], img["shown"], *info))
        return layout
    finally:
        page.close()


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html_root", nargs="?", default=str(book_checks.REPO / "_build" / "html"))
    parser.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS))
    parser.add_argument("--verbose", action="store_true", help="print every figure's size")
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
            unmeasured = sum(len(lay.unmeasured_figures) for lay in layouts)
            sizes = [f.text_px for lay in layouts for f in lay.figures if f.pt is not None]
            sideways = [f"{lay.docname} ({lay.sideways:.0f} px)" for lay in layouts if lay.sideways > 1]
            print(f"width {width}px: {len(layouts)} pages; display equations past the screen's "
                  f"edge: {eqs} (pages: {', '.join(total_eqs_pages) or 'none'}), scrolling in "
                  f"their own box: {scrolling}; "
                  f"figures with text under {floor_px(width):g} px: {small} of {figs} "
                  f"(smallest {min(sizes, default=float('nan')):.1f} px), without their text size: "
                  f"{unmeasured}; pages scrolling sideways: {', '.join(sideways) or 'none'}")
            if args.verbose:
                for lay in layouts:
                    for f in lay.figures:
                        print(f"  {lay.docname}: {f.describe()}")
        context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
