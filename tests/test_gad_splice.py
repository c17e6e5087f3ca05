"""benchmarks/gad_splice.py: some detectors' rows of a committed GAD page replaced by a newer run's."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from omnigraph.benchmark.gad_report import seconds_per_graph

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gad_splice.py"


def _splice_module():
    spec = importlib.util.spec_from_file_location("gad_splice", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(model, aurocs, seconds, cold=None):
    per_seed = [{"seed": i, "auroc_excluded": a, "auprc_excluded": a / 2, "auroc_included": a,
                 "auprc_included": a / 2} for i, a in enumerate(aurocs)]
    row = {"protocol": "reduced-v1", "regime": "zero-shot", "k_normal": 0, "k_anomaly": 0, "target": "gad/cora",
           "model": model, "status": "ok", "auroc": 100 * sum(aurocs) / len(aurocs), "auroc_std": 0.0,
           "auprc": 50 * sum(aurocs) / len(aurocs), "auprc_std": 0.0, "auroc_incl": 0.0, "auroc_std_incl": 0.0,
           "auprc_incl": 0.0, "auprc_std_incl": 0.0, "seconds": seconds, "per_seed": per_seed}
    if cold is not None:
        row["cold_seconds"] = cold
    return row


def _meta(models, seeds):
    return {"protocol": "smoke", "title": "t", "sources": ["gad/citeseer"], "targets": ["gad/cora"],
            "missing_targets": [], "models": models, "regimes": ["zero-shot"], "seeds": seeds,
            "trained_in_run": [], "torch": "x", "python": "y", "date": "2026-01-01"}


def test_splice_replaces_rows_on_the_pages_seeds_and_keeps_the_others(tmp_path):
    mod = _splice_module()
    page = {"rows": [_row("ours", [0.6], 9.0), _row("pygod:x", [0.7], 4.0)], "meta": _meta(["ours", "pygod:x"], [0]),
            "command": "old command"}
    run = {"rows": [_row("ours", [0.9, 0.5], 3.0, cold=2.5)], "meta": {**_meta(["ours"], [0, 1]), "date": "2026-12-06"}}
    (tmp_path / "page").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "page" / "gad_results.json").write_text(json.dumps(page))
    (tmp_path / "run" / "gad_results.json").write_text(json.dumps(run))
    assert mod.main(["--page", str(tmp_path / "page"), "--run", str(tmp_path / "run"), "--models", "ours",
                     "--command", "new command"]) == 0
    out = json.loads((tmp_path / "page" / "gad_results.json").read_text())
    ours, other = out["rows"]
    assert ours["auroc"] == pytest.approx(90.0) and ours["protocol"] == "smoke" and len(ours["per_seed"]) == 1
    assert ours["seconds"] == 2.5 and seconds_per_graph(ours, 1) == 2.5     # seed 0 alone: its first call
    assert other["auroc"] == pytest.approx(70.0) and seconds_per_graph(other, 1) == 4.0
    assert out["command"] == "old command" and out["meta"]["spliced"]["command"] == "new command"
    assert "new command" in (tmp_path / "page" / "gad_results.md").read_text()

    page["meta"]["seeds"] = [0, 1, 2]        # the run lacks a seed the page needs
    (tmp_path / "page" / "gad_results.json").write_text(json.dumps(page))
    with pytest.raises(ValueError, match="needs"):
        mod.main(["--page", str(tmp_path / "page"), "--run", str(tmp_path / "run"), "--models", "ours",
                  "--command", "c"])
