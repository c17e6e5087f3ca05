"""Per-edge feature products and column-blocked sparse products (omnigraph.ops.edge_products)."""
import pytest
import torch
from tolerance import assert_same_up_to_kernel

from omnigraph.ops import simple_undirected, spmm, sym_adjacency
from omnigraph.ops.edge_products import (
    SPARSE_DENSITY,
    add_sparse_,
    edge_dot_sqdist,
    edge_dots,
    sparse_rows,
    spmm_columns,
)


def _graph(n=60, d=150, seed=0, integer=True, density=0.05):
    g = torch.Generator().manual_seed(seed)
    ei = simple_undirected(torch.randint(0, n, (2, 6 * n), generator=g), n, self_loops=False)
    mask = torch.rand(n, d, generator=g) < density
    vals = torch.randint(1, 5, (n, d), generator=g).float() if integer else torch.rand(n, d, generator=g)
    return ei, (vals * mask).float()


@pytest.mark.parametrize("hops", [1, 2])
def test_spmm_columns_matches_one_product(hops):
    ei, x = _graph(integer=False, density=1.0)
    a = sym_adjacency(ei, x.size(0), self_loops=True, simple=True).to(torch.float64)
    x64 = x.double()
    want = x64
    for _ in range(hops):
        want = spmm(a, want)
    got = spmm_columns(a, x64, hops, width=16)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("density,sparse_hops", [(0.002, 2), (0.03, 1), (0.08, 1)])
def test_sparse_hops_equal_the_dense_product(density, sparse_hops):
    # sparse-sparse hops and column blocks sum in another order than one product: equal up to
    # rounding (tests/tolerance.py: on an AVX-512/AMX Xeon they differ by up to 3.5e-17; on the CPU
    # the test was written on they were equal).
    # At 0.2% the first product stays sparse, so both hops are sparse-sparse; from 3% on the first
    # product is dense and the second hop runs on column blocks
    ei, x = _graph(n=200, d=300, density=density, integer=False)
    a = sym_adjacency(ei, x.size(0), self_loops=True, simple=True).to(torch.float64)
    x64 = x.double()
    xs = sparse_rows(x)
    assert xs is not None and xs.nnz == int(torch.count_nonzero(x))
    first = int(torch.count_nonzero(spmm(a, x64))) / x.numel()
    assert (first <= SPARSE_DENSITY) == (sparse_hops == 2)  # the route this case is meant to take
    for hops in (1, 2):
        want = x64
        for _ in range(hops):
            want = spmm(a, want)
        for given in (xs, x64):  # the CSR form (sparse hops), or the dense tensor (column blocks)
            got = spmm_columns(a, given, hops, width=16)
            assert got.dtype == torch.float64
            assert_same_up_to_kernel(got, want, rtol=1e-12, atol=1e-15)
    assert torch.equal(spmm_columns(a, xs, 0), x64)    # no hop: the values are copied


def test_dense_features_are_not_converted():
    _, x = _graph(density=0.5)
    assert sparse_rows(x) is None and sparse_rows(x[:0]) is None


def test_add_sparse_adds_each_stored_entry_once():
    _, x = _graph(density=0.05, integer=False)
    base = torch.rand(x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    want = base + x.double()
    assert torch.equal(add_sparse_(base.clone(), sparse_rows(x)), want)


def test_fractions_and_large_magnitudes_take_the_dense_route():
    ei, x = _graph(density=0.03)
    row, col = ei[:, ei[0] < ei[1]]
    for bad in (x * 0.37, x * 3000.0):  # fractions; |x_i|^2 >= 2^24, where float32 sums round
        torch.testing.assert_close(edge_dots(bad, row, col), (bad[row] * bad[col]).sum(1))


def test_sparse_integer_dots_equal_the_dense_route():
    ei, x = _graph(density=0.03)
    row, col = ei[:, ei[0] < ei[1]]
    got = edge_dots(x, row, col)  # sparse route: integer features, 3% non-zero
    want = (x[row] * x[col]).sum(1)
    assert torch.equal(got, want)  # exact integers: the same in any summation order
    assert torch.equal(edge_dots(x, row, col, sparse=sparse_rows(x)), want)  # the caller's CSR form


def test_dense_dots_and_distances():
    ei, x = _graph(integer=False, density=1.0)
    row, col = ei[:, ei[0] < ei[1]]
    torch.testing.assert_close(edge_dots(x, row, col), (x[row] * x[col]).sum(1))
    x64 = x.double()
    dot, sq = edge_dot_sqdist(x64, row, col, width=16)
    torch.testing.assert_close(dot, (x64[row] * x64[col]).sum(1), rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(sq, (x64[row] - x64[col]).square().sum(1), rtol=1e-13, atol=1e-13)


def test_near_equal_rows_keep_their_small_distances():
    ei, x = _graph(integer=False, density=1.0)
    x64 = x.double() * 1e4
    row, col = ei[:, ei[0] < ei[1]]
    x64[col[0]] = x64[row[0]] + 1e-6  # the expanded form would cancel to rounding noise here
    want = (x64[row] - x64[col]).square().sum(1)
    _, guarded = edge_dot_sqdist(x64, row, col)
    torch.testing.assert_close(guarded, want, rtol=1e-9, atol=0.0)
    _, expanded = edge_dot_sqdist(x64, row, col, guard=0.0)
    assert abs(float(expanded[0]) - float(want[0])) > 1e-3 * float(want[0])  # what the guard prevents


def test_unsorted_edges_are_refused():
    ei, x = _graph()
    row, col = ei[:, ei[0] < ei[1]]
    with pytest.raises(ValueError, match="sorted"):
        edge_dot_sqdist(x.double(), row.flip(0), col.flip(0))


def test_triangle_counts_in_small_blocks_match_networkx():
    nx = pytest.importorskip("networkx")
    from omnigraph.ops import triangle_counts
    ei, _ = _graph(n=80)
    g = nx.Graph()
    g.add_nodes_from(range(80))
    g.add_edges_from(ei.t().tolist())
    want = torch.tensor([nx.triangles(g, i) for i in range(80)])
    for budget in (1, 7, 1 << 22):
        assert torch.equal(triangle_counts(ei, 80, budget=budget), want)
