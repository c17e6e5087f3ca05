"""Pretraining hyper-parameters of the two detectors, one frozen dataclass per trainer.

Each config is the single place where a trainer's hyper-parameters and their defaults are
written down: :func:`~omnigraph.training.refi_gad.pretrain_refi_gad` and
:func:`~omnigraph.training.arc.pretrain_arc` take one (or keyword overrides of its fields), the
estimators take their constructor defaults from it and pass their parameters through
:meth:`from_params`, and ``omnigraph pretrain`` overrides the fields given on the command line.
This module imports neither Lightning nor torch, so that estimators can read the defaults cheaply.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _positive_int(name: str, value) -> None:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")


class _Config:
    """Shared helpers: build from a parameter mapping, override fields, list them."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]):
        """The config of the fields present in ``params`` (e.g. an estimator's ``get_params()``);
        other keys are ignored, missing fields keep their defaults."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in params.items() if k in names})

    def replace(self, **overrides):
        """A copy with ``overrides`` applied (an unknown name raises ``TypeError``)."""
        names = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(overrides) - set(names))
        if unknown:
            raise TypeError(f"unknown {type(self).__name__} field(s) {unknown}; the fields are {names}")
        return dataclasses.replace(self, **overrides)


#: REFI-GAD's episode kinds for each ``support_episodes`` setting, in the order they alternate
SUPPORT_EPISODES = {"labelled": ("labelled",), "normal-k": ("normal-k",), "zero-shot": ("zero-shot",),
                    "mixed": ("normal-k", "zero-shot", "labelled")}


@dataclass(frozen=True)
class REFIGADPretrainConfig(_Config):
    """REFI-GAD pretraining (defaults: the values in effect in the released ``main.py``, spec §5.7).

    Args:
        epochs, episodes_per_graph: the schedule (one optimiser step per episode).
        shots: support nodes per class in each episode.
        num_query_normal, num_query_anomaly: queries per episode.
        lr, weight_decay: Adam.
        pos_weight: weight of the anomalous class in the BCE loss.
        legacy_logit_bce: the release's BCE on logits instead of on the clamped scores.
        support_episodes: the supports an episode gives the scorer. ``"labelled"`` (the release):
            ``shots`` labelled normals and anomalies. ``"normal-k"``: ``pseudo_shots_normal``
            labelled normals and, as anomalous support, the most atypical other nodes, as the
            estimator does when only normals are labelled. ``"zero-shot"``: the least and the most
            atypical nodes, as without labels. ``"mixed"``: the three in turn. Queries keep their
            true labels. Pseudo-supports are
            :func:`~omnigraph.models.pseudo_support.pseudo_support_size` nodes per class.
        pseudo_shots_normal: labelled normals of a ``"normal-k"`` episode.
        d_model, num_heads, num_layers, ff_dim, dropout, temperature: a fresh
            :class:`~omnigraph.models.refi_gad.REFIGADNet`.
    """

    epochs: int = 100
    episodes_per_graph: int = 20
    shots: int = 50
    num_query_normal: int = 500
    num_query_anomaly: int = 50
    lr: float = 1e-4
    weight_decay: float = 5e-5
    pos_weight: float = 4.0
    legacy_logit_bce: bool = False
    support_episodes: str = "labelled"
    pseudo_shots_normal: int = 10
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 4
    ff_dim: int = 128
    dropout: float = 0.1
    temperature: float = 0.07

    def __post_init__(self):
        for name in ("epochs", "episodes_per_graph", "shots", "pseudo_shots_normal"):
            _positive_int(name, getattr(self, name))
        if self.support_episodes not in SUPPORT_EPISODES:
            raise ValueError(f"support_episodes must be one of {sorted(SUPPORT_EPISODES)}, got "
                             f"{self.support_episodes!r}")
        if self.num_query_normal < 1 or self.num_query_anomaly < 0:
            raise ValueError("num_query_normal must be >= 1 and num_query_anomaly >= 0")

    def model_kwargs(self) -> dict[str, Any]:
        """The :class:`~omnigraph.models.refi_gad.REFIGADNet` arguments of a fresh model."""
        return {k: getattr(self, k) for k in ("d_model", "num_heads", "num_layers", "ff_dim", "dropout",
                                              "temperature")}


@dataclass(frozen=True)
class ARCPretrainConfig(_Config):
    """ARC pretraining and the architecture of a fresh model (defaults: ``params/ARC_10.json``).

    Args:
        epochs: passes over the source list (one episode per graph per epoch).
        lr, weight_decay: Adam.
        num_context: context (normal) nodes per episode.
        max_queries: at most this many anomalous queries per episode (``None``: all, as ARC).
        d, hidden_channels, num_layers, num_hops, act, dropout: a fresh :class:`ARCModel`
            (``d`` is its ``in_channels``, the aligned feature width).
    """

    epochs: int = 40
    lr: float = 1e-5
    weight_decay: float = 5e-5
    num_context: int = 10
    max_queries: int | None = None
    d: int = 64
    hidden_channels: int = 1024
    num_layers: int = 3
    num_hops: int = 2
    act: str = "elu"
    dropout: float = 0.0

    def __post_init__(self):
        _positive_int("epochs", self.epochs)
        if self.num_context < 1:
            raise ValueError(f"num_context must be >= 1, got {self.num_context}")
        if self.max_queries is not None and self.max_queries < 1:
            raise ValueError(f"max_queries must be None or >= 1, got {self.max_queries}")

    def model_kwargs(self) -> dict[str, Any]:
        """The :class:`~omnigraph.models.arc.ARCModel` arguments of a fresh model."""
        return {"in_channels": self.d, "hidden_channels": self.hidden_channels, "num_layers": self.num_layers,
                "num_hops": self.num_hops, "act": self.act, "dropout": self.dropout}


__all__ = ["SUPPORT_EPISODES", "ARCPretrainConfig", "REFIGADPretrainConfig"]
