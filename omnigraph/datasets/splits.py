r"""Train/validation/test split protocols for node classification.

Split strings (``load_dataset(..., split=...)``):

* ``"public"``: the masks the dataset ships (Planetoid 140/500/1000 for Cora; Reddit's
  GraphSAGE masks). ``"public:i"`` picks column ``i`` where there are several (WikiCS: 20
  train/val columns, one shared test mask).
* ``"geom-gcn:i"``: geom-gcn split ``i`` of 10 (WebKB, WikipediaNetwork, Actor, Planetoid).
* ``"yandex:i"``: row ``i`` of the Yandex ``[10, N]`` masks (Platonov et al., 2023).
* ``"random"``: stratified random split with :math:`20 \cdot C` training nodes and the rest
  split 50/50 into validation and test, both drawn with scikit-learn ``train_test_split``
  (``stratify=y``, ``random_state=seed``), exactly as RGVT (seed 42) and GraphAny (seed 0).
* ``"ogb"``: the official OGB split.

An ``int`` ``i`` means index ``i`` of the dataset's default protocol.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

_MASKS = ("train_mask", "val_mask", "test_mask")


def parse_split(split, splits: dict, name: str) -> tuple[str, int | None]:
    """Turn ``split`` (None, int, ``"proto"`` or ``"proto:i"``) into ``(protocol, index)``.

    ``splits`` is the catalogue's ``{"default": ..., "protocols": {proto: count | None}}``.
    """
    protocols = splits.get("protocols", {})
    default = splits.get("default")
    if split is None:
        split = default
    if isinstance(split, bool) or not isinstance(split, (int, str)):
        raise TypeError(f"split must be None, an int or a str such as 'geom-gcn:0', got {type(split).__name__}")
    if isinstance(split, int):
        proto = str(default).split(":")[0]
        if protocols.get(proto) is None:
            raise ValueError(f"{name}: split={split} is an index but the default protocol {default!r} has no "
                             f"indexed splits; use one of {_describe(protocols)}")
        index: int | None = split
    else:
        proto, _, idx = split.strip().lower().partition(":")
        proto = {"geomgcn": "geom-gcn", "geom_gcn": "geom-gcn", "official": "ogb"}.get(proto, proto)
        if proto not in protocols:
            raise ValueError(f"{name}: unknown split {split!r}; this dataset supports {_describe(protocols)}")
        if idx:
            try:
                index = int(idx)
            except ValueError:
                raise ValueError(f"{name}: split index in {split!r} must be an integer") from None
        else:
            index = 0 if protocols[proto] is not None else None
    count = protocols[proto]
    if index is not None:
        if count is None:
            raise ValueError(f"{name}: split protocol {proto!r} has no index (got {split!r})")
        if not 0 <= index < count:
            raise ValueError(f"{name}: split index {index} out of range: {proto!r} has {count} splits "
                             f"(0..{count - 1})")
    return proto, index


def _describe(protocols: dict) -> str:
    return ", ".join(f"'{p}:0..{c - 1}'" if c else f"'{p}'" for p, c in protocols.items())


def select_masks(data, index: int | None, name: str) -> dict[str, Tensor]:
    """The three masks of ``data`` as 1-D bool tensors, taking column ``index`` of 2-D masks."""
    out = {}
    for key in _MASKS:
        mask = getattr(data, key, None)
        if mask is None:
            raise ValueError(f"{name}: the dataset has no {key}; use split='random'")
        if mask.dim() == 2:
            mask = mask[:, 0 if index is None else index]
        out[key] = mask.to(torch.bool).contiguous()
    return out


def random_split(y: Tensor, seed: int = 0, train_per_class: int = 20) -> dict[str, Tensor]:
    r"""Stratified random split: :math:`20 \cdot C` training nodes, rest split 50/50.

    Follows RGVT's and GraphAny's code: ``train_test_split(idx, test_size=1 - 20C/N,
    stratify=y, random_state=seed)``, then ``train_test_split(rest, test_size=0.5,
    stratify=y[rest], random_state=seed)``. Because the training size is passed as a test
    fraction, the training set can be off by one from :math:`20C`.

    Args:
        y: ``[N]`` integer labels.
        seed: ``random_state`` of both calls (RGVT: 42, GraphAny: 0).
        train_per_class: training nodes per class (20).

    Returns:
        ``{"train_mask", "val_mask", "test_mask"}``, each ``[N]`` bool.
    """
    from sklearn.model_selection import train_test_split

    labels = y.view(-1).cpu().numpy()
    n = labels.shape[0]
    num_classes = np.unique(labels).size
    train_frac = train_per_class * num_classes / n
    if not 0 < train_frac < 1:
        raise ValueError(f"random split needs more than {train_per_class} * C = {train_per_class * num_classes} "
                         f"nodes, the graph has {n}")
    idx = np.arange(n)
    try:
        train, rest = train_test_split(idx, test_size=1.0 - train_frac, stratify=labels, random_state=seed)
        val, test = train_test_split(rest, test_size=0.5, stratify=labels[rest], random_state=seed)
    except ValueError as err:  # e.g. a class with a single node cannot be stratified
        raise ValueError(f"stratified random split failed: {err}") from None
    out = {}
    for key, part in zip(_MASKS, (train, val, test)):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(np.sort(part))] = True
        out[key] = mask
    return out


def cached_random_split(y: Tensor, seed: int, cache: Path, name: str) -> dict[str, Tensor]:
    """:func:`random_split`, stored in the cache keyed by dataset, labels and seed, so a result
    stays reproducible even if scikit-learn's sampler changes."""
    labels = y.view(-1).to(torch.int64).cpu().numpy()
    digest = hashlib.sha1(labels.tobytes()).hexdigest()[:12]
    path = cache / "splits" / name.replace("/", "__") / f"random-seed{seed}-{digest}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as f:
            return {k: torch.from_numpy(f[k].astype(bool)) for k in _MASKS}
    from omnigraph.datasets._store import atomic_write

    masks = random_split(y, seed=seed)
    atomic_write(path, lambda tmp: np.savez(tmp, **{k: v.numpy() for k, v in masks.items()}))
    return masks
