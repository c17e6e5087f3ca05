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
    assert {(r["dataset"], r["model"]) for r in ok} == {(g, m) for g in ("cornell", "texas_4_classes")
                                                        for m in ("rgvt", "graphany", "mlp")}
    assert all(0 <= float(r["test_accuracy"]) <= 100 for r in ok)
    # pubmed is not in the offline mirror: listed as missing, never silently dropped
    assert [r["status"] for r in rows if r["dataset"] == "pubmed"] == ["missing"]
    text = (out / "results.md").read_text()
    assert text.startswith("# Zero-shot node classification") and "pubmed: missing" in text
    assert "mean over 2 graphs" in text  # neither is a pretraining source (cora, wisconsin)
    assert (out / "results.png").stat().st_size > 1000
    first = json.loads((out / "summary.json").read_text())
    # --resume keeps the finished rows: the same numbers, and rows.jsonl is not rewritten
    log = (out / "rows.jsonl").read_text()
    assert _run(out, "--resume") == 0
    assert (out / "rows.jsonl").read_text() == log
    assert json.loads((out / "summary.json").read_text())["mean"] == first["mean"]
