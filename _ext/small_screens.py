"""Pages that fit a phone's screen (loaded from _config.yml, sphinx.local_extensions).

- Display equations wider than the text column (long SymPy output, aligned systems) are
  scaled down to fit it once MathJax has typeset them, and again when the window is
  resized, down to ``MIN_SCALE`` of the text size; one that is still too wide scrolls
  inside its own box instead of pushing the page sideways (``static/small_screens.js``).
- A figure shown well below its own size (on a phone, or a wide figure in the column)
  opens at full size when tapped or clicked.
- Long inline code (a dotted name, a command line) may break anywhere, so that a
  paragraph never scrolls sideways (``static/small_screens.css``).

tests/browser/test_small_screens.py measures both at 1280 px and 390 px widths.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"


def add_static(app) -> None:
    if str(STATIC) not in map(str, app.config.html_static_path):
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("builder-inited", add_static)
    app.add_css_file("small_screens.css")
    app.add_js_file("small_screens.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
