r"""Recurrent Graph View Transformation (RGVT) encoder.

Lee, Kong, Jeong, Yoo, *View Space: Learning Representation across Arbitrary Graphs*
(arXiv 2512.11561, ICML 2026). Node-classification spec, sections 2.1-2.4 and 2.8.

For a graph with adjacency :math:`A` (undirected, deduplicated, exactly one self-loop per
node) and degrees :math:`d_i` (loop included), two operators are built once per graph:

.. math::
    A_{\mathrm{rw}} = D^{-1}A, \qquad A_{\mathrm{sym}} = D^{-1/2} A D^{-1/2}.

With :math:`K` = ``adj_max_hop`` the features :math:`X \in \mathbb{R}^{N \times F}` are lifted
to :math:`2K+1` *views*, interleaved hop by hop (for :math:`K = 2`):

.. math::
    V = \bigl[X,\; A_{\mathrm{rw}}X,\; A_{\mathrm{sym}}X,\; A_{\mathrm{rw}}^2X,\;
    A_{\mathrm{sym}}^2X\bigr] \in \mathbb{R}^{(2K+1) \times N \times F}.

One GVT step applies a tiny MLP :math:`\varphi: \mathbb{R}^{2K+1} \to \mathbb{R}` to every
view vector :math:`v_{n,f} = V[:, n, f]`,

.. math::
    \Psi(X)_{n,f} = \varphi(v_{n,f}), \qquad
    \varphi(v) = W_2\,\mathrm{GELU}(W_1 v + b_1) + b_2,

and RGVT iterates it with shared weights, :math:`Z = \Psi^L(X)` (no residual, no norm).
All parameters act on the view axis, so the encoder is equivariant to permutations of
nodes *and* of feature columns, and serves any :math:`N`, :math:`F` and label set.

Column :math:`f` of :math:`\Psi(X)` depends only on column :math:`f` of :math:`X`, so the
feature axis is processed in chunks with bit-identical results; this bounds the working
memory of a step to about ``12 * N * chunk_size`` floats instead of ``12 * N * F``.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from omnigraph._npz import load_npz
from omnigraph.hub import PretrainedMixin
from omnigraph.memory import check_memory
from omnigraph.ops import RGVTOperators, column_blocks, rw_sym_adjacency, spmm_into, spmm_kernel
from omnigraph.ops.operator_pair import LARGE_GRAPH_NODES
from omnigraph.ops.spmm_grad import spmm_grad, transpose


def _powers(op: Tensor, op_t: Tensor | None, x: Tensor, hops: int) -> list[Tensor]:
    """``[x, op x, ..., op^hops x]``, one hop at a time, keeping the operator's sparse layout
    (``omnigraph.ops.propagate`` converts to CSR, which is the slow layout on CPU for wide
    inputs). With ``op_t = op^T`` the backward pass is one more SpMM (pretraining)."""
    out = [x]
    for _ in range(hops):
        out.append(spmm_grad(op, op_t, out[-1]))
    return out


class ViewMLP(nn.Module):
    r"""The view-vector network :math:`\varphi: \mathbb{R}^{V} \to \mathbb{R}`.

    ``depth`` Linear layers: ``depth - 1`` blocks ``Linear(V, V) -> GELU`` (exact erf GELU;
    the hidden width equals the number of views) followed by ``Linear(V, 1)``. ``depth = 1``
    is the linear-:math:`\varphi` ablation. Parameters are ``lins.{i}.weight/bias``, the
    names of the released checkpoints.
    """

    def __init__(self, num_views: int = 5, depth: int = 2):
        super().__init__()
        if depth < 1:
            raise ValueError(f"vt_depth must be >= 1, got {depth}")
        self.num_views, self.depth = num_views, depth
        self.lins = nn.ModuleList([nn.Linear(num_views, num_views) for _ in range(depth - 1)]
                                  + [nn.Linear(num_views, 1)])
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Orthogonal weights, zero biases (spec 2.3).

        Without ``generator`` PyTorch's default reset runs first, as in the reference code: it
        is overwritten, but it advances the global RNG exactly like the original.
        """
        for lin in self.lins:
            if generator is None:
                lin.reset_parameters()
            nn.init.orthogonal_(lin.weight, generator=generator)
            nn.init.zeros_(lin.bias)

    def forward(self, v: Tensor) -> Tensor:
        r"""Apply :math:`\varphi` to view-major input ``v`` of shape ``[V, M]``; returns ``[M]``.

        The view axis comes first so that each layer is one wide ``[V, V] @ [V, M]`` product
        (much faster on CPU than ``[M, V] @ [V, V]`` with ``V = 5``).
        """
        h = v
        for lin in self.lins[:-1]:
            h = F.gelu(torch.addmm(lin.bias.unsqueeze(1), lin.weight, h))
        last = self.lins[-1]
        return torch.addmm(last.bias.unsqueeze(1), last.weight, h).squeeze(0)


