"""Input validation shared by every public entry point.

Each check raises ``ValueError``/``TypeError`` naming the offending field and the fix, so
that bad input never surfaces as a crash deep inside torch or as a silently wrong answer.
``docs/validation.md`` lists every rule.

Well-defined behaviour instead of errors: graphs without edges (isolated nodes), self-loops and
duplicate edges (each method normalises the adjacency itself), directed edges (symmetrised),
``y = -1`` on unlabelled nodes outside the masks, and classes that occur on evaluation nodes but
not on training nodes (a ``UserWarning``: those nodes can never be predicted correctly).

The memory guard (:func:`~omnigraph.memory.check_memory`) is :mod:`omnigraph.memory`.
"""
from __future__ import annotations

import numbers
import warnings

import torch
from torch import Tensor

#: largest feature magnitude accepted (float32: squares and dot products of larger values overflow)
MAX_ABS_FEATURE = 1e15


# ---------------------------------------------------------------------------------------------- graph
def check_graph(data, require_x: bool = True) -> None:
    """Validate the structural fields of a PyG ``Data``: ``x``, ``edge_index``, ``num_nodes``.

    Accepted as is (each method normalises them): no edges, self-loops, duplicate and directed
    edges, any integer dtype of ``edge_index``, float16/32/64 ``x``.
    """
    if data is None or isinstance(data, Tensor) or not hasattr(data, "num_nodes"):
        raise TypeError(f"data must be a torch_geometric.data.Data with x and edge_index, got {type(data).__name__}"
                        "; wrap tensors as Data(x=x, edge_index=edge_index)")
    ei = getattr(data, "edge_index", None)
    if ei is None:
        raise ValueError("data.edge_index is missing; pass an empty LongTensor of shape [2, 0] for a graph "
                         "without edges")
    if not isinstance(ei, Tensor):
        raise TypeError(f"data.edge_index must be a torch.Tensor, got {type(ei).__name__}; use "
                        "torch.as_tensor(edge_index, dtype=torch.long)")
    if ei.layout != torch.strided:
        raise TypeError("data.edge_index is a sparse tensor; pass the [2, E] index list (adj.coalesce().indices())")
    if ei.is_floating_point() or ei.is_complex() or ei.dtype == torch.bool:
        raise TypeError(f"data.edge_index must be an integer tensor, got {ei.dtype}; use data.edge_index.long() "
                        "(after checking that the values are whole numbers)")
    if ei.dim() != 2 or ei.size(0) != 2:
        hint = " (it looks like [E, 2]: use edge_index.t())" if ei.dim() == 2 and ei.size(1) == 2 else ""
        raise ValueError(f"data.edge_index must have shape [2, E], got {list(ei.shape)}{hint}")
    x = getattr(data, "x", None)
    if require_x:
        if x is None:
            raise ValueError("data.x is missing; node features are required (use torch.ones(N, 1) if the graph "
                             "has none)")
        if not isinstance(x, Tensor):
            raise TypeError(f"data.x must be a torch.Tensor, got {type(x).__name__}; use torch.as_tensor(x)")
        if x.layout != torch.strided:
            raise TypeError("data.x is a sparse tensor; convert it with data.x = data.x.to_dense()")
        if not x.is_floating_point():
            raise TypeError(f"data.x must be floating point, got {x.dtype}; use data.x = data.x.float()")
        if x.dim() != 2:
            raise ValueError(f"data.x must have shape [N, F], got {list(x.shape)}"
                             + ("; use data.x = data.x.view(-1, 1) for one feature" if x.dim() == 1 else ""))
        if x.size(1) == 0 and x.size(0) > 0:
            raise ValueError("data.x has 0 feature columns; use torch.ones(N, 1) for a graph without features")
        # NaN/Inf propagate through min/max: two reductions instead of an [N, F] bool temporary
        if x.numel() and not (torch.isfinite(x.min()) and torch.isfinite(x.max())):
            bad = (~torch.isfinite(x)).any(dim=1).nonzero().flatten()
            raise ValueError(f"data.x contains NaN or Inf in {bad.numel()} rows (first: node {int(bad[0])}); "
                             "impute or drop those values first")
        if x.numel():
            peak = max(-float(x.min()), float(x.max()))
            if peak > MAX_ABS_FEATURE:
                flat = int(x.abs().argmax())
                raise ValueError(
                    f"data.x holds values up to {peak:.3g} in magnitude (node {flat // x.size(1)}, feature "
                    f"{flat % x.size(1)}): omnigraph computes in float32, where products of features that large "
                    f"overflow; rescale the features so that |x| <= {MAX_ABS_FEATURE:.0e} (e.g. divide by "
                    "x.abs().max() or standardise the columns)")
    n = data.num_nodes
    if n is None or int(n) == 0:
        raise ValueError("the graph has no nodes (data.num_nodes is 0 / data.x has 0 rows); there is nothing to "
                         "predict")
    n = int(n)
    if x is not None and isinstance(x, Tensor) and x.size(0) != n:
        raise ValueError(f"data.x has {x.size(0)} rows but data.num_nodes is {n}; they must agree")
    if ei.numel():
        lo, hi = int(ei.min()), int(ei.max())
        if lo < 0:
            raise ValueError(f"data.edge_index contains the negative node id {lo}; node ids must be in 0..{n - 1}")
        if hi >= n:
            raise ValueError(f"data.edge_index refers to node {hi} but the graph has {n} nodes (ids 0..{n - 1}); "
                             "fix edge_index or set data.num_nodes")


