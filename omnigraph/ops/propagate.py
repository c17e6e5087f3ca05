r"""Multi-hop sparse propagation :math:`[X, OX, O^2X, \dots, O^kX]`.

One entry point, :func:`propagate`, with three back-ends:

* ``torch.sparse`` SpMM (``"torch"``, always available and the ``"auto"`` choice), in CSR or COO layout;
* ``torch-sparse`` (``SparseTensor`` SpMM), by request only (``backend="torch_sparse"``) when that
  optional package is installed: installing it (pygod needs it) changes nothing unless asked for;
* ``embedding_bag`` (always available, by request): the CSR product as an embedding bag
  (:func:`~omnigraph.ops.bag_mm`); results differ from the ``torch`` back-end's CSR kernel by float
  rounding.

**Layout.** ``layout="auto"`` uses CSR, never the slower layout on the graphs measured;
``layout="coo"`` keeps a COO operator as it is (the results agree to float rounding, ~1e-7
relative). The measurements behind these defaults: ``docs/gpu.md``, "RGVT's CPU kernels".

Wide feature matrices are processed in column chunks so that the temporaries for one
hop never exceed ``N x chunk_size`` floats; the result is identical to the unchunked one
because SpMM acts on every column independently.
"""
from __future__ import annotations

import importlib.util

import torch
from torch import Tensor

from omnigraph.ops.bag_spmm import bag_mm

HAVE_TORCH_SPARSE = importlib.util.find_spec("torch_sparse") is not None


def available_backends() -> list[str]:
    return (["torch_sparse"] if HAVE_TORCH_SPARSE else []) + ["torch", "embedding_bag"]


LAYOUTS = {"csr": torch.sparse_csr, "coo": torch.sparse_coo}


def _with_layout(op: Tensor, layout: str) -> Tensor:
    """``op`` in the requested torch layout (``"auto"`` = CSR, the faster one, see above)."""
    target = LAYOUTS.get("csr" if layout == "auto" else layout)
    if target is None:
        raise ValueError(f"unknown layout {layout!r}; choose from 'auto', 'csr' or 'coo'")
    if op.layout == target:
        return op
    return op.to_sparse_csr() if target == torch.sparse_csr else op.to_sparse_coo().coalesce()


def _backend(backend: str) -> str:
    if backend == "auto":
        return "torch"
    if backend not in ("torch", "torch_sparse", "embedding_bag"):
        raise ValueError(f"unknown backend {backend!r}; choose from {available_backends()} or 'auto'")
    return backend


def spmm(op: Tensor, x: Tensor, backend: str = "auto", layout: str = "auto") -> Tensor:
    """``op @ x`` for a sparse ``[N, N]`` operator and a dense ``[N, F]`` matrix.

    ``layout`` (``"auto"``/``"csr"``/``"coo"``) picks the torch back-end's sparse layout;
    ``op`` is converted when it differs (convert once and reuse for repeated products).
    """
    backend = _backend(backend)
    if backend == "torch_sparse":
        if not HAVE_TORCH_SPARSE:
            raise ImportError("backend='torch_sparse' needs the torch-sparse package (pip install omnigraph[fast])")
        from torch_sparse import SparseTensor

        return SparseTensor.from_torch_sparse_csr_tensor(_with_layout(op, "csr")) @ x
    if backend == "embedding_bag":
        return bag_mm(_with_layout(op, "csr"), x)
    return torch.sparse.mm(_with_layout(op, layout), x)


def propagate(op: Tensor, x: Tensor, hops: int, chunk_size: int | None = None,
              backend: str = "auto", layout: str = "auto") -> list[Tensor]:
    r"""Return ``[x, op x, op^2 x, ..., op^hops x]`` (``hops + 1`` tensors of shape ``[N, F]``).

    Args:
        op: sparse ``[N, N]`` operator (CSR or COO).
        x: dense ``[N, F]`` features.
        hops: number of applications of ``op`` (``>= 0``).
        chunk_size: process at most this many feature columns at a time.
        backend: ``"auto"``, ``"torch"``, ``"torch_sparse"`` or ``"embedding_bag"``.
        layout: sparse layout of the ``torch`` back-end: ``"auto"`` (CSR), ``"csr"`` or ``"coo"``.
    """
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    if op.size(0) != x.size(0):
        raise ValueError(f"operator has {op.size(0)} rows but x has {x.size(0)} nodes")
    backend = _backend(backend)
    op = _with_layout(op, layout if backend == "torch" else "csr")  # once, not per hop
    if chunk_size is None or chunk_size >= x.size(1):
        out = [x]
        for _ in range(hops):
            out.append(spmm(op, out[-1], backend, layout))
        return out
    chunks = [propagate(op, x[:, s:s + chunk_size], hops, None, backend, layout)
              for s in range(0, x.size(1), chunk_size)]
    return [torch.cat([c[h] for c in chunks], dim=1) for h in range(hops + 1)]
