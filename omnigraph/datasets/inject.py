r"""Anomaly injection: the standard DOMINANT/CoLA procedure used for ARC's injected graphs.

*Structural anomalies* (Ding et al., "Deep Anomaly Detection on Attributed Networks", SDM
2019): pick :math:`m \cdot n` distinct nodes, split them into :math:`n` groups of :math:`m`
and connect each group into a clique (all :math:`\binom{m}{2}` pairs, both directions).

*Contextual anomalies*: pick further nodes, disjoint from the structural ones; for each node
:math:`i` draw :math:`k` candidate nodes uniformly at random and copy onto :math:`i` the
features of the candidate farthest in Euclidean distance,

.. math::
    x_i \leftarrow x_{j^\star}, \qquad j^\star = \arg\max_{j \in \mathcal{C}_i} \lVert x_i - x_j \rVert_2 .

Distances and copies use the features as they were before any contextual change, so the
result does not depend on the order in which nodes are processed. The output records
``y_struct``, ``y_attr`` and ``y = y_struct | y_attr`` (``[N]`` int64); a host's class labels,
if any, are kept as ``y_class``. The result is a deterministic function of the graph,
:math:`m`, :math:`n`, :math:`k` and the seed. With 5 cliques of 15 and 75 contextual nodes it
reproduces the statistics of ARC's injected Cora and CiteSeer (150 anomalies).
"""
from __future__ import annotations

import copy

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import coalesce

from omnigraph.validation import check_graph


def _generator(seed: int | torch.Generator) -> torch.Generator:
    if isinstance(seed, torch.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or a torch.Generator, got {type(seed).__name__}")
    return torch.Generator().manual_seed(seed)


def _labels(data: Data) -> tuple[Tensor, Tensor]:
    """Current (y_struct, y_attr); a fresh host's class labels move to ``y_class``."""
    n = data.num_nodes
    fresh = getattr(data, "y_struct", None) is None and getattr(data, "y_attr", None) is None
    if fresh and getattr(data, "y", None) is not None:
        data.y_class = data.y
    ys = getattr(data, "y_struct", None)
    ya = getattr(data, "y_attr", None)
    ys = torch.zeros(n, dtype=torch.long) if ys is None else ys.view(-1).long().clone()
    ya = torch.zeros(n, dtype=torch.long) if ya is None else ya.view(-1).long().clone()
    return ys, ya


def _draw(pool: Tensor, count: int, g: torch.Generator, what: str) -> Tensor:
    if count > pool.numel():
        raise ValueError(f"cannot pick {count} {what} nodes: only {pool.numel()} nodes are not anomalous yet")
    return pool[torch.randperm(pool.numel(), generator=g)[:count]]


def _check_ints(**values) -> None:
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key} must be a non-negative int, got {value!r}")


def inject_structural(data: Data, n: int, m: int = 15, seed: int | torch.Generator = 0) -> Data:
    r"""Add ``n`` cliques of ``m`` nodes each (structural anomalies).

    Args:
        data: graph with ``edge_index`` ``[2, E]`` (undirected, both directions).
        n: number of cliques.
        m: clique size (15 in DOMINANT/CoLA/ARC).
        seed: int seed or a ``torch.Generator`` (shared with :func:`inject_contextual`).

    Returns:
        A copy of ``data`` with the clique edges added (coalesced, no duplicates) and
        ``y_struct`` / ``y`` set on the :math:`m \cdot n` chosen nodes. Nodes already marked
        anomalous are not chosen.
    """
    _check_ints(n=n, m=m)
    if m < 2 and n > 0:
        raise ValueError(f"clique size m must be at least 2, got {m}")
    check_graph(data, require_x=False)
    if getattr(data, "edge_attr", None) is not None or getattr(data, "edge_weight", None) is not None:
        raise ValueError("inject_structural does not support edge attributes; drop data.edge_attr / edge_weight")
    g = _generator(seed)
    out = copy.copy(data)  # shallow: tensors are replaced, never modified in place
    ys, ya = _labels(out)
    chosen = _draw(((ys == 0) & (ya == 0)).nonzero().view(-1), m * n, g, "structural").view(n, m)
    i, j = torch.meshgrid(torch.arange(m), torch.arange(m), indexing="ij")
    off = i != j
    clique = torch.stack([chosen[:, i[off]].reshape(-1), chosen[:, j[off]].reshape(-1)])
    out.edge_index = coalesce(torch.cat([data.edge_index, clique], dim=1), num_nodes=data.num_nodes)
    ys[chosen.view(-1)] = 1
    out.y_struct, out.y_attr, out.y = ys, ya, ys | ya
    return out


