"""Sparse operators and propagation against dense references."""
import pytest
import torch

from omnigraph.ops import (
    available_backends,
    identity_minus,
    mean_adjacency,
    propagate,
    rw_adjacency,
    simple_undirected,
    sym_adjacency,
)


def _random_graph(n=30, e=80, seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e), generator=g)
    ei = torch.cat([ei, torch.tensor([[0, 0], [0, 1]])], dim=1)  # a self-loop and a duplicate-prone edge
    return ei, n


def _dense_adj(ei, n, self_loops):
    a = torch.zeros(n, n)
    a[ei[0], ei[1]] = 1.0
    a = ((a + a.t()) > 0).float()
    a.fill_diagonal_(1.0 if self_loops else 0.0)
    return a


@pytest.mark.parametrize("self_loops", [True, False])
def test_simple_undirected_is_symmetric_deduplicated(self_loops):
    ei, n = _random_graph()
    out = simple_undirected(ei, n, self_loops)
    dense = torch.zeros(n, n)
    dense[out[0], out[1]] += 1
    assert torch.equal(dense, _dense_adj(ei, n, self_loops))


@pytest.mark.parametrize("self_loops", [True, False])
def test_rw_and_sym_match_dense(self_loops):
    ei, n = _random_graph(n=25)
    n += 3  # trailing isolated nodes must be kept
    a = _dense_adj(ei, n, self_loops)
    deg = a.sum(1)
    inv = torch.where(deg > 0, 1 / deg, torch.zeros_like(deg))
    assert torch.allclose(rw_adjacency(ei, n, self_loops).to_dense(), inv[:, None] * a, atol=1e-6)
    isq = inv.sqrt()
    assert torch.allclose(sym_adjacency(ei, n, self_loops).to_dense(), isq[:, None] * a * isq[None, :], atol=1e-6)


def test_mean_operator_and_high_pass():
    ei, n = _random_graph(n=20)
    n += 2
    p = mean_adjacency(ei, n).to_dense()
    assert torch.all(p.diagonal() == 0)
    assert torch.all(p[-2:] == 0)  # isolated rows are zero, not NaN
    rows = p.sum(1)
    assert torch.allclose(rows[rows > 0], torch.ones_like(rows[rows > 0]))
    h = identity_minus(mean_adjacency(ei, n)).to_dense()
    assert torch.allclose(h, torch.eye(n) - p)


@pytest.mark.parametrize("chunk", [None, 1, 7, 100])
def test_propagate_matches_dense_powers(chunk):
    ei, n = _random_graph(n=40, e=150, seed=3)
    op = sym_adjacency(ei, n)
    x = torch.randn(n, 13, generator=torch.Generator().manual_seed(1))
    out = propagate(op, x, hops=3, chunk_size=chunk)
    dense = op.to_dense()
    ref = [x]
    for _ in range(3):
        ref.append(dense @ ref[-1])
    assert len(out) == 4
    for a, b in zip(out, ref):
        assert torch.allclose(a, b, atol=1e-5)


def test_backends_agree():
    ei, n = _random_graph(n=40, e=150, seed=4)
    op = rw_adjacency(ei, n)
    x = torch.randn(n, 9)
    results = {b: propagate(op, x, 2, backend=b) for b in available_backends()}
    # always compare the CSR path with a COO-input path; torch-sparse joins when installed
    results["coo_input"] = propagate(op.to_sparse_coo(), x, 2, backend="torch")
    base = results.pop("torch")
    for name, res in results.items():
        for a, b in zip(res, base):
            assert torch.allclose(a, b, atol=1e-6), name
    # "auto" is torch's kernel whether torch-sparse is installed or not (the committed tables' path)
    assert all(torch.equal(a, b) for a, b in zip(propagate(op, x, 2, backend="auto"), base))


def test_torch_sparse_backend_when_installed():
    """Under CI (../shared/wheels installed by make install) torch-sparse is present: its path is tested too."""
    import os

    from omnigraph.ops.propagate import HAVE_TORCH_SPARSE

    if not HAVE_TORCH_SPARSE:
        if os.environ.get("CI") == "true":
            pytest.fail("torch-sparse is missing under CI: make install installs it from ../shared/wheels")
        pytest.skip("torch-sparse not installed")
    ei, n = _random_graph(n=60, e=300, seed=5)
    op, x = rw_adjacency(ei, n), torch.randn(n, 7)
    for a, b in zip(propagate(op, x, 3, backend="torch_sparse"), propagate(op, x, 3, backend="torch")):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_propagate_rejects_bad_input():
    ei, n = _random_graph()
    op = rw_adjacency(ei, n)
    with pytest.raises(ValueError, match="rows"):
        propagate(op, torch.randn(n + 1, 3), 1)
    with pytest.raises(ValueError, match="hops"):
        propagate(op, torch.randn(n, 3), -1)
    with pytest.raises(ValueError, match="backend"):
        propagate(op, torch.randn(n, 3), 1, backend="cuda-magic")


