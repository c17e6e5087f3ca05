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
from torch_geometric.utils import add_self_loops, coalesce, remove_self_loops, to_undirected


def simple_undirected(edge_index: Tensor, num_nodes: int, self_loops: bool) -> Tensor:
    """Symmetrise, deduplicate, and either strip all self-loops or give every node exactly one.

    Args:
        edge_index: ``[2, E]`` integer tensor.
        num_nodes: number of nodes N (trailing isolated nodes are kept).
        self_loops: add exactly one loop per node (``True``) or none (``False``).

    Returns:
        ``[2, E']`` coalesced (row-major sorted) edge index.
    """
    edge_index = to_undirected(edge_index, num_nodes=num_nodes)
    edge_index, _ = remove_self_loops(edge_index)
    if self_loops:
        edge_index, _ = add_self_loops(edge_index, num_nodes=num_nodes)
    return coalesce(edge_index, num_nodes=num_nodes)


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
    with warnings.catch_warnings():  # torch flags sparse CSR as "beta" on every construction
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, edge_index[1].contiguous(), value.contiguous(),
                                       (num_nodes, num_nodes))


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


def mean_adjacency(edge_index: Tensor, num_nodes: int) -> Tensor:
    r"""GraphAny's mean operator :math:`P = D^{-1}A` without self-loops (isolated rows zero)."""
    return rw_adjacency(edge_index, num_nodes, self_loops=False)


def identity_minus(op: Tensor) -> Tensor:
    r""":math:`I - P` for a square CSR operator :math:`P` (result is CSR)."""
    n = op.size(0)
    eye = torch.sparse_coo_tensor(torch.arange(n).repeat(2, 1), torch.ones(n), (n, n))
    diff = (eye - op.to_sparse_coo()).coalesce()
    return to_csr(diff.indices(), diff.values(), n)
