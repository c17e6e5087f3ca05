r"""The operator pair of RGVT (:math:`A_{\mathrm{rw}}`, :math:`A_{\mathrm{sym}}`) and the rules that pick
its sparse layout, product kernel and column blocks for a chunk width.

The measurements behind the thresholds are on the GPU / kernels page (``docs/gpu.md``, "RGVT's CPU
kernels") and in ``docs/results/performance.md``.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from omnigraph.ops.adjacency import csr_tensor, pattern_key
from omnigraph.ops.blocked_spmm import ColumnBlockedCSR, split_columns

#: the product back-ends :func:`spmm_kernel` chooses between
SPMM_BACKENDS = ("auto", "torch", "embedding_bag")
#: from this many nodes on, the large-graph kernels (column blocks, embedding bags, node reordering)
#: are the default: they change results by float rounding, and 2^16 is the smallest power of two
#: above every graph of the published tables, whose numbers therefore stay as committed
LARGE_GRAPH_NODES = 1 << 16


class RGVTOperators(NamedTuple):
    """The two sparse ``[N, N]`` propagation operators of one graph (built once, reused),
    with their transposes for a fast backward pass (``A_sym`` is symmetric, ``A_rw`` is not).
    For inference on large graphs ``rw`` and ``sym`` may be column-blocked
    (:class:`~omnigraph.ops.ColumnBlockedCSR`, see :func:`column_blocks`)."""

    rw: Tensor | ColumnBlockedCSR
    sym: Tensor | ColumnBlockedCSR
    rw_t: Tensor | None = None
    sym_t: Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return self.rw.size(0)

    def to(self, *args) -> RGVTOperators:
        return RGVTOperators(*(None if m is None else m.to(*args) for m in self))

    @property
    def blocked(self) -> bool:
        return isinstance(self.rw, ColumnBlockedCSR)

    def with_layout(self, layout: str, blocks: int = 1) -> RGVTOperators:
        """The same operators as ``"csr"`` or ``"coo"`` sparse matrices (converted only if needed;
        operators that shared one pattern still share it after the conversion), with
        ``blocks > 1`` split into that many CSR column blocks. Column blocks are for inference:
        the transposes (kept for a backward pass) are left out of a blocked result, so the
        operators of a training graph serve its no-grad validation pass too.
        Operators that are already column-blocked are returned as they are."""
        if layout not in ("csr", "coo"):
            raise ValueError(f"layout must be 'csr' or 'coo', got {layout!r}")
        if self.blocked:
            return self
        if blocks > 1:
            if layout != "csr":
                raise ValueError("column blocks are CSR operators: pass layout='csr' with blocks > 1")
            return RGVTOperators(*split_columns(self.with_layout("csr")[:2], blocks))
        want = torch.sparse_csr if layout == "csr" else torch.sparse_coo
        if all(m is None or m.layout == want for m in self):
            return self
        done: dict[tuple, Tensor] = {}     # converted index pattern -> a converted operator
        out = []
        for m in self:
            if m is None or m.layout == want:
                out.append(m)
                continue
            key = pattern_key(m)
            if key in done:
                out.append(_with_values(done[key], _values(m)))
            else:
                done[key] = _as_layout(m, layout)
                out.append(done[key])
        return RGVTOperators(*out)


def _values(op: Tensor) -> Tensor:
    return op.values() if op.layout == torch.sparse_csr else op._values()


def _with_values(op: Tensor, values: Tensor) -> Tensor:
    """A sparse matrix with the index pattern of ``op`` (shared, not copied) and new values."""
    if op.layout == torch.sparse_csr:
        return csr_tensor(op.crow_indices(), op.col_indices(), values, op.shape)
    return torch.sparse_coo_tensor(op._indices(), values, op.shape, is_coalesced=True)


def _as_layout(op: Tensor, layout: str) -> Tensor:
    if layout == "csr":
        return op if op.layout == torch.sparse_csr else op.to_sparse_csr()
    return op if op.layout == torch.sparse_coo else op.to_sparse_coo().coalesce()


def spmm_kernel(columns: int, device: str | torch.device = "cpu", backend: str = "auto",
                csr_below_columns: int = 448, blocked: bool = False) -> tuple[str, str]:
    r"""``(layout, backend)`` of the products for chunks of ``columns`` feature columns.

    ``layout`` is the operators' sparse layout (``"csr"`` / ``"coo"``), ``backend`` the
    :func:`~omnigraph.ops.spmm_into` back-end (``"torch"``: ``torch.sparse.mm``;
    ``"embedding_bag"``: :func:`~omnigraph.ops.bag_mm`).

    - ``"torch"``: CSR below ``csr_below_columns`` columns, COO at or above.
    - ``"auto"``: the same, except that on a CPU the wide chunks run as embedding bags on CSR
      operators, which sum every row in the order of the COO kernel (bit-identical outputs),
      and so do column-blocked operators (``blocked``, large graphs: one bag per block).
    - ``"embedding_bag"``: embedding bags at every width (narrow chunks then differ from the
      CSR kernel by float rounding).
    """
    if backend not in SPMM_BACKENDS:
        raise ValueError(f"spmm_backend must be one of {SPMM_BACKENDS}, got {backend!r}")
    narrow = columns < csr_below_columns
    cpu = torch.device(device).type == "cpu"
    if backend == "embedding_bag" or (backend == "auto" and cpu and (blocked or not narrow)):
        return "csr", "embedding_bag"
    return ("csr" if narrow else "coo"), "torch"


def column_blocks(num_nodes: int, columns: int, device: str | torch.device = "cpu", *,
                  min_nodes: int = LARGE_GRAPH_NODES,
                  csr_below_columns: int = 448, block_bytes: int = 16 << 20) -> int:
    r"""Column blocks of the operators for chunks of ``columns`` columns.

    On a CPU, graphs of at least ``min_nodes`` nodes with chunks narrower than
    ``csr_below_columns`` get :math:`\lceil 4 N c / \text{block\_bytes} \rceil` blocks, so that
    each block's product gathers its feature rows from the cache
    (:mod:`omnigraph.ops.blocked_spmm`). Blocking re-associates each row's sum (results move by
    about 1e-7), so smaller graphs keep one block.
    """
    if num_nodes < min_nodes or columns >= csr_below_columns or torch.device(device).type != "cpu":
        return 1
    return max(1, min(num_nodes, -(-4 * num_nodes * columns // block_bytes)))


__all__ = ["LARGE_GRAPH_NODES", "SPMM_BACKENDS", "RGVTOperators", "column_blocks", "spmm_kernel"]
