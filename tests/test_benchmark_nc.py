"""`omnigraph benchmark nc` on two small graphs: the files, the missing/skip notes and --resume."""
from __future__ import annotations

import csv
import json

from omnigraph.cli import main as cli


def _run(out, *extra):
    return cli(["benchmark", "nc", "--suite", "rgvt28", "--graphs", "cornell,texas_4_classes,pubmed",
                "--models", "rgvt,graphany,mlp", "--out", str(out), *extra])


def test_benchmark_nc_writes_csv_md_png_and_resumes(tmp_path, data_root, monkeypatch):
    monkeypatch.setenv("OMNIGRAPH_DATA", str(data_root))
    monkeypatch.setenv("OMNIGRAPH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    assert _run(out) == 0
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    ok = [r for r in rows if r["status"] == "ok"]
    # five head seeds by default, one row per graph, model and seed
    assert sorted((r["dataset"], r["model"], int(r["seed"])) for r in ok) == sorted(
        (g, m, s) for g in ("cornell", "texas_4_classes") for m in ("rgvt", "graphany", "mlp") for s in range(5))
    for r in ok:
        assert all(0 <= float(r[k]) <= 100 for k in ("test_accuracy", "balanced_accuracy", "macro_f1"))
        assert r["features"] == "binary sparse" and int(r["n_test"]) == 37
    # the head seed changes the MLP's numbers (else the spread would say nothing)
    assert len({r["test_accuracy"] for r in ok if r["model"] == "mlp" and r["dataset"] == "texas_4_classes"}) > 1
    # pubmed is not in the offline mirror: listed as missing, never silently dropped
    assert [r["status"] for r in rows if r["dataset"] == "pubmed"] == ["missing"]
    text = (out / "results.md").read_text()
    assert text.startswith("# Zero-shot node classification") and "pubmed: missing" in text
    assert "mean over 2 graphs" in text  # neither is a pretraining source (cora, wisconsin)
    assert "± " in text and "Balanced accuracy" in text and "| binary sparse | cornell, texas_4_classes |" in text
    assert (out / "results.png").stat().st_size > 1000
    first = json.loads((out / "summary.json").read_text())
    # --resume keeps the finished rows: the same numbers, and rows.jsonl is not rewritten
    log = (out / "rows.jsonl").read_text()
    assert _run(out, "--resume") == 0
    assert (out / "rows.jsonl").read_text() == log
    assert json.loads((out / "summary.json").read_text())["mean"] == first["mean"]
    # --resume with more seeds computes only the new ones
    assert _run(out, "--resume", "--seeds", "0,1,2,3,4,5") == 0
    added = (out / "rows.jsonl").read_text()[len(log):].splitlines()
    assert sorted(json.loads(line)["seed"] for line in added) == [5] * 6
