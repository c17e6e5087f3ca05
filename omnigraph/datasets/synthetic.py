r"""Synthetic attributed graphs of any size, for scaling benchmarks and tests.

:func:`synthetic_graph` draws a graph with planted classes in :math:`O(E + N F)` time and
memory, so that 10^7-edge graphs take seconds:

* **classes**: ``y`` uniform over ``num_classes``;
* **edges**: each of the ``num_edges`` undirected draws picks its first endpoint with
  probability proportional to a node weight (all ones for ``"sbm"``; Pareto-distributed with
  exponent ``power_law_exponent`` for ``"power_law"``, giving a heavy-tailed degree
  distribution); with probability ``homophily`` the second endpoint is drawn the same way
  *within the first endpoint's class*, otherwise from all nodes (a degree-corrected stochastic
  block model); with ``cross="other"`` the remaining edges go to a node of another class
  (drawn uniformly among the other classes), so that low ``homophily`` means heterophily;
* **features** (``features="gaussian"``): :math:`x_v = \mu_{y_v} \cdot s + \varepsilon_v` with
  class means :math:`\mu_c \sim \mathcal{N}(0, I_F)`, signal ``feature_signal`` :math:`s` and
  :math:`\varepsilon_v \sim \mathcal{N}(0, I_F)`, so features are class-correlated;
  ``"binary"``: bag-of-words, :math:`x_{vf} \sim \text{Bernoulli}(d\,(1 - s + 2 s\,t_{y_v f}))`
  with class topics :math:`t_c \sim U(0, 1)^F`, density ``density`` :math:`d` and
  :math:`s` = ``feature_signal`` clipped to [0, 1]; ``"onehot"``: :math:`X = I_N` (node ids,
  ``num_features`` ignored), so only the structure carries the labels.

:func:`synthetic_prior` is a fixed family of such graphs spanning the regimes of the
node-classification suite, as a pretraining source that contains no real graph.

The result is symmetrised and deduplicated (no self-loops), so its edge count is at most
``2 * num_edges`` directed entries.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from omnigraph.ops import simple_undirected

KINDS = ("sbm", "power_law")
FEATURES = ("gaussian", "binary", "onehot")
CROSS = ("any", "other")
ONEHOT_MAX_NODES = 20_000


def _draw(weights: Tensor, count: int, gen: torch.Generator) -> Tensor:
    """``count`` node ids drawn with replacement proportionally to ``weights`` (inverse CDF, O(count log N))."""
    cdf = weights.double().cumsum(0)
    u = torch.rand(count, generator=gen, dtype=torch.float64) * cdf[-1]
    return torch.searchsorted(cdf, u).clamp_(max=weights.numel() - 1)


def synthetic_graph(num_nodes: int, num_edges: int, num_features: int = 64, num_classes: int = 5,
                    kind: str = "sbm", homophily: float = 0.7, feature_signal: float = 0.5,
                    power_law_exponent: float = 2.5, seed: int = 0, features: str = "gaussian",
                    cross: str = "any", density: float = 0.05) -> Data:
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
        features: ``"gaussian"``, ``"binary"`` or ``"onehot"`` (module docstring).
        cross: where the edges that leave the class go: ``"any"`` node or a node of an ``"other"`` class.
        density: expected fraction of ones of ``"binary"`` features, in (0, 1].

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
    if features not in FEATURES or cross not in CROSS:
        raise ValueError(f"features must be one of {FEATURES} and cross one of {CROSS}, got {features!r}, {cross!r}")
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")
    if features == "onehot" and num_nodes > ONEHOT_MAX_NODES:
        raise ValueError(f"features='onehot' builds an N x N matrix; num_nodes must be <= {ONEHOT_MAX_NODES:,}, "
                         f"got {num_nodes:,}")
    if cross == "other" and num_classes < 2:
        raise ValueError("cross='other' needs num_classes >= 2")
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
    target = y[src]                       # the class the partner is drawn from, where it is constrained
    if cross == "other":
        shift = torch.randint(1, max(num_classes, 2), (num_edges,), generator=gen)
        target = torch.where(same, target, (target + shift) % num_classes)
        same = torch.ones_like(same)
    if bool(same.any()):
        # a partner of class `target`: sort nodes by class, then draw within that class's block
        order = torch.argsort(y, stable=True)
        sorted_w = weights[order].cumsum(0)
        counts = torch.bincount(y, minlength=num_classes)
        ends = counts.cumsum(0)
        starts = ends - counts
        cls = target[same]
        lo = torch.where(starts[cls] > 0, sorted_w[(starts[cls] - 1).clamp(min=0)], torch.zeros((), dtype=torch.float64))
        hi = sorted_w[ends[cls] - 1]
        u = torch.rand(cls.numel(), generator=gen, dtype=torch.float64)
        pos = torch.searchsorted(sorted_w, lo + u * (hi - lo))
        pos = torch.minimum(torch.maximum(pos, starts[cls]), ends[cls] - 1)
        dst[same] = order[pos]
        if cross == "other":   # a class with no node cannot be a partner: fall back to any node
            empty = counts[cls] == 0
            dst[same.nonzero().flatten()[empty]] = _draw(weights, int(empty.sum()), gen)
    edge_index = simple_undirected(torch.stack([src, dst]), num_nodes, self_loops=False)

    if features == "gaussian":
        means = torch.randn(num_classes, num_features, generator=gen)
        x = torch.randn(num_nodes, num_features, generator=gen)
        x.add_(means[y], alpha=feature_signal)
    elif features == "binary":
        s = min(max(float(feature_signal), 0.0), 1.0)
        topics = torch.rand(num_classes, num_features, generator=gen)
        p = (density * (1.0 - s + 2.0 * s * topics)).clamp_(max=1.0)
        x = (torch.rand(num_nodes, num_features, generator=gen) < p[y]).float()
    else:
        x = torch.eye(num_nodes)
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=num_nodes)


#: the graphs of :func:`synthetic_prior` ("v1"): (nodes, mean degree, features, classes, kind, homophily,
#: cross, feature kind, feature signal). They span the suite's regimes: homophilous to strongly
#: heterophilous, uniform and power-law degrees, 600 to 100,000 nodes, dense signed, sparse binary,
#: dense binary and one-hot features, 2 to 40 classes.
PRIOR_V1 = (
    (3_000, 8, 64, 5, "sbm", 0.85, "any", "gaussian", 0.5),
    (3_000, 8, 256, 7, "sbm", 0.8, "any", "binary", 0.8),
    (100_000, 5, 8, 10, "power_law", 0.6, "any", "gaussian", 0.4),
    (2_000, 10, 32, 5, "sbm", 0.1, "other", "gaussian", 0.5),
    (2_000, 10, 128, 4, "sbm", 0.2, "other", "binary", 0.8),
    (600, 20, 0, 4, "power_law", 0.7, "any", "onehot", 0.0),
    (5_000, 6, 32, 40, "sbm", 0.7, "any", "gaussian", 1.0),
    (10_000, 5, 8, 2, "power_law", 0.5, "any", "binary", 0.6),
)


def synthetic_prior(seed: int = 0, version: str = "v1", train_per_class: int = 100) -> list[Data]:
    """The synthetic pretraining family ``version`` (:data:`PRIOR_V1`): one graph per row, graph
    ``i`` drawn with seed ``1000 * seed + i``, each with a stratified random split
    (``train_per_class`` training nodes per class where the graph has enough, the rest halved into
    validation and test) so that it can be passed to ``pretrain_rgvt`` as a list of sources."""
    from omnigraph.datasets.splits import random_split

    if version != "v1":
        raise ValueError(f"unknown synthetic prior {version!r}; available: 'v1'")
    graphs = []
    for i, (n, degree, f, c, kind, h, cross, feats, signal) in enumerate(PRIOR_V1):
        data = synthetic_graph(n, n * degree // 2, max(f, 1), c, kind=kind, homophily=h, feature_signal=signal,
                               seed=1000 * int(seed) + i, features=feats, cross=cross,
                               density=0.3 if feats == "binary" and f <= 8 else 0.05)
        per_class = min(train_per_class, max(1, n // (3 * c)))
        for key, mask in random_split(data.y, seed=int(seed), train_per_class=per_class).items():
            data[key] = mask
        data.name = f"synthetic-prior-{version}/{i}"
        graphs.append(data)
    return graphs


__all__ = ["CROSS", "FEATURES", "KINDS", "PRIOR_V1", "synthetic_graph", "synthetic_prior"]
