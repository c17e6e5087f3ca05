"""Input validation shared by every public entry point.

Each check raises ``ValueError``/``TypeError`` naming the offending field and the fix, so
that bad input never surfaces as a crash deep inside torch or as a silently wrong answer.
"""
from __future__ import annotations

import torch
from torch import Tensor


def check_graph(data, require_x: bool = True) -> None:
    """Validate the structural fields of a PyG ``Data``: ``x``, ``edge_index``, ``num_nodes``."""
    if getattr(data, "edge_index", None) is None:
        raise ValueError("data.edge_index is missing; pass an empty LongTensor of shape [2, 0] for a graph "
                         "without edges")
    ei = data.edge_index
    if not isinstance(ei, Tensor):
        raise TypeError(f"data.edge_index must be a torch.Tensor, got {type(ei).__name__}")
    if ei.is_floating_point() or ei.dtype == torch.bool:
        raise TypeError(f"data.edge_index must be an integer tensor, got {ei.dtype}; use edge_index.long()")
    if ei.dim() != 2 or ei.size(0) != 2:
        raise ValueError(f"data.edge_index must have shape [2, E], got {list(ei.shape)}")
    x = getattr(data, "x", None)
    if require_x:
        if x is None:
            raise ValueError("data.x is missing; node features are required (use torch.ones(N, 1) if the graph "
                             "has none)")
        if not isinstance(x, Tensor):
            raise TypeError(f"data.x must be a torch.Tensor, got {type(x).__name__}")
        if x.is_sparse or x.layout != torch.strided:
            raise TypeError("data.x is a sparse tensor; convert it with data.x = data.x.to_dense()")
        if not x.is_floating_point():
            raise TypeError(f"data.x must be floating point, got {x.dtype}; use data.x = data.x.float()")
        if x.dim() != 2:
            raise ValueError(f"data.x must have shape [N, F], got {list(x.shape)}")
        # NaN/Inf propagate through min/max: two reductions instead of an [N, F] bool temporary
        if x.numel() and not (torch.isfinite(x.min()) and torch.isfinite(x.max())):
            bad = (~torch.isfinite(x)).any(dim=1).nonzero().flatten()
            raise ValueError(f"data.x contains NaN or Inf in {bad.numel()} rows (first: node {int(bad[0])}); "
                             "impute or drop those values first")
    n = data.num_nodes
    if n is None or n == 0:
        raise ValueError("the graph has no nodes")
    if x is not None and x.size(0) != n:
        raise ValueError(f"data.x has {x.size(0)} rows but data.num_nodes is {n}")
    if ei.numel():
        lo, hi = int(ei.min()), int(ei.max())
        if lo < 0:
            raise ValueError(f"edge_index contains the negative node id {lo}")
        if hi >= n:
            raise ValueError(f"edge_index refers to node {hi} but the graph has {n} nodes")


def check_node_labels(data) -> tuple[Tensor, Tensor]:
    """Validate ``y`` and the train/val masks for node classification; return ``(train, val)`` masks.

    Unlabelled nodes may carry ``y = -1`` as long as they are in neither mask.
    """
    n = data.num_nodes
    y = getattr(data, "y", None)
    if y is None:
        raise ValueError("data.y is missing; node classification needs labels for the training nodes")
    if y.dim() != 1 or y.numel() != n:
        raise ValueError(f"data.y must have shape [{n}], got {list(y.shape)}")
    if y.is_floating_point():
        raise TypeError(f"data.y must hold integer class ids, got {y.dtype}; use data.y = data.y.long()")
    masks = []
    for name in ("train_mask", "val_mask"):
        m = getattr(data, name, None)
        if m is None:
            raise ValueError(f"data.{name} is missing; build a split first, e.g. "
                             "omnigraph.load_dataset(name, split='random')")
        if m.dtype != torch.bool:
            raise TypeError(f"data.{name} must be a boolean mask, got {m.dtype}")
        if m.dim() != 1 or m.numel() != n:
            raise ValueError(f"data.{name} must have shape [{n}], got {list(m.shape)} (pick one split column)")
        if not m.any():
            raise ValueError(f"data.{name} selects no nodes")
        if (y[m] < 0).any():
            raise ValueError(f"data.{name} contains unlabelled nodes (y < 0)")
        masks.append(m)
    if (masks[0] & masks[1]).any():
        raise ValueError("data.train_mask and data.val_mask overlap")
    return masks[0], masks[1]
