"""Small Sphinx fixes for the built book (loaded from _config.yml, sphinx.local_extensions).

Each fix removes a JavaScript console error that a reader's browser would otherwise
report on every page; the browser checks (tests/browser) fail on console errors.

1. Duplicate inline scripts. sphinx-thebe adds an inline ``<script>`` (``const THEBE_JS_URL
   = ...``) in ``env-before-read-docs``, after the HTML builder is initialised. Sphinx 7.2
   to 8.2.2 then register it twice (once with filename ``None``, once with ``''``), so every
   page declares the constant twice and the browser throws "Identifier 'THEBE_JS_URL' has
   already been declared". We drop the second copy of any script with identical
   attributes and body when a page is rendered.

Why an extension: Sphinx fixed this in 8.2.3, which Jupyter Book 1.x (``sphinx~=7.0``)
cannot use, and no sphinx-thebe release adds its configuration another way; the one Sphinx
it accepts without the bug, 7.1, would hold Sphinx, docutils, sphinx-design and
sphinxcontrib-bibtex back for one duplicated script.
"""

from __future__ import annotations


def _key(script) -> tuple:
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {}) or {}
    return (str(filename), tuple(sorted((k, str(v)) for k, v in attributes.items())))


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _key(script)
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    context["script_files"] = unique


def setup(app):
    # late priority: run after extensions that add page-specific scripts
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
