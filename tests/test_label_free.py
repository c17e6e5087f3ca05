"""Every detector in every regime, including users with no labelled node at all (issue #17 §1).

``zero-shot``: no support; ``normal-k``: labelled normal nodes only; ``normal+anomaly-k``: both. In the
label-free parts nothing reads ``data.y``: scrambling or deleting it leaves the scores unchanged.
"""
from __future__ import annotations

import pytest
import torch
from gad_helpers import hub_anomaly_graph

from omnigraph import ARC, REFIGAD
from omnigraph._cache import GraphCache, clear_graph_caches
from omnigraph.estimators.detector import label_free_draw, label_free_draws
from omnigraph.estimators.fingerprint import FingerprintDetector
from omnigraph.models.pseudo_support import atypicality, oriented_atypicality

DETECTORS = {"refi-gad": lambda: REFIGAD.from_pretrained("refi-gad"), "arc": lambda: ARC.from_pretrained("arc"),
             "fingerprint": FingerprintDetector}


@pytest.fixture(scope="module")
def graph():
    return hub_anomaly_graph(n=300, n_anom=20, seed=3)


def _scrambled(g):
    other = g.clone()
    other.y = g.y[torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(9))]
    return other


@pytest.mark.parametrize("name", DETECTORS)
def test_zero_shot_reads_no_label(graph, name):
    det = DETECTORS[name]()
    s = det.decision_function(graph)
    assert det.regime_ == "zero-shot" and s.shape == (300,) and torch.isfinite(s).all()
    assert torch.equal(det.decision_function(_scrambled(graph)), s)
    unlabelled = graph.clone()
    del unlabelled.y
    assert torch.equal(det.decision_function(unlabelled), s)
    pred, score = det.predict(unlabelled, return_score=True)
    assert torch.equal(score, s) and int(pred.sum()) == 30          # contamination 0.1 of 300 nodes


@pytest.mark.parametrize("name", DETECTORS)
def test_normal_k_reads_only_the_given_normals(graph, name):
    det = DETECTORS[name]()
    normals = (graph.y == 0).nonzero().flatten()[:10]
    s = det.decision_function(graph, support_normal=normals)
    assert det.regime_ == "normal-k" and torch.isfinite(s).all()
    assert torch.equal(det.decision_function(_scrambled(graph), support_normal=normals), s)


@pytest.mark.parametrize("name", DETECTORS)
def test_normal_and_anomaly_k(graph, name):
    det = DETECTORS[name]()
    sn, sa = (graph.y == 0).nonzero().flatten()[:10], (graph.y == 1).nonzero().flatten()[:5]
    s = det.decision_function(graph, support_normal=sn, support_anomaly=sa)
    assert torch.isfinite(s).all()
    assert det.regime_ == ("normal-k" if name == "arc" else "normal+anomaly-k")   # ARC ignores anomalies


@pytest.mark.parametrize("rule", ["oriented", "atypical"])
def test_pseudo_supports_follow_their_rule_and_exclude_labelled_nodes(graph, rule):
    det = REFIGAD.from_pretrained("refi-gad", pseudo_k=15, pseudo_anomaly=rule)
    det.decision_function(graph)
    p = det.fingerprint(graph)
    atyp = atypicality(p)
    key_a = oriented_atypicality(p, det.model.orientation) if rule == "oriented" else atyp
    assert det.pseudo_rule_ == rule
    pn, pa = det.pseudo_support_normal_, det.pseudo_support_anomaly_
    assert pn.numel() == pa.numel() == 15 and not torch.isin(pn, pa).any()
    others = torch.ones(graph.num_nodes, dtype=torch.bool)
    others[pn] = False
    assert atyp[pn].max() <= atyp[others].min()                    # the least atypical are the normals
    others[pa] = False
    assert key_a[pa].min() >= key_a[others].max()                  # the top of the rule's key the anomalies
    normals = torch.arange(5)
    det.decision_function(graph, support_normal=normals)
    assert det.pseudo_support_normal_.numel() == 0 and not torch.isin(det.pseudo_support_anomaly_, normals).any()


def test_label_free_draw_is_seeded_and_independent_of_node_numbering(graph):
    a = label_free_draw(graph, 10, seed=0)
    assert a.numel() == 10 and torch.equal(a, label_free_draw(graph, 10, seed=0))
    assert not torch.equal(a, label_free_draw(graph, 10, seed=1))
    perm = torch.randperm(300, generator=torch.Generator().manual_seed(0))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(300)
    moved = graph.clone()
    moved.x, moved.edge_index = graph.x[perm], inv[graph.edge_index]
    assert set(perm[label_free_draw(moved, 10, seed=0)].tolist()) == set(a.tolist())
    excluded = label_free_draw(graph, 10, seed=0, exclude=a[:3])
    assert not torch.isin(excluded, a[:3]).any()
    many = label_free_draws(graph, 10, seed=0, draws=[0, 1, 2], exclude=a[:3])
    assert all(torch.equal(d, label_free_draw(graph, 10, seed=0, draw=i, exclude=a[:3])) for i, d in enumerate(many))


def test_clear_graph_caches_makes_the_next_call_cold(graph):
    from omnigraph.models.fingerprint import _CACHE, graph_fingerprint

    own = GraphCache(2)
    own.put((graph.x,), (), 1)
    graph_fingerprint(graph)
    assert len(_CACHE) == 1 and own.get((graph.x,)) == 1
    clear_graph_caches()
    assert len(_CACHE) == 0 and own.get((graph.x,)) is None
