"""Property tests (hypothesis) on random small graphs: the symmetries each method claims.

* RGVT (node-classification spec §1, §2.3): the encoder is equivariant to node permutations and
  to feature permutations.
* GraphAny: per-node logits and predictions are equivariant to node permutations (least squares
  on the permuted training rows, node-wise entropy features and attention).
* Relational fingerprint (anomaly-detection spec §5.3): equivariant to node permutations and
  independent of the features' scale, hence so are REFI-GAD's and the fingerprint detector's scores.
  RGVT and GraphAny make no scale claim, so none is tested for them.

``derandomize=True`` makes every run (and CI) draw the same examples.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from omnigraph.estimators.fingerprint import FingerprintDetector
from omnigraph.estimators.graphany import GraphAny
from omnigraph.estimators.refi_gad import REFIGAD
from omnigraph.models.fingerprint import RelationalFingerprint
from omnigraph.models.graphany import GraphAnyModel
from omnigraph.models.refi_gad import REFIGADNet
from omnigraph.models.rgvt import RGVTEncoder

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def graphs(draw, min_nodes: int = 2, max_nodes: int = 30, max_features: int = 8):
    """``(data, perm)``: a random graph (any edges: duplicates, loops, one direction) and a node permutation."""
    n = draw(st.integers(min_nodes, max_nodes))
    f = draw(st.integers(1, max_features))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    seed = draw(st.integers(0, 2**16))
    perm = torch.tensor(draw(st.permutations(range(n))))
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, f, generator=g) * 2 - 0.5
    edge_index = torch.tensor(edges, dtype=torch.long).t().reshape(2, -1)
    return Data(x=x, edge_index=edge_index, num_nodes=n), perm


def permute(data: Data, perm: torch.Tensor) -> Data:
    """Node ``i`` of the result is node ``perm[i]`` of ``data`` (masks and labels follow)."""
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel())
    out = Data(x=data.x[perm], edge_index=inv[data.edge_index], num_nodes=data.num_nodes)
    for key in ("y", "train_mask"):
        if getattr(data, key, None) is not None:
            out[key] = data[key][perm]
    return out


@pytest.fixture(scope="module")
def encoder():
    torch.manual_seed(3)
    return RGVTEncoder().eval()


# ----------------------------------------------------------------------------------------------- RGVT
@SETTINGS
@given(graphs())
def test_rgvt_representations_are_node_permutation_equivariant(encoder, case):
    data, perm = case
    with torch.no_grad():
        z = encoder(data.x, data.edge_index, depth=3)
        zp = encoder(permute(data, perm).x, permute(data, perm).edge_index, depth=3)
    torch.testing.assert_close(zp, z[perm], rtol=1e-4, atol=1e-5)


@SETTINGS
@given(graphs(), st.randoms(use_true_random=False))
def test_rgvt_representations_are_feature_permutation_equivariant(encoder, case, rnd):
    data, _ = case
    cols = list(range(data.x.size(1)))
    rnd.shuffle(cols)
    cols = torch.tensor(cols)
    with torch.no_grad():
        z = encoder(data.x, data.edge_index, depth=3)
        zf = encoder(data.x[:, cols], data.edge_index, depth=3)
    torch.testing.assert_close(zf, z[:, cols], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------- GraphAny
@st.composite
def labelled_graphs(draw):
    data, perm = draw(graphs(min_nodes=8))
    n = data.num_nodes
    c = draw(st.integers(2, 4))
    g = torch.Generator().manual_seed(n)
    data.y = torch.randint(0, c, (n,), generator=g)
    data.y[:2] = torch.tensor([0, 1])  # at least two training classes
    data.train_mask = torch.zeros(n, dtype=torch.bool)
    data.train_mask[: max(2, n // 2)] = True
    return data, perm


@pytest.fixture(scope="module")
def graphany_model():
    torch.manual_seed(0)
    return GraphAnyModel(n_hidden=8).eval()


@SETTINGS
@given(labelled_graphs())
def test_graphany_logits_and_predictions_are_node_permutation_equivariant(graphany_model, case):
    data, perm = case
    est = GraphAny(graphany_model)
    logits = est.fit(data).decision_function(data)
    permuted = permute(data, perm)
    logits_p = est.fit(permuted).decision_function(permuted)
    scale = float(logits.abs().max()) + 1.0
    torch.testing.assert_close(logits_p, logits[perm], rtol=1e-3, atol=1e-3 * scale)
    # predictions agree wherever the top two logits are not within float noise of each other
    top2 = logits.topk(2, dim=1).values if logits.size(1) > 1 else None
    clear = (top2[:, 0] - top2[:, 1] > 1e-2 * scale)[perm]
    assert torch.equal(logits_p.argmax(1)[clear], logits.argmax(1)[perm][clear])


# ----------------------------------------------------------------------------------- fingerprint, REFI-GAD
@SETTINGS
@given(graphs(min_nodes=3))
def test_fingerprint_is_node_permutation_equivariant(case):
    data, perm = case
    raw = RelationalFingerprint(rank=False)
    torch.testing.assert_close(raw(permute(data, perm)).fingerprint, raw(data).fingerprint[perm], rtol=1e-4,
                               atol=1e-5)
    # degree and clustering are computed exactly, so their tie-averaged ranks permute exactly
    ranks = RelationalFingerprint(ties="average")
    assert torch.equal(ranks(permute(data, perm)).fingerprint[:, 3:], ranks(data).fingerprint[:, 3:][perm])


@SETTINGS
@given(graphs(min_nodes=3), st.floats(0.01, 100.0))
def test_fingerprint_statistics_are_invariant_to_feature_scaling(case, scale):
    data, _ = case
    raw = RelationalFingerprint(rank=False)
    scaled = Data(x=data.x * scale, edge_index=data.edge_index, num_nodes=data.num_nodes)
    torch.testing.assert_close(raw(scaled).fingerprint, raw(data).fingerprint, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def refi_gad():
    torch.manual_seed(0)
    det = REFIGAD(d_model=16, num_heads=2, num_layers=1, ff_dim=16)
    det.model_ = REFIGADNet(d_model=16, num_heads=2, num_layers=1, ff_dim=16).eval()
    return det


@SETTINGS
@given(graphs(min_nodes=6), st.integers(-6, 6))
def test_anomaly_scores_are_invariant_to_feature_scaling(refi_gad, case, k):
    """Scaling by a power of two is exact in floating point, so the ranks, hence the scores, are identical."""
    data, _ = case
    scaled = Data(x=data.x * 2.0**k, edge_index=data.edge_index, num_nodes=data.num_nodes)
    support = {"support_normal": [1, 2, 3], "support_anomaly": [0, 4]}
    assert torch.equal(refi_gad.decision_function(scaled, **support), refi_gad.decision_function(data, **support))
    fp = FingerprintDetector()
    assert torch.equal(fp.decision_function(scaled, **support), fp.decision_function(data, **support))
