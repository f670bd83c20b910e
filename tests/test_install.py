"""``pip install`` of the repository into a fresh virtual environment outside any clone:
the science core alone imports and trains without the book's dependencies, every committed
results file loads (package data), ``reproduce`` names the extra it needs, and with the
``[figures]`` extra it lists and draws the book's figures."""

import json
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BOOK_DEPENDENCIES = ("matplotlib", "PIL", "ipywidgets", "IPython", "nbclient", "nbformat",
                     "myst_nb", "jupyter_book", "yaml")
"""Modules of the extras that a bare ``pip install attnclust`` must not bring in."""

CORE_CHECK = """
import importlib.util, json, sys
import jax
import attnclust as ac, attnclust.stationary, attnclust.temperature, attnclust.stats
import attnclust.baselines, attnclust.symbolic, attnclust.digits
from attnclust.book import results
mixture = ac.orthogonal_mixture(K=2, d=3, r=2.0, sigma=0.5)
fit = ac.fit(jax.random.PRNGKey(0), mixture, lam=1.0, steps=4, batch=2, L=8, progress=False)
stored = {p.stem: results.load(p.stem) for p in sorted(results.RESULTS_DIR.glob("*.json"))}
print(json.dumps({
    "installed_at": ac.__file__,
    "absent": [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None],
    "loaded": sorted(m for m in sys.argv[1:] if m in sys.modules),
    "risk_finite": bool(jax.numpy.isfinite(fit.risk).all()),
    "results": sorted(stored),
    "stale": sorted(n for n, s in stored.items() if s.stale),
}))
"""


def _run(*cmd, cwd, timeout=900) -> subprocess.CompletedProcess:
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, (cmd, out.stdout[-2000:], out.stderr[-4000:])
    return out


@pytest.mark.integration
def test_pip_install_outside_a_clone(tmp_path):
    # a copy of the committed tree (no .venv, no build outputs) installed as a user would
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "_build", "build",
                                                              "*.egg-info", "__pycache__", ".jax-cache"))
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    work = tmp_path / "elsewhere"
    work.mkdir()
    _run(py, "-m", "pip", "install", "-q", str(src), cwd=work)

    out = _run(py, "-c", CORE_CHECK, *BOOK_DEPENDENCIES, cwd=work)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(report["installed_at"]).is_relative_to(env_dir), report["installed_at"]
    assert sorted(report["absent"]) == sorted(BOOK_DEPENDENCIES), report
    assert report["loaded"] == [], report
    assert report["risk_finite"]
    committed = sorted(p.stem for p in (ROOT / "attnclust" / "book" / "results").glob("*.json"))
    assert committed and report["results"] == committed
    assert report["stale"] == []

    bare = subprocess.run([py, "-m", "attnclust", "reproduce", "--list"], cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert bare.returncode == 1, (bare.stdout, bare.stderr)
    assert bare.stderr.strip().count("\n") == 0
    assert "pip install 'attnclust[figures]'" in bare.stderr

    _run(py, "-m", "pip", "install", "-q", f"{src}[figures]", cwd=work)
    listed = _run(py, "-m", "attnclust", "reproduce", "--list", cwd=work)
    assert "preface-layers" in listed.stdout and "icq-sweeps" in listed.stdout
    _run(py, "-m", "attnclust", "reproduce", "icq-sweeps", "--out", work / "figs", "--no-pdf",
         "--quiet", cwd=work)
    assert (work / "figs" / "icq-sweeps.png").stat().st_size > 10_000
