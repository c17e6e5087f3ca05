"""Parity of GraphAny with the authors' released weights (node-classification spec §6.2, §5.3).

Reference weights: DeepGraphLearning/GraphAny @ 02c810e (MIT), re-serialised as npz + json in
``$OMNIGRAPH_REFERENCE/graphany`` and read in place (never copied). Graphs: Yandex npz
(Platonov et al., ICLR 2023), split 0. Inference is deterministic, so the spec's test-node
counts are expected exactly; the tolerance is the spec's +-2 test nodes.
"""
from __future__ import annotations

import pytest
import torch
from test_graphany_model import one_thread  # noqa: F401  (autouse fixture: one thread)

from omnigraph.datasets.yandex import load_yandex_npz
from omnigraph.estimators.graphany import GraphAny
from omnigraph.models.graphany import GraphAnyModel

# spec §6.2: Wisconsin checkpoint, correct test nodes / test size
WISCONSIN_EXPECTED = {"cornell": (24, 37), "wisconsin": (32, 51), "texas_4_classes": (27, 37)}
# spec §5.3 [M]: (Arxiv, Cora) checkpoints in percent, the same graphs
OTHER_EXPECTED = {"arxiv": {"cornell": 64.86, "wisconsin": 60.78, "texas_4_classes": 75.68},
                  "cora": {"cornell": 62.16, "wisconsin": 58.82, "texas_4_classes": 72.97}}
# spec §5.3 [M], a larger graph (Wisconsin checkpoint), percent of 194 test nodes. squirrel_filtered
# (25.44 % of 452) also matches exactly but needs five SVDs of 1053 x 2089 (~20 s), so it is left
# to benchmarks.
LARGER_EXPECTED = {"chameleon_filtered": (26.29, 194)}


def _ckpt(reference_root, name):
    path = reference_root / "graphany" / f"graph_any_{name}.npz"
    if not path.is_file():
        pytest.fail(f"reference weights missing: {path}")
    return path


def _graph(data_root, name):
    path = data_root / "yandex" / f"{name}.npz"
    if not path.is_file():
        pytest.fail(f"dataset missing: {path}")
    return load_yandex_npz(path, split=0)


def _correct(pred, data):
    return int((pred[data.test_mask] == data.y[data.test_mask]).sum())


def test_reference_weights_load_in_place(reference_root):
    import numpy as np

    path = _ckpt(reference_root, "wisconsin")
    model = GraphAnyModel.from_reference_npz(path)
    cfg = model.get_config()
    assert (cfg["n_hidden"], cfg["n_mlp_layer"], cfg["entropy"], cfg["attn_temp"], cfg["n_per_label_examples"]) \
        == (32, 2, 1.0, 5.0, 5)
    with np.load(path, allow_pickle=False) as f:
        for key in f.files:
            ours = model.state_dict()["attention." + key[len("gnn_model.mlp."):]]
            assert np.array_equal(ours.numpy(), f[key]), key
    cora = GraphAnyModel.from_reference_npz(_ckpt(reference_root, "cora"))
    assert cora.entropy == 2.0 and cora.n_mlp_layer == 1       # entropy travels with the weights
    assert not model.training


@pytest.mark.parametrize("graph", sorted(WISCONSIN_EXPECTED))
def test_wisconsin_checkpoint_parity(graph, data_root, reference_root):
    data = _graph(data_root, graph)
    clf = GraphAny.from_pretrained(_ckpt(reference_root, "wisconsin")).fit(data)
    correct, total = WISCONSIN_EXPECTED[graph]
    assert int(data.test_mask.sum()) == total
    got = _correct(clf.predict(data), data)
    assert abs(got - correct) <= 2, f"{graph}: {got}/{total} correct, expected {correct}"
    assert clf.score(data) == pytest.approx(got / total)


def test_arxiv_and_cora_checkpoints(data_root, reference_root):
    models = {name: GraphAnyModel.from_reference_npz(_ckpt(reference_root, name)) for name in OTHER_EXPECTED}
    for graph in WISCONSIN_EXPECTED:
        data = _graph(data_root, graph)
        ref = data.train_mask.nonzero().flatten()
        for name, model in models.items():
            with torch.no_grad():
                z, _ = model(data.x, data.edge_index, data.y, ref, int(data.y.max()) + 1)
            total = int(data.test_mask.sum())
            expected = round(OTHER_EXPECTED[name][graph] / 100 * total)
            got = _correct(z.argmax(-1), data)
            assert abs(got - expected) <= 2, f"{name} on {graph}: {got}/{total}, expected {expected}"


@pytest.mark.slow
@pytest.mark.parametrize("graph", sorted(LARGER_EXPECTED))
def test_wisconsin_checkpoint_larger_graphs(graph, data_root, reference_root):
    data = _graph(data_root, graph)
    clf = GraphAny.from_pretrained(_ckpt(reference_root, "wisconsin")).fit(data)
    pct, total = LARGER_EXPECTED[graph]
    expected = round(pct / 100 * total)
    got = _correct(clf.predict(data), data)
    assert abs(got - expected) <= 3, f"{graph}: {got}/{total}, expected {expected}"


@pytest.mark.slow
def test_arxiv_checkpoint_on_planetoid_public_split(data_root, reference_root, tmp_path):
    """README of the reference repo (seed 0, Arxiv checkpoint): Cora test 79.4 (val 75.4),
    CiteSeer test 68.4 (val 70.4). PyG processes a writable copy of the mirror's raw files."""
    import shutil

    from torch_geometric.datasets import Planetoid

    clf = GraphAny.from_pretrained(_ckpt(reference_root, "arxiv"))
    for name, (val, test) in {"Cora": (377, 794), "CiteSeer": (352, 684)}.items():
        src = data_root / "pyg" / name / "raw"
        if not src.is_dir():
            pytest.fail(f"dataset missing: {src}")
        shutil.copytree(src, tmp_path / name / "raw")
        data = Planetoid(str(tmp_path), name)[0]
        clf.fit(data)
        pred = clf.predict(data)
        got_val = int((pred[data.val_mask] == data.y[data.val_mask]).sum())    # of 500
        got_test = _correct(pred, data)                                         # of 1000
        assert abs(got_val - val) <= 2 and abs(got_test - test) <= 2, (name, got_val, got_test)
