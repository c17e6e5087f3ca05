"""Relational fingerprint: each statistic against brute force, the dense legacy path, invariances."""
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import omnigraph
from omnigraph.models.fingerprint import (
    COLUMNS,
    RelationalFingerprint,
    column_index,
    rank_transform,
)
from omnigraph.ops import simple_undirected, triangle_counts


def _graph(n=40, f=12, p=0.12, seed=0, nonneg=False, isolated=3):
    """Random graph with some isolated nodes; features Gaussian or non-negative binary (one zero row)."""
    rng = np.random.default_rng(seed)
    g = nx.gnp_random_graph(n - isolated, p, seed=seed)
    g.add_nodes_from(range(n))
    ei = torch.tensor(list(g.edges()), dtype=torch.long).t()
    ei = torch.cat([ei, ei.flip(0)], 1)
    if nonneg:
        x = (rng.random((n, f)) < 0.3).astype(np.float32)
        x[5] = 0.0
    else:
        x = rng.normal(size=(n, f)).astype(np.float32)
    return Data(x=torch.from_numpy(x), edge_index=ei, num_nodes=n)


def _brute(data, self_loops=True, sim_scale="global"):
    """Loop-by-loop reference of the five raw statistics (spec §5.3 small-graph semantics)."""
    x = data.x.double().numpy()
    n = x.shape[0]
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((int(a), int(b)) for a, b in data.edge_index.t() if a != b)
    nbrs = [sorted(g.neighbors(i)) for i in range(n)]
    deg = np.array([len(v) for v in nbrs], dtype=float)
    dt = deg + (1.0 if self_loops else 0.0)
    a_hat = np.zeros((n, n))
    for i in range(n):
        for j in nbrs[i] + ([i] if self_loops else []):
            a_hat[i, j] = 1.0 / np.sqrt(dt[i] * dt[j])
    x_hat = a_hat @ a_hat @ x

    def cos(a, b):
        return float(a @ b / (max(np.linalg.norm(a), 1e-12) * max(np.linalg.norm(b), 1e-12)))

    c = x_hat.mean(0)
    gd = np.array([cos(x_hat[i], c) for i in range(n)])
    dots = {(i, j): float(x[i] @ x[j]) for i in range(n) for j in nbrs[i]}
    if sim_scale == "global":
        allp = [float(x[i] @ x[j]) for i in range(n) for j in range(n)]
        lo, hi = min(allp), max(allp)
    else:
        lo, hi = min(dots.values()), max(dots.values())
    x_bar = x.copy()
    for i in range(n):
        for j in nbrs[i]:
            x_bar[i] += a_hat[i, j] * (dots[i, j] - lo) / (hi - lo) * x[j]
    nd = np.array([sum(cos(x_bar[i], x_bar[j]) for j in nbrs[i]) / (deg[i] + 1e-8) for i in range(n)])
    np_ = np.array([sum(np.linalg.norm(x_bar[i] - x_bar[j]) for j in nbrs[i]) / (deg[i] + 1e-8) for i in range(n)])
    nd = (nd - nd.min()) / (nd.max() - nd.min())
    np_ = (np_ - np_.min()) / (np_.max() - np_.min())
    clus = nx.clustering(g)
    lc = np.array([clus[i] for i in range(n)])
    return np.stack([gd, nd, np_, deg, lc], 1)


@pytest.mark.parametrize("nonneg", [False, True])
@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("sim_scale", ["edges", "global"])
def test_each_statistic_matches_brute_force(nonneg, self_loops, sim_scale):
    data = _graph(seed=3 if nonneg else 1, nonneg=nonneg)
    got = RelationalFingerprint(self_loops=self_loops, sim_scale=sim_scale, rank=False)(data).fingerprint.double().numpy()
    want = _brute(data, self_loops, sim_scale)
    for c, name in enumerate(COLUMNS):
        np.testing.assert_allclose(got[:, c], want[:, c], rtol=1e-4, atol=1e-5, err_msg=name)


