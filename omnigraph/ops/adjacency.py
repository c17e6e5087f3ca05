r"""Normalised propagation operators, built once per graph as sparse CSR tensors.

Every builder first reduces ``edge_index`` to a deduplicated undirected graph
(:func:`simple_undirected`), then attaches the values:

.. math::
    A_{\mathrm{rw}} = D^{-1} A, \qquad
    A_{\mathrm{sym}} = D^{-1/2} A D^{-1/2}, \qquad
    P = D^{-1} A \;(\text{no self-loops, isolated rows } 0), \qquad
    H = I - P.

RGVT uses :math:`A_{\mathrm{rw}}` and :math:`A_{\mathrm{sym}}` with one self-loop per node;
GraphAny uses :math:`P` and :math:`I - P` without self-loops. The two must never share a
cached operator (node-classification spec, pitfall 1).
"""
from __future__ import annotations

import warnings

import torch
from torch import Tensor


def _sorted_pair_keys(edge_index: Tensor, num_nodes: int, self_loops: bool) -> Tensor:
    """Sorted unique keys ``row * N + col`` of the symmetrised, deduplicated graph, loops
    stripped and, with ``self_loops``, one added per node.

    Memory-lean (the 10^7-edge graphs of the benchmarks): each undirected pair is first
    reduced to one canonical key ``min * N + max``, built in blocks, sorted in place and
    deduplicated; only then are the mirrored keys and the loops added, followed by a second
    in-place sort. No ``[2, 2E]`` index or sort permutation is ever formed.
    """
    n = int(num_nodes)
    row, col = edge_index[0], edge_index[1]
    block = 1 << 22
    off = row != col
    keys = row.new_empty(int(off.sum()))
    filled = 0
    for s in range(0, row.numel(), block):
        r, c, o = row[s:s + block], col[s:s + block], off[s:s + block]
        k = torch.minimum(r, c)[o].mul_(n).add_(torch.maximum(r, c)[o])
        keys[filled:filled + k.numel()] = k
        filled += k.numel()
    del off
    _sort_(keys)
    if keys.numel():
        first = torch.ones(keys.numel(), dtype=torch.bool, device=keys.device)
        torch.ne(keys[1:], keys[:-1], out=first[1:])
        keys = keys[first]
        del first
    u = keys.numel()
    full = keys.new_empty(2 * u + (n if self_loops else 0))
    full[:u] = keys
    for s in range(0, u, block):      # (lo, hi) -> (hi, lo)
        k = keys[s:s + block]
        torch.remainder(k, n, out=full[u + s:u + s + k.numel()]).mul_(n).add_(k.div(n, rounding_mode="floor"))
    del keys
    if self_loops:
        torch.arange(n, device=full.device, out=full[2 * u:]).mul_(n + 1)
    _sort_(full)
    return full


def _sort_(keys: Tensor) -> None:
    """Sort an int64 tensor in place (NumPy on CPU: no values/indices copies as ``torch.sort`` makes)."""
    if keys.device.type == "cpu":
        keys.numpy().sort()
    else:
        keys.copy_(keys.sort().values)


def simple_undirected(edge_index: Tensor, num_nodes: int, self_loops: bool) -> Tensor:
    """Symmetrise, deduplicate, and either strip all self-loops or give every node exactly one.

    Args:
        edge_index: ``[2, E]`` integer tensor.
        num_nodes: number of nodes N (trailing isolated nodes are kept).
        self_loops: add exactly one loop per node (``True``) or none (``False``).

    Returns:
        ``[2, E']`` coalesced (row-major sorted) int64 edge index: the same as PyG's
        ``to_undirected`` -> ``remove_self_loops`` -> (``add_self_loops``) -> ``coalesce``.
    """
    keys = _sorted_pair_keys(edge_index.long(), num_nodes, self_loops)
    out = keys.new_empty(2, keys.numel())
    torch.div(keys, num_nodes, rounding_mode="floor", out=out[0])
    torch.remainder(keys, num_nodes, out=out[1])
    return out


def undirected_pattern(edge_index: Tensor, num_nodes: int, self_loops: bool = True) -> tuple[Tensor, Tensor]:
    """CSR pattern ``(crow, col)`` of ``simple_undirected(edge_index, num_nodes, self_loops)``.

    Indices are int32 when they fit (half the memory; ``torch.sparse.mm`` on CPU is as fast or
    faster with them), else int64.
    """
    n = int(num_nodes)
    keys = _sorted_pair_keys(edge_index.long(), n, self_loops)
    small = max(n, keys.numel()) < 2**31
    bounds = torch.arange(n + 1, device=keys.device).mul_(n)
    crow = torch.searchsorted(keys, bounds, out_int32=small)
    col = keys.remainder_(n)
    return crow, col.to(torch.int32) if small else col


