"""The replication build (attnclust.book.replication, scripts/replicate.py): claims recorded
under another master seed instead of failing, the report and its flips, the results folder a
replication reads, and a chapter run in a kernel under another seed."""

import json

import pytest

from attnclust.__main__ import main
from attnclust.assignments.source import MYST_HEADER
from attnclust.book import claims, experiments, replication, results, seeds


def _record(log, id_, value, bound=0.5):
    claims.claim(id_, f"The value {value} is at most {bound}.", setting=dict(L=1), evidence=dict(x=value),
                 verdict=claims.at_most(value, bound))


def test_record_to_records_a_flip_instead_of_raising(tmp_path):
    log = tmp_path / "claims.jsonl"
    claims.record_to(log)
    try:
        _record(log, "toy-low", 0.2)
        _record(log, "toy-high", 0.9)  # "fails", its prose written for "holds": recorded, not raised
    finally:
        claims.record_to(None)
    with pytest.raises(claims.ClaimError, match="toy-high"):
        _record(log, "toy-high", 0.9)
    rep = replication.report(3, log, [], expected_ids=["toy-low", "toy-high", "toy-never"], experiments={},
                             commit=None, clean=None)
    assert [(r["id"], r["verdict"], r["flipped"]) for r in rep["claims"]] == [
        ("toy-low", "holds", False), ("toy-high", "fails", True)]
    assert [r["id"] for r in replication.flips(rep)] == ["toy-high"]
    assert rep["not_recorded"] == ["toy-never"]
    assert rep["counts"] == {"claims": 2, "flipped": 1, "not_recorded": 1, "cell_errors": 0}
    assert rep["seed"] == 3


def test_load_reports_by_seed_and_skips_a_bad_one(tmp_path):
    folder = tmp_path / replication.REPORT_DIR
    folder.mkdir()
    for s in (12, 2):
        (folder / f"seed-{s}.json").write_text(json.dumps({"seed": s, "claims": []}))
    (folder / "seed-x.json").write_text("{not json")
    bad = []
    assert [r["seed"] for r in replication.load_reports(tmp_path, on_bad=bad.append)] == [2, 12]
    assert len(bad) == 1 and "seed-x.json" in bad[0]


def test_use_directory_points_load_at_a_replications_files(tmp_path):
    results.save("toy", {"n": 1}, command="c", sources=["attnclust/book/results/__init__.py"], directory=tmp_path)
    with pytest.raises(FileNotFoundError):
        results.load("toy")
    results.use_directory(tmp_path)
    try:
        assert results.directory() == tmp_path and results.load("toy").data == {"n": 1}
    finally:
        results.use_directory(None)
    assert results.directory() == results.RESULTS_DIR
    with pytest.raises(ValueError, match="existing folder"):
        results.use_directory(tmp_path / "missing")


def test_an_experiment_under_another_seed_never_writes_the_books_results(tmp_path, monkeypatch, capsys):
    import jax

    @experiments.committed("toy-seeded", sources=("attnclust/book/results/__init__.py",), description="a draw")
    def toy(size="full"):
        return {"x": float(jax.random.normal(jax.random.PRNGKey(1)))}

    try:
        monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "book")
        with pytest.raises(ValueError, match="replication never replaces"):
            experiments.run("toy-seeded", seed=4)
        assert main(["experiment", "toy-seeded", "--seed", "4"]) == 2
        assert "needs --out" in capsys.readouterr().err
        with pytest.raises(SystemExit) as e:
            main(["experiment", "toy-seeded", "--seed", "-1", "--out", str(tmp_path)])
        assert e.value.code == 2
        assert main(["experiment", "toy-seeded", "--size", "test", "--seed", "4", "--out", str(tmp_path / "r4")]) == 0
        assert main(["experiment", "toy-seeded", "--size", "test", "--seed", "5", "--out", str(tmp_path / "r5")]) == 0
        r4, r5 = (results.load("toy-seeded", directory=tmp_path / f"r{s}") for s in (4, 5))
        assert r4.data["seed"] == 4 and r4.command.endswith("--seed 4 --out DIR")
        assert r4.data["x"] != r5.data["x"]
        with seeds.replicating(4):
            assert r4.data["x"] == pytest.approx(float(jax.random.normal(jax.random.PRNGKey(1))))
        assert seeds.master() == seeds.BOOK_SEED  # the run restored the book's seed
        assert not (tmp_path / "book").exists()
    finally:
        experiments.COMMITTED.pop("toy-seeded", None)


CHAPTER = MYST_HEADER + """

# Toy

```{code-cell} python3
import jax
from attnclust.book import claims
x = float(jax.random.uniform(jax.random.PRNGKey(0)))
claims.claim("toy-draw", "A draw.", setting=dict(seed=0), evidence=dict(x=x),
             verdict=claims.at_most(x, 2.0))
claims.claim("toy-small-draw", "A draw below a tenth.", setting=dict(seed=0), evidence=dict(x=x),
             verdict=claims.at_most(x, 0.1), expect=("holds", "fails"))
```

```{code-cell} python3
raise RuntimeError("a cell that fails")
```

```{code-cell} python3
claims.claim("toy-after", "After the failing cell.", setting=dict(seed=0), evidence=dict(x=x),
             verdict=claims.at_most(x, 0.1))
```
"""


@pytest.mark.integration
def test_a_chapter_under_two_seeds_records_each_draw_and_every_cell_runs(tmp_path):
    page = tmp_path / "toy.md"
    page.write_text(CHAPTER)
    drawn = {}
    for s in (3, 8):
        log = tmp_path / f"claims-{s}.jsonl"
        run = replication.run_chapter(page, replication.setup_source(s, tmp_path, log))
        assert [e.error for e in run.errors] == ["RuntimeError: a cell that fails"] and run.errors[0].cell == 2
        rep = replication.report(s, log, [run], expected_ids=["toy-draw", "toy-small-draw", "toy-after"],
                                 experiments={}, commit=None, clean=None)
        assert [r["id"] for r in rep["claims"]] == ["toy-draw", "toy-small-draw", "toy-after"]
        drawn[s] = rep["claims"][0]["evidence"]["x"]
        with seeds.replicating(s):
            import jax
            assert drawn[s] == pytest.approx(float(jax.random.uniform(jax.random.PRNGKey(0))))
        after = rep["claims"][2]
        assert after["flipped"] == (drawn[s] > 0.1)
    assert drawn[3] != drawn[8]


def test_committed_reports_are_whole_and_agree_with_their_counts():
    """Each committed replication report (make replicate SEED=N) is under a seed other than the
    book's, names the commit it ran at, and its counts are those of its rows; every claim it
    recorded is a claim some chapter shows."""
    import re

    from attnclust.book.results import SOURCE_ROOT

    reports = replication.load_reports(SOURCE_ROOT)
    assert reports, "no committed replication report (replications/seed-N.json)"
    shown = set()
    for page in (SOURCE_ROOT / "chapters").glob("*.md"):
        shown |= set(re.findall(r"\{claim\}`([a-z0-9-]+)`", page.read_text(encoding="utf-8")))
    for rep in reports:
        assert rep["seed"] != seeds.BOOK_SEED and rep["commit"]
        rows = rep["claims"]
        assert rep["counts"]["claims"] == len(rows) == len({r["id"] for r in rows})
        assert rep["counts"]["flipped"] == sum(r["flipped"] for r in rows)
        assert all(r["flipped"] == (r["verdict"] not in r["expect"]) for r in rows)
        assert rep["counts"]["not_recorded"] == len(rep["not_recorded"])
        assert {r["id"] for r in rows} <= shown, "a report names a claim no chapter shows"