def inject_contextual(data: Data, n_nodes: int, k: int = 50, seed: int | torch.Generator = 0) -> Data:
    r"""Replace the features of ``n_nodes`` nodes by the farthest of ``k`` random candidates.

    Args:
        data: graph with dense float ``x`` ``[N, F]``.
        n_nodes: number of contextual anomalies (chosen among nodes not yet anomalous, so
            disjoint from structural anomalies injected before).
        k: candidates per node (50).
        seed: int seed or a ``torch.Generator``.

    Returns:
        A copy of ``data`` with the new features and ``y_attr`` / ``y`` set.
    """
    _check_ints(n_nodes=n_nodes, k=k)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    check_graph(data)
    g = _generator(seed)
    out = copy.copy(data)  # shallow: tensors are replaced, never modified in place
    ys, ya = _labels(out)
    num_nodes = data.num_nodes
    chosen = _draw(((ys == 0) & (ya == 0)).nonzero().view(-1), n_nodes, g, "contextual")
    x = data.x
    x_new = x.clone()
    for node in chosen.tolist():
        candidates = torch.randperm(num_nodes, generator=g)[: min(k, num_nodes)]
        # exact differences, not the matmul expansion, so that ties and rankings are stable
        dist = torch.cdist(x[node:node + 1], x[candidates], compute_mode="donot_use_mm_for_euclid_dist")
        x_new[node] = x[candidates[int(dist.argmax())]]
    ya[chosen] = 1
    out.x, out.y_struct, out.y_attr, out.y = x_new, ys, ya, ys | ya
    return out


class InjectAnomalies(BaseTransform):
    r"""Inject structural (clique) and contextual (feature-copy) anomalies, as a PyG transform.

    Structural anomalies are injected first, then contextual ones on other nodes, from one
    random stream seeded with ``seed``. See the module docstring for the procedure and the
    :math:`x_i \leftarrow x_{j^\star}` rule.

    Args:
        num_cliques: number of cliques :math:`n`.
        clique_size: nodes per clique :math:`m` (15).
        num_contextual: contextual anomalies; default :math:`m \cdot n` (equal counts, as in
            DOMINANT/CoLA/ARC).
        k: candidates per contextual node (50).
        seed: random seed; same seed, same graph.

    Example:
        >>> data = InjectAnomalies(num_cliques=5, clique_size=15, num_contextual=75, seed=0)(cora)
        >>> int(data.y.sum())
        150
    """

    def __init__(self, num_cliques: int, clique_size: int = 15, num_contextual: int | None = None, k: int = 50,
                 seed: int = 0) -> None:
        num_contextual = num_cliques * clique_size if num_contextual is None else num_contextual
        _check_ints(num_cliques=num_cliques, clique_size=clique_size, num_contextual=num_contextual, k=k)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self.num_cliques, self.clique_size = num_cliques, clique_size
        self.num_contextual, self.k, self.seed = num_contextual, k, seed

    def forward(self, data: Data) -> Data:
        g = torch.Generator().manual_seed(self.seed)
        data = inject_structural(data, self.num_cliques, self.clique_size, seed=g)
        return inject_contextual(data, self.num_contextual, self.k, seed=g)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(num_cliques={self.num_cliques}, clique_size={self.clique_size}, "
                f"num_contextual={self.num_contextual}, k={self.k}, seed={self.seed})")
