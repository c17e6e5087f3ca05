"""Per-graph preprocessing flags (``row_normalize``, ``self_loops``) recorded on ``Data`` objects.

Some anomaly-detection graphs are preprocessed differently by ARC and REFI-GAD: Amazon and
Tolokers have their feature rows normalised, Facebook is used without self-loops. The
catalogue lists this under each entry's ``preprocess``; :func:`~omnigraph.datasets.load_dataset`
copies it onto the returned ``Data`` (``data.row_normalize = True``), and every detector reads
it back through :func:`graph_flag`, so ``ARC().fit(load_dataset("gad/amazon"))`` preprocesses
Amazon like the paper without the caller passing a flag.

No model imports here: models, estimators and training code import this module.
"""
from __future__ import annotations

import numpy as np
from torch import Tensor

#: the flags a catalogue entry's ``preprocess`` may set, with their defaults
PREPROCESS_FLAGS = {"row_normalize": False, "self_loops": True}


def graph_flag(data, name: str, value: bool | None, default: bool | None) -> bool | None:
    """Per-graph preprocessing flag: an explicit ``value`` wins, then ``data.<name>``, then the
    catalogue's ``preprocess`` entry for ``data.name`` (a ``Data`` named after a catalogue graph but
    built by hand), then ``default``.

    The one resolver of these flags: every model, estimator and trainer reads them through it.

    Args:
        data: a ``Data`` (or any object, or ``None``) that may carry the flag as an attribute.
        name: the flag, e.g. ``"row_normalize"`` or ``"self_loops"``.
        value: the caller's override (``None``: read ``data``).
        default: used when none is set.

    Raises:
        ValueError: ``data.<name>`` is a tensor with more than one element.
        TypeError: ``data.<name>`` is not a boolean flag (bool, int or a one-element tensor).
    """
    if value is not None:
        return bool(value)
    attr = getattr(data, name, None) if data is not None else None
    if attr is None:
        return _catalogue_flag(getattr(data, "name", None), name, default)
    if isinstance(attr, Tensor):
        if attr.numel() != 1:
            raise ValueError(f"data.{name} must be a single boolean flag, got a tensor of shape {list(attr.shape)}")
        attr = attr.item()
    if not isinstance(attr, (bool, int, np.bool_, np.integer)):
        raise TypeError(f"data.{name} must be a boolean flag, got {type(attr).__name__}")
    return bool(attr)


def _catalogue_flag(dataset, name: str, default: bool | None) -> bool | None:
    if not isinstance(dataset, str):
        return default
    from omnigraph.datasets.registry import get_entry

    try:
        pre = get_entry(dataset).get("preprocess", {}) or {}
    except (ValueError, KeyError):
        return default
    return bool(pre[name]) if name in pre else default


def attach_preprocess_flags(data, preprocess: dict | None):
    """Set the catalogue's ``preprocess`` flags as attributes of ``data`` (those already set win).

    Returns ``data``. Unknown keys raise ``ValueError`` (a catalogue error, caught by the tests).
    """
    for key, value in (preprocess or {}).items():
        if key not in PREPROCESS_FLAGS:
            raise ValueError(f"catalogue: unknown preprocess flag {key!r}; known: {sorted(PREPROCESS_FLAGS)}")
        if getattr(data, key, None) is None:
            setattr(data, key, bool(value))
    return data


__all__ = ["PREPROCESS_FLAGS", "attach_preprocess_flags", "graph_flag"]
