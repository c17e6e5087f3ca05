"""Graph files given by path: which task a file holds, and the node-classification readers.

``read_graph_file`` reads ``.npz`` (the uniform format or a Yandex npz), ARC's ``.mat`` and ``.pt``
(a dict of tensors). A file's task is never guessed: a Yandex npz (it carries split masks) is a
node-classification graph and a ``.mat`` an anomaly-detection graph by their formats; a uniform
``.npz`` or a ``.pt`` says so in a ``"task"`` entry (``"nc"`` or ``"gad"``; :func:`save_gad_npz`
and :func:`save_nc_file` write it) or the caller passes ``task=``. Anything else is an error.

Node-classification files hold ``x`` ``[N, F]``, ``edge_index`` ``[2, E]`` and optionally ``y``
``[N]`` (integer class ids; ``-1`` marks an unlabelled node) and boolean ``train_mask`` /
``val_mask`` / ``test_mask`` ``[N]``, which are kept as they are.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from omnigraph._npz import load_npz, npz_keys
from omnigraph.datasets.gad import (
    CSR_KEYS,
    GRAPH_SUFFIXES,
    YANDEX_KEYS,
    binary_labels,
    clean_edges,
    gad_data,
    load_tensor_dict,
    npz_features,
    read_gad_npz,
    read_mat,
    read_pt,
)

TASKS = ("nc", "gad")
MASKS = ("train_mask", "val_mask", "test_mask")


def _file_task(value, path) -> str | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = value.item() if value.shape == () else value
    value = str(value) if isinstance(value, (str, np.str_)) else value
    if value not in TASKS:
        raise ValueError(f"{path}: its 'task' entry must be 'nc' or 'gad', got {value!r}")
    return value


def resolve_task(path, stored, task: str | None) -> str:
    """The task of a uniform npz / ``.pt``: the caller's ``task`` or the file's, never a guess."""
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be 'nc' (node classification) or 'gad' (anomaly detection), got {task!r}")
    stored = _file_task(stored, path)
    if task is not None and stored is not None and task != stored:
        raise ValueError(f"{path} says task={stored!r} but task={task!r} was asked for")
    found = task or stored
    if found is None:
        raise ValueError(f"{path} does not say which task it holds: pass task='nc' (node classification: y = class "
                         "ids, optional masks) or task='gad' (anomaly detection: y = 0/1), or store a 'task' entry "
                         "in the file ('nc' or 'gad')")
    return found


def nc_data(x, edge_index, y, masks: dict, path) -> Data:
    """A node-classification ``Data`` from arrays: labels optional (``-1`` = unlabelled), masks kept."""
    data = gad_data(x, edge_index, None, path)     # features and edges: the same checks as for GAD
    n = data.num_nodes
    if y is not None:
        y = torch.as_tensor(np.asarray(y)).reshape(-1)
        if y.numel() != n:
            raise ValueError(f"{path}: y has {y.numel()} entries but x has {n} rows")
        if y.dtype == torch.bool:
            raise ValueError(f"{path}: y is boolean; node-classification labels are integer class ids")
        if y.is_floating_point() and (not bool(torch.isfinite(y).all()) or not torch.equal(y, y.round())):
            raise ValueError(f"{path}: y must hold integer class ids (-1 = unlabelled), found fractional, NaN "
                                 "or Inf values")
        y = y.long()
        if int(y.min()) < -1:
            raise ValueError(f"{path}: y has the class id {int(y.min())}; class ids are >= 0 and -1 marks an "
                             "unlabelled node")
        data.y = y
    for name in MASKS:
        m = masks.get(name)
        if m is None:
            continue
        m = torch.as_tensor(np.asarray(m))
        if m.dtype != torch.bool or m.dim() != 1 or m.numel() != n:
            raise ValueError(f"{path}: {name} must be a boolean array of shape [{n}], got {m.dtype} "
                             f"{list(m.shape)}")
        data[name] = m
    return data


def read_nc_npz(path: str | Path, f: dict | None = None) -> Data:
    path = Path(path)
    f = load_npz(path) if f is None else f
    if "edge_index" not in f:
        raise ValueError(f"{path}: missing key 'edge_index' (the file has {sorted(f)})")
    return nc_data(npz_features(f, path), f["edge_index"], f.get("y"), {k: f.get(k) for k in MASKS}, path)


def read_nc_pt(path: str | Path, obj: dict | None = None) -> Data:
    path = Path(path)
    obj = load_tensor_dict(path) if obj is None else obj
    x = obj["x"].to_dense() if obj["x"].layout != torch.strided else obj["x"]
    masks = {k: obj[k].numpy() for k in MASKS if isinstance(obj.get(k), Tensor)}
    y = obj.get("y")
    return nc_data(x.float().numpy(), obj["edge_index"].numpy(), None if y is None else y.numpy(), masks, path)


def save_nc_file(data: Data, path: str | Path) -> Path:
    """Write a node-classification graph (``x``, ``edge_index``, optional ``y`` and masks) as ``.npz`` or
    ``.pt`` with ``task = "nc"`` (atomically)."""
    from omnigraph.datasets._store import atomic_write

    path = Path(path)
    items = {"x": data.x, "edge_index": data.edge_index, **{k: data[k] for k in ("y", *MASKS)
                                                            if getattr(data, k, None) is not None}}
    if path.suffix == ".npz":
        arrays = {k: v.detach().cpu().numpy() for k, v in items.items()}
        return atomic_write(path, lambda tmp: np.savez_compressed(tmp, task=np.array("nc"), **arrays))
    if path.suffix == ".pt":
        return atomic_write(path, lambda tmp: torch.save({**{k: v.detach().cpu() for k, v in items.items()},
                                                          "task": "nc"}, tmp))
    raise ValueError(f"{path}: save_nc_file writes .npz or .pt files")


def read_graph_file(path: str | Path, task: str | None = None, split: int = 0) -> Data:
    """Read a graph file by format; ``data.task`` says which task it holds (see the module docstring).

    A Yandex npz gives a node-classification graph (masks row ``split``, default 0) unless
    ``task="gad"``, where its binary label becomes the anomaly label.
    """
    from omnigraph.datasets.yandex import load_yandex_npz

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such graph file: {path}")
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be 'nc' (node classification) or 'gad' (anomaly detection), got {task!r}")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        keys = npz_keys(path)
        if all(k in keys for k in YANDEX_KEYS):
            data = load_yandex_npz(path, split=0 if task == "gad" else split)
            if task == "gad":
                data = Data(x=data.x, edge_index=clean_edges(data.edge_index, data.num_nodes, path),
                            y=binary_labels(data.y, "node_labels", path), num_nodes=data.num_nodes)
            data.task = task or "nc"
            return data
        if not ("edge_index" in keys or "x" in keys or "x_data" in keys):
            raise ValueError(f"{path}: unrecognised npz keys {sorted(keys)}; expected the uniform format "
                             f"(x or {list(CSR_KEYS)}, edge_index, optional y and task) or a Yandex npz "
                             f"({list(YANDEX_KEYS)}, masks)")
        f = load_npz(path)
        found = resolve_task(path, f.get("task"), task)
        data = read_gad_npz(path, f) if found == "gad" else read_nc_npz(path, f)
    elif suffix == ".mat":
        if task == "nc":
            raise ValueError(f"{path}: a .mat file is read as ARC's anomaly-detection format (Network, Attributes, "
                             "Label); save a node-classification graph as .npz or .pt with task 'nc'")
        data, found = read_mat(path), "gad"
    elif suffix == ".pt":
        obj = load_tensor_dict(path)
        found = resolve_task(path, obj.get("task"), task)
        data = read_pt(path, obj) if found == "gad" else read_nc_pt(path, obj)
    else:
        raise ValueError(f"{path}: unsupported graph file type {suffix!r}; expected one of {GRAPH_SUFFIXES}")
    data.task = found
    return data


__all__ = ["read_graph_file", "read_nc_npz", "read_nc_pt", "resolve_task", "save_nc_file"]
