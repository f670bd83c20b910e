"""scripts/claim_margins.py: it lists the claims whose verdict is close to changing, from a
built ledger (claims.json) and from an executed notebook's glued records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from attnclust.book import claims
from attnclust import stats

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "claim_margins.py"
spec = importlib.util.spec_from_file_location("claim_margins", SCRIPT)
cm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cm)


def record(id, verdict, evidence):
    return claims.claim(id, "A toy.", setting=dict(L=50), evidence=evidence, verdict=verdict,
                        expect=verdict.kind).as_dict()


def test_lists_the_close_calls_smallest_first(tmp_path, capsys):
    near = stats.Interval(0.52, 0.50, 0.54)   # s.e. 0.0102: 2.45 s.e. above 0.495
    far = stats.Interval(0.90, 0.85, 0.95)
    recs = [record("toy-far", claims.at_least(far, 0.5), dict(x=far)),
            record("toy-near", claims.at_least(near, 0.495), dict(x=near)),
            record("toy-open", claims.at_least(near, 0.51), dict(x=near)),
            record("toy-plain", claims.at_most(1.085, 1.1), dict(x=1.085))]
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"claims": recs}))
    assert cm.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 claims; 3 decided on a statistic" in out
    listed = [line.split()[3] for line in out.splitlines() if " s.e.  " in line]
    assert listed == ["toy-open", "toy-near"]  # toy-far is 16 s.e. away
    assert "toy-plain" in out and "+1.4%" in out


def test_reads_an_executed_notebook(tmp_path):
    iv = stats.Interval(0.6, 0.55, 0.65)
    rec = record("toy-nb", claims.at_least(iv, 0.5), dict(x=iv))
    nb = {"cells": [{"outputs": [{"output_type": "display_data", "data": {cm.GLUED: rec}}]}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    (got,) = cm.records(path)
    assert got["id"] == "toy-nb" and cm.margin(got)[0] == rec["margin_se"]


def test_an_older_ledger_is_read_from_the_detail():
    iv = stats.Interval(0.6, 0.55, 0.65)
    rec = record("toy-old", claims.at_least(iv, 0.5), dict(x=iv))
    z = rec.pop("margin_se")
    assert cm.margin(rec) == (z, "s.e.")


def test_lists_an_all_of_that_holds_by_a_hair(tmp_path, capsys):
    """A sentence of several checks that holds has no detail; the script still lists it when
    one of its parts is a plain number within a hair of its threshold (|cos| 0.9512 against
    0.95), and not when every part is far."""
    hair = claims.all_of(claims.holds_if(True, "no"), claims.at_least(0.9512, 0.95, scale="angle"))
    far = claims.all_of(claims.holds_if(True, "no"), claims.at_least(0.999, 0.95, scale="angle"))
    recs = [record("toy-hair", hair, dict(cos=0.9512)), record("toy-far", far, dict(cos=0.999))]
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"claims": recs}))
    cm.main([str(path)])
    out = capsys.readouterr().out
    assert "toy-hair: 0.9512 >= 0.95 on the angle scale" in out and "toy-far" not in out