def test_triangles_match_networkx_on_denser_graph():
    g = nx.gnp_random_graph(120, 0.15, seed=7)
    ei = torch.tensor(list(g.edges()), dtype=torch.long).t()
    ei = simple_undirected(ei, 120, self_loops=False)
    ref = nx.triangles(g)
    # a tiny budget forces many chunks
    got = triangle_counts(ei, 120, budget=97)
    assert got.tolist() == [ref[i] for i in range(120)]


def test_dense_reference_parity_with_global_scaling():
    """Spec pitfall 6: raw statistics agree to float tolerance; ranks agree except among ties."""
    data = _graph(n=60, seed=5, nonneg=True)
    sparse = RelationalFingerprint(sim_scale="global", rank=False)(data).fingerprint
    dense = RelationalFingerprint(reference=True, rank=False)(data).fingerprint
    torch.testing.assert_close(sparse, dense, rtol=1e-4, atol=1e-5)
    # the release ranks ordinally: compare like with like (average ranks lie inside the same bounds)
    _assert_ranks_agree_up_to_ties(RelationalFingerprint(sim_scale="global", ties="ordinal")(data).fingerprint,
                                   RelationalFingerprint(reference=True)(data).fingerprint, dense)
    _assert_ranks_agree_up_to_ties(RelationalFingerprint(sim_scale="global")(data).fingerprint,
                                   RelationalFingerprint(reference=True)(data).fingerprint, dense, exact_if_tie_free=False)


def _assert_ranks_agree_up_to_ties(r1, r2, raw, tol=1e-5, exact_if_tie_free=True):
    n = raw.size(0)
    assert r1.shape == r2.shape == (n, 5)
    for c in range(5):
        v = raw[:, c]
        # the set of ranks a node may take: between (#strictly smaller) and (#smaller or tied) - 1
        lo = (v[None, :] < v[:, None] - tol).sum(1)
        hi = (v[None, :] <= v[:, None] + tol).sum(1) - 1
        for r in (r1[:, c], r2[:, c]):
            pos = torch.round(r * (n - 1) / 100).long()
            assert ((pos >= lo) & (pos <= hi)).all(), COLUMNS[c]
    if not exact_if_tie_free:
        return
    # columns whose values are all further apart than the two paths' rounding: the same ranks exactly
    ties_free = [c for c in range(5) if raw[:, c].sort().values.diff().min() > tol]
    for c in ties_free:
        assert torch.equal(r1[:, c], r2[:, c])


def test_dense_reference_parity_on_facebook(data_root):
    data = omnigraph.load_dataset("gad/facebook")
    sparse = RelationalFingerprint(self_loops=False, sim_scale="global", rank=False)(data).fingerprint
    dense = RelationalFingerprint(self_loops=False, reference=True, rank=False)(data).fingerprint
    torch.testing.assert_close(sparse, dense, rtol=1e-4, atol=1e-4)
    # the injected/real columns separate as the independent re-implementation found (spec §5.3)
    from sklearn.metrics import roc_auc_score

    auc = [roc_auc_score(data.y.numpy(), sparse[:, c].numpy()) for c in range(5)]
    np.testing.assert_allclose(auc, [0.517, 0.242, 0.542, 0.078, 0.805], atol=2e-3)


def test_reference_memory_guard():
    data = _graph(n=50)
    with pytest.raises(ValueError, match="max_dense_bytes"):
        RelationalFingerprint(reference=True, max_dense_bytes=1000)(data)


def test_output_shape_range_and_uniform_marginals():
    data = _graph(n=41)
    p = omnigraph.RelationalFingerprint(ties="ordinal")(data).fingerprint
    assert p.shape == (41, 5) and p.dtype == torch.float32
    for c in range(5):  # ordinal ranks: a permutation of 0, 2.5, ..., 100
        assert torch.allclose(p[:, c].sort().values, torch.arange(41) * 2.5)
    avg = omnigraph.RelationalFingerprint()(data).fingerprint         # the default, average ranks of tie groups
    assert avg.min() >= 0 and avg.max() <= 100
    torch.testing.assert_close(avg.mean(0), torch.full((5,), 50.0))   # ranks are averaged, their sum kept
    deg = omnigraph.RelationalFingerprint(rank=False)(data).fingerprint[:, 3]
    assert deg.unique().numel() < 41                              # degrees tie ...
    same = deg[:, None] == deg[None, :]
    assert torch.equal(same, avg[:, 3, None] == avg[None, :, 3])  # ... and so do their ranks, no others


