r"""Products of node features along edges and sparse products over blocks of feature columns.

For a feature matrix :math:`X \in \mathbb{R}^{N \times d}` and edges :math:`(i, j)`, these return
:math:`x_i^\top x_j` and :math:`\lVert x_i - x_j \rVert_2^2` per edge, and :math:`A^k X` for a sparse
:math:`A`, without an :math:`N \times N` matrix and without gathering whole rows of a wide
:math:`X` per edge: the work runs over blocks of ``width`` feature columns, so the block being read
stays small however wide :math:`X` is.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from omnigraph.ops.adjacency import to_csr
from omnigraph.ops.propagate import spmm

#: feature columns per block: the block of ``N`` rows that an edge pass reads
FEATURE_BLOCK = 64
#: float32 represents every integer up to this magnitude exactly
_FLOAT32_EXACT = 2 ** 24
#: the sparse route of :func:`edge_dots` is taken up to this fraction of non-zero features
SPARSE_DENSITY = 0.1
#: :func:`edge_dot_sqdist` sums squared differences directly where the expanded form keeps less
CANCELLATION_GUARD = 1e-2


def _slices(count: int, width: int, budget: int = 1 << 22):
    """Consecutive slices of ``count`` edges or rows such that one ``[slice, width]`` block holds at
    most ``budget`` values."""
    step = max(1, budget // max(width, 1))
    for s in range(0, count, step):
        yield slice(s, min(s + step, count))


def _scipy_csr(op: Tensor) -> sp.csr_matrix:
    op = op.to_sparse_csr() if op.layout != torch.sparse_csr else op
    return sp.csr_matrix((op.values().numpy(), op.col_indices().numpy(), op.crow_indices().numpy()),
                         shape=tuple(op.shape))


def sparse_rows(x: Tensor) -> sp.csr_matrix | None:
    """``x`` as a scipy CSR matrix of its dtype when at most :data:`SPARSE_DENSITY` of its entries
    are non-zero, else ``None``: the form the sparse routes below read, built once per ``x``."""
    if not x.numel() or int(torch.count_nonzero(x)) > SPARSE_DENSITY * x.numel():
        return None
    with warnings.catch_warnings():  # torch flags sparse CSR as "beta" on every construction
        warnings.simplefilter("ignore", UserWarning)
        return _scipy_csr(x.to_sparse_csr())


def spmm_columns(op: Tensor, x: Tensor | sp.csr_matrix, hops: int = 1, backend: str = "auto",
                 width: int = FEATURE_BLOCK) -> Tensor:
    r""":math:`\mathrm{op}^{hops} x` (``op`` sparse ``[N, N]``, ``x`` dense ``[N, F]``), ``width`` columns
    of ``x`` at a time: each output entry is the sum one product over all columns forms, with a
    smaller part of ``x`` read per pass. An ``x`` given as a scipy CSR matrix (e.g. from
    :func:`sparse_rows`) takes its hops as sparse-sparse products, which visit only stored entries,
    for as long as the product stays at most :data:`SPARSE_DENSITY` non-zero; the result is dense,
    in ``op``'s dtype."""
    if sp.issparse(x):
        op_sp = _scipy_csr(op) if hops > 0 else None
        while hops > 0:
            x = op_sp @ x
            hops -= 1
            if x.nnz > SPARSE_DENSITY * x.shape[0] * x.shape[1]:
                break
        x = torch.from_numpy(x.toarray()).to(op.dtype)
    if hops == 0:
        return x
    if x.size(1) <= width:
        for _ in range(hops):
            x = spmm(op, x, backend)
        return x
    out = torch.empty(op.size(0), x.size(1), dtype=x.dtype)
    for s in range(0, x.size(1), width):
        block = x[:, s:s + width].contiguous()
        for _ in range(hops):
            block = spmm(op, block, backend)
        out[:, s:s + width] = block
    return out


def add_sparse_(out: Tensor, x: sp.csr_matrix) -> Tensor:
    """``out += x`` in place for a dense ``out`` and a scipy CSR ``x`` of the same shape: one addition
    per stored entry, so the sums equal those of the dense ``out + x.toarray()``."""
    coo = x.tocoo()
    idx = (torch.from_numpy(coo.row.astype(np.int64)), torch.from_numpy(coo.col.astype(np.int64)))
    return out.index_put_(idx, torch.from_numpy(coo.data).to(out.dtype), accumulate=True)


