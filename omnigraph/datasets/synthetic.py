r"""Synthetic attributed graphs of any size, for scaling benchmarks and tests.

:func:`synthetic_graph` draws a graph with planted classes in :math:`O(E + N F)` time and
memory, so that 10^7-edge graphs take seconds:

* **classes**: ``y`` uniform over ``num_classes``;
* **edges**: each of the ``num_edges`` undirected draws picks its first endpoint with
  probability proportional to a node weight (all ones for ``"sbm"``; Pareto-distributed with
  exponent ``power_law_exponent`` for ``"power_law"``, giving a heavy-tailed degree
  distribution); with probability ``homophily`` the second endpoint is drawn the same way
  *within the first endpoint's class*, otherwise from all nodes (a degree-corrected stochastic
  block model);
* **features**: :math:`x_v = \mu_{y_v} \cdot s + \varepsilon_v` with class means
  :math:`\mu_c \sim \mathcal{N}(0, I_F)`, signal ``feature_signal`` :math:`s` and
  :math:`\varepsilon_v \sim \mathcal{N}(0, I_F)`, so features are class-correlated.

The result is symmetrised and deduplicated (no self-loops), so its edge count is at most
``2 * num_edges`` directed entries.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from omnigraph.ops import simple_undirected

KINDS = ("sbm", "power_law")


def _draw(weights: Tensor, count: int, gen: torch.Generator) -> Tensor:
    """``count`` node ids drawn with replacement proportionally to ``weights`` (inverse CDF, O(count log N))."""
    cdf = weights.double().cumsum(0)
    u = torch.rand(count, generator=gen, dtype=torch.float64) * cdf[-1]
    return torch.searchsorted(cdf, u).clamp_(max=weights.numel() - 1)


def synthetic_graph(num_nodes: int, num_edges: int, num_features: int = 64, num_classes: int = 5,
                    kind: str = "sbm", homophily: float = 0.7, feature_signal: float = 0.5,
                    power_law_exponent: float = 2.5, seed: int = 0) -> Data:
    """A random attributed graph with ``num_classes`` planted classes (see the module docstring).

    Args:
        num_nodes: N.
        num_edges: undirected edges drawn (before deduplication).
        num_features: F.
        num_classes: C.
        kind: ``"sbm"`` (uniform node weights) or ``"power_law"`` (heavy-tailed degrees).
        homophily: probability that an edge stays within a class, in [0, 1].
        feature_signal: scale of the class mean in the features (0: features carry no label).
        power_law_exponent: tail exponent of the ``"power_law"`` node weights (> 1).
        seed: seed of every random draw; the same seed gives the same graph.

    Returns:
        ``Data(x [N, F] float32, edge_index [2, E'] int64 undirected, y [N] int64)``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if num_nodes < 1 or num_edges < 0 or num_features < 1:
        raise ValueError(f"need num_nodes >= 1, num_edges >= 0, num_features >= 1; got {num_nodes}, {num_edges}, "
                         f"{num_features}")
    if not 1 <= num_classes <= num_nodes:
        raise ValueError(f"num_classes must be between 1 and num_nodes={num_nodes}, got {num_classes}")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    if kind == "power_law" and power_law_exponent <= 1:
        raise ValueError(f"power_law_exponent must be > 1, got {power_law_exponent}")
    gen = torch.Generator().manual_seed(int(seed))
    y = torch.randint(0, num_classes, (num_nodes,), generator=gen)
    if kind == "sbm":
        weights = torch.ones(num_nodes, dtype=torch.float64)
    else:  # Pareto(alpha = exponent - 1) weights: P(w > t) ~ t^-(exponent - 1)
        u = torch.rand(num_nodes, generator=gen, dtype=torch.float64)
        weights = (1.0 - u).pow(-1.0 / (power_law_exponent - 1.0))

    src = _draw(weights, num_edges, gen)
    dst = _draw(weights, num_edges, gen)
    same = torch.rand(num_edges, generator=gen) < homophily
    if bool(same.any()):
        # a same-class partner: sort nodes by class, then draw within the block of src's class
        order = torch.argsort(y, stable=True)
        sorted_w = weights[order].cumsum(0)
        counts = torch.bincount(y, minlength=num_classes)
        ends = counts.cumsum(0)
        starts = ends - counts
        cls = y[src[same]]
        lo = torch.where(starts[cls] > 0, sorted_w[(starts[cls] - 1).clamp(min=0)], torch.zeros((), dtype=torch.float64))
        hi = sorted_w[ends[cls] - 1]
        u = torch.rand(cls.numel(), generator=gen, dtype=torch.float64)
        pos = torch.searchsorted(sorted_w, lo + u * (hi - lo))
        pos = torch.minimum(torch.maximum(pos, starts[cls]), ends[cls] - 1)
        dst[same] = order[pos]
    edge_index = simple_undirected(torch.stack([src, dst]), num_nodes, self_loops=False)

    means = torch.randn(num_classes, num_features, generator=gen)
    x = torch.randn(num_nodes, num_features, generator=gen)
    x.add_(means[y], alpha=feature_signal)
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=num_nodes)


__all__ = ["KINDS", "synthetic_graph"]
