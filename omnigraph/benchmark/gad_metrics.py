"""Metrics of the anomaly-detection benchmark: AUROC / AUPRC on an evaluated population, seed summaries."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


def metrics(y: Tensor, score: Tensor, keep: Tensor | None = None) -> tuple[float, float]:
    """(AUROC, AUPRC) with sklearn's ``roc_auc_score`` / ``average_precision_score``, on ``keep``."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y, score = torch.as_tensor(y).flatten(), torch.as_tensor(score).flatten()
    if keep is not None:
        y, score = y[keep], score[keep]
    if not torch.isfinite(score).all():
        raise FloatingPointError("scores contain NaN/Inf; refusing to evaluate (spec §2)")
    y_np, s_np = (y > 0).numpy().astype(int), score.double().numpy()
    if y_np.min() == y_np.max():
        raise ValueError("the evaluated population contains a single class; AUROC is undefined")
    return float(roc_auc_score(y_np, s_np)), float(average_precision_score(y_np, s_np))


def support_mask(num_nodes: int, *supports: Tensor) -> Tensor:
    keep = torch.ones(num_nodes, dtype=torch.bool)
    for s in supports:
        keep[s] = False
    return keep


def summarize(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std (ddof = 0), in percent."""
    arr = 100.0 * np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=0))


__all__ = ["metrics", "summarize", "support_mask"]