def test_rank_invariance_to_feature_scaling():
    data = _graph(n=50, seed=2)
    scaled = Data(x=data.x * 1000.0, edge_index=data.edge_index, num_nodes=50)
    for sim_scale in ("edges", "global"):
        fp = RelationalFingerprint(sim_scale=sim_scale, ties="average")
        assert torch.equal(fp(data).fingerprint, fp(scaled).fingerprint)


def test_permutation_equivariance():
    data = _graph(n=50, seed=4)
    perm = torch.randperm(50, generator=torch.Generator().manual_seed(0))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(50)
    permuted = Data(x=data.x[perm], edge_index=inv[data.edge_index], num_nodes=50)
    raw = RelationalFingerprint(rank=False)
    torch.testing.assert_close(raw(permuted).fingerprint, raw(data).fingerprint[perm], rtol=1e-5, atol=1e-6)
    avg = RelationalFingerprint(ties="average")
    assert torch.equal(avg(permuted).fingerprint, avg(data).fingerprint[perm])


def test_rank_transform_ties():
    v = torch.tensor([3.0, 1.0, 3.0, 2.0, 3.0])
    assert rank_transform(v, "ordinal").tolist() == [50.0, 0.0, 75.0, 25.0, 100.0]  # stable: by index
    assert rank_transform(v, "average").tolist() == [75.0, 0.0, 75.0, 25.0, 75.0]


def test_flags_from_data_and_constructor():
    data = _graph(n=40, nonneg=True, seed=8)
    base = RelationalFingerprint(rank=False)(data).fingerprint
    data.self_loops = False
    no_loops = RelationalFingerprint(rank=False)(data).fingerprint
    assert not torch.allclose(base[:, 0], no_loops[:, 0])
    assert torch.equal(RelationalFingerprint(self_loops=True, rank=False)(data).fingerprint, base)  # constructor wins
    data.self_loops, data.row_normalize = None, True
    rn = RelationalFingerprint(rank=False)(data).fingerprint
    rows = data.x.sum(1, keepdim=True)
    manual = Data(x=torch.where(rows > 0, data.x / rows.clamp_min(1e-12), data.x), edge_index=data.edge_index,
                  num_nodes=40)
    torch.testing.assert_close(rn, RelationalFingerprint(rank=False)(manual).fingerprint)


def test_bad_arguments():
    with pytest.raises(ValueError, match="sim_scale"):
        RelationalFingerprint(sim_scale="all")
    with pytest.raises(ValueError, match="ties"):
        RelationalFingerprint(ties="dense")
    with pytest.raises(ValueError, match="column"):
        column_index("pagerank")
    assert column_index("Degree") == 3
    with pytest.raises(ValueError, match="data.x"):
        RelationalFingerprint()(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3))


@pytest.mark.slow
def test_large_sparse_graph_without_quadratic_memory():
    """20k nodes: any N x N float32 matrix would need 1.6 GB; the peak RSS must stay far below."""
    code = textwrap.dedent("""
        import resource, torch
        torch.manual_seed(0)
        from omnigraph.models.fingerprint import RelationalFingerprint
        n = 20000
        ei = torch.randint(0, n, (2, 5 * n))
        x = torch.rand(n, 16)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        p = RelationalFingerprint().fingerprint(x, ei)
        assert p.shape == (n, 5)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip().splitlines()[-1]) < 500  # MiB


def test_is_a_pyg_transform():
    """``RelationalFingerprint`` is a ``BaseTransform``: it composes, returns a copy with
    ``fingerprint`` attached and leaves the input graph as it was."""
    from torch_geometric.transforms import BaseTransform, Compose

    data = _graph(n=40, seed=5)
    fp = RelationalFingerprint()
    assert isinstance(fp, BaseTransform)
    out = Compose([fp])(data)
    assert out is not data and "fingerprint" not in data
    assert out.fingerprint.shape == (40, 5)
    assert torch.equal(out.fingerprint, fp.fingerprint(data.x, data.edge_index, data.num_nodes))
    assert out.x is data.x            # a shallow copy, as every PyG transform
