"""Yandex / Platonov heterophily graphs (``<name>.npz``; Platonov et al., ICLR 2023)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected as _to_undirected

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
    with np.load(path, allow_pickle=False) as f:
        missing = [k for k in _KEYS if k not in f.files]
        if missing:
            raise ValueError(f"{path} is not a Yandex heterophily npz: missing keys {missing} (has {f.files})")
        n_splits = f["train_masks"].shape[0]
        if isinstance(split, bool) or not isinstance(split, (int, np.integer)):
            raise TypeError(f"split must be an int row index, got {type(split).__name__}")
        if not 0 <= split < n_splits:
            raise ValueError(f"split {split} out of range: {path.name} has {n_splits} splits (0..{n_splits - 1})")
        x = torch.from_numpy(np.asarray(f["node_features"], dtype=np.float32))
        y = torch.from_numpy(np.asarray(f["node_labels"], dtype=np.int64))
        edges = torch.from_numpy(np.asarray(f["edges"], dtype=np.int64)).t().contiguous()
        masks = {k: torch.from_numpy(np.asarray(f[f"{k}s"][split], dtype=bool))
                 for k in ("train_mask", "val_mask", "test_mask")}
    edge_index = _to_undirected(edges, num_nodes=x.size(0)) if to_undirected else edges
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=x.size(0), **masks)