class RGVTEncoder(nn.Module, PretrainedMixin):
    r"""RGVT encoder :math:`Z = \Psi^L(X)` (36 parameters for ``adj_max_hop=2, vt_depth=2``).

    Args:
        adj_max_hop: :math:`K`, the number of hops of each operator (``2K+1`` views).
        vt_depth: number of Linear layers of :math:`\varphi` (2 = Linear, GELU, Linear).

    Shapes:
        - **input:** features ``[N, F]``, ``edge_index`` ``[2, E]`` (or prebuilt operators)
        - **output:** ``[N, F]`` (or ``[|rows|, F]``; a list of ``depth`` of them with
          ``return_all=True``)
    """

    model_type = "rgvt"
    #: floats in one chunk's ``2K+1`` views when ``chunk_size`` is None (128 MB): wide enough for
    #: efficient SpMM, small enough to bound memory on wide graphs (``docs/gpu.md``, "RGVT's CPU
    #: kernels", has the measurements behind this and the thresholds below).
    chunk_floats: int = 1 << 25
    #: but never fewer columns (the cap alone gives 2-column chunks on millions of nodes)
    min_chunk_columns: int = 8
    #: chunks narrower than this use CSR operators and ``torch.sparse.mm`` (see :meth:`kernel_for`)
    csr_below_columns: int = 448
    #: graphs with at least this many nodes get column-blocked CSR operators (see :meth:`blocks_for`)
    block_min_nodes: int = LARGE_GRAPH_NODES
    #: bytes of feature rows one column block gathers from (about half a last-level cache)
    block_bytes: int = 16 << 20
    #: entries per block when phi is applied without autograd (keeps its temporaries in cache)
    phi_block: int = 1 << 16
    #: sparse products of inference steps: ``"auto"``, ``"torch"`` or ``"embedding_bag"`` (see
    #: :meth:`kernel_for`)
    spmm_backend: str = "auto"

    def __init__(self, adj_max_hop: int = 2, vt_depth: int = 2):
        super().__init__()
        if adj_max_hop < 0:
            raise ValueError(f"adj_max_hop must be >= 0, got {adj_max_hop}")
        self.adj_max_hop, self.vt_depth = int(adj_max_hop), int(vt_depth)
        self.num_views = 2 * self.adj_max_hop + 1
        self.mlp = ViewMLP(self.num_views, self.vt_depth)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        self.mlp.reset_parameters(generator)

    def get_config(self) -> dict:
        return {"adj_max_hop": self.adj_max_hop, "vt_depth": self.vt_depth}

    def extra_repr(self) -> str:
        return f"adj_max_hop={self.adj_max_hop}, vt_depth={self.vt_depth}, views={self.num_views}"

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_reference_npz(cls, path: str | Path) -> RGVTEncoder:
        """Load the authors' released weights (``rgvt/seed_*.npz``, spec 6.1), read in place.

        The architecture (``vt_depth``, number of views) is inferred from the tensor shapes.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"RGVT reference weights not found: {path}")
        tensors = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in load_npz(path).items()}
        lin_ids = sorted({int(k.split(".")[2]) for k in tensors if k.startswith("mlp.lins.")})
        if not lin_ids or "mlp.lins.0.weight" not in tensors:
            raise ValueError(f"{path} holds no RGVT weights (keys: {sorted(tensors)})")
        num_views = tensors["mlp.lins.0.weight"].shape[1]
        if num_views % 2 != 1:
            raise ValueError(f"{path}: the view MLP takes {num_views} inputs; expected an odd 2K+1")
        model = cls(adj_max_hop=(num_views - 1) // 2, vt_depth=len(lin_ids))
        try:
            model.load_state_dict(tensors, strict=True)
        except RuntimeError as err:
            raise ValueError(f"{path} does not match an RGVT encoder: {err}") from err
        return model

    # ------------------------------------------------------------------ operators
    @staticmethod
    def build_operators(edge_index: Tensor, num_nodes: int, transposes: bool = True,
                        layout: str = "coo", blocks: int = 1) -> RGVTOperators:
        r""":math:`A_{\mathrm{rw}}` and :math:`A_{\mathrm{sym}}` of the self-looped undirected graph.

        Both share one index pattern (:func:`~omnigraph.ops.rw_sym_adjacency`; int32 CSR
        indices where they fit), so the pair costs one pattern and two value arrays. With
        ``transposes`` (for training), :math:`A_{\mathrm{rw}}^\top` is also kept so that the
        backward pass is one more SpMM; inference passes ``False``. ``layout`` (``"coo"`` or
        ``"csr"``): see :meth:`layout_for`; the sparse layout changes results only by rounding.
        ``blocks`` (inference, ``layout="csr"``, no ``transposes``): see :meth:`blocks_for`.
        """
        if blocks > 1 and transposes:
            raise ValueError("column-blocked operators are for inference: pass transposes=False")
        ops = RGVTOperators(*rw_sym_adjacency(edge_index, num_nodes)).with_layout(layout, blocks)
        return RGVTOperators(ops.rw, ops.sym, transpose(ops.rw), ops.sym) if transposes else ops

    def kernel_for(self, columns: int, device: str | torch.device = "cpu", blocked: bool = False) -> tuple[str, str]:
        """``(layout, backend)`` of the inference products for chunks of ``columns`` columns:
        :func:`~omnigraph.ops.operator_pair.spmm_kernel` with :attr:`spmm_backend` and
        :attr:`csr_below_columns`; ``blocked``: the operators are column-blocked
        (:meth:`blocks_for`). The layout and back-end change results only by rounding."""
        return spmm_kernel(columns, device, self.spmm_backend, self.csr_below_columns, blocked)

    def _for_chunks(self, operators: RGVTOperators, num_nodes: int, columns: int, device,
                    grad: bool = False) -> tuple[RGVTOperators, str]:
        """``operators`` in the layout (and, without ``grad``, the column blocks) of chunks of
        ``columns`` columns, and the product back-end they run with."""
        blocks = 1 if grad else self.blocks_for(num_nodes, columns, device)
        layout, backend = self.kernel_for(columns, device, blocks > 1 or operators.blocked)
        return operators.with_layout(layout, blocks), backend

    def layout_for(self, columns: int, device: str | torch.device = "cpu") -> str:
        """Sparse layout of the operators for chunks of ``columns`` columns (see :meth:`kernel_for`)."""
        return self.kernel_for(columns, device)[0]

    def blocks_for(self, num_nodes: int, columns: int, device: str | torch.device = "cpu") -> int:
        """Column blocks of the inference operators: :func:`~omnigraph.ops.operator_pair.column_blocks`
        with :attr:`block_min_nodes` (2^16, above every graph of the published tables, whose numbers
        blocking would move by rounding), :attr:`csr_below_columns` and :attr:`block_bytes`."""
        return column_blocks(num_nodes, columns, device, min_nodes=self.block_min_nodes,
                             csr_below_columns=self.csr_below_columns, block_bytes=self.block_bytes)

    def _operators(self, x: Tensor, edge_index: Tensor | None, operators: RGVTOperators | None) -> RGVTOperators:
        if x.dim() != 2:
            raise ValueError(f"x must have shape [N, F], got {list(x.shape)}")
        if operators is None:
            if edge_index is None:
                raise ValueError("pass edge_index or prebuilt operators (RGVTEncoder.build_operators)")
            operators = self.build_operators(edge_index, x.size(0), transposes=self._needs_grad(x))
        if operators.num_nodes != x.size(0):
            raise ValueError(f"operators are for {operators.num_nodes} nodes but x has {x.size(0)} rows")
        if operators.rw.device != x.device or operators.rw.dtype != x.dtype:
            operators = operators.to(x.device, x.dtype)
        return operators

    def chunk_columns(self, num_nodes: int, num_features: int, chunk_size: int | None) -> int:
        """Columns per chunk: ``chunk_size`` if given, else the most whose view tensor
        ``[2K+1, N, c]`` stays within ``chunk_floats`` floats, and at least ``min_chunk_columns``."""
        if chunk_size is not None:
            if isinstance(chunk_size, bool) or int(chunk_size) < 1:
                raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
            cols = min(int(chunk_size), max(num_features, 1))
        else:
            fit = self.chunk_floats // (self.num_views * max(num_nodes, 1))
            cols = min(max(num_features, 1), max(1, self.min_chunk_columns, fit))
        # memory guard before the views [2K+1, N, cols] of a chunk are allocated (float32)
        check_memory(4 * self.num_views * num_nodes * cols, f"RGVT views [{self.num_views}, {num_nodes}, {cols}]",
                     "pass a smaller chunk_size (feature columns per chunk; results do not depend on it)")
        return cols

    # ------------------------------------------------------------------ computation
    def view_list(self, x: Tensor, operators: RGVTOperators) -> list[Tensor]:
        r"""The ``2K+1`` views ``[N, F]`` in order :math:`X, A_{rw}X, A_{sym}X, A_{rw}^2X, \dots`."""
        rw = _powers(operators.rw, operators.rw_t, x, self.adj_max_hop)
        sym = _powers(operators.sym, operators.sym_t, x, self.adj_max_hop)
        return [x] + [m for k in range(1, self.adj_max_hop + 1) for m in (rw[k], sym[k])]

    def views(self, x: Tensor, operators: RGVTOperators) -> Tensor:
        r"""The view tensor ``[2K+1, N, F]`` (the views of :meth:`view_list`, stacked)."""
        return torch.stack(self.view_list(x, operators), dim=0)

    def step(self, x: Tensor, operators: RGVTOperators) -> Tensor:
        r"""One GVT step :math:`\Psi(X)`: ``[N, c] -> [N, c]`` (no column chunking)."""
        if self._needs_grad(x):
            return self.mlp(self.views(x, operators).reshape(self.num_views, -1)).view_as(x)
        backend = self.kernel_for(x.size(1), x.device, operators.blocked)[1]
        return self._step_into(x, operators, self._workspace(x, x.size(1)), backend).clone()

    def _needs_grad(self, x: Tensor) -> bool:
        return torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in self.mlp.parameters()))

    def _workspace(self, x: Tensor, columns: int) -> Tensor:
        """Flat buffer for :meth:`_step_into` on chunks of up to ``columns`` columns of ``x``."""
        return x.new_empty((self.num_views + 1) * x.size(0) * columns)

    def _step_into(self, x: Tensor, operators: RGVTOperators, work: Tensor, backend: str = "torch") -> Tensor:
        r"""Inference step that allocates nothing: the views and then :math:`\Psi(X)` are written
        into ``work`` (from :meth:`_workspace`); returns the ``[N, c]`` result, a view into
        ``work`` that the next call overwrites (``x`` may be that view: it is copied first).
        Reusing one buffer over chunks and steps keeps the allocator from fragmenting the heap.
        Same numbers as the autograd branch of :meth:`step` (``backend``: see :meth:`kernel_for`
        and :func:`~omnigraph.ops.spmm_into`)."""
        n, c = x.shape
        size = self.num_views * n * c
        views = work[:size].view(self.num_views, n, c)
        out = work[size:size + n * c].view(n, c)
        views[0].copy_(x)
        for k in range(1, self.adj_max_hop + 1):   # slots: X, A_rw X, A_sym X, A_rw^2 X, ...
            spmm_into(operators.rw, views[2 * k - 3 if k > 1 else 0], views[2 * k - 1], backend)
            spmm_into(operators.sym, views[2 * k - 2 if k > 1 else 0], views[2 * k], backend)
        # phi on blocks of entries so that its [V, block] temporaries stay in cache (about 2x
        # faster on CPU than one pass over all entries)
        flat, dest = views.view(self.num_views, -1), out.view(-1)
        for s in range(0, dest.numel(), self.phi_block):
            dest[s:s + self.phi_block] = self.mlp(flat[:, s:s + self.phi_block])
        return out

    def forward(self, x: Tensor, edge_index: Tensor | None = None, depth: int = 1,
                chunk_size: int | None = None, operators: RGVTOperators | None = None,
                return_all: bool = False, rows: Tensor | None = None) -> Tensor | list[Tensor]:
        r"""Compute :math:`\Psi^{L}(X)` with ``L = depth``.

        Args:
            x: node features ``[N, F]`` (used raw, spec 2.1).
            edge_index: ``[2, E]``; ignored when ``operators`` is given.
            depth: number of recurrent steps ``L >= 0`` (0 returns ``x``).
            chunk_size: feature columns per chunk; None sizes chunks from ``chunk_floats``.
                Results do not depend on it.
            operators: output of :meth:`build_operators` for this graph (build once, reuse).
            return_all: return ``[Z_1, ..., Z_L]`` from the same single recurrence pass.
            rows: keep only these node rows of the output(s) (index or bool mask); the
                recurrence still runs on the whole graph. Saves memory when only labelled
                nodes are needed.
        """
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        operators = self._operators(x, edge_index, operators)
        if return_all and depth == 0:
            return []
        n, f = x.shape
        if rows is not None and rows.dtype == torch.bool:
            rows = rows.nonzero().flatten()
        n_out = n if rows is None else rows.numel()
        keep = list(range(1, depth + 1)) if return_all else [depth]
        outs = [x.new_empty(n_out, f) for _ in keep]
        for cols, layer, cur in self._chunk_pass(x, depth, operators, chunk_size):
            if layer in keep:
                outs[layer - 1 if return_all else 0][:, cols] = cur if rows is None else cur[rows]
        return outs if return_all else outs[0]

    def _chunk_pass(self, x: Tensor, depth: int, operators: RGVTOperators, chunk_size: int | None
                    ) -> Iterator[tuple[slice, int, Tensor]]:
        """Chunk-major recurrence: yield ``(cols, l, Z_l[:, cols])`` for every column chunk and
        ``l = 0..depth`` (``Z_0 = X``); each yielded chunk is valid until the next one."""
        n, f = x.shape
        step = self.chunk_columns(n, f, chunk_size)
        grad = self._needs_grad(x)
        if grad and operators.blocked:
            raise ValueError("column-blocked operators are for inference; build operators with blocks=1 "
                             "to compute gradients")
        operators, backend = self._for_chunks(operators, n, step, x.device, grad)
        if not grad and depth:   # one workspace for every chunk and step (see _step_into)
            work = self._workspace(x, step)
        for s in range(0, f, step):
            cols = slice(s, min(s + step, f))
            cur = x[:, cols]
            yield cols, 0, cur
            for layer in range(1, depth + 1):
                cur = self.step(cur, operators) if grad else self._step_into(cur, operators, work, backend)
                yield cols, layer, cur

    def column_chunks(self, x: Tensor, edge_index: Tensor | None = None, depth: int = 1,
                      chunk_size: int | None = None, operators: RGVTOperators | None = None,
                      rows: Tensor | None = None) -> Iterator[tuple[slice, Tensor]]:
        r"""Yield ``(cols, Z[:, cols])`` for :math:`Z = \Psi^{L}(X)`, one column chunk at a time.

        By column separability each chunk is final when yielded, so a consumer that reduces
        over columns (e.g. the head's first layer, :meth:`RGVTHead.forward_chunks`) never needs
        the whole ``[N, F]`` matrix: only ``x``, the operators and one chunk's views are alive.
        With ``rows`` only those rows of each chunk are yielded (the recurrence still runs on
        the whole graph). Without ``rows`` a yielded chunk lives in a reused buffer and is valid
        until the next one is yielded (copy what you keep).
        """
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        operators = self._operators(x, edge_index, operators)
        for cols, layer, cur in self._chunk_pass(x, depth, operators, chunk_size):
            if layer == depth:
                yield cols, cur if rows is None else cur[rows]

    def iterate(self, x: Tensor, edge_index: Tensor | None = None, depth: int = 8,
                chunk_size: int | None = None, operators: RGVTOperators | None = None,
                reuse: bool = False) -> Iterator[tuple[int, Tensor]]:
        r"""Yield ``(l, Z_l)`` for ``l = 1..depth``, each a full ``[N, F]`` matrix (no gradients).

        Depth-major counterpart of ``forward(return_all=True)``: at most two ``[N, F]``
        iterates are alive at once (plus the caller's references), so all depths of a wide
        graph can be visited without holding ``depth * N * F`` floats.

        With ``reuse=True`` every step overwrites a single buffer, chunk by chunk: by column
        separability a chunk of :math:`Z_{l+1}` depends only on the same columns of
        :math:`Z_l`. Only ``x`` and one iterate are then alive, but each yielded matrix is
        valid only until the generator resumes (copy what you keep, e.g. ``z[rows]``).
        """
        operators = self._operators(x, edge_index, operators)
        n, f = x.shape
        step = self.chunk_columns(n, f, chunk_size)
        operators, backend = self._for_chunks(operators, n, step, x.device)
        work = self._workspace(x, step)
        cur = x
        for layer in range(1, depth + 1):
            nxt = cur if reuse and cur is not x else x.new_empty(n, f)
            for s in range(0, f, step):
                with torch.no_grad():
                    nxt[:, s:s + step] = self._step_into(cur[:, s:s + step], operators, work, backend)
            cur = nxt
            yield layer, cur


__all__ = ["RGVTEncoder", "ViewMLP"]
