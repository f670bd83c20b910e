"""Launch buttons only where they can work, and opening the reader edition (loaded from
_config.yml, sphinx.local_extensions).

The book's repository is configured in one place, ``repository.url`` in ``_config.yml``
(Jupyter Book passes it to the theme as ``html_theme_options["repository_url"]``). The
launch buttons (Binder, Colab, Thebe's "Live Code") and the repository button all open
that repository; with no URL configured they would point at a repository that does not
exist, so this extension leaves them out of every page (and shows the repository button
only when there is one: ``_config.yml`` keeps ``use_repository_button: false`` because
Jupyter Book refuses the button without a URL).

With a URL, the Binder and Colab buttons open the page's *reader edition*
(``_sources/<page>.ipynb`` of the built site, ``_ext/reader_notebooks.py``), not the MyST
source: the reader edition is made from the executed book, so it exists only where the
built site is published, on the branch ``attnclust_site_branch`` (``gh-pages`` unless
``_config.yml`` sets it under ``sphinx.config``) of the same repository, where
``ghp-import -n -p -f _build/html`` puts it (README, "Publishing the book").

- Colab opens ``colab/github/<org>/<repo>/blob/<site branch>/_sources/<page>.ipynb``;
  the notebook's first code cell installs ``attnclust`` from the repository when it is
  missing (``attnclust.assignments.install_cell_source``).
- Binder builds the environment from the source branch (``repository.branch``:
  ``binder/`` installs ``attnclust``, editable, and nbgitpuller) and nbgitpuller then
  pulls the site branch into ``~/<repo>`` and opens the reader edition there in JupyterLab
  (Binder's documented way to keep content and environment on separate branches).
- "Live Code" (sphinx-thebe) runs the page's cells on a Binder kernel of the source branch;
  when Thebe cannot be loaded from its CDN or its kernel fails or dies,
  ``_ext/static/thebe_status.js`` says so on the page and points at the reader edition to
  download (sphinx-thebe alone shows "Loading thebe from CDN..." forever).

Why an extension: sphinx-book-theme links Binder and Colab to the page's source (a MyST file
Colab cannot open) and stops the build on a notebook page when launch buttons are configured
without a repository URL; nothing maintained points them at a reader edition published on
another branch.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

SITE_BRANCH = "gh-pages"
"""The branch the built site is published on, unless ``attnclust_site_branch`` is set."""


def configured_repository(theme_options: dict) -> str:
    """The repository URL of the book, or "" when none is configured."""
    return str(theme_options.get("repository_url") or "").strip()


def github_parts(url: str) -> tuple[str, str]:
    """(org, repo) of a GitHub repository URL (``https://github.com/org/repo[.git][/]``).

    Raises:
        ValueError: ``url`` is not a GitHub repository (Colab opens only GitHub paths).
    """
    head, sep, tail = url.strip().rstrip("/").partition("github.com/")
    parts = tail.split("/")
    if not sep or len(parts) != 2 or not all(parts) or head not in ("https://", "http://"):
        raise ValueError(f"repository.url must be https://github.com/<org>/<repo>, got {url!r}")
    org, repo = parts
    return org, repo.removesuffix(".git")


def reader_edition_links(url: str, pagename: str, branch: str = "main",
                         site_branch: str = SITE_BRANCH,
                         binderhub_url: str = "https://mybinder.org",
                         colab_url: str = "https://colab.research.google.com") -> dict[str, str]:
    """The Binder and Colab links of page ``pagename`` (a Sphinx docname, ``chapters/x``):
    both open its reader edition ``_sources/<pagename>.ipynb`` on ``site_branch`` of the
    GitHub repository ``url``; Binder's environment is built from ``branch``."""
    org, repo = github_parts(url)
    notebook = f"_sources/{pagename}.ipynb"
    pull = urlencode({"repo": f"https://github.com/{org}/{repo}", "branch": site_branch,
                      "urlpath": f"lab/tree/{repo}/{notebook}"})
    return {
        "Binder": (f"{binderhub_url.rstrip('/')}/v2/gh/{org}/{repo}/{branch}"
                   f"?urlpath={quote('git-pull?' + pull, safe='')}"),
        "Colab": f"{colab_url.rstrip('/')}/github/{org}/{repo}/blob/{site_branch}/{notebook}",
    }


def drop_unreachable_buttons(app, config) -> None:
    options = dict(config.html_theme_options or {})
    if configured_repository(options):
        github_parts(configured_repository(options))  # a clear error for a bad URL
        options["use_repository_button"] = True
    else:
        options["launch_buttons"] = {}
    config.html_theme_options = options


def _buttons(header_buttons: list):
    for button in header_buttons:
        yield button
        yield from _buttons(button.get("buttons", []))


def point_at_reader_edition(app, pagename, templatename, context, doctree) -> None:
    """After the theme made its launch buttons (priority 501): Binder's and Colab's open the
    reader edition (:func:`reader_edition_links`)."""
    options = app.config.html_theme_options or {}
    url = configured_repository(options)
    if not url:
        return
    launch = options.get("launch_buttons", {})
    links = reader_edition_links(
        url, pagename, branch=options.get("repository_branch") or "main",
        site_branch=app.config.attnclust_site_branch,
        binderhub_url=launch.get("binderhub_url") or "https://mybinder.org",
        colab_url=launch.get("colab_url") or "https://colab.research.google.com")
    for button in _buttons(context.get("header_buttons", [])):
        if button.get("type") == "link" and button.get("text") in links:
            button["url"] = links[button["text"]]


def setup(app):
    app.add_config_value("attnclust_site_branch", SITE_BRANCH, "html")
    app.connect("config-inited", drop_unreachable_buttons)
    app.connect("html-page-context", point_at_reader_edition, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