def test_layouts_agree_and_auto_is_csr(monkeypatch):
    ei, n = _random_graph(n=50, e=200, seed=5)
    op = sym_adjacency(ei, n)
    x = torch.randn(n, 300, generator=torch.Generator().manual_seed(2))
    seen = []
    real_mm = torch.sparse.mm
    monkeypatch.setattr(torch.sparse, "mm", lambda a, b: (seen.append(a.layout), real_mm(a, b))[1])
    auto = propagate(op.to_sparse_coo(), x, 2, chunk_size=128, backend="torch")
    assert set(seen) == {torch.sparse_csr}                        # COO input, CSR products (measured faster)
    seen.clear()
    coo = propagate(op, x, 2, chunk_size=128, backend="torch", layout="coo")
    assert set(seen) == {torch.sparse_coo}
    for a, b in zip(auto, coo):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="layout"):
        propagate(op, x, 1, layout="dense")


def test_insert_self_loops_and_simple_sym_adjacency_match_the_sorting_path():
    from omnigraph.ops.adjacency import insert_self_loops, rw_adjacency, simple_undirected, sym_adjacency

    g = torch.Generator().manual_seed(3)
    n = 40
    edges = torch.randint(0, n - 3, (2, 300), generator=g)      # duplicates, loops, isolated tail nodes
    edges[:, :5] = torch.arange(5).repeat(2, 1)
    simple = simple_undirected(edges, n, self_loops=False)
    assert torch.equal(insert_self_loops(simple, n), simple_undirected(edges, n, self_loops=True))
    for loops, build in ((True, sym_adjacency), (False, sym_adjacency), (True, rw_adjacency), (False, rw_adjacency)):
        a, b = build(edges, n, loops), build(simple, n, loops, simple=True)
        assert torch.equal(a.crow_indices(), b.crow_indices()) and torch.equal(a.col_indices(), b.col_indices())
        assert torch.equal(a.values(), b.values())


@pytest.mark.parametrize("n, e", [(1, 0), (6, 0), (7, 40), (300, 2000)])
def test_simple_undirected_equals_pyg_pipeline(n, e):
    """The lean key-sorting build gives exactly PyG's to_undirected -> remove/add loops -> coalesce."""
    from torch_geometric.utils import add_self_loops, coalesce, remove_self_loops, to_undirected

    g = torch.Generator().manual_seed(n + e)
    edges = torch.randint(0, max(n - 2, 1), (2, e), generator=g)   # duplicates, loops, isolated tail nodes
    for loops in (False, True):
        ref, _ = remove_self_loops(to_undirected(edges, num_nodes=n))
        if loops:
            ref, _ = add_self_loops(ref, num_nodes=n)
        assert torch.equal(simple_undirected(edges, n, loops), coalesce(ref, num_nodes=n))


def test_rw_sym_pair_shares_one_int32_pattern_and_equals_the_separate_builders():
    from omnigraph.ops import rw_sym_adjacency, undirected_pattern

    ei, n = _random_graph(n=40, e=200, seed=4)
    n += 2
    rw, sym = rw_sym_adjacency(ei, n)
    assert rw.col_indices().dtype == torch.int32 and rw.col_indices().data_ptr() == sym.col_indices().data_ptr()
    assert rw.crow_indices().data_ptr() == sym.crow_indices().data_ptr()
    for pair, single in ((rw, rw_adjacency(ei, n)), (sym, sym_adjacency(ei, n))):
        assert torch.equal(pair.crow_indices().long(), single.crow_indices())
        assert torch.equal(pair.col_indices().long(), single.col_indices())
        assert torch.equal(pair.values(), single.values())                  # bit for bit
    crow, col = undirected_pattern(ei, n, self_loops=False)
    simple = simple_undirected(ei, n, self_loops=False)
    assert torch.equal(col.long(), simple[1]) and torch.equal(crow.diff().long(), torch.bincount(simple[0], minlength=n))
    x = torch.randn(n, 3)
    assert torch.equal(torch.sparse.mm(rw, x), torch.sparse.mm(rw_adjacency(ei, n), x))