def insert_self_loops(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Give every node of a coalesced, loop-free ``edge_index`` one self-loop, keeping it
    coalesced: each entry moves by the number of loops placed before it, so no sort is needed
    (``O(E + N)``). On the output of ``simple_undirected(..., self_loops=False)`` this equals
    ``simple_undirected(..., self_loops=True)``."""
    row, col = edge_index
    nodes = torch.arange(num_nodes, device=edge_index.device)
    counts = torch.bincount(row, minlength=num_nodes)
    starts = torch.cumsum(counts, 0) - counts
    below = torch.bincount(row[col < row], minlength=num_nodes)     # entries left of each diagonal
    out = edge_index.new_empty(2, row.numel() + num_nodes)
    out[:, starts + below + nodes] = nodes
    out[:, torch.arange(row.numel(), device=row.device) + row + (col > row)] = edge_index
    return out


def to_csr(edge_index: Tensor, value: Tensor, num_nodes: int) -> Tensor:
    """CSR tensor from a coalesced (row-sorted, duplicate-free) ``edge_index`` and its values."""
    crow = torch.zeros(num_nodes + 1, dtype=torch.long)
    crow[1:] = torch.cumsum(torch.bincount(edge_index[0], minlength=num_nodes), 0)
    return csr_tensor(crow, edge_index[1].contiguous(), value, num_nodes)


def csr_tensor(crow: Tensor, col: Tensor, value: Tensor, size: int | tuple[int, int]) -> Tensor:
    """CSR tensor of ``size`` (an int: square); indices are used as they are, not copied."""
    shape = (size, size) if isinstance(size, int) else tuple(size)
    with warnings.catch_warnings():  # torch flags sparse CSR as "beta" on every construction
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, value.contiguous(), shape)


def pattern_key(op: Tensor) -> tuple:
    """Identity of a sparse matrix's index pattern (its index storages, nnz and shape): equal keys
    mean operators that share one pattern, e.g. the pair from :func:`rw_sym_adjacency`."""
    idx = (op.crow_indices(), op.col_indices()) if op.layout == torch.sparse_csr else (op._indices(),)
    return (*(t.data_ptr() for t in idx), op._nnz(), tuple(op.shape))


def _degree(row: Tensor, num_nodes: int) -> Tensor:
    return torch.bincount(row, minlength=num_nodes).to(torch.float32)


def _simple_edges(edge_index: Tensor, num_nodes: int, self_loops: bool, simple: bool) -> Tensor:
    """``simple_undirected(edge_index, ...)``; with ``simple=True`` the input already is its
    loop-free version, so only the loops are inserted (no second sort of the edges)."""
    if simple:
        return insert_self_loops(edge_index, num_nodes) if self_loops else edge_index
    return simple_undirected(edge_index, num_nodes, self_loops)


def rw_adjacency(edge_index: Tensor, num_nodes: int, self_loops: bool = True, simple: bool = False) -> Tensor:
    r"""Row-normalised :math:`D^{-1}A` as ``[N, N]`` CSR; rows of isolated nodes are zero.

    ``simple=True``: ``edge_index`` is already ``simple_undirected(..., self_loops=False)``."""
    ei = _simple_edges(edge_index, num_nodes, self_loops, simple)
    deg = _degree(ei[0], num_nodes)
    inv = deg.reciprocal().nan_to_num(posinf=0.0)
    return to_csr(ei, inv[ei[0]], num_nodes)


def sym_adjacency(edge_index: Tensor, num_nodes: int, self_loops: bool = True, simple: bool = False) -> Tensor:
    r"""Symmetric :math:`D^{-1/2}AD^{-1/2}` as ``[N, N]`` CSR (PyG ``gcn_norm``).

    ``simple=True``: ``edge_index`` is already ``simple_undirected(..., self_loops=False)``."""
    ei = _simple_edges(edge_index, num_nodes, self_loops, simple)
    deg = _degree(ei[0], num_nodes)
    inv_sqrt = deg.rsqrt().nan_to_num(posinf=0.0)
    return to_csr(ei, inv_sqrt[ei[0]] * inv_sqrt[ei[1]], num_nodes)


def rw_sym_adjacency(edge_index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    r"""RGVT's pair :math:`(A_{\mathrm{rw}}, A_{\mathrm{sym}})` with one self-loop per node, as
    CSR tensors that share one index pattern (:func:`undirected_pattern`, int32 where it fits).

    Equal to ``rw_adjacency(ei, N)`` and ``sym_adjacency(ei, N)`` value for value, in about
    a third of their memory (one pattern instead of two, int32 instead of int64 indices).
    """
    crow, col = undirected_pattern(edge_index, num_nodes, self_loops=True)
    counts = crow.diff()
    deg = counts.to(torch.float32)            # >= 1: every node has its loop
    inv_sqrt = deg.rsqrt()
    rw = torch.repeat_interleave(deg.reciprocal(), counts, output_size=col.numel())
    sym = torch.repeat_interleave(inv_sqrt, counts, output_size=col.numel()).mul_(inv_sqrt[col])
    return csr_tensor(crow, col, rw, num_nodes), csr_tensor(crow, col, sym, num_nodes)


def mean_adjacency(edge_index: Tensor, num_nodes: int) -> Tensor:
    r"""GraphAny's mean operator :math:`P = D^{-1}A` without self-loops (isolated rows zero)."""
    return rw_adjacency(edge_index, num_nodes, self_loops=False)


def identity_minus(op: Tensor) -> Tensor:
    r""":math:`I - P` for a square CSR operator :math:`P` (result is CSR)."""
    n = op.size(0)
    eye = torch.sparse_coo_tensor(torch.arange(n).repeat(2, 1), torch.ones(n), (n, n))
    diff = (eye - op.to_sparse_coo()).coalesce()
    return to_csr(diff.indices(), diff.values(), n)
