"""Opening a catalogued graph through PyG or OGB (processed files loaded with safe globals only),
and atomic, checksum-verified downloads."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch
from torch_geometric.data import Data

from omnigraph._files import sha256_file, staged


def download_verified(url: str, path: Path, sha256: str | None) -> None:
    """Download ``url`` to ``path`` atomically: nothing is left at ``path`` unless the whole file
    arrived (and, with ``sha256``, matches it)."""
    import tempfile

    from torch_geometric.data import download_url

    with staged(path, ".part") as tmp, tempfile.TemporaryDirectory(dir=path.parent) as folder:
        fetched = Path(download_url(url, folder, log=False))
        if sha256 and sha256_file(fetched) != sha256:  # the mirror holds verbatim copies
            raise ValueError(f"checksum mismatch for the downloaded {url}: it differs from the catalogued file "
                             "(upstream changed?); pass verify=False to accept it")
        os.replace(fetched, tmp)


def open_pyg_dataset(entry: dict, cache: Path, protocol: str):
    loader = entry["loader"]
    root = str(cache / loader["root"])
    kwargs = dict(loader.get("kwargs", {}), **loader.get("protocol_kwargs", {}).get(protocol, {}))
    # Processed files pickle PyG's Data classes: allow exactly those under torch.load(weights_only=True),
    # so neither PyG (which would fall back to full unpickling) nor ogb 1.3.6 (which calls torch.load
    # without weights_only) unpickles anything else.
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    with torch.serialization.safe_globals([Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]), \
            warnings.catch_warnings():
        # PyG retries a refused weights-only load with full unpickling after this warning: make
        # the warning an error, so a processed file holding anything else is never unpickled
        warnings.filterwarnings("error", message="Weights only load failed")
        try:
            return _construct(loader, root, kwargs)
        except UserWarning as err:
            raise ValueError(f"a processed file under {root} holds objects other than PyG's Data classes, so it "
                             f"is not unpickled ({err}); delete {root}/processed (or the whole folder) to rebuild "
                             "it from the raw files") from None


def _construct(loader: dict, root: str, kwargs: dict):
    if loader["type"] == "ogb":
        from unittest import mock

        from ogb.nodeproppred import PygNodePropPredDataset

        # ogb asks on stdin before replacing an incomplete folder: answer yes (it only holds
        # what we staged), so that a missing dataset fails or downloads without a prompt
        with mock.patch("builtins.input", return_value="y"):
            return PygNodePropPredDataset(name=loader["name"], root=root)
    import torch_geometric.datasets as pyg_datasets

    return getattr(pyg_datasets, loader["class"])(root, **kwargs)


def ogb_masks(dataset, num_nodes: int) -> dict:
    idx = dataset.get_idx_split()
    out = {}
    for key, part in (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test")):
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[torch.as_tensor(idx[part]).long()] = True
        out[key] = mask
    return out


__all__ = ["download_verified", "ogb_masks", "open_pyg_dataset"]
