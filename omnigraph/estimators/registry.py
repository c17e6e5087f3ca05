"""Model name or checkpoint → estimator: the one mapping the command line and the benchmarks use.

``ESTIMATORS`` lists each checkpoint ``model_type`` with its estimator class and task; a shipped
checkpoint of the same name exists for each (``omnigraph.hub.shipped_registry()``).
"""
from __future__ import annotations

import importlib

#: ``model_type`` -> (module, estimator class, task: ``"nc"`` node classification / ``"gad"`` anomaly detection)
ESTIMATORS = {
    "rgvt": ("omnigraph.estimators.rgvt", "RGVT", "nc"),
    "graphany": ("omnigraph.estimators.graphany", "GraphAny", "nc"),
    "refi-gad": ("omnigraph.estimators.refi_gad", "REFIGAD", "gad"),
    "arc": ("omnigraph.estimators.arc", "ARC", "gad"),
}


def estimator_class(model_type: str) -> type:
    """The estimator class of a checkpoint ``model_type`` (``"rgvt"``, ``"graphany"``, ``"refi-gad"``, ``"arc"``)."""
    if model_type not in ESTIMATORS:
        raise ValueError(f"unknown model type {model_type!r}; known: {', '.join(ESTIMATORS)}")
    module, name, _ = ESTIMATORS[model_type]
    return getattr(importlib.import_module(module), name)


def model_type_of(spec: str) -> str:
    """The ``model_type`` of a model name (``rgvt``, ``arc``, ...) or of a checkpoint (shipped name,
    folder or ``.safetensors`` file, whose config is read)."""
    if spec in ESTIMATORS:
        return spec
    from omnigraph.hub import read_checkpoint

    return read_checkpoint(spec)[0]["model_type"]


def load_estimator(spec: str, task: str | None = None, hint: str = "", **kwargs):
    """``from_pretrained`` of the estimator that ``spec`` names; ``kwargs`` go to it.

    Raises:
        ValueError: the checkpoint is of another ``task`` than asked for (``hint`` says what to use instead).
    """
    model_type = model_type_of(spec)
    if model_type in ESTIMATORS and task is not None and ESTIMATORS[model_type][2] != task:
        raise ValueError(f"{spec} holds a {model_type!r} checkpoint; {hint or f'this command takes {task} models'}")
    return estimator_class(model_type).from_pretrained(spec, **kwargs)


__all__ = ["ESTIMATORS", "estimator_class", "load_estimator", "model_type_of"]
