"""Yandex / Platonov heterophily graphs (``<name>.npz``; Platonov et al., ICLR 2023)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected as _to_undirected

from omnigraph._npz import load_npz

_KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks")


def load_yandex_npz(path: str | Path, split: int = 0, to_undirected: bool = True) -> Data:
    """Read a Yandex npz: features, labels, edges, and the masks of row ``split``.

    Args:
        path: ``<name>.npz`` with ``node_features`` ``[N, F]``, ``node_labels`` ``[N]``,
            ``edges`` ``[E, 2]`` and ``train/val/test_masks`` ``[S, N]``.
        split: mask row (protocols use row 0).
        to_undirected: symmetrise the edges, which undirected files list once per pair
            (``False`` keeps the ``*_directed`` files as stored).

    Returns:
        ``Data`` with float32 ``x``, int64 ``y``, ``edge_index`` ``[2, E']`` and 1-D bool masks.
    """
    path = Path(path)
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)):
        raise TypeError(f"split must be an int row index, got {type(split).__name__}")
    f = load_npz(path)
    missing = [k for k in _KEYS if k not in f]
    if missing:
        raise ValueError(f"{path} is not a Yandex heterophily npz: missing keys {missing} (has {sorted(f)})")
    feats, labels, edges = f["node_features"], f["node_labels"], f["edges"]
    if feats.ndim != 2:
        raise ValueError(f"{path}: node_features must be [N, F], got shape {list(feats.shape)}")
    n = feats.shape[0]
    if labels.shape != (n,):
        raise ValueError(f"{path}: node_labels must have shape [{n}], got {list(labels.shape)}")
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"{path}: edges must have shape [E, 2], got {list(edges.shape)}")
    if not np.issubdtype(edges.dtype, np.integer):
        raise ValueError(f"{path}: edges must hold integer node ids, got {edges.dtype}")
    n_splits = f["train_masks"].shape[0] if f["train_masks"].ndim == 2 else 0
    for key in ("train_masks", "val_masks", "test_masks"):
        if f[key].ndim != 2 or f[key].shape != (n_splits, n):
            raise ValueError(f"{path}: {key} must have shape [S, {n}] like train_masks, got {list(f[key].shape)}")
    if not 0 <= split < n_splits:
        raise ValueError(f"split {split} out of range: {path.name} has {n_splits} splits (0..{n_splits - 1})")
    x = torch.from_numpy(np.asarray(feats, dtype=np.float32))
    y = torch.from_numpy(np.asarray(labels, dtype=np.int64))
    edge_index = torch.from_numpy(np.asarray(edges, dtype=np.int64)).t().contiguous()
    masks = {k: torch.from_numpy(np.asarray(f[f"{k}s"][split], dtype=bool))
             for k in ("train_mask", "val_mask", "test_mask")}
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"{path}: edges refer to node ids outside 0..{n - 1}")
    if to_undirected:
        edge_index = _to_undirected(edge_index, num_nodes=n)
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=n, **masks)