@pytest.mark.parametrize("num_blocks", [1, 2, 3, 7, 50])
def test_column_blocked_product_matches_dense_and_shares_the_split_pattern(num_blocks):
    from omnigraph.ops import ColumnBlockedCSR, rw_sym_adjacency, split_columns, spmm_into

    ei, n = _random_graph(n=45, e=300, seed=5)
    rw, sym = rw_sym_adjacency(ei, n)
    other = rw_adjacency(ei, n)                                  # its own (int64) pattern
    b_rw, b_sym, b_other = split_columns([rw, sym, other], num_blocks)
    assert isinstance(b_rw, ColumnBlockedCSR) and b_rw.shape == (n, n) and b_rw.size(0) == n
    assert b_rw.starts[0] == 0 and b_rw.starts[-1] == n and len(b_rw.parts) == len(b_rw.starts) - 1
    assert len(b_rw.parts) == min(num_blocks, n)
    assert sum(p._nnz() for p in b_rw.parts) == rw._nnz()
    for p, q in zip(b_rw.parts, b_sym.parts):                    # split once, shared
        assert p.col_indices().data_ptr() == q.col_indices().data_ptr()
    assert b_other.parts[0].col_indices().data_ptr() != b_rw.parts[0].col_indices().data_ptr()
    x = torch.randn(n, 4)
    for blocked, op in ((b_rw, rw), (b_sym, sym), (b_other, other)):
        torch.testing.assert_close(blocked.mm(x), op.to_dense() @ x, rtol=1e-5, atol=1e-6)
        out = torch.full((n, 4), float("nan"))
        assert spmm_into(blocked, x, out) is out and torch.allclose(out, op.to_dense() @ x, atol=1e-6)
    wide = b_rw.to(torch.float64)
    assert wide.dtype == torch.float64 and wide.device == rw.device and wide.starts == b_rw.starts
    torch.testing.assert_close(wide.mm(x.double()), rw.to_dense().double() @ x.double())


def test_split_columns_rejects_bad_input():
    from omnigraph.ops import rw_sym_adjacency, split_columns

    ei, n = _random_graph()
    rw, _ = rw_sym_adjacency(ei, n)
    with pytest.raises(ValueError, match="num_blocks"):
        split_columns([rw], 0)
    with pytest.raises(ValueError, match="CSR"):
        split_columns([rw.to_sparse_coo()], 2)
    with pytest.raises(ValueError, match="30 columns"):
        split_columns([rw], 2)[0].mm(torch.randn(29, 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bag_mm_matches_dense_product(dtype):
    from omnigraph.ops import bag_mm, rw_sym_adjacency, split_columns, spmm_into

    ei, n = _random_graph(n=50, e=200, seed=6)
    ei = ei[:, ei.max(0).values < 45]                            # nodes 45..49 isolated: empty bags
    rw, sym = rw_sym_adjacency(ei, n)                            # int32 pattern
    other = rw_adjacency(ei, n, self_loops=False)                 # int64 pattern, empty rows
    x = torch.randn(n, 7, dtype=dtype)
    for op in (rw, sym, other):
        op = op.to(dtype)
        want = op.to_dense() @ x
        torch.testing.assert_close(bag_mm(op, x), want)
        torch.testing.assert_close(bag_mm(op, x[:, ::2]), want[:, ::2])     # strided input
        out = torch.full((n, 7), float("nan"), dtype=dtype)
        assert spmm_into(op, x, out, backend="embedding_bag") is out
        torch.testing.assert_close(out, want)
        coo = op.to_sparse_coo()                                            # bags are for CSR: COO keeps torch
        assert torch.equal(spmm_into(coo, x, out, backend="embedding_bag"), torch.mm(coo, x))
        assert torch.equal(bag_mm(op, x), bag_mm(op, x))                   # deterministic
        leaf = x.clone().requires_grad_()
        bag_mm(op, leaf).pow(2).sum().backward()                            # gradients reach x
        torch.testing.assert_close(leaf.grad, 2 * op.to_dense().T @ want)
    part = split_columns([rw], 2)[0].parts[1]                    # non-square [N, 25] block
    torch.testing.assert_close(bag_mm(part, x.float()[25:]), rw.to_dense()[:, 25:] @ x.float()[25:])
    assert torch.equal(other.to_dense()[45:], torch.zeros(5, n)) and torch.equal(bag_mm(other, x.float())[45:],
                                                                                   torch.zeros(5, 7))


def test_bag_mm_and_spmm_into_reject_bad_input():
    from omnigraph.ops import bag_mm, rw_sym_adjacency, spmm_into

    ei, n = _random_graph()
    rw, _ = rw_sym_adjacency(ei, n)
    with pytest.raises(ValueError, match="CSR"):
        bag_mm(rw.to_sparse_coo(), torch.randn(n, 2))
    with pytest.raises(ValueError, match=r"\[30, c\]"):
        bag_mm(rw, torch.randn(n - 1, 2))
    with pytest.raises(ValueError, match=r"\[30, c\]"):
        bag_mm(rw, torch.randn(n))
    with pytest.raises(ValueError, match="backend"):
        spmm_into(rw, torch.randn(n, 2), torch.empty(n, 2), backend="fast")
