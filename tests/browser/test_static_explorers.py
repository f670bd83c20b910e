"""The explorers in the static HTML book, with no kernel and no network: every slider of
every registered explorer (attnclust.book.widgets.explorers(), on the page of its chapter;
attnclust.book.widgets.static) is moved once, and the figure must
change to the frame that the library draws for the new slider values (recomputed here by
the same draw function, compared byte for byte)."""

from __future__ import annotations

import base64
import json
import re

import pytest

import book_checks
from attnclust.book.widgets import explorers

pytestmark = pytest.mark.browser
REPO = book_checks.REPO
MAX_PAGE_BYTES = 5_000_000


EXPLORERS = {spec.name: spec for spec in explorers()}
"""Every registered explorer, by name."""


_STATE = """(name) => {
  const root = document.querySelector(`.ac-static-explorer[data-explorer="${name}"]`);
  if (!root) return null;
  const spec = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  const idx = Array.from(root.querySelectorAll('input[type="range"]')).map(i => Number(i.value));
  return {spec: {names: spec.names, sizes: spec.sizes, values: spec.values},
          idx, src: root.querySelector('img').src, alt: root.querySelector('img').alt};
}"""

_MOVE = """([name, i, k]) => {
  const root = document.querySelector(`.ac-static-explorer[data-explorer="${name}"]`);
  const input = root.querySelectorAll('input[type="range"]')[i];
  input.value = String(k);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  const img = root.querySelector('img');
  return [img.src, img.alt];
}"""


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_every_slider_switches_to_the_frame_of_its_value(name, book_context, book_url, built_book):
    """Explorer ``name`` on the page of its chapter; its frames are compared with its
    registered ``frames`` function's drawing."""
    from attnclust.book.widgets.static import alt_of, frame_png

    explorer = EXPLORERS[name]
    page_path = f"chapters/{explorer.chapter}"
    html = built_book / f"{page_path}.html"
    assert html.stat().st_size <= MAX_PAGE_BYTES, f"{html.name}: {html.stat().st_size} bytes"
    page, _ = book_checks.open_page(book_context, f"{book_url}{page_path}.html")
    try:
        state = page.evaluate(_STATE, name)
        assert state, f"{page_path}.html has no static {name} explorer"
        spec, idx = state["spec"], list(state["idx"])
        draw = explorer.frames
        src, alt = state["src"], state["alt"]
        assert src.startswith("data:image/png;base64,"), f"{name}: the page does not open on a frame"
        assert alt, f"{name}: the default frame has no alt text"
        for i, slider in enumerate(spec["names"]):
            if spec["sizes"][i] < 2:
                continue  # a slider the static grid keeps fixed
            idx[i] = (idx[i] + 1) % spec["sizes"][i]
            new, new_alt = page.evaluate(_MOVE, [name, i, idx[i]])
            assert new != src, f"moving {slider} did not change the figure"
            # each frame says what it shows (its own alt text, from the values it was drawn at)
            assert new_alt and new_alt != alt, f"moving {slider} did not change the alt text"
            point = {n: spec["values"][j][idx[j]] for j, n in enumerate(spec["names"])}
            shown = base64.b64decode(new.split(",", 1)[1])
            fig = draw(**point)
            assert shown == frame_png(fig), f"{slider}: not the frame of {json.dumps(point)}"
            assert new_alt == alt_of(fig, new_alt), f"{slider}: not the alt text of {json.dumps(point)}"
            src, alt = new, new_alt
        # by keyboard, as a reader without a mouse moves it; a screen reader reads the value
        root = page.locator(f'[data-explorer="{name}"]')
        slider = root.locator('input[type="range"]:not([disabled])').first
        before = root.get_attribute("data-frame")
        at_end = slider.evaluate("s => s.value === s.max")
        slider.focus()
        page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
        assert root.get_attribute("data-frame") != before, f"{name}: a key did not move the slider"
        shown = slider.evaluate("s => s.nextElementSibling.textContent")
        assert slider.get_attribute("aria-valuetext") == shown, f"{name}: aria-valuetext is not the value"
    finally:
        page.close()


REMOTE = re.compile(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(https?:)?//[^"]*"')


@pytest.mark.parametrize("docname", book_checks.toc_docnames(REPO))
def test_no_page_loads_anything_from_another_host(docname, built_book):
    """The book says it needs no network: no script, style sheet, image or frame of any page
    (the explorer pages included) comes from another host. Links a reader follows are fine."""
    html = (built_book / f"{docname}.html").read_text()
    remote = [m.group(0)[:160] for m in REMOTE.finditer(html)
              if not m.group(0).startswith("<link") or 'rel="stylesheet"' in m.group(0)
              or "preload" in m.group(0)]
    assert not remote, remote
