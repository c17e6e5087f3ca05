r"""Multi-hop sparse propagation :math:`[X, OX, O^2X, \dots, O^kX]`.

One entry point, :func:`propagate`, with two back-ends:

* ``torch-sparse`` (``SparseTensor`` SpMM), used when the optional ``fast`` extra
  (torch-sparse, from the PyG wheel index) is importable;
* ``torch.sparse`` CSR SpMM otherwise (always available).

Wide feature matrices are processed in column chunks so that the temporaries for one
hop never exceed ``N x chunk_size`` floats; the result is identical to the unchunked one
because SpMM acts on every column independently.
"""
from __future__ import annotations

import importlib.util

import torch
from torch import Tensor

HAVE_TORCH_SPARSE = importlib.util.find_spec("torch_sparse") is not None


def available_backends() -> list[str]:
    return (["torch_sparse"] if HAVE_TORCH_SPARSE else []) + ["torch"]


def spmm(op: Tensor, x: Tensor, backend: str = "auto") -> Tensor:
    """``op @ x`` for a sparse ``[N, N]`` operator and a dense ``[N, F]`` matrix."""
    if backend == "auto":
        backend = "torch_sparse" if HAVE_TORCH_SPARSE else "torch"
    if backend == "torch_sparse":
        if not HAVE_TORCH_SPARSE:
            raise ImportError("backend='torch_sparse' needs the torch-sparse package (pip install omnigraph[fast])")
        from torch_sparse import SparseTensor

        return SparseTensor.from_torch_sparse_csr_tensor(op) @ x
    if backend != "torch":
        raise ValueError(f"unknown backend {backend!r}; choose from {available_backends()} or 'auto'")
    if op.layout != torch.sparse_csr:
        op = op.to_sparse_csr()
    return torch.sparse.mm(op, x)


def propagate(op: Tensor, x: Tensor, hops: int, chunk_size: int | None = None,
              backend: str = "auto") -> list[Tensor]:
    r"""Return ``[x, op x, op^2 x, ..., op^hops x]`` (``hops + 1`` tensors of shape ``[N, F]``).

    Args:
        op: sparse ``[N, N]`` operator (CSR or COO).
        x: dense ``[N, F]`` features.
        hops: number of applications of ``op`` (``>= 0``).
        chunk_size: process at most this many feature columns at a time.
        backend: ``"auto"``, ``"torch"`` or ``"torch_sparse"``.
    """
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    if op.size(0) != x.size(0):
        raise ValueError(f"operator has {op.size(0)} rows but x has {x.size(0)} nodes")
    if op.layout != torch.sparse_csr:
        op = op.to_sparse_csr()
    if chunk_size is None or chunk_size >= x.size(1):
        out = [x]
        for _ in range(hops):
            out.append(spmm(op, out[-1], backend))
        return out
    chunks = [propagate(op, x[:, s:s + chunk_size], hops, None, backend) for s in range(0, x.size(1), chunk_size)]
    return [torch.cat([c[h] for c in chunks], dim=1) for h in range(hops + 1)]
