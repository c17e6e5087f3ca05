"""REFI-GAD pretraining episodes with the pseudo-supports of the label-poor regimes (issue #17)."""
from __future__ import annotations

import pytest
import torch
from gad_helpers import hub_anomaly_graph

from omnigraph import REFIGAD
from omnigraph.models.fingerprint import graph_fingerprint
from omnigraph.models.pseudo_support import atypicality, pseudo_support_size, ranked
from omnigraph.training.config import REFIGADPretrainConfig
from omnigraph.training.episodes import episode_generator
from omnigraph.training.refi_gad import EpisodeDataset, pretrain_refi_gad, sample_pseudo_episode

N = 1500   # pseudo_support_size: 30 per class


@pytest.fixture(scope="module")
def graph():
    return hub_anomaly_graph(n=N, n_anom=60, seed=5)


@pytest.fixture(scope="module")
def fingerprint(graph):
    return graph_fingerprint(graph, cache=False)


def _episode(graph, p, kind, y=None, seed=0):
    y = graph.y if y is None else y
    return sample_pseudo_episode(y, ranked(atypicality(p), p), kind, 10, 200, 20, episode_generator(seed, 0, 0))


def test_normal_k_episode_has_labelled_normals_and_the_most_atypical_other_nodes(graph, fingerprint):
    s_n, s_a, q, y_q = _episode(graph, fingerprint, "normal-k")
    k = pseudo_support_size(N)
    assert k == 30 and s_n.numel() == 10 and s_a.numel() == k
    assert (graph.y[s_n] == 0).all()
    atyp = atypicality(fingerprint)
    others = torch.ones(N, dtype=torch.bool)
    others[s_n] = False
    assert atyp[s_a].min() >= atyp[others].sort().values[-k]     # the k most atypical of the other nodes
    used = torch.cat([s_n, s_a])
    assert not torch.isin(q, used).any() and torch.equal(y_q, graph.y[q])
    assert int((y_q == 0).sum()) == 200 and int((y_q == 1).sum()) == 20


def test_zero_shot_episode_supports_read_no_label(graph, fingerprint):
    s_n, s_a, q, _ = _episode(graph, fingerprint, "zero-shot")
    atyp = atypicality(fingerprint)
    assert s_n.numel() == s_a.numel() == 30 and atyp[s_n].max() <= atyp[s_a].min()
    assert not torch.isin(s_n, s_a).any() and not torch.isin(q, torch.cat([s_n, s_a])).any()
    scrambled = graph.y[torch.randperm(N, generator=torch.Generator().manual_seed(1))]
    s_n2, s_a2, _, _ = _episode(graph, fingerprint, "zero-shot", y=scrambled)
    assert torch.equal(s_n, s_n2) and torch.equal(s_a, s_a2)


def test_episode_kind_is_checked(graph, fingerprint):
    with pytest.raises(ValueError, match="kind"):
        _episode(graph, fingerprint, "labelled")
    with pytest.raises(ValueError, match="support_episodes"):
        REFIGADPretrainConfig(support_episodes="pseudo")
    with pytest.raises(ValueError, match="support_episodes"):
        EpisodeDataset([fingerprint], [graph.y], support_episodes="pseudo")


def test_mixed_episodes_alternate_normal_k_zero_shot_labelled(graph, fingerprint):
    ds = EpisodeDataset([fingerprint], [graph.y], episodes_per_graph=6, shots=15, num_query_normal=100,
                        num_query_anomaly=10, support_episodes="mixed")
    sizes = [(ds[i][0].size(0), ds[i][1].size(0)) for i in range(6)]
    assert sizes == [(10, 30), (30, 30), (15, 15)] * 2
    again = EpisodeDataset([fingerprint], [graph.y], episodes_per_graph=6, shots=15, num_query_normal=100,
                           num_query_anomaly=10, support_episodes="mixed")
    assert all(torch.equal(a, b) for i in range(6) for a, b in zip(ds[i], again[i]))


def test_default_episodes_are_the_release_ones(graph, fingerprint):
    kw = {"episodes_per_graph": 3, "shots": 15, "num_query_normal": 100, "num_query_anomaly": 10}
    default = EpisodeDataset([fingerprint], [graph.y], **kw)
    labelled = EpisodeDataset([fingerprint], [graph.y], support_episodes="labelled", **kw)
    assert all(torch.equal(a, b) for i in range(3) for a, b in zip(default[i], labelled[i]))
    assert [default[i][0].size(0) for i in range(3)] == [15, 15, 15]


def test_estimator_pretrains_with_pseudo_episodes_deterministically(graph):
    kw = {"epochs": 1, "episodes_per_graph": 3, "shots": 10, "num_query_normal": 100, "num_query_anomaly": 10,
          "d_model": 16, "num_layers": 1, "ff_dim": 32, "support_episodes": "mixed"}
    det = REFIGAD(**kw).fit(graph)
    same = pretrain_refi_gad([graph], progress_bar=False, **kw)
    for (name, a), b in zip(det.model_.state_dict().items(), same.state_dict().values()):
        assert torch.equal(a, b), name
    labelled = pretrain_refi_gad([graph], progress_bar=False, **{**kw, "support_episodes": "labelled"})
    assert not torch.equal(labelled.embed.weight, same.embed.weight)
    s = det.decision_function(graph)
    assert det.regime_ == "zero-shot" and torch.isfinite(s).all()
