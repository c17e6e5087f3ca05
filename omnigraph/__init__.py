"""omnigraph: graph foundation models trained once, applied to graphs they have never seen.

Zero-shot node classification (:class:`RGVT`, baseline :class:`GraphAny`) and generalist graph
anomaly detection (:class:`REFIGAD`, baseline :class:`ARC`). Public names are imported lazily
so that ``import omnigraph`` stays fast.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "load_dataset": "omnigraph.datasets",
    "list_datasets": "omnigraph.datasets",
    "dataset_info": "omnigraph.datasets",
    "suite": "omnigraph.datasets",
    "available": "omnigraph.datasets",
    "InjectAnomalies": "omnigraph.datasets",
    "propagate": "omnigraph.ops",
    "RGVT": "omnigraph.estimators.rgvt",
    "GraphAny": "omnigraph.estimators.graphany",
    "REFIGAD": "omnigraph.estimators.refi_gad",
    "ARC": "omnigraph.estimators.arc",
    "RelationalFingerprint": "omnigraph.models.fingerprint",
}

__all__ = [  # noqa: RUF022 - the lazy names, then the two defined here
    "ARC", "GraphAny", "InjectAnomalies", "REFIGAD", "RGVT", "RelationalFingerprint", "available", "dataset_info",
    "list_datasets", "load_dataset", "propagate", "suite",
    "__version__", "save_pretrained",
]


def save_pretrained(model, directory, card=None):
    """Save any omnigraph model or estimator as safetensors + JSON config + model card."""
    return model.save_pretrained(directory, card=card)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'omnigraph' has no attribute {name!r}")
