"""Small Sphinx fixes for the built book (loaded from _config.yml, sphinx.local_extensions).

Each fix removes a fault that a reader's browser or screen reader would otherwise meet;
the browser checks (tests/browser) fail on console errors and on axe-core's serious and
critical accessibility violations.

1. Duplicate inline scripts. sphinx-thebe adds an inline ``<script>`` (``const THEBE_JS_URL
   = ...``) in ``env-before-read-docs``, after the HTML builder is initialised. Sphinx 7.2
   to 8.2.2 then register it twice (once with filename ``None``, once with ``''``), so every
   page declares the constant twice and the browser throws "Identifier 'THEBE_JS_URL' has
   already been declared". We drop the second copy of any script with identical
   attributes and body when a page is rendered.

2. Bibliography roles. Docutils writes the bibliography as ``<div role="list">`` whose
   entries have ``role="doc-biblioentry"``, a role ARIA 1.2 deprecates: a list whose
   children are not list items, which axe-core reports as critical (aria-required-children)
   and a screen reader announces as an empty list. The entries get ``role="listitem"``.

Why an extension for 1: Sphinx fixed this in 8.2.3, which Jupyter Book 1.x (``sphinx~=7.0``)
cannot use, and no sphinx-thebe release adds its configuration another way; the one Sphinx
it accepts without the bug, 7.1, would hold Sphinx, docutils, sphinx-design and
sphinxcontrib-bibtex back for one duplicated script. For 2: the roles come from docutils'
HTML5 writer (0.21 here, through Jupyter Book 1's pins), and sphinxcontrib-bibtex has no
option for them.
"""

from __future__ import annotations

BIBLIOENTRY = 'role="doc-biblioentry"'


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


def list_item_citations(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body and BIBLIOENTRY in body:
        context["body"] = body.replace(BIBLIOENTRY, 'role="listitem"')


def setup(app):
    # late priority: run after extensions that add page-specific scripts
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("html-page-context", list_item_citations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
