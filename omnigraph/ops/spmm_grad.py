"""Sparse x dense product with a cheap backward pass.

``torch.sparse.mm`` differentiates through a generic sparse kernel that is several times slower
on CPU than a second forward product. For ``Y = A X`` the gradient is ``dL/dX = A^T dL/dY``, so
keeping ``A^T`` as its own sparse matrix turns the backward pass into one more forward-style
product (measured in ``docs/gpu.md``, "RGVT's CPU kernels").
"""
from __future__ import annotations

import torch
from torch import Tensor


class _SparseMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: Tensor, a_t: Tensor, x: Tensor) -> Tensor:
        ctx.a_t = a_t
        return torch.sparse.mm(a, x)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, None, torch.sparse.mm(ctx.a_t, grad)


def transpose(op: Tensor) -> Tensor:
    """``op^T`` in the layout of ``op`` (COO or CSR)."""
    t = op.to_sparse_coo().t().coalesce()
    return t.to_sparse_csr() if op.layout == torch.sparse_csr else t


def spmm_grad(op: Tensor, op_t: Tensor | None, x: Tensor) -> Tensor:
    """``op @ x``; when ``x`` needs a gradient and ``op_t = op^T`` is given, backward is one SpMM."""
    if op_t is not None and x.requires_grad:
        return _SparseMatmul.apply(op, op_t, x)
    return torch.sparse.mm(op, x)