# ----------------------------------------------------------------------------------------------- masks
def check_mask(mask, num_nodes: int, name: str, allow_index: bool = False) -> Tensor:
    """A boolean ``[N]`` mask from ``mask`` (or, with ``allow_index``, from integer node ids).

    An integer tensor of length ``N`` holding only 0/1 is refused even with ``allow_index``:
    it is almost certainly a mask in the wrong dtype, and reading it as node ids {0, 1} would
    be silently wrong.
    """
    if mask is None:
        raise ValueError(f"{name} is missing; build a split first, e.g. omnigraph.load_dataset(name, split='random')")
    if not isinstance(mask, Tensor):
        if not allow_index:
            raise TypeError(f"{name} must be a boolean torch.Tensor of shape [{num_nodes}], got {type(mask).__name__}")
        mask = torch.as_tensor(mask)
    if mask.dtype == torch.bool:
        if mask.dim() == 2 and mask.size(0) == num_nodes:
            raise ValueError(f"{name} has shape {list(mask.shape)}: one column per split; pick one split "
                             f"column, e.g. {name}[:, 0]")
        if mask.dim() != 1 or mask.numel() != num_nodes:
            raise ValueError(f"{name} must be a boolean mask of shape [{num_nodes}], got {list(mask.shape)}")
        return mask.cpu()
    if mask.is_floating_point() or mask.is_complex():
        raise TypeError(f"{name} must be a boolean mask{' or integer node ids' if allow_index else ''}, got "
                        f"{mask.dtype}; use {name}.bool()")
    looks_binary = mask.dim() == 1 and mask.numel() == num_nodes and num_nodes > 2 and bool(
        ((mask == 0) | (mask == 1)).all())
    if not allow_index or looks_binary:
        raise TypeError(f"{name} must be a boolean mask, got {mask.dtype}"
                        + (" holding 0/1 (a mask in the wrong dtype)" if looks_binary else "")
                        + f"; use {name}.bool()")
    ids = mask.flatten().long().cpu()
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_nodes):
        raise ValueError(f"{name} refers to nodes outside 0..{num_nodes - 1}")
    out = torch.zeros(num_nodes, dtype=torch.bool)
    out[ids] = True
    return out


def check_disjoint(masks: dict[str, Tensor]) -> None:
    """Raise if any two of the named boolean masks share a node."""
    names = list(masks)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = masks[a] & masks[b]
            if both.any():
                raise ValueError(f"{a} and {b} overlap in {int(both.sum())} nodes (first: node "
                                 f"{int(both.nonzero()[0])}); evaluation nodes must not be trained on, so make "
                                 "the splits disjoint")