def edge_dots(x: Tensor, row: Tensor, col: Tensor, sparse: sp.csr_matrix | None = None) -> Tensor:
    r""":math:`x_{row_e}^\top x_{col_e}` for every edge ``e``, in ``x``'s dtype (``sparse``: ``x`` as
    :func:`sparse_rows` returns it, where the caller has it already).

    Sparse integer float32 features (at most :data:`SPARSE_DENSITY` non-zero, and
    :math:`\max_i \lVert x_i \rVert^2 < 2^{24}`, which bounds every partial sum by Cauchy-Schwarz)
    multiply only their stored entries (:math:`O(\mathrm{nnz}(x_i) + \mathrm{nnz}(x_j))` per edge);
    their sums are exact in any order, so the result is the one of the dense route. Otherwise whole rows are
    gathered, a chunk of edges at a time (:math:`O(d)` per edge).
    """
    out = torch.empty(row.numel(), dtype=x.dtype)
    if row.numel() and x.dtype == torch.float32:
        xs = sparse if sparse is not None else sparse_rows(x)
        if xs is not None:
            norm2 = np.asarray(xs.multiply(xs).sum(1, dtype=np.float64)).ravel()
            if np.array_equal(xs.data, np.round(xs.data)) and float(norm2.max(initial=0.0)) < _FLOAT32_EXACT:
                r_np, c_np = row.numpy(), col.numpy()
                for sl in _slices(row.numel(), int(2 * max(1.0, xs.nnz / max(x.size(0), 1)))):
                    prod = xs[r_np[sl]].multiply(xs[c_np[sl]])
                    out[sl] = torch.from_numpy(np.asarray(prod.sum(1, dtype=np.float64)).ravel()).to(x.dtype)
                return out
    for sl in _slices(row.numel(), x.size(1)):
        out[sl] = (x[row[sl]] * x[col[sl]]).sum(1)
    return out


def _blocked_sqdist(x: Tensor, row: Tensor, col: Tensor, width: int) -> Tensor:
    sq = torch.zeros(row.numel(), dtype=x.dtype)
    for s in range(0, x.size(1), width):
        block = x[:, s:s + width].contiguous()
        for sl in _slices(row.numel(), 2 * block.size(1)):
            sq[sl] += (block[row[sl]] - block[col[sl]]).square_().sum(1)
    return sq


def edge_dot_sqdist(x: Tensor, row: Tensor, col: Tensor, width: int = FEATURE_BLOCK,
                    guard: float = CANCELLATION_GUARD) -> tuple[Tensor, Tensor]:
    r"""Per edge ``e = (i, j)``: :math:`x_i^\top x_j` and :math:`\lVert x_i - x_j \rVert_2^2` (two ``[E]``
    tensors in ``x``'s dtype); ``(row, col)`` sorted by row, then column, without duplicates.

    The dot products are one sampled product :math:`(X X^\top)_{ij}` on the edges
    (``torch.sparse.sampled_addmm``), and the squared distances
    :math:`\lVert x_i \rVert^2 + \lVert x_j \rVert^2 - 2 x_i^\top x_j`, except where that difference
    is below ``guard`` times :math:`\lVert x_i \rVert^2 + \lVert x_j \rVert^2` (near-equal rows, where
    it would cancel): those edges are summed as :math:`\sum_f (x_{if} - x_{jf})^2`, over blocks of
    ``width`` feature columns. Either way the relative rounding stays near the dtype's epsilon
    divided by ``guard``.
    """
    n, e = x.size(0), row.numel()
    if e == 0:
        return x.new_zeros(0), x.new_zeros(0)
    key = row * n + col
    if e > 1 and not bool((key[1:] > key[:-1]).all()):
        raise ValueError("edge_dot_sqdist needs edges sorted by (row, col) without duplicates")
    pattern = to_csr(torch.stack([row, col]), torch.zeros(e, dtype=x.dtype), n)
    dot = torch.sparse.sampled_addmm(pattern, x, x.T, beta=0.0).values().clone()
    # rows a block at a time: no N x d temporary
    norm2 = torch.cat([x[sl].square().sum(1) for sl in _slices(n, x.size(1))])
    base = norm2[row] + norm2[col]
    sq = base - 2 * dot
    risky = (sq < guard * base).nonzero().squeeze(1)
    if risky.numel():
        sq[risky] = _blocked_sqdist(x, row[risky], col[risky], width)
    return dot, sq.clamp_min_(0.0)


__all__ = ["CANCELLATION_GUARD", "FEATURE_BLOCK", "SPARSE_DENSITY", "add_sparse_", "edge_dot_sqdist", "edge_dots",
           "sparse_rows", "spmm_columns"]
