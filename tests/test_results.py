"""attnclust.book.results and the committed experiments: provenance, staleness, the command line."""

import json

import numpy as np
import pytest

from attnclust.book import experiments, results
from attnclust.__main__ import main
from attnclust.setting import DEFAULT


def test_save_load_round_trip_with_provenance(tmp_path):
    data = {"L": [25, 50], "eig": np.array([[0.05, 4.2]]), "limit": float("inf"), "label": "x"}
    path = results.save("toy", data, command="python -m attnclust experiment toy",
                        sources=["attnclust/book/results/__init__.py"], directory=tmp_path)
    stored = results.load("toy", directory=tmp_path)
    assert stored.data["eig"] == [[0.05, 4.2]] and stored.data["limit"] == float("inf")
    assert stored.command.startswith("python -m") and stored.date[:2] == "20"
    assert not stored.stale
    assert "toy" in stored.provenance() and stored.date[:10] in stored.provenance()
    # a change to a source makes the file stale
    record = json.loads(path.read_text())
    record["sources_hash"] = "0" * 64
    path.write_text(json.dumps(record))
    assert results.load("toy", directory=tmp_path).stale


@pytest.mark.usefixtures("typecheck_off")
def test_bad_results_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="experiment missing"):
        results.load("missing", directory=tmp_path)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a results file"):
        results.load("bad", directory=tmp_path)
    with pytest.raises(ValueError, match="name"):
        results.save("../x", {}, command="c", sources=["attnclust/book/results/__init__.py"], directory=tmp_path)
    with pytest.raises(ValueError, match="no such file"):
        results.save("x", {}, command="c", sources=["nope.py"], directory=tmp_path)
    with pytest.raises(TypeError, match="JSON-like"):
        results.save("x", {"f": object()}, command="c", sources=["attnclust/book/results/__init__.py"], directory=tmp_path)


def test_committed_experiment_runs_from_the_command_line(tmp_path, monkeypatch, capsys):
    @experiments.committed("toy-exp", sources=("attnclust/book/results/__init__.py",), description="a toy")
    def toy(size="full"):
        return {"n": 3 if size == "full" else 1}

    try:
        monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
        assert main(["experiment", "--list"]) == 0 and "toy-exp  a toy" in capsys.readouterr().out
        assert main(["experiment", "toy-exp", "--size", "test"]) == 0
        stored = results.load("toy-exp", directory=tmp_path)
        assert stored.data == {"size": "test", "n": 1}
        assert stored.command == "python -m attnclust experiment toy-exp --size test"
        # a test's own file is not a library source; the default setting always is
        assert stored.sources == (experiments.SETTING, "attnclust/book/results/__init__.py")
        assert main(["experiment", "nope"]) == 2
    finally:
        experiments.COMMITTED.pop("toy-exp", None)


def test_every_committed_results_file_is_fresh():
    """Each results/*.json belongs to a registered experiment, and no source it depends on
    changed since it was written (else: rerun the command it records)."""
    known = experiments.names()
    for path in sorted(results.RESULTS_DIR.glob("*.json")):
        stored = results.load(path.stem)
        assert path.stem in known, f"{path.name}: no committed experiment of that name"
        assert set(stored.sources) >= set(experiments.COMMITTED[path.stem].sources), path.name
        assert not stored.stale, f"{path.name} is stale: run `{stored.command}`"


def test_a_changed_default_makes_every_results_file_stale(tmp_path, monkeypatch):
    """Every committed experiment depends on the default setting: editing a default value in
    ``attnclust/setting.py`` (here sigma, in a copy of the sources) changes the hash that
    decides whether its results file is fresh."""
    experiments.names()
    for exp in experiments.COMMITTED.values():
        assert experiments.SETTING in exp.sources, exp.name
        for rel in exp.sources:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text((results.SOURCE_ROOT / rel).read_text())
    monkeypatch.setattr(results, "SOURCE_ROOT", tmp_path)
    before = {name: results.sources_hash(exp.sources) for name, exp in experiments.COMMITTED.items()}
    setting = tmp_path / experiments.SETTING
    text = setting.read_text()
    line = f"sigma: float = {DEFAULT.sigma!r}"
    assert text.count(line) == 1
    setting.write_text(text.replace(line, f"sigma: float = {2 * DEFAULT.sigma!r}"))
    after = {name: results.sources_hash(exp.sources) for name, exp in experiments.COMMITTED.items()}
    assert all(before[name] != after[name] for name in before)


def test_code_of_ignores_documentation_not_code():
    """A results file stays fresh when only docstrings or comments of its sources change,
    and goes stale when the code does."""
    from attnclust.book.results import code_of

    base = 'X = 1\n"""X: doc."""\n\n\ndef f(a):\n    """Doc."""\n    return a + X  # note\n'
    docs = 'X = 1\n"""Another doc."""\n\n\ndef f(a):\n    """Other."""\n    # a comment\n    return a + X\n'
    code = 'X = 1\n"""X: doc."""\n\n\ndef f(a):\n    """Doc."""\n    return a - X  # note\n'
    assert code_of(base, "m.py") == code_of(docs, "m.py")
    assert code_of(base, "m.py") != code_of(code, "m.py")
    assert code_of(base, "m.txt") != code_of(docs, "m.txt")  # other files: their bytes
