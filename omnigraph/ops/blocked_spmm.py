r"""Cache-blocked sparse x dense products for graphs too large for the CPU cache.

For a CSR matrix :math:`A \in \mathbb{R}^{N \times M}` and a partition of its columns into
consecutive ranges :math:`B_1, \dots, B_K`,

.. math::
    A X = \sum_{j=1}^{K} A_{:, B_j}\, X_{B_j}.

Each product on the right gathers only the rows :math:`X_{B_j}`. On a graph without locality
(random node ids, as in a power-law graph with 10^6 nodes) the unblocked product gathers from
all of :math:`X` at random and waits on main memory; with blocks sized to the last-level cache
the gathers hit the cache and the product is faster, even though the output is revisited
:math:`K` times (measured against the machine's roofline in ``docs/results/performance.md``). The sum is re-associated, so results
differ from the unblocked product by float rounding (about 1e-7 relative).

Matrices that share one index pattern (RGVT's :math:`A_{\mathrm{rw}}` and
:math:`A_{\mathrm{sym}}`) are split once and their blocks share the split pattern.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

import torch
from torch import Tensor

from omnigraph.ops.adjacency import csr_tensor, pattern_key
from omnigraph.ops.bag_spmm import bag_mm


class ColumnBlockedCSR(NamedTuple):
    """A sparse ``[N, M]`` matrix kept as CSR blocks of consecutive columns.

    ``parts[j]`` is the CSR ``[N, starts[j + 1] - starts[j]]`` block of columns
    ``starts[j]:starts[j + 1]``. Offers the few tensor attributes the models read
    (``shape``, ``size``, ``device``, ``dtype``, ``to``) and :meth:`mm`.
    """

    parts: tuple[Tensor, ...]
    starts: tuple[int, ...]

    @property
    def shape(self) -> torch.Size:
        return torch.Size((self.parts[0].size(0), self.starts[-1]))

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def device(self) -> torch.device:
        return self.parts[0].device

    @property
    def dtype(self) -> torch.dtype:
        return self.parts[0].dtype

    def to(self, *args, **kwargs) -> ColumnBlockedCSR:
        return ColumnBlockedCSR(tuple(p.to(*args, **kwargs) for p in self.parts), self.starts)

    def mm(self, x: Tensor, out: Tensor | None = None, backend: str = "torch") -> Tensor:
        r""":math:`A X` for ``x`` ``[M, c]``, written into ``out`` ``[N, c]`` when given; each
        block's product through ``torch.sparse.mm`` (``backend="torch"``) or as an embedding bag
        (``"embedding_bag"``, :func:`~omnigraph.ops.bag_mm`)."""
        if x.size(0) != self.starts[-1]:
            raise ValueError(f"x has {x.size(0)} rows but the operator has {self.starts[-1]} columns")
        if backend == "embedding_bag":
            for j, (part, start, stop) in enumerate(zip(self.parts, self.starts, self.starts[1:])):
                if j == 0:
                    out = bag_mm(part, x[start:stop], out)
                else:
                    out.add_(bag_mm(part, x[start:stop]))
            return out
        first, rest = self.parts[0], zip(self.parts[1:], self.starts[1:-1], self.starts[2:])
        out = torch.mm(first, x[:self.starts[1]], out=out) if out is not None else torch.mm(first, x[:self.starts[1]])
        for part, start, stop in rest:
            out.addmm_(part, x[start:stop])
        return out


def spmm_into(op: Tensor | ColumnBlockedCSR, x: Tensor, out: Tensor, backend: str = "torch") -> Tensor:
    """``op @ x`` written into ``out`` for a sparse tensor or :class:`ColumnBlockedCSR` ``op``.

    ``backend``: ``"torch"`` (``torch.sparse.mm``) or ``"embedding_bag"``
    (:func:`~omnigraph.ops.bag_mm`), which applies to CSR matrices and to each block of a
    column-blocked operator; COO matrices always use ``torch.sparse.mm``."""
    if backend not in ("torch", "embedding_bag"):
        raise ValueError(f"backend must be 'torch' or 'embedding_bag', got {backend!r}")
    if isinstance(op, ColumnBlockedCSR):
        return op.mm(x, out, backend)
    if backend == "embedding_bag" and op.layout == torch.sparse_csr:
        return bag_mm(op, x, out)
    return torch.mm(op, x, out=out)


def split_columns(ops: Sequence[Tensor], num_blocks: int) -> list[ColumnBlockedCSR]:
    """Split CSR matrices of one shape into ``num_blocks`` blocks of (nearly) equal column count.

    Matrices whose index pattern is the same tensors (e.g. from
    :func:`~omnigraph.ops.rw_sym_adjacency`) are split together: the block patterns are
    built once and shared. Block ``j`` covers columns ``j * ceil(M / K)`` onwards.
    """
    if isinstance(num_blocks, bool) or int(num_blocks) < 1:
        raise ValueError(f"num_blocks must be a positive integer, got {num_blocks!r}")
    for op in ops:
        if op.layout != torch.sparse_csr:
            raise ValueError(f"split_columns takes CSR matrices, got layout {op.layout}")
    groups: dict[tuple, list[int]] = {}
    for i, op in enumerate(ops):
        groups.setdefault(pattern_key(op), []).append(i)
    out: list[ColumnBlockedCSR | None] = [None] * len(ops)
    for members in groups.values():
        for i, blocks in zip(members, _split_shared([ops[i] for i in members], int(num_blocks))):
            out[i] = blocks
    return out


def _split_shared(ops: list[Tensor], num_blocks: int) -> list[ColumnBlockedCSR]:
    crow, col = ops[0].crow_indices(), ops[0].col_indices()
    n, m = ops[0].shape
    width = max(1, -(-m // num_blocks))
    starts = tuple(range(0, m, width)) + (m,) if m else (0, 0)
    # row of every stored entry, int32 where it fits: the transient cost of the split
    small = n < 2**31 and col.dtype == torch.int32
    rows = torch.repeat_interleave(torch.arange(n, dtype=torch.int32 if small else torch.int64, device=col.device),
                                   crow.diff(), output_size=col.numel())
    parts: list[list[Tensor]] = [[] for _ in ops]
    for start, stop in pairwise(starts):
        keep = (col >= start) & (col < stop)
        counts = torch.bincount(rows[keep], minlength=n)
        block_crow = torch.zeros(n + 1, dtype=crow.dtype, device=crow.device)
        torch.cumsum(counts, 0, out=counts)
        block_crow[1:] = counts
        block_col = col[keep].sub_(start)
        for k, op in enumerate(ops):
            parts[k].append(csr_tensor(block_crow, block_col, op.values()[keep], (n, stop - start)))
        del keep, counts
    return [ColumnBlockedCSR(tuple(p), starts) for p in parts]


__all__ = ["ColumnBlockedCSR", "split_columns", "spmm_into"]
