"""The files a reader, a student or an instructor relies on outside the book's pages:
licences and citation, JupyterLab's settings (chapters open as notebooks), Binder's
configuration. Static checks; the browser checks run JupyterLab itself
(tests/browser/test_jupyterlab.py)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_citation_matches_the_package():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == project["version"]
    assert project["license"] in cff["license"] and "CC-BY-4.0" in cff["license"]
    assert cff["title"] and cff["authors"] and cff["message"]
    paper = cff["references"][0]
    assert paper["title"] == "Attention-based clustering" and paper["year"] == 2025


def test_licences_and_the_preface_say_how_to_reuse():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "creativecommons.org/licenses/by/4.0" in (ROOT / "LICENSE-text.md").read_text()
    preface = (ROOT / "chapters" / "preface.md").read_text()
    assert "CITATION.cff" in preface and "LICENSE-text.md" in preface


def test_jupyterlab_opens_chapters_as_notebooks():
    settings = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    viewers = settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    # make venv installs them where JupyterLab reads an environment's settings
    r = subprocess.run(["make", "-n", "-B", "-o", ".venv/.installed",
                        ".venv/share/jupyter/lab/settings/overrides.json"],
                       cwd=ROOT, capture_output=True, text=True, check=True)
    assert "jupyter/overrides.json" in r.stdout


def test_binder_installs_the_package_and_the_settings():
    assert "-r ../requirements.txt" in (ROOT / "binder" / "requirements.txt").read_text()
    post = ROOT / "binder" / "postBuild"
    assert post.stat().st_mode & 0o111, "postBuild must be executable"
    text = post.read_text()
    assert "pip install --no-deps ." in text and "jupyter/overrides.json" in text
    r = subprocess.run(["bash", "-n", str(post)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
