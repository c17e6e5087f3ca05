"""The node-classification report's aggregation on a tiny suite with known numbers, and feature types."""
from __future__ import annotations

import json

import pytest
import torch

from omnigraph.benchmark.nc_report import aggregate, write_reports
from omnigraph.datasets import FEATURE_TYPES, feature_type


def _row(graph, model, seed, acc, features="binary sparse", depth=None, seconds=1.0):
    return {"dataset": graph, "model": model, "seed": seed, "status": "ok", "features": features, "n_test": 100,
            "test_accuracy": acc, "balanced_accuracy": acc / 2, "macro_f1": acc / 4, "val_accuracy": acc,
            "depth": depth, "seconds": seconds}


@pytest.fixture
def rows():
    return [
        _row("a", "m1", 0, 80.0, depth=2), _row("a", "m1", 1, 84.0, depth=3),
        _row("a", "m2", 0, 70.0), _row("a", "m2", 1, 70.0),
        _row("b", "m1", 0, 60.0, "one-hot", depth=2, seconds=3.0), _row("b", "m1", 1, 64.0, "one-hot", depth=2),
        _row("b", "m2", 0, 50.0, "one-hot"), _row("b", "m2", 1, 56.0, "one-hot"),
        # a pretraining source: shown, in no mean
        _row("src", "m1", 0, 99.0), _row("src", "m2", 0, 99.0),
        # a graph one model did not run on is in no mean either
        _row("c", "m1", 0, 10.0),
        {"dataset": "d", "model": "*", "status": "missing", "note": "no files"},
    ]


def test_aggregate_means_stds_and_groups(rows):
    s = aggregate(rows, ["m1", "m2"], {"src"})
    assert s["graphs"] == ["a", "b"] and s["all_graphs"] == ["a", "b", "src"]
    a = s["per_graph"]["a"]["m1"]
    assert a["test_accuracy"] == 82.0 and a["test_accuracy_std"] == pytest.approx(2 ** 0.5 * 2)  # sample std
    assert a["depths"] == [2, 3] and a["seeds"] == [0, 1]
    assert s["per_graph"]["a"]["m2"]["test_accuracy_std"] == 0.0
    assert s["mean"] == {"m1": 72.0, "m2": 61.5}          # means of the per-graph means over a and b
    assert s["balanced_accuracy"]["m1"] == 36.0 and s["macro_f1"]["m2"] == pytest.approx(15.375)
    # per-seed means: m1 (80+60)/2=70, (84+64)/2=74 -> sample std 2*sqrt(2); m2 60, 63
    assert s["mean_std"]["m1"] == pytest.approx(2 ** 0.5 * 2) and s["mean_std"]["m2"] == pytest.approx(4.5 ** 0.5)
    assert s["mean_all"]["m1"] == pytest.approx((82 + 62 + 99) / 3)
    assert s["seconds"]["m1"] == pytest.approx(1.0 + 2.0)  # mean seconds per seed, summed over graphs
    assert s["groups"]["binary sparse"] == {"graphs": ["a"], "mean": {"m1": 82.0, "m2": 70.0}}
    assert s["groups"]["one-hot"]["mean"] == {"m1": 62.0, "m2": 53.0}
    assert s["groups"]["signed dense"] == {"graphs": [], "mean": {"m1": None, "m2": None}}


def test_write_reports_tables(rows, tmp_path):
    write_reports(rows, ["m1", "m2"], tmp_path, {"suite": "tiny", "protocol": "fast", "sources": ["src"]})
    text = (tmp_path / "results.md").read_text()
    assert "| a | binary sparse | 82.00 ± 2.83 (L=2,3) | 70.00 ± 0.00 |" in text
    assert "| **mean over 2 graphs** | | **72.00** ± 2.83 | **61.50** ± 2.12 |" in text
    assert "| one-hot | b | 62.00 | 53.00 |" in text and "Balanced accuracy" in text and "Macro-F1" in text
    assert "- d: missing — no files" in text and "src: pretraining source" in text
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["mean"] == {"m1": 72.0, "m2": 61.5} and summary["suite"] == "tiny"
    assert (tmp_path / "results.csv").read_text().splitlines()[0].startswith("dataset,split,split_seed,features")


def test_feature_type_groups():
    g = torch.Generator().manual_seed(0)
    binary_sparse = (torch.rand(50, 40, generator=g) < 0.02).float()
    assert feature_type(torch.eye(30)) == "one-hot"
    assert feature_type(torch.eye(30)[torch.randperm(30, generator=g)]) == "one-hot"   # any node order
    assert feature_type(binary_sparse) == "binary sparse"
    assert feature_type((torch.rand(50, 40, generator=g) < 0.5).float()) == "binary dense"
    assert feature_type(torch.randn(50, 40, generator=g)) == "signed dense"
    assert feature_type(torch.rand(50, 40, generator=g) + 0.5) == "unsigned dense"
    assert feature_type(binary_sparse * 3.0) == "sparse"
    assert feature_type(torch.randn(50, 40, generator=g), rows=7) == "signed dense"   # read in row blocks
    assert feature_type(torch.zeros(30, 30)) == "binary sparse"   # no row with exactly one non-zero
    assert set(FEATURE_TYPES) == {"signed dense", "unsigned dense", "sparse", "binary dense", "binary sparse",
                                  "one-hot"}
    with pytest.raises(ValueError, match=r"\[N, F\]"):
        feature_type(torch.ones(3))
