"""No result depends on how the nodes are numbered (the user's path: real files arrive in any order).

In the mirror's files node id correlates with the label (on gad/facebook the id alone has AUROC 0.98),
so a tie broken by node id leaks the label. Each test relabels a real graph by a random permutation,
maps the supports (or masks) through it, and compares per-node outputs mapped back.

Tolerances: the sums of a sparse product run in another order after relabelling, so raw statistics
move by a few ulps; the fingerprint sums in float64 (on gad/reddit the raw columns move by at most
4e-13, 500x below the ranks' tie tolerance of 2^-32), so a rank could move only where two values lie
within that rounding of the tie tolerance (a swap of neighbouring ranks, hundredths of a rank point
here), and the scores built on them move by far less than matters for AUROC.
"""
from __future__ import annotations

import pytest
import torch
from sklearn.metrics import roc_auc_score

import omnigraph
from omnigraph.estimators.arc import ARC
from omnigraph.estimators.detector import sample_support
from omnigraph.estimators.fingerprint import FingerprintDetector
from omnigraph.estimators.graphany import GraphAny
from omnigraph.estimators.refi_gad import REFIGAD
from omnigraph.estimators.rgvt import RGVT
from omnigraph.models.fingerprint import RelationalFingerprint


def relabel(data, seed: int = 0):
    """``(permuted, inv)``: node ``j`` of ``permuted`` is node ``perm[j]`` of ``data``; ``inv[i]`` is the new id of ``i``."""
    n = data.num_nodes
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    out = data.clone()
    for key, value in data.items():
        if torch.is_tensor(value) and value.dim() >= 1 and value.size(0) == n and key != "edge_index":
            out[key] = value[perm]
    out.edge_index = inv[data.edge_index]
    return out, inv


@pytest.fixture(scope="module")
def reddit(data_root):
    data = omnigraph.load_dataset("gad/reddit")   # its clustering column is constant: every rank a tie
    return (data, *relabel(data))


def _auroc(y, score, exclude):
    keep = torch.ones(y.numel(), dtype=torch.bool)
    keep[exclude] = False
    return 100 * roc_auc_score(y[keep].numpy(), score[keep].numpy())


def test_fingerprint_ranks_do_not_depend_on_node_order(reddit):
    data, permuted, inv = reddit
    a, b = RelationalFingerprint()(data).fingerprint, RelationalFingerprint()(permuted).fingerprint[inv]
    assert torch.equal(a[:, 3:], b[:, 3:])                  # degree and clustering: integer-exact statistics
    assert (a - b).abs().max() <= 0.1                       # rank points out of 100 (10,984 nodes: 0.009 each)
    assert ((a - b).abs() > 0).float().mean() < 0.01


@pytest.mark.parametrize("regime", ["zero-shot", "supports"])
@pytest.mark.parametrize("name", ["refi-gad", "arc", "fingerprint"])
def test_anomaly_scores_do_not_depend_on_node_order(reddit, name, regime):
    data, permuted, inv = reddit
    detector = {"refi-gad": lambda: REFIGAD.from_pretrained("refi-gad"), "arc": lambda: ARC.from_pretrained("arc"),
                "fingerprint": FingerprintDetector}[name]()
    sn, sa = sample_support(data.y, 10, 0 if name == "arc" else 10, seed=0)
    kw = {"support_normal": sn} if name == "arc" else {"support_normal": sn, "support_anomaly": sa}
    if regime == "zero-shot":      # pseudo-supports (REFI-GAD) and context draws (ARC) from the target itself
        kw = {}
    kw_perm = {k: inv[v] for k, v in kw.items()}
    s = detector.decision_function(data, **kw)
    s_perm = detector.decision_function(permuted, **kw_perm)[inv]
    spread = float(s.max() - s.min())
    assert (s - s_perm).abs().max() <= 1e-3 * spread
    support = torch.cat([*kw.values(), torch.empty(0, dtype=torch.long)])
    assert abs(_auroc(data.y, s, support) - _auroc(data.y, s_perm, support)) < 0.05


@pytest.fixture(scope="module")
def cora(data_root):
    data = omnigraph.load_dataset("cora")
    return (data, *relabel(data, seed=1))


@pytest.mark.parametrize("make", [lambda: RGVT.from_pretrained("rgvt"), lambda: GraphAny.from_pretrained("graphany")],
                         ids=["rgvt", "graphany"])
def test_node_classification_does_not_depend_on_node_order(cora, make):
    data, permuted, inv = cora
    p = make().fit(data).predict_proba(data)
    p_perm = make().fit(permuted).predict_proba(permuted)[inv]
    torch.testing.assert_close(p_perm, p, rtol=0, atol=1e-4)
    assert (p.argmax(1) != p_perm.argmax(1)).sum() <= 2     # only near-ties of two classes may flip


# ------------------------------------------------------------------ renumbering for locality (issue #20)
@pytest.mark.parametrize("method", ["rcm", "degree"])
def test_locality_order_is_a_deterministic_permutation(cora, method):
    from omnigraph.ops import invert_permutation, locality_order, permute_graph

    data = cora[0]
    perm = locality_order(data.edge_index, data.num_nodes, method)
    assert torch.equal(torch.sort(perm).values, torch.arange(data.num_nodes))
    assert torch.equal(perm, locality_order(data.edge_index, data.num_nodes, method))
    x, edge_index, inv = permute_graph(data.x, data.edge_index, perm)
    assert torch.equal(inv, invert_permutation(perm)) and torch.equal(x[inv], data.x)
    assert torch.equal(perm[edge_index], data.edge_index)                   # the same edges, renamed
    # isolated nodes (no edge at all) are placed too
    assert torch.equal(torch.sort(locality_order(torch.empty(2, 0, dtype=torch.long), 5, method)).values,
                       torch.arange(5))


