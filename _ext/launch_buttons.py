"""Launch buttons only where they can work (loaded from _config.yml, sphinx.local_extensions).

The book's repository is configured in one place, ``repository.url`` in ``_config.yml``
(Jupyter Book passes it to the theme as ``html_theme_options["repository_url"]``). The
launch buttons (Binder, Colab, Thebe's "Live Code") and the repository button all open
that repository; with no URL configured they would point at a repository that does not
exist, so this extension leaves them out of every page (and shows the repository button
only when there is one: ``_config.yml`` keeps ``use_repository_button: false`` because
Jupyter Book refuses the button without a URL). Binder builds the repository with
``binder/`` (which installs ``attnclust`` itself) and opens the chapter with JupyterLab,
which opens a chapter's MyST file as a notebook (``jupyter/overrides.json``).
"""

from __future__ import annotations


def configured_repository(theme_options: dict) -> str:
    """The repository URL of the book, or "" when none is configured."""
    return str(theme_options.get("repository_url") or "").strip()


def drop_unreachable_buttons(app, config) -> None:
    options = dict(config.html_theme_options or {})
    if configured_repository(options):
        options["use_repository_button"] = True
    else:
        options["launch_buttons"] = {}
    config.html_theme_options = options


def setup(app):
    app.connect("config-inited", drop_unreachable_buttons)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
