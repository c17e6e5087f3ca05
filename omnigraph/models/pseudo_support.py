r"""Pseudo-supports: which nodes of an unlabelled target stand in for the support sets it lacks.

REFI-GAD scores queries against labelled normal and anomalous supports. Without them (regimes
``zero-shot`` and ``normal-k``) the estimator takes the ``k`` least atypical nodes of the target as
normal and the ``k`` highest-scoring nodes under a source-learned orientation as anomalous; the
fingerprint baseline scores atypicality directly. Every rule here reads only a ranked fingerprint
``p [N, 5]`` (each column a rank in ``[0, 100]``, median 50), never a label or a node id.

* **atypicality** :math:`a_i = \sum_c |r_{ic} - 50|`: distance from the median node.
* **orientation** :math:`o_i = w^\top \phi(r_i)`, :math:`\phi(r) = [(r - 50) / 50,\ |r - 50| / 50] \in
  [-1, 1]^{10}`: which way, per column, is anomalous. ``w`` is fitted on the labelled *source* graphs
  at pretraining (a logistic regression, :func:`~omnigraph.training.refi_gad.fit_orientation`) and
  stored with the checkpoint; atypicality is the special case :math:`w = [0, \dots, 0, 1, \dots, 1]`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


def atypicality(p: Tensor) -> Tensor:
    r"""Each node's distance from the median rank, :math:`\sum_c |r_{ic} - 50|`, of a ranked fingerprint
    ``p [N, 5]`` (label-free; the fingerprint baseline's zero-shot score). Returns ``[N]``."""
    return (p - 50.0).abs().sum(1)


def orientation_features(p: Tensor) -> Tensor:
    r""":math:`\phi(r_i) = [(r_i - 50) / 50,\ |r_i - 50| / 50]`, ``[N, 2 * C]`` float64, of a ranked
    fingerprint ``p [N, C]``."""
    d = (p.double() - 50.0) / 50.0
    return torch.cat([d, d.abs()], dim=1)


def oriented_atypicality(p: Tensor, orientation: Sequence[float]) -> Tensor:
    r""":math:`o_i = w^\top \phi(r_i)` for the weights ``orientation`` ``[2 * C]`` (higher = more anomalous
    in the source graphs' sense). Returns ``[N]`` float64."""
    w = torch.as_tensor(orientation, dtype=torch.float64)
    if w.shape != (2 * p.size(1),) or not torch.isfinite(w).all():
        raise ValueError(f"orientation must be {2 * p.size(1)} finite weights, got {list(w.shape)}")
    return orientation_features(p) @ w


def ranked(key: Tensor, p: Tensor) -> Tensor:
    """Node ids by ascending ``key``, ties broken by the fingerprint rows ``p`` (lexicographically), not by
    node id: nodes that tie on both are interchangeable for the scorer, so the pick does not depend on the
    node numbering."""
    cols = [p[:, c].numpy() for c in reversed(range(p.size(1)))]
    return torch.from_numpy(np.lexsort((*cols, key.double().numpy()))).long()


def lowest(key: Tensor, p: Tensor, pool: Tensor, k: int) -> Tensor:
    """The ``k`` nodes of the boolean mask ``pool`` with the lowest ``key`` (ties as in :func:`ranked`)."""
    order = ranked(key, p)
    return order[pool[order]][:k]


def highest(key: Tensor, p: Tensor, pool: Tensor, k: int) -> Tensor:
    """The ``k`` nodes of the boolean mask ``pool`` with the highest ``key`` (ties as in :func:`ranked`)."""
    order = ranked(key, p)
    return order[pool[order]][-k:]


def pseudo_support_size(num_nodes: int) -> int:
    r"""Pseudo-support nodes per class on a graph of ``num_nodes`` nodes: :math:`\mathrm{clip}(N/50, 20, 100)`."""
    return int(min(100, max(20, round(num_nodes / 50))))


__all__ = ["atypicality", "highest", "lowest", "orientation_features", "oriented_atypicality", "pseudo_support_size",
           "ranked"]
