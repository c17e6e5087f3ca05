"""Feature preprocessing shared by the detectors (no model imports here)."""
from __future__ import annotations

import torch
from torch import Tensor


def normalize_rows(x: Tensor) -> Tensor:
    r""":math:`x_i / \sum_k x_{ik}` per row; rows summing to zero are left as they are (the ARC and
    REFI-GAD preprocessing of some graphs, e.g. Amazon and Tolokers)."""
    s = x.sum(dim=1, keepdim=True)
    return torch.where(s != 0, x / torch.where(s != 0, s, torch.ones_like(s)), x)


__all__ = ["normalize_rows"]
