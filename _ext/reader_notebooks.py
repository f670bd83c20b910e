"""The reader notebook edition of every chapter (loaded from _config.yml,
sphinx.local_extensions).

The page's download button offers ``_sources/<page>.ipynb``. The theme would copy it from
the executed notebook (a MyST notebook whose text Jupyter cannot render: roles, directive
fences, the book's macros, ``{glue:text}`` names), and only where launch buttons are
configured. This extension offers it on every notebook page, and writes it once the build
has finished: the reader edition (``attnclust.assignments.reader_notebook``):
the same conversion to Jupyter Markdown as the student and instructor editions, with the
numbers the build glued (myst-nb's ``<page>.glue.json``, read by
``attnclust.assignments.glued_values`` as for the student and instructor editions) in the
text, the outputs the build computed (figures included) in its code cells, and a first code
cell that installs ``attnclust`` from the configured repository where it is missing (Colab).
Where a repository is configured, the Binder and Colab buttons open this edition
(_ext/launch_buttons.py). The ``.md`` source
stays the single source of truth; tests/test_book_offline.py checks a built one.

Why an extension: jupytext and MyST-NB write a MyST notebook's text as it is (roles,
directive fences, glue names unresolved); nothing maintained writes it as Jupyter Markdown
with the values the build glued.
"""

from __future__ import annotations

from pathlib import Path


def _is_notebook(app, pagename: str) -> bool:
    return "kernelspec" in app.env.metadata.get(pagename, {})


def offer_notebook(app, pagename, templatename, context, doctree) -> None:
    """Before the theme draws its header buttons: this page's download menu has an .ipynb."""
    if _is_notebook(app, pagename):
        context["ipynb_source"] = pagename + ".ipynb"


# outputs a notebook can show: a glue record (myst-nb's application/papermill.record/...)
# is for the build alone, and JupyterLab would say it has no renderer for it
_SHOWN = ("text/", "image/", "application/json", "application/javascript")


def _shown(output):
    if "data" not in output:
        return output
    data = {k: v for k, v in output["data"].items() if k.startswith(_SHOWN)}
    if not data:
        return None
    output.data = type(output.data)(data)
    return output


def _executed(app, source: Path):
    """The build's execution of ``source`` from jupyter-cache (keyed on the page's code), with
    the outputs a notebook can show; None where the cache has none (execution off)."""
    import jupytext
    from jupyter_cache import get_cache

    path = app.config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache"
    if not Path(path).is_dir():
        return None
    try:
        _, merged = get_cache(str(path)).merge_match_into_notebook(jupytext.read(source))
    except KeyError:  # no execution of this code in the cache
        return None
    for cell in merged.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in map(_shown, cell.get("outputs", [])) if o is not None]
    return merged


def write_reader_notebooks(app, exc) -> None:
    if exc is not None or app.builder.name != "html":
        return
    import nbformat

    from attnclust.assignments import glued_values, parse_chapter, reader_notebook
    from attnclust.assignments.built import EXECUTED_FOLDER
    from launch_buttons import configured_repository  # _ext/ is on the path (local_extensions)

    repository = configured_repository(app.config.html_theme_options or {})
    executed = Path(app.outdir).parent / EXECUTED_FOLDER
    for docname in sorted(app.env.found_docs):
        source = Path(app.env.doc2path(docname))
        target = Path(app.outdir) / "_sources" / f"{docname}.ipynb"
        if source.suffix != ".md" or not _is_notebook(app, docname):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(reader_notebook(parse_chapter(source), glued_values(executed, docname),
                                       repository, _executed(app, source)), target)


def setup(app):
    app.connect("html-page-context", offer_notebook, priority=500)  # the theme's run at 501
    app.connect("build-finished", write_reader_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
