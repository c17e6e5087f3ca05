"""The pseudo-anomaly orientation: fitted on the sources at pretraining, stored with the checkpoint,
applied by the estimator when a target has no labelled anomaly (omnigraph.models.pseudo_support)."""
from __future__ import annotations

import json

import pytest
import torch
from gad_helpers import hub_anomaly_graph

from omnigraph import REFIGAD
from omnigraph.models.fingerprint import COLUMNS, graph_fingerprint
from omnigraph.models.pseudo_support import atypicality, orientation_features, oriented_atypicality
from omnigraph.models.refi_gad import REFIGADNet
from omnigraph.training.refi_gad import fit_orientation, pretrain_refi_gad

TINY = {"epochs": 1, "episodes_per_graph": 2, "shots": 10, "num_query_normal": 50, "num_query_anomaly": 10,
        "d_model": 16, "num_layers": 1, "ff_dim": 32}


@pytest.fixture(scope="module")
def graph():
    return hub_anomaly_graph(n=300, n_anom=20, seed=5)


def test_features_and_score():
    p = torch.tensor([[50.0, 100, 0, 75, 25]])
    assert torch.equal(orientation_features(p), torch.tensor([[0.0, 1, -1, 0.5, -0.5, 0, 1, 1, 0.5, 0.5]],
                                                             dtype=torch.float64))
    # atypicality is the orientation that weighs every unsigned deviation alike
    ones = [0.0] * 5 + [1.0] * 5
    ps = torch.rand(40, 5, generator=torch.Generator().manual_seed(0)) * 100
    torch.testing.assert_close(oriented_atypicality(ps, ones), atypicality(ps).double() / 50)
    with pytest.raises(ValueError, match="10 finite weights"):
        oriented_atypicality(ps, [1.0] * 5)
    with pytest.raises(ValueError, match="10 finite weights"):
        oriented_atypicality(ps, [float("nan")] * 10)


def test_fit_learns_which_way_the_sources_anomalies_lie(graph):
    p = graph_fingerprint(graph, cache=False)
    w = fit_orientation([p], [graph.y])
    assert w == fit_orientation([p], [graph.y])                       # deterministic
    degree = COLUMNS.index("degree")
    assert w[degree] > 0                                              # the anomalies are high-degree hubs
    flipped = 100 - p                                                 # the same graph, every rank reversed
    assert fit_orientation([flipped], [graph.y])[degree] < 0
    from sklearn.metrics import roc_auc_score
    assert roc_auc_score(graph.y.numpy(), oriented_atypicality(p, w).numpy()) > 0.9
    with pytest.raises(ValueError, match="normal and anomalous"):
        fit_orientation([p], [torch.zeros_like(graph.y)])


def test_pretraining_stores_the_orientation_with_the_checkpoint(graph, tmp_path):
    model = pretrain_refi_gad([graph], progress_bar=False, out_dir=tmp_path / "run", **TINY)
    p = graph_fingerprint(graph, cache=False)
    assert model.orientation == fit_orientation([p], [graph.y])
    back = REFIGADNet.from_pretrained(tmp_path / "run" / "model")
    assert back.orientation == model.orientation                     # float64 survives the JSON exactly
    det = REFIGAD(model=back)
    s = det.decision_function(graph)
    assert det.pseudo_rule_ == "oriented" and torch.isfinite(s).all()
    # the labelled regime does not use it
    det.decision_function(graph, support_normal=torch.arange(10), support_anomaly=torch.arange(280, 290))
    assert det.pseudo_rule_ is None


def test_a_checkpoint_without_orientation_falls_back_to_atypicality(graph, tmp_path):
    model = pretrain_refi_gad([graph], progress_bar=False, out_dir=tmp_path / "run", **TINY)
    cfg_path = tmp_path / "run" / "model" / "config.json"
    meta = json.loads(cfg_path.read_text())
    del meta["config"]["orientation"]                                # as written before the orientation existed
    cfg_path.write_text(json.dumps(meta))
    old = REFIGADNet.from_pretrained(tmp_path / "run" / "model")
    assert old.orientation is None
    det = REFIGAD(model=old)
    s_old = det.decision_function(graph)
    assert det.pseudo_rule_ == "atypical"
    s_atyp = REFIGAD(model=model, pseudo_anomaly="atypical").decision_function(graph)
    assert torch.equal(s_old, s_atyp)
    with pytest.raises(ValueError, match="pseudo_anomaly"):
        REFIGAD(model=model, pseudo_anomaly="random").decision_function(graph)
    with pytest.raises(ValueError, match="orientation must hold 10"):
        REFIGADNet(orientation=[0.0] * 3)