def test_locality_order_rejects_unknown_settings(cora):
    from omnigraph.ops import locality_order, resolve_reorder

    with pytest.raises(ValueError, match="reorder method"):
        locality_order(cora[0].edge_index, cora[0].num_nodes, "metis")
    with pytest.raises(ValueError, match="reorder must be"):
        resolve_reorder("fast", 10)
    with pytest.raises(ValueError, match="reorder must be"):
        RGVT(reorder="fast").fit(cora[0])
    with pytest.raises(ValueError, match="reorder must be"):
        RelationalFingerprint(reorder=True)
    assert resolve_reorder("auto", (1 << 16) - 1) is None and resolve_reorder("auto", 1 << 16) == "rcm"


@pytest.mark.parametrize("method", ["rcm", "degree"])
def test_reordered_rgvt_answers_in_the_users_order(cora, method):
    """Renumbered inside the estimator, mapped back on output: the unreordered run up to rounding."""
    permuted = cora[1]
    plain = RGVT.from_pretrained("rgvt", reorder=None).fit(permuted)
    reordered = RGVT.from_pretrained("rgvt", reorder=method).fit(permuted)
    assert reordered.depth_ == plain.depth_
    torch.testing.assert_close(reordered.predict_proba(permuted), plain.predict_proba(permuted), rtol=0, atol=1e-4)
    assert (reordered.predict(permuted) != plain.predict(permuted)).sum() <= 2
    torch.testing.assert_close(reordered.transform(permuted), plain.transform(permuted), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("method", ["rcm", "degree"])
def test_reordered_fingerprint_answers_in_the_users_order(reddit, method):
    permuted = reddit[1]
    a = RelationalFingerprint(reorder=None)(permuted).fingerprint
    b = RelationalFingerprint(reorder=method)(permuted).fingerprint
    assert torch.equal(a[:, 3:], b[:, 3:])                  # degree and clustering: integer-exact statistics
    assert (a - b).abs().max() <= 0.1 and ((a - b).abs() > 0).float().mean() < 0.01


def test_reorder_auto_renumbers_large_graphs_only():
    """From 2^16 nodes on ``reorder="auto"`` renumbers (RCM) and the answers stay the unreordered ones."""
    from omnigraph.datasets.splits import random_split
    from omnigraph.datasets.synthetic import synthetic_graph
    from omnigraph.ops import LARGE_GRAPH_NODES

    def graph(n: int):
        data = synthetic_graph(n, 4 * n, num_features=8, num_classes=3, seed=0)
        for key, mask in random_split(data.y, seed=0).items():
            data[key] = mask
        return data

    data = graph(LARGE_GRAPH_NODES + 100)
    auto, plain = RGVT.from_pretrained("rgvt", depths=(1, 2)), RGVT.from_pretrained("rgvt", depths=(1, 2), reorder=None)
    p_auto, p_plain = auto.fit(data).predict_proba(data), plain.fit(data).predict_proba(data)
    assert auto._graph(data)["inv"] is not None and plain._graph(data)["inv"] is None
    torch.testing.assert_close(p_auto, p_plain, rtol=0, atol=1e-4)
    assert (p_auto.argmax(1) != p_plain.argmax(1)).float().mean() < 1e-3
    small = graph(LARGE_GRAPH_NODES - 1)
    assert RGVT.from_pretrained("rgvt", depths=(1,)).fit(small)._graph(small)["inv"] is None


def test_permuted_rows_read_like_the_permuted_matrix(cora):
    """RGVT reads a renumbered graph's features through PermutedRows (no [N, F] copy in the new
    order): each column slice holds the numbers of x[perm], so the encoder's output is bit-identical."""
    from omnigraph.ops import PermutedRows, invert_permutation

    data = cora[0]
    perm = torch.randperm(data.num_nodes, generator=torch.Generator().manual_seed(3))
    rows = PermutedRows(data.x, perm)
    assert rows.shape == data.x.shape and rows.dim() == 2 and not rows.requires_grad
    assert torch.equal(rows[:, 5:300], data.x[perm][:, 5:300])
    for key in (0, (slice(0, 5), slice(1, 2)), (slice(None), 3)):
        with pytest.raises(IndexError, match="column slices"):
            rows[key]
    with pytest.raises(ValueError, match="perm"):
        PermutedRows(data.x, perm[:-1])
    encoder = RGVT.from_pretrained("rgvt").encoder.eval()
    ops = encoder.build_operators(invert_permutation(perm)[data.edge_index], data.num_nodes, transposes=False)
    with torch.no_grad():
        for kw in ({"depth": 3, "chunk_size": 200}, {"depth": 2, "return_all": True}):
            got, want = encoder(rows, operators=ops, **kw), encoder(data.x[perm], operators=ops, **kw)
            assert all(torch.equal(a, b) for a, b in zip(got, want)) if isinstance(got, list) else torch.equal(got, want)
        steps = encoder.iterate(rows, depth=2, operators=ops, reuse=True)
        assert torch.equal(next(steps)[1], encoder(data.x[perm], depth=1, operators=ops))
