"""The command line ``python -m attnclust reproduce`` on a registry holding one cheap figure:
listing, drawing, unknown names (exit status 2), the subcommand hook. No book figure is
drawn here."""

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from attnclust import __main__ as cli
from attnclust.figures import _registry
from attnclust.figures._registry import FIGURES, FigureSpec


def _tiny(size="small"):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1 if size == "small" else 2])
    return fig


@pytest.fixture
def tiny_registry(monkeypatch):
    """Replace the registry by one cheap figure; restore it afterwards."""
    saved = dict(FIGURES)
    FIGURES.clear()
    FIGURES["tiny-line"] = FigureSpec("tiny-line", "icq_experiments", "A diagonal line.", _tiny)
    monkeypatch.setattr(_registry, "_load_all", lambda: None)
    yield
    FIGURES.clear()
    FIGURES.update(saved)


def test_list(tiny_registry, capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tiny-line" in out and "icq_experiments" in out and "A diagonal line." in out


def test_reproduce_one_writes_png_and_pdf(tiny_registry, tmp_path):
    assert cli.main(["reproduce", "tiny-line", "--out", str(tmp_path / "figs"), "--quiet"]) == 0
    assert (tmp_path / "figs" / "tiny-line.png").stat().st_size > 0
    assert (tmp_path / "figs" / "tiny-line.pdf").stat().st_size > 0


def test_reproduce_all_no_pdf_full_size(tiny_registry, tmp_path):
    assert cli.main(["reproduce", "all", "--out", str(tmp_path), "--size", "full", "--no-pdf", "--quiet"]) == 0
    assert (tmp_path / "tiny-line.png").exists()
    assert not (tmp_path / "tiny-line.pdf").exists()


def test_unknown_name_exits_2_with_list(tiny_registry, tmp_path, capsys):
    assert cli.main(["reproduce", "no-such-figure", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no-such-figure" in err and "tiny-line" in err
    assert not any(tmp_path.iterdir())


def test_missing_out_or_names_exit_2(tiny_registry, capsys):
    assert cli.main(["reproduce", "tiny-line"]) == 2
    assert cli.main(["reproduce", "--out", "x"]) == 2
    assert "--out" in capsys.readouterr().err


def test_bad_size_is_a_usage_error(tiny_registry):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "tiny-line", "--out", "x", "--size", "huge"])
    assert exc.value.code == 2


def test_no_subcommand_prints_help(capsys):
    assert cli.main([]) == 2
    assert "reproduce" in capsys.readouterr().out


def test_subcommand_hook(monkeypatch, capsys):
    def add_hello(sub):
        p = sub.add_parser("hello")
        p.set_defaults(func=lambda args: print("hi") or 0)

    monkeypatch.setattr(cli, "SUBCOMMANDS", cli.SUBCOMMANDS + [add_hello])
    assert cli.main(["hello"]) == 0
    assert capsys.readouterr().out.strip() == "hi"


def test_module_entry_point_lists_real_registry():
    """``python -m attnclust reproduce --list`` in a fresh process (imports the figure
    modules, draws nothing)."""
    out = subprocess.run([sys.executable, "-m", "attnclust", "reproduce", "--list"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for name in ("icq-distortion", "icq-stack", "beyond-digits"):
        assert name in out.stdout