# ---------------------------------------------------------------------------------------------- labels
def check_labels(y, num_nodes: int, field: str = "data.y", allow_float: bool = False) -> Tensor:
    """``y`` as a 1-D integer tensor of length ``N`` (with ``allow_float``, float whole numbers too)."""
    if y is None:
        raise ValueError(f"{field} is missing; node classification needs labels for the training nodes")
    if not isinstance(y, Tensor):
        raise TypeError(f"{field} must be a torch.Tensor, got {type(y).__name__}; use torch.as_tensor(y)")
    if y.dim() == 2 and y.size(0) == num_nodes and y.size(1) == 1:
        y = y.view(-1)
    if y.dim() != 1 or y.numel() != num_nodes:
        raise ValueError(f"{field} must have shape [{num_nodes}] (one class id per node), got {list(y.shape)}")
    if y.dtype == torch.bool:
        raise TypeError(f"{field} is boolean; use {field}.long() for class ids 0/1")
    if y.is_floating_point():
        if not allow_float:
            raise TypeError(f"{field} must hold integer class ids, got {y.dtype}; use {field} = {field}.long()")
        if not bool(torch.isfinite(y).all()) or not torch.equal(y, y.round()):
            raise TypeError(f"{field} must hold integer class ids, got {y.dtype} with fractional or NaN values")
        y = y.long()
    return y


def check_class_ids(y_labelled: Tensor, field: str = "data.y", num_classes: int | None = None) -> int:
    """The number of classes ``C`` (largest labelled id + 1, or ``num_classes``), refused when sparse.

    Class ids index the output columns, so ids must be ``0..C-1`` with few gaps: a label of 10**9 on
    a three-class graph would make an output layer (and one-hot targets) of 10**9 columns. ``C`` may
    exceed the number of distinct labelled classes (classes absent from the labelled nodes), but
    not by more than ``max(4 k, k + 64)`` for ``k`` distinct ones."""
    classes = torch.unique(y_labelled)
    k = int(classes.numel())
    top = int(classes.max()) if k else -1
    c = top + 1 if num_classes is None else int(num_classes)
    bound = max(4 * k, k + 64)
    if c > bound:
        what = (f"num_classes={num_classes}" if num_classes is not None and num_classes > top + 1 else
                f"the largest class id is {top}")
        raise ValueError(f"{field}: the labelled nodes use {k} distinct classes but {what}, which would make "
                         f"{c} output columns; class ids must be 0..C-1 (at most {bound} here): relabel them with "
                         f"torch.unique(y, return_inverse=True)")
    return c


def check_train_classes(y_train: Tensor, field: str = "data.y[train_mask]") -> None:
    """At least two classes among the training labels (as scikit-learn's classifiers require)."""
    classes = torch.unique(y_train)
    if classes.numel() < 2:
        raise ValueError(f"{field} has a single class ({classes.tolist()}); a classifier needs at least two "
                         "classes among the training nodes")


def warn_unseen_classes(y_train: Tensor, y_eval: Tensor, field: str) -> None:
    """Warn when evaluation labels hold classes absent from the training labels.

    Such nodes can never be predicted correctly; they stay in the evaluation (so accuracy is not
    inflated) and no error is raised, as with scikit-learn's classifiers.
    """
    unseen = sorted(set(torch.unique(y_eval[y_eval >= 0]).tolist()) - set(torch.unique(y_train).tolist()))
    if unseen:
        warnings.warn(f"{field} contains classes {unseen[:10]} that no training node has; those nodes can never be "
                      "predicted correctly (they still count in the accuracy)", UserWarning, stacklevel=3)


