"""Glued values in figures' alt text (loaded from _config.yml, sphinx.local_extensions).

A figure cell's alt text (``mystnb: image: alt:`` in the cell's metadata) states the
figure's finding, and the numbers of a finding come from cells, as everywhere in the book:
the alt text holds the same role as a caption, ``{glue:text}`name:fmt``` (or
``{glue}`name```). MyST-NB renders a caption as Markdown, so its roles are resolved; an alt
text is a plain attribute of the image node and would show the role as typed. This
extension replaces each role of every image's ``alt`` by the glued value, formatted as the
``{glue:text}`` role formats it (``myst_nb.core.variables.format_plain_text``), as soon as a
page is read (``doctree-read``): the values are the ones the page's own cells glued
(myst-nb writes them to ``<page>.glue.json`` in its output folder just before). A role
naming a value the page does not glue (a typo, a ``glue`` call removed) is a warning that
names the figure, so the book's ``-W`` build fails.

The reader editions resolve the same roles in the cells' metadata with the values of the
same ``<page>.glue.json`` (``attnclust.assignments.editions``), read by the same function
(``attnclust.assignments.glued_values``).

Why an extension: neither MyST-NB nor Sphinx resolves roles inside an attribute.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`(?P<name>[^`]+?)(?::(?P<spec>[^`:]*))?`")
"""``{glue:text}`name:fmt``` or ``{glue}`name``` (the format spec after the last colon)."""


def resolve_alt(alt: str, glued: dict[str, dict]) -> tuple[str, list[str]]:
    """``alt`` with each glue role replaced by its value in ``glued`` (name -> myst-nb's glue
    record, ``{"data": {"text/plain": ...}}``, or a bare MIME bundle), and the problems: each
    name that ``glued`` lacks, or whose value the format spec cannot format (left as typed)."""
    from myst_nb.core.variables import format_plain_text

    missing: list[str] = []

    def value(m: re.Match) -> str:
        name, spec = m["name"].strip(), (m["spec"] or "").strip()
        record = glued.get(name)
        bundle = record.get("data", record) if isinstance(record, dict) else None
        if not bundle or "text/plain" not in bundle:
            missing.append(name)
            return m[0]
        try:
            return format_plain_text(str(bundle["text/plain"]), spec)
        except (TypeError, ValueError) as exc:
            missing.append(f"{name} (cannot format {bundle['text/plain']!r} with {spec!r}: {exc})")
            return m[0]

    return GLUE_ROLE.sub(value, alt), missing


def _figure_name(node: nodes.Node) -> str:
    parent = node.parent
    while parent is not None and not isinstance(parent, nodes.figure):
        parent = parent.parent
    names = parent.get("names", []) if parent is not None else []
    return names[0] if names else "(unnamed figure)"


def glued_values(app, docname: str) -> dict[str, dict]:
    """The values ``docname``'s cells glued in this build, name -> MIME bundle (empty when
    none), read as every edition reads them (``attnclust.assignments.glued_values``)."""
    from myst_nb.sphinx_ import NbMetadataCollector

    from attnclust.assignments import glued_values as read

    keys = set(NbMetadataCollector.get_doc_data(app.env).get(docname, {}).get("glue", []))
    folder = getattr(getattr(app.env, "mystnb_config", None), "output_folder", "") or ""
    if not keys or not folder:
        return {}
    return {k: v for k, v in read(folder, docname).items() if k in keys}


def resolve_page(app, doctree: nodes.document) -> None:
    images = [im for im in doctree.findall(nodes.image) if GLUE_ROLE.search(im.get("alt", ""))]
    if not images:
        return
    glued = glued_values(app, app.env.docname)
    for image in images:
        image["alt"], missing = resolve_alt(image["alt"], glued)
        for name in missing:
            logger.warning(f"the alt text of figure {_figure_name(image)!r} uses the glued value "
                           f"{name!r}, which no cell of {app.env.docname!r} glues as text/plain, or "
                           "which the role's format spec cannot format",
                           location=image, type="glued_alt")


def setup(app):
    app.connect("doctree-read", resolve_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
