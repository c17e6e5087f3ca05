r"""Relational fingerprint ("ReFi") of REFI-GAD: five label-free per-node statistics.

From *Liu, Liu, Zheng, Liew, Cao, Pan, "REFI-GAD", ICML 2026 (arXiv 2605.25429)*. Every node
of any graph is described by five numbers whose meaning does not depend on the feature space:

.. math::
    \hat{X} = \hat{A}^2 X, \qquad \hat{A} = D^{-1/2}(A + I)D^{-1/2}
    \quad(\text{or } D^{-1/2} A D^{-1/2} \text{ with } \texttt{self\_loops=False}),

.. math::
    \mathrm{GD}_i = \cos(\hat{x}_i, \bar{c}), \quad \bar{c} = \tfrac{1}{N}\textstyle\sum_j \hat{x}_j

(global direction). The similarity-aware one-hop smoothing uses scaled dot products
:math:`s_{ij} = \mathrm{minmax}(x_i^\top x_j)` on the edges only:

.. math::
    \bar{X} = W X, \qquad W_{ij} = \hat{A}_{ij}\, s_{ij} \;(i \ne j,\ (i,j)\in E), \qquad W_{ii} = 1,

and with :math:`\mathcal{N}(i)` the binary, loop-free neighbourhood, :math:`d_i = |\mathcal{N}(i)|`,

.. math::
    \mathrm{ND}_i = \mathrm{minmax}\Big(\tfrac{1}{d_i + 10^{-8}} \textstyle\sum_{j\in\mathcal{N}(i)}
    \cos(\bar{x}_i, \bar{x}_j)\Big), \qquad
    \mathrm{NP}_i = \mathrm{minmax}\Big(\tfrac{1}{d_i + 10^{-8}} \textstyle\sum_{j\in\mathcal{N}(i)}
    \lVert \bar{x}_i - \bar{x}_j \rVert_2\Big),

.. math::
    \mathrm{deg}_i = d_i, \qquad \mathrm{LC}_i = \frac{2 T_i}{d_i (d_i - 1)} \;(0 \text{ if } d_i < 2),

with :math:`T_i` the number of triangles through :math:`i`. Each column is finally replaced by
its within-graph rank scaled to :math:`[0, 100]`, :math:`r_i \cdot 100 / (N - 1)` (tied values share
their average rank, so nothing depends on the node numbering), so the
output ``[N, 5]`` has uniform marginals on every graph.

**Complexity.** The default path never forms an :math:`N \times N` matrix: propagation is sparse
SpMM, similarities/cosines/distances are evaluated per edge in chunks (:math:`O(|E| d)` time,
:math:`O(\text{chunk}\cdot d)` extra memory) and triangles are enumerated on the degree-ordered
orientation of the graph (:math:`O(\sum_i d^{+}_i{}^2)` candidate wedges, processed in chunks).

**Deviations from the released code** (anomaly-detection spec §5.3/§5.9):

* ``sim_scale="edges"`` (default) min-max scales :math:`x_i^\top x_j` over the edges; the released
  dense path scales over all :math:`N^2` pairs. ``sim_scale="global"`` reproduces the all-pairs
  scaling exactly without storing it (max by Cauchy-Schwarz, min by a blockwise pass, which
  costs :math:`O(N^2 d)` time but only :math:`O(\text{block}\cdot N)` memory).
* ND/NP always use the small-graph (binary-degree) semantics; the release switches to different
  statistics above 40,000 nodes.
* Ranks average ties (``ties="average"``, default) or use a stable sort (``ties="ordinal"``, ties
  broken by node id); the release uses an unstable ``argsort().argsort()``, which depends on node order.

``reference=True`` runs the released dense path (with its unstable ranks) for small graphs, for
parity checks; it refuses graphs whose dense matrices would exceed ``max_dense_bytes``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from omnigraph._cache import GraphCache
from omnigraph.datasets.flags import graph_flag
from omnigraph.memory import check_memory
from omnigraph.ops import normalize_rows, simple_undirected, sym_adjacency, triangle_counts
from omnigraph.ops.adjacency import to_csr
from omnigraph.ops.edge_products import add_sparse_, edge_dot_sqdist, edge_dots, sparse_rows, spmm_columns
from omnigraph.ops.operator_pair import LARGE_GRAPH_NODES
from omnigraph.ops.reorder import locality_order, permute_graph, resolve_reorder
from omnigraph.validation import check_graph

COLUMNS = ("gd", "nd", "np", "degree", "lc")
_EPS_DEG = 1e-8  # the release's denominator guard for ND / NP


def _minmax(v: Tensor) -> Tensor:
    lo, hi = v.min(), v.max()
    return (v - lo) / (hi - lo).clamp_min(torch.finfo(v.dtype).tiny)


# ranks treat values closer than this (relative to the column's largest magnitude) as ties: far above
# the float64 rounding of the raw statistics, the only part that depends on node numbering (at most
# 4e-13 on gad/reddit, after ND's min-max scaling), and far below the float32 resolution of the
# input features (6e-8)
TIE_RTOL = 2.0 ** -32


def rank_transform(v: Tensor, ties: str = "average", scale: float = 100.0, tie_rtol: float = TIE_RTOL) -> Tensor:
    r"""Within-graph rank of each entry of ``v`` (``[N]`` or ``[N, C]`` column-wise), scaled to ``[0, scale]``.

    ``ties="average"`` (default): every run of sorted values whose consecutive gaps are at most
    ``tie_rtol * max|v|`` is one tie group, and each member gets the mean of the group's 0-based ordinal
    ranks. Statistics of the same node come out a few ulps apart when the nodes are numbered
    differently (another summation order), so exact equality alone would still rank noise; the
    fingerprint computes them in float64, where that noise lies ~10^5 below the tolerance.
    ``ties="ordinal"``: 0-based ordinal rank from a **stable** sort (equal values ordered by index).
    """
    if ties not in ("ordinal", "average"):
        raise ValueError(f"ties must be 'ordinal' or 'average', got {ties!r}")
    if v.dim() == 2:
        return torch.stack([rank_transform(c, ties, scale, tie_rtol) for c in v.unbind(1)], dim=1)
    n = v.numel()
    denom = max(n - 1, 1)
    sorted_v, order = torch.sort(v.detach().double(), stable=True)
    if ties == "average" and n > 0:
        tol = tie_rtol * float(sorted_v.abs().max())
        new_group = torch.ones(n, dtype=torch.bool)
        new_group[1:] = (sorted_v[1:] - sorted_v[:-1]) > tol
        group = torch.cumsum(new_group, 0) - 1
        pos = torch.arange(n, dtype=torch.float64)
        first = torch.zeros(int(group[-1]) + 1, dtype=torch.float64).scatter_reduce_(0, group, pos, "amin", include_self=False)
        last = torch.zeros_like(first).scatter_reduce_(0, group, pos, "amax", include_self=False)
        ranks = ((first + last) / 2)[group]
    else:
        ranks = torch.arange(n, dtype=torch.float64)
    r = torch.empty(n, dtype=torch.float64)
    r[order] = ranks
    return (r * (scale / denom)).to(v.dtype)


def _pairwise_dot_min(x: Tensor, budget: int = 1 << 24) -> Tensor:
    """``min_{i,j} x_i . x_j`` over all pairs (diagonal included), blockwise: O(N^2 d) time, O(block N) memory."""
    n = x.size(0)
    # non-negative features: every dot product is >= 0, and a zero row attains 0 on the diagonal
    if bool((x >= 0).all()) and bool((x.abs().sum(1) == 0).any()):
        return x.new_zeros(())
    step = max(1, budget // max(n, 1))
    best = None
    for s in range(0, n, step):
        m = (x[s:s + step] @ x.T).min()
        best = m if best is None else torch.minimum(best, m)
    return best


def product_backend(num_nodes: int, dtype: torch.dtype = torch.float64) -> str:
    """The :func:`~omnigraph.ops.propagate` back-end of the fingerprint's sparse products (float64
    since 2026-12-06): ``"auto"`` (torch's CSR kernel); float32 products would run as embedding bags
    from 2^16 nodes on (faster there; in float64 embedding bags are the slower kernel)."""
    return "embedding_bag" if dtype == torch.float32 and num_nodes >= LARGE_GRAPH_NODES else "auto"


class RelationalFingerprint(BaseTransform):
    r"""The five-column relational fingerprint ``P in [0, 100]^{N x 5}`` = [GD, ND, NP, degree, LC].

    Label-free and parameter-free; computed per graph. A PyG transform: ``fp(data)`` returns a
    shallow copy of ``data`` with ``data.fingerprint`` ``[N, 5]`` (so it composes with
    ``torch_geometric.transforms.Compose``); on tensors, ``fp.fingerprint(x, edge_index)``.

    Args:
        self_loops: build :math:`\hat{A}` with self-loops (``True``), without (``False``; the
            release's choice for Facebook and YelpChi), or ``None`` to read ``data.self_loops``
            (default ``True``).
        row_normalize: divide each feature row by its sum first (Amazon, YelpChi, Tolokers,
            T-Finance in the release); ``None`` reads ``data.row_normalize`` (default ``False``).
        sim_scale: ``"edges"`` (min-max of the dot products over the edges; default, ``O(|E| d)``) or
            ``"global"`` (over all N^2 pairs as the released dense path, without storing them).
        ties: ``"average"`` (default: tied values share their mean rank; order-invariant) or
            ``"ordinal"`` (stable ordinal ranks: ties broken by node id, as earlier releases).
        rank: apply the rank transform (``False`` returns the raw statistics).
        reference: run the released dense O(N^2) path instead (parity checks on small graphs).
        max_dense_bytes: memory guard for ``reference=True``.
        reorder: renumber the nodes for locality first (:func:`~omnigraph.ops.resolve_reorder`:
            ``None``, default, keeps the given order; ``"rcm"``, ``"degree"``, ``"auto"``); the
            result comes back in the given node order and agrees with the unreordered one up to
            rounding (a few ranks of near-tied values may swap). Off by default: on the 10^6-node
            graph of the performance page renumbering cost more than it saved.
    """

    columns = COLUMNS

    def __init__(self, self_loops: bool | None = None, row_normalize: bool | None = None,
                 sim_scale: str = "edges", ties: str = "average", rank: bool = True,
                 reference: bool = False, max_dense_bytes: int = 1 << 30, reorder: str | None = None):
        if sim_scale not in ("edges", "global"):
            raise ValueError(f"sim_scale must be 'edges' or 'global', got {sim_scale!r}")
        if ties not in ("ordinal", "average"):
            raise ValueError(f"ties must be 'ordinal' or 'average', got {ties!r}")
        self.self_loops = self_loops
        self.row_normalize = row_normalize
        self.sim_scale = sim_scale
        self.ties = ties
        self.rank = rank
        self.reference = reference
        self.max_dense_bytes = int(max_dense_bytes)
        resolve_reorder(reorder, 0)
        self.reorder = reorder

    def get_config(self) -> dict:
        return {"self_loops": self.self_loops, "row_normalize": self.row_normalize,
                "sim_scale": self.sim_scale, "ties": self.ties}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args}{', reference=True' if self.reference else ''})"

    def forward(self, data: Data) -> Data:
        """Attach ``data.fingerprint`` ``[N, 5]``, reading ``data.self_loops`` / ``data.row_normalize``
        (the per-dataset flags) where the constructor leaves them ``None``."""
        check_graph(data)
        data.fingerprint = self.fingerprint(data.x, data.edge_index, data.num_nodes,
                                            self_loops=graph_flag(data, "self_loops", None, None),
                                            row_normalize=graph_flag(data, "row_normalize", None, None))
        return data

    def fingerprint(self, x: Tensor, edge_index: Tensor, num_nodes: int | None = None, *,
                    self_loops: bool | None = None, row_normalize: bool | None = None) -> Tensor:
        """``x [N, d]``, ``edge_index [2, E]`` -> fingerprint ``[N, 5]`` (ranks, or raw if ``rank=False``).

        The constructor's ``self_loops``/``row_normalize`` take precedence over the keyword
        arguments (which carry the per-dataset metadata).
        """
        n = x.size(0) if num_nodes is None else int(num_nodes)
        loops = graph_flag(None, "self_loops", self.self_loops if self.self_loops is not None else self_loops, True)
        rownorm = graph_flag(None, "row_normalize",
                             self.row_normalize if self.row_normalize is not None else row_normalize, False)
        x = x.float()
        if rownorm:
            x = normalize_rows(x)
        out_dtype = x.dtype
        with torch.no_grad():
            if self.reference:
                raw = self._raw_dense(x, edge_index, n, loops)
                if not self.rank:
                    return raw
                # the release: unstable argsort().argsort(), scaled by 100 / (N - 1)
                return raw.argsort(dim=0).argsort(dim=0).float() * (100.0 / max(n - 1, 1))
            order = resolve_reorder(self.reorder, n)
            if order is None:
                raw = self._raw_sparse(x, edge_index, n, loops)
            else:
                x_new, edge_new, inv = permute_graph(x, edge_index, locality_order(edge_index, n, order))
                raw = self._raw_sparse(x_new, edge_new, n, loops)[inv]
        return (rank_transform(raw, self.ties) if self.rank else raw).to(out_dtype)

    # ------------------------------------------------------------------------------------------
    def _raw_sparse(self, x: Tensor, edge_index: Tensor, n: int, loops: bool) -> Tensor:
        ei = simple_undirected(edge_index, n, self_loops=False)  # binary, symmetric, loop-free E
        # sums over neighbours and nodes in float64: in float32 they move by ~1e-7 when the nodes are
        # renumbered (another summation order), enough to reorder a column's near-ties; per-edge
        # dot products of x need no more (their order of summation is the feature order)
        xs = sparse_rows(x)  # sparse features: every product below visits only their stored entries
        x64 = x.double() if xs is None else xs
        a_hat = sym_adjacency(ei, n, self_loops=loops, simple=True).to(torch.float64)
        backend = product_backend(n, torch.float64)
        x_hat = spmm_columns(a_hat, x64, 2, backend)
        del a_hat
        mean_dir = F.normalize(x_hat.mean(0), dim=0)
        # F.normalize(x_hat, dim=1) in place: the same quotients without a second N x d matrix
        gd = x_hat.div_(x_hat.norm(dim=1, keepdim=True).clamp_min(1e-12)) @ mean_dir
        del x_hat

        deg = torch.bincount(ei[0], minlength=n).to(torch.float64)
        # every per-edge quantity below is symmetric: evaluate it once per undirected edge (i < j)
        upper = ei[0] < ei[1]
        row, col = ei[:, upper]
        # \hat{A}_ij off the diagonal from the (self-loop-augmented) degree, as sym_adjacency (in float64)
        inv_sqrt = (deg + (1.0 if loops else 0.0)).rsqrt().nan_to_num(posinf=0.0)
        a_val = inv_sqrt[row] * inv_sqrt[col]

        s = edge_dots(x, row, col, sparse=xs)
        if row.numel():
            if self.sim_scale == "edges":
                lo, hi = s.min(), s.max()
            else:  # exact all-pairs range: max by Cauchy-Schwarz (attained on the diagonal)
                lo, hi = _pairwise_dot_min(x), (x * x).sum(1).max()
            s = (s - lo) / (hi - lo).clamp_min(torch.finfo(x.dtype).tiny)
        w_val = a_val * s.double()
        # W on the pattern of ei (already coalesced): the entries below the diagonal, in row-major
        # order, are the transposes of the upper ones in column-major order (no second sort of E)
        w_all = torch.empty(ei.size(1), dtype=torch.float64)
        w_all[upper] = w_val
        w_all[~upper] = w_val[torch.argsort(col, stable=True)]
        w = to_csr(ei, w_all, n)
        x_bar = spmm_columns(w, x64, 1, backend)  # x + W x, summed in place
        x_bar = add_sparse_(x_bar, xs) if xs is not None else x_bar.add_(x64)
        del x64, xs, w

        # cos as F.normalize does it: a.b / (max(|a|, eps) max(|b|, eps))
        inv_norm = 1.0 / x_bar.norm(dim=1).clamp_min(1e-12)
        dot, sq = edge_dot_sqdist(x_bar, row, col)
        del x_bar
        cos = dot * inv_norm[row] * inv_norm[col]
        dist = sq.sqrt_()
        nd_sum = torch.zeros(n, dtype=torch.float64)
        np_sum = torch.zeros(n, dtype=torch.float64)
        for end in (row, col):
            nd_sum.index_add_(0, end, cos)
            np_sum.index_add_(0, end, dist)
        nd = _minmax(nd_sum / (deg + _EPS_DEG))
        np_ = _minmax(np_sum / (deg + _EPS_DEG))
        lc = self._clustering(triangle_counts(ei, n).to(torch.float64), deg)
        return torch.stack([gd, nd, np_, deg, lc], dim=1)

    @staticmethod
    def _clustering(tri: Tensor, deg: Tensor) -> Tensor:
        pairs = deg * (deg - 1) / 2
        return torch.where(deg >= 2, tri / pairs.clamp_min(1), torch.zeros_like(deg))

    def _raw_dense(self, x: Tensor, edge_index: Tensor, n: int, loops: bool) -> Tensor:
        """The released dense path: several N x N float matrices (guarded by ``max_dense_bytes``)."""
        need = 6 * n * n * x.element_size()
        if need > self.max_dense_bytes:
            raise ValueError(f"reference=True needs about {need / 2**30:.1f} GiB of dense N x N matrices for "
                             f"N={n} (max_dense_bytes={self.max_dense_bytes}); use the default sparse path")
        check_memory(need, f"the dense reference fingerprint (six {n} x {n} matrices)",
                     "use the default sparse path (reference=False), which never forms an N x N matrix")
        ei = simple_undirected(edge_index, n, self_loops=False)
        b = torch.zeros(n, n, dtype=x.dtype)
        b[ei[0], ei[1]] = 1.0
        a_tilde = b + torch.eye(n, dtype=x.dtype) if loops else b
        dinv = a_tilde.sum(1).rsqrt().nan_to_num(posinf=0.0)
        a_hat = dinv[:, None] * a_tilde * dinv[None, :]
        x_hat = a_hat @ (a_hat @ x)
        gd = F.normalize(x_hat, dim=1) @ F.normalize(x_hat.mean(0), dim=0)
        sim = x @ x.T
        sim = (sim - sim.min()) / (sim.max() - sim.min()).clamp_min(torch.finfo(x.dtype).tiny)
        sim.fill_diagonal_(0.0)
        w = a_hat * sim + torch.eye(n, dtype=x.dtype)
        x_bar = w @ x
        del sim, w
        deg = b.sum(1)
        xb_unit = F.normalize(x_bar, dim=1)
        nd = _minmax((xb_unit @ xb_unit.T * b).sum(1) / (deg + _EPS_DEG))
        np_ = _minmax((torch.cdist(x_bar, x_bar) * b).sum(1) / (deg + _EPS_DEG))
        tri = (b * (b @ b)).sum(1) / 2
        lc = self._clustering(tri, deg)
        return torch.stack([gd, nd, np_, deg, lc], dim=1)


def column_index(name: str) -> int:
    """Position of a fingerprint column given its name (``gd``, ``nd``, ``np``, ``degree``, ``lc``)."""
    key = str(name).lower()
    aliases = {"deg": "degree", "clustering": "lc", "global_direction": "gd", "neighbourhood_direction": "nd",
               "neighborhood_direction": "nd", "neighbourhood_position": "np", "neighborhood_position": "np"}
    key = aliases.get(key, key)
    if key not in COLUMNS:
        raise ValueError(f"unknown fingerprint column {name!r}; choose from {', '.join(COLUMNS)}")
    return COLUMNS.index(key)


# the last graph's fingerprint: repeated scoring of one graph (several seeds, several detectors)
# fingerprints it once
_CACHE = GraphCache(1, keep_alive=True)


def clear_fingerprint_cache() -> None:
    """Forget the cached fingerprint, so that the next :func:`graph_fingerprint` call computes
    it (e.g. to time scoring on a graph as a first call would)."""
    _CACHE.clear()


def graph_fingerprint(data, sim_scale: str = "edges", ties: str = "average", row_normalize: bool | None = None,
                      self_loops: bool | None = None, cache: bool = True) -> Tensor:
    """The ranked fingerprint ``[N, 5]`` of ``data`` with its per-graph preprocessing flags resolved
    (:func:`~omnigraph.datasets.flags.graph_flag`); the last result is cached."""
    rn = graph_flag(data, "row_normalize", row_normalize, False)
    sl = graph_flag(data, "self_loops", self_loops, True)
    config = (data.num_nodes, sim_scale, ties, rn, sl)
    hit = _CACHE.get((data.x, data.edge_index), config) if cache else None
    if hit is not None:
        return hit
    fp = RelationalFingerprint(self_loops=sl, row_normalize=rn, sim_scale=sim_scale, ties=ties)(data).fingerprint
    return _CACHE.put((data.x, data.edge_index), config, fp) if cache else fp


__all__ = [
    "COLUMNS",
    "RelationalFingerprint",
    "clear_fingerprint_cache",
    "column_index",
    "graph_fingerprint",
    "product_backend",
    "rank_transform",
]