def check_eval_labels(data, mask, y_train: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Validated ``(mask, y[mask])`` for scoring a node classifier.

    ``mask`` is a boolean ``[N]`` mask or node ids (default ``data.test_mask``); it must select at
    least one node, and every selected node needs an integer label >= 0. With ``y_train``, warns
    about classes that no training node has.
    """
    n = int(data.num_nodes)
    name = "mask" if mask is not None else "data.test_mask"
    mask = check_mask(mask if mask is not None else getattr(data, "test_mask", None), n, name, allow_index=True)
    if int(mask.sum()) == 0:
        raise ValueError(f"{name} selects no nodes")
    if getattr(data, "y", None) is None:
        raise ValueError("data.y is missing; scoring needs the labels of the evaluated nodes")
    y = data.y[mask].cpu()
    if y.dtype == torch.bool or (y.is_floating_point() and not torch.equal(y, y.round())):
        raise TypeError("data.y must hold integer class ids on the evaluated nodes")
    y = y.long()
    if (y < 0).any():
        raise ValueError(f"{name} contains unlabelled nodes (y < 0); drop them from the mask")
    if y_train is not None:
        warn_unseen_classes(y_train, y, f"data.y[{name}]")
    return mask, y


def not_fitted(estimator: str, fix: str = "call fit(data) first") -> Exception:
    """scikit-learn's ``NotFittedError`` (a ``ValueError`` and ``AttributeError``) for ``estimator``."""
    from sklearn.exceptions import NotFittedError  # lazy: importing sklearn costs ~1 s

    return NotFittedError(f"this {estimator} is not fitted yet; {fix}")


def check_node_labels(data, require_val: bool = True) -> tuple[Tensor, Tensor]:
    """Validate ``y`` and the masks for node classification; return ``(train, val)`` boolean masks.

    Unlabelled nodes may carry ``y = -1`` as long as they are in neither mask. ``test_mask``, when
    present, must be a valid mask disjoint from ``train_mask`` and ``val_mask``; its labels are
    never read. Raises for a single training class; warns when ``val_mask`` holds classes that no
    training node has.
    """
    n = int(data.num_nodes)
    y = check_labels(getattr(data, "y", None), n)
    masks = {}
    for name in ("train_mask", "val_mask", "test_mask"):
        m = getattr(data, name, None)
        if m is None and (name == "test_mask" or (name == "val_mask" and not require_val)):
            continue
        m = check_mask(m, n, f"data.{name}")
        if name != "test_mask":
            if not m.any():
                raise ValueError(f"data.{name} selects no nodes; it needs at least one labelled node")
            if (y[m] < 0).any():
                raise ValueError(f"data.{name} contains unlabelled nodes (y < 0); drop them from the mask")
        masks[f"data.{name}"] = m
    check_disjoint(masks)
    train = masks["data.train_mask"]
    val = masks.get("data.val_mask", torch.zeros_like(train))
    check_train_classes(y[train])
    if val.any():
        warn_unseen_classes(y[train], y[val], "data.y[val_mask]")
    return train, val


# ------------------------------------------------------------------------------------- anomaly labels
def check_anomaly_labels(y, num_nodes: int, field: str = "data.y") -> Tensor:
    """Binary anomaly labels ``[N]`` (1 = anomaly) with at least one anomaly and one normal node."""
    if y is None:
        raise ValueError(f"{field} is missing; set the anomaly labels (1 = anomaly, 0 = normal)")
    if not isinstance(y, Tensor):
        y = torch.as_tensor(y)
    y = y.reshape(-1) if y.dim() == 2 and 1 in y.shape else y
    if y.dim() != 1 or y.numel() != num_nodes:
        raise ValueError(f"{field} must have shape [{num_nodes}], got {list(y.shape)}")
    if y.is_floating_point() and not bool(torch.isfinite(y).all()):
        raise ValueError(f"{field} contains NaN or Inf")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError(f"{field} must be binary (0 = normal, 1 = anomaly), found values "
                         f"{torch.unique(y)[:10].tolist()}; for pygod's bit codes use (y > 0).long()")
    y = y.long()
    k = int(y.sum())
    if k == 0:
        raise ValueError(f"{field} has no anomalies (no node with y == 1); training and evaluation need both classes")
    if k == num_nodes:
        raise ValueError(f"{field} marks every node as an anomaly; training and evaluation need normal nodes too")
    return y


def source_labels(graphs, label=None, who: str = "pretraining") -> list[tuple[object, Tensor]]:
    """``(data, y)`` of every labelled source graph of a detector's pretraining, checked up front.

    ``graphs`` is a ``Data`` or a sequence of them; ``label[i]`` (if given) overrides ``data.y``.
    Each graph needs valid ``x`` / ``edge_index`` and binary labels with at least one anomaly and one
    normal node (:func:`check_anomaly_labels`). The one check of source graphs, used by the
    trainers and by the estimators' ``fit`` before anything is computed.
    """
    from torch_geometric.data import Data

    if isinstance(graphs, Data):
        graphs, label = [graphs], None if label is None else [label]
    graphs = list(graphs)
    if not graphs:
        raise ValueError(f"{who} needs at least one labelled source graph")
    if label is not None and len(label) != len(graphs):
        raise ValueError(f"label has {len(label)} entries but {len(graphs)} graphs were given; pass one per graph")
    out = []
    for i, data in enumerate(graphs):
        if not isinstance(data, Data):
            raise TypeError(f"source graph {i} must be a torch_geometric Data, got {type(data).__name__} "
                            "(load graphs by name with omnigraph.load_dataset)")
        check_graph(data)
        y = label[i] if label is not None else getattr(data, "y", None)
        if y is None:
            raise ValueError(f"source graph {i} has no labels: set data.y (1 = anomaly) or pass label=[...]")
        out.append((data, check_anomaly_labels(y, data.num_nodes,
                                               f"label[{i}]" if label is not None else f"source graph {i}: data.y")))
    return out


def check_support(support, num_nodes: int, name: str) -> Tensor:
    """Support nodes as a LongTensor of distinct ids in ``0..N-1`` (from ids or a boolean mask)."""
    if support is None:
        return torch.empty(0, dtype=torch.long)
    support = torch.as_tensor(support)
    if support.dtype == torch.bool:
        if support.dim() != 1 or support.numel() != num_nodes:
            raise ValueError(f"{name} is a boolean mask of shape {list(support.shape)} but the graph has "
                             f"{num_nodes} nodes")
        return support.nonzero().flatten().cpu()
    if support.is_floating_point() or support.is_complex():
        raise TypeError(f"{name} must hold integer node ids or be a boolean mask, got {support.dtype}")
    support = support.flatten().long().cpu()
    if support.numel() and (int(support.min()) < 0 or int(support.max()) >= num_nodes):
        bad = int(support.min()) if int(support.min()) < 0 else int(support.max())
        raise ValueError(f"{name} refers to node {bad} but the graph has {num_nodes} nodes (ids 0..{num_nodes - 1})")
    uniq, counts = torch.unique(support, return_counts=True)
    if support.numel() == num_nodes and num_nodes > 2 and uniq.numel() <= 2 and bool((support <= 1).all()):
        raise TypeError(f"{name} holds only 0/1 for each of the {num_nodes} nodes: that is an indicator vector, "
                        f"not node ids; pass it as a boolean mask ({name}.bool()) or as ids "
                        f"({name}.nonzero().flatten())")
    if uniq.numel() != support.numel():
        raise ValueError(f"{name} contains duplicated node ids (e.g. {int(uniq[counts > 1][0])}); pass each support "
                         "node once")
    return support


def check_shots(k, available: int, name: str, what: str) -> int:
    """A support size ``k`` that leaves at least one ``what`` node of ``available`` to evaluate."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative int, got {k!r}")
    k = int(k)
    if k < 0:
        raise ValueError(f"{name} must be >= 0, got {k}")
    if k and k >= available:
        raise ValueError(f"{name}={k} asks for {k} {what} support nodes but the graph has only {available} {what} "
                         f"nodes; the support must leave {what} nodes to evaluate, so use {name} < {available}")
    return k


__all__ = [
    "check_anomaly_labels",
    "check_disjoint",
    "check_graph",
    "check_labels",
    "check_mask",
    "check_node_labels",
    "check_shots",
    "check_support",
    "check_train_classes",
    "source_labels",
    "warn_unseen_classes",
]
