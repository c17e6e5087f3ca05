"""The synthetic graph generator, and a smoke run of the performance benchmark driver."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from omnigraph.datasets import synthetic_graph
from omnigraph.validation import check_graph

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind", ["sbm", "power_law"])
def test_synthetic_graph_is_valid_seeded_and_homophilous(kind):
    d = synthetic_graph(3000, 30000, num_features=8, num_classes=4, kind=kind, homophily=0.8, seed=1)
    check_graph(d)
    ei = d.edge_index
    assert d.x.shape == (3000, 8) and d.y.shape == (3000,) and int(d.y.max()) == 3
    assert not (ei[0] == ei[1]).any()                                   # no self-loops
    assert torch.equal(torch.sort(ei[0] * 3000 + ei[1]).values,         # symmetric
                       torch.sort(ei[1] * 3000 + ei[0]).values)
    same = float((d.y[ei[0]] == d.y[ei[1]]).float().mean())
    assert abs(same - (0.8 + 0.2 / 4)) < 0.03                           # homophily + chance
    again = synthetic_graph(3000, 30000, num_features=8, num_classes=4, kind=kind, homophily=0.8, seed=1)
    assert torch.equal(again.edge_index, ei) and torch.equal(again.x, d.x)
    assert not torch.equal(synthetic_graph(3000, 30000, num_features=8, num_classes=4, kind=kind, seed=2).x, d.x)
    # class-correlated features: class means differ far more than noise would allow
    means = torch.stack([d.x[d.y == c].mean(0) for c in range(4)])
    assert float(torch.cdist(means, means).max()) > 0.5


def test_feature_kinds_and_heterophily():
    from omnigraph.datasets import feature_type

    kw = {"num_nodes": 2000, "num_edges": 20000, "num_classes": 4, "seed": 3}
    het = synthetic_graph(**kw, homophily=0.1, cross="other")
    ei = het.edge_index
    assert abs(float((het.y[ei[0]] == het.y[ei[1]]).float().mean()) - 0.1) < 0.03   # below chance (0.25)
    binary = synthetic_graph(**kw, num_features=200, features="binary", density=0.05, feature_signal=0.8)
    assert feature_type(binary.x) == "binary sparse" and abs(float(binary.x.mean()) - 0.05) < 0.01
    rates = torch.stack([binary.x[binary.y == c].mean(0) for c in range(4)])
    assert float((rates[0] - rates[1]).abs().mean()) > 0.01            # class topics differ
    onehot = synthetic_graph(**kw, features="onehot")
    assert torch.equal(onehot.x, torch.eye(2000)) and feature_type(onehot.x) == "one-hot"


def test_synthetic_prior_spans_the_regimes():
    from omnigraph.datasets import feature_type
    from omnigraph.datasets.synthetic import PRIOR_V1, synthetic_prior

    graphs = synthetic_prior(seed=0)
    assert len(graphs) == len(PRIOR_V1)
    for g in graphs:
        check_graph(g)
        assert not (g.train_mask & g.val_mask).any() and int(g.train_mask.sum()) >= 2 * (int(g.y.max()) + 1)
    types = {feature_type(g.x) for g in graphs}
    assert {"signed dense", "binary sparse", "binary dense", "one-hot"} <= types
    homophily = [float((g.y[g.edge_index[0]] == g.y[g.edge_index[1]]).float().mean()) for g in graphs]
    assert min(homophily) < 0.15 and max(homophily) > 0.85
    assert max(g.num_nodes for g in graphs) >= 10**5 and {2, 40} <= {int(g.y.max()) + 1 for g in graphs}
    assert torch.equal(synthetic_prior(seed=0)[3].edge_index, graphs[3].edge_index)   # seeded
    assert not torch.equal(synthetic_prior(seed=1)[3].edge_index, graphs[3].edge_index)


def test_power_law_has_heavier_tail_than_sbm():
    deg = {k: torch.bincount(synthetic_graph(5000, 50000, 4, kind=k, seed=0).edge_index[0], minlength=5000)
           for k in ("sbm", "power_law")}
    assert int(deg["power_law"].max()) > 5 * int(deg["sbm"].max())


@pytest.mark.parametrize("kwargs, match", [
    ({"kind": "grid"}, "kind must be"), ({"homophily": 1.5}, "homophily"), ({"num_classes": 0}, "num_classes"),
    ({"kind": "power_law", "power_law_exponent": 1.0}, "power_law_exponent"), ({"num_edges": -1}, "num_edges"),
    ({"features": "text"}, "features must be"), ({"cross": "near"}, "cross one of"), ({"density": 0.0}, "density"),
    ({"features": "onehot", "num_nodes": 10**6}, "N x N"), ({"cross": "other", "num_classes": 1}, "num_classes >= 2"),
])
def test_synthetic_graph_rejects_bad_arguments(kwargs, match):
    args = {"num_nodes": 100, "num_edges": 500, **kwargs}
    with pytest.raises(ValueError, match=match):
        synthetic_graph(**args)


@pytest.mark.slow
def test_perf_driver_smoke(tmp_path, data_root):
    """Every section but the external GraphAny script, on tiny graphs: JSON + markdown + plot come out."""
    env = {**os.environ, "OMNIGRAPH_DATA": str(data_root)}
    cmd = [sys.executable, str(ROOT / "benchmarks" / "perf.py"), "--smoke", "--threads", "1",
           "--only", "rgvt_memory,rgvt_backends,fingerprint,propagation,scaling,roofline,reorder", "--out", str(tmp_path)]
    subprocess.run(cmd, check=True, env=env, timeout=600, capture_output=True)
    results = json.loads((tmp_path / "perf.json").read_text())
    for section in ("rgvt_memory", "rgvt_backends", "fingerprint", "propagation"):
        assert all("error" not in r for r in results[section].values()), results[section]
    rgvt = results["rgvt_memory"]["coauthor_physics"]
    assert rgvt["nodes"] == 2708 and rgvt["peak_rss_mib"] > rgvt["interpreter_mib"] > rgvt["x_mib"] > 0
    assert rgvt["test_accuracy"] > 0.7 and 1 <= rgvt["depth"] <= 8    # fit + predict really ran
    assert all(0.2 < r["ratio"] < 5 for r in results["propagation"].values())
    cora = results["rgvt_backends"]["cora"]      # 1,433-column chunks: bags in the COO kernel's order
    assert cora["default"] == "embedding_bag" and cora["torch_s"] > 0 and cora["embedding_bag_s"] > 0
    assert cora["max_rel_diff"] < 1e-6
    assert set(results["scaling"]["fits"]) == {"rgvt", "refi"}
    for row in results["scaling"]["rows"]:
        costs = row["spmm"]["ns_per_entry_column"]
        assert set(costs) == {"csr", "blocked_csr", "embedding_bag"} and all(v > 0 for v in costs.values())
    roof = results["roofline"]
    assert roof["rates"]["stream_gbps"] > 0 and all(v > 0 for v in roof["rates"]["dram_gather_ns"].values())
    for row in roof["rows"]:
        for product in row["products"].values():
            assert product["default"] in product["seconds"] and 0 < product["roofline_s"] < product["dram_ceiling_s"]
            assert all(f > 0 for f in product["fraction_of_roofline"].values())
    for key, row in results["reorder"].items():
        assert "error" not in row, (key, row)
        for order in ("rcm", "degree"):
            assert row["orders"][order]["seconds"] > 0
            assert row["orders"][order].get("same_prediction", 1.0) >= 0.99
            assert row["orders"][order]["max_abs_diff"] < 0.5
    text = (tmp_path / "performance.md").read_text()
    assert "roofline" in text and "Node reordering" in text
    assert "time exponent" in text and "--smoke" in text and "| embedding_bag |" in text
    assert (tmp_path / "perf_scaling.png").stat().st_size > 1000
