r"""Sparse x dense products through ``F.embedding_bag``, a gather-and-sum kernel.

For a CSR matrix :math:`A` with row pointer ``crow``, column indices ``col`` and values ``v``,

.. math::
    (A X)_i = \sum_{k=\mathrm{crow}_i}^{\mathrm{crow}_{i+1}-1} v_k\, X_{\mathrm{col}_k},

which is exactly an embedding bag: ``X`` is the table, row :math:`i`'s stored entries are
the bag, ``v`` the per-sample weights. On CPU, PyTorch runs float32 bags with FBGEMM's
vectorised kernels, which are faster than ``torch.sparse.mm`` on graph operators (timings on
the performance page, ``rgvt_backends`` and roofline sections). Each row is
summed in stored order, as the COO kernel of ``torch.sparse.mm`` does (bit-identical results
on x86 here) but not its CSR kernel (results differ by float rounding, about 1e-7 relative).
Gradients reach ``x`` through PyTorch's embedding-bag backward.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def bag_mm(op: Tensor, x: Tensor, out: Tensor | None = None) -> Tensor:
    r""":math:`A X` for a CSR ``op`` ``[N, M]`` and dense ``x`` ``[M, c]``, through
    ``F.embedding_bag``; written into ``out`` ``[N, c]`` when given.

    Example:
        >>> op = torch.tensor([[0.5, 0.5], [0.0, 1.0]]).to_sparse_csr()
        >>> bag_mm(op, torch.tensor([[2.0], [4.0]]))
        tensor([[3.],
                [4.]])
    """
    if op.layout != torch.sparse_csr:
        raise ValueError(f"bag_mm takes a CSR matrix, got layout {op.layout}")
    if x.dim() != 2 or x.size(0) != op.size(1):
        raise ValueError(f"x must have shape [{op.size(1)}, c] for a {list(op.shape)} operator, got {list(x.shape)}")
    result = F.embedding_bag(op.col_indices(), x, op.crow_indices(), mode="sum", per_sample_weights=op.values(),
                             include_last_offset=True)
    return result if out is None else out.copy_(result)


__all__ = ["bag_mm"]
