"""Generalist graph anomaly detectors with a pygod-shaped API.

pygod's detectors fit and score one graph; a generalist detector is fitted on labelled *source*
graphs and then scores unseen *target* graphs given an optional labelled support set
(anomaly-detection spec §10.2). :class:`GeneralistDetector` holds what every such detector shares:
support handling, the regime, thresholding with ``contamination`` on the target's scores and
pygod's ``predict`` return flags and order ``(pred, score, prob, conf)``.

Subclasses implement :meth:`fit` and :meth:`_score`.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import Tensor

from omnigraph.validation import check_anomaly_labels, check_graph, check_shots, check_support, source_labels

REGIMES = ("zero-shot", "normal-k", "normal+anomaly-k")


def as_index(support, num_nodes: int, name: str) -> Tensor:
    """Accept an index tensor/list or a boolean mask; return a LongTensor of distinct node ids."""
    return check_support(support, num_nodes, name)


def sample_support(y: Tensor, shots_normal: int, shots_anomaly: int, seed: int) -> tuple[Tensor, Tensor]:
    """Draw ``shots_normal`` normal and ``shots_anomaly`` anomalous nodes from ``y`` (benchmark mode).

    Raises ``ValueError`` when a count is negative or would leave no node of its class to evaluate.
    """
    y = torch.as_tensor(y).flatten()
    if y.is_floating_point() and not bool(torch.isfinite(y).all()):
        raise ValueError("data.y contains NaN or Inf; the support is drawn from the anomaly labels")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError(f"data.y must be binary (0 = normal, 1 = anomaly) to draw a support, found values "
                         f"{torch.unique(y)[:10].tolist()}")
    gen = torch.Generator().manual_seed(int(seed))
    out = []
    for label, k, name, what in ((0, shots_normal, "shots_normal", "normal"),
                                 (1, shots_anomaly, "shots_anomaly", "anomalous")):
        pool = (y == label).nonzero().flatten()
        k = check_shots(k, pool.numel(), name, what)
        out.append(pool[torch.randperm(pool.numel(), generator=gen)[:k]].sort().values)
    return out[0], out[1]


def load_sources(graphs, label=None) -> tuple[list, list | None]:
    """The source graphs of a detector's ``fit`` as ``Data`` (names and paths loaded with
    :func:`~omnigraph.load_dataset`), with ``label`` as a list, checked before pretraining starts
    (:func:`~omnigraph.validation.source_labels`)."""
    import os

    from torch_geometric.data import Data

    if isinstance(graphs, (Data, str, os.PathLike)):
        graphs, label = [graphs], None if label is None else [label]
    graphs = list(graphs)
    if any(isinstance(g, (str, os.PathLike)) for g in graphs):
        from omnigraph.datasets import load_dataset

        graphs = [load_dataset(g, task="gad") if isinstance(g, (str, os.PathLike)) else g for g in graphs]
    label = None if label is None else list(label)
    source_labels(graphs, label, "fit")
    return graphs, label


def label_free_draw(data, k: int, seed: int, draw: int = 0, exclude: Tensor | None = None) -> Tensor:
    """``k`` target nodes drawn pseudo-uniformly, reading no label and independent of node numbering.

    Each node gets a key from its own features and degree (a seeded random projection in float64,
    whose fractional part is spread uniformly), and the ``k`` smallest keys are taken: relabelling the
    nodes draws the same nodes. ``seed`` and ``draw`` select the projection."""
    return label_free_draws(data, k, seed, [draw], exclude)[0]


def label_free_draws(data, k: int, seed: int, draws, exclude: Tensor | None = None) -> list[Tensor]:
    """:func:`label_free_draw` for each of ``draws``, reading the features once (the same nodes)."""
    n = data.num_nodes
    deg = torch.bincount(data.edge_index[0].cpu(), minlength=n).double()[:, None]
    feats = torch.cat([data.x.detach().cpu().double(), deg], dim=1)
    k = min(int(k), n - (0 if exclude is None else int(exclude.numel())))
    out = []
    for draw in draws:
        gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(draw))
        w = torch.randn(feats.size(1), generator=gen, dtype=torch.float64)
        offset = torch.rand(1, generator=gen, dtype=torch.float64)
        key = torch.frac((feats @ w) * 1e6 + offset).abs()
        if exclude is not None and exclude.numel():
            key[exclude] = float("inf")
        out.append(torch.argsort(key, stable=True)[:k])
    return out


class GeneralistDetector(BaseEstimator):
    """Base class: ``fit`` on source graphs, ``decision_function``/``predict`` on a target.

    A scikit-learn estimator: ``__init__`` only stores its arguments (checked by ``fit`` and
    ``decision_function``), so ``get_params``/``set_params`` and ``sklearn.base.clone`` work.
    ``predict`` and ``decision_function`` take pygod's arguments in pygod's order; the supports a
    generalist detector reads from the *target* (pygod's detectors have none: they train on the
    target itself) come after them, keyword-only.

    Args:
        contamination: expected anomaly fraction; ``threshold_`` is the ``(1 - contamination)``
            quantile of the **target's** scores (pygod uses the training scores, which for a
            generalist detector come from other graphs).
        seed: seeds training and support sampling.
    """

    #: which support sets the method reads; subclasses override
    uses_normal: ClassVar[bool] = True
    uses_anomaly: ClassVar[bool] = False
    #: anomalous support is used when given but not required (e.g. the training-free fingerprint baseline)
    accepts_anomaly: ClassVar[bool] = False
    #: which support sets the method cannot do without (False: it fills them itself, e.g. zero-shot)
    requires_normal: ClassVar[bool] = True
    requires_anomaly: ClassVar[bool] = False

    def __init__(self, contamination: float = 0.1, seed: int = 0, verbose: int = 0):
        self.contamination = contamination
        self.seed = seed
        self.verbose = verbose

    def _check_params(self) -> None:
        """Validate the constructor arguments (run by ``fit`` and ``decision_function``)."""
        c = self.contamination
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 < c < 0.5:
            raise ValueError(f"contamination must be a number in (0, 0.5), got {c!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int, got {self.seed!r}")

    # -- subclass hooks ------------------------------------------------------------------
    def fit(self, graphs, label=None):  # pragma: no cover - abstract
        raise NotImplementedError

    def _score(self, data, support_normal: Tensor, support_anomaly: Tensor) -> Tensor:  # pragma: no cover
        raise NotImplementedError

    # -- checkpoints -----------------------------------------------------------------------
    @classmethod
    def _wrap_pretrained(cls, model, arch: dict, kwargs: dict):
        """A detector around a loaded ``model`` whose architecture settings ``arch`` win over ``kwargs``."""
        clash = sorted(k for k in arch if k in kwargs and kwargs[k] != arch[k])
        if clash:
            raise ValueError(f"{clash} differ from the checkpoint's architecture settings {arch}; drop them")
        est = cls(**{**arch, **kwargs}, model=model.eval())
        est.card_ = getattr(model, "card_", {})
        return est

    def save_pretrained(self, directory, card: dict | None = None):
        return self._fitted_model().save_pretrained(directory, card=card)

    def _fitted_model(self):
        """The model that scores: the one ``fit`` trained, else the ``model`` passed in (a checkpoint)."""
        model = getattr(self, "model_", None)
        if model is None:
            model = getattr(self, "model", None)
        if model is None:
            from sklearn.exceptions import NotFittedError

            name = type(self).__name__
            raise NotFittedError(f"this {name} detector is not fitted: call fit([source graphs]) or "
                                 f"{name}.from_pretrained(...) first")
        return model

    def _device(self) -> torch.device:
        return torch.device(getattr(self, "device", None) or "cpu")

    # -- shared logic --------------------------------------------------------------------
    def regime(self, support_normal: Tensor, support_anomaly: Tensor) -> str:
        if support_anomaly.numel():
            return "normal+anomaly-k"
        return "normal-k" if support_normal.numel() else "zero-shot"

    def resolve_support(self, data, support_normal=None, support_anomaly=None, shots_normal=None,
                        shots_anomaly=None, seed=None) -> tuple[Tensor, Tensor]:
        n = data.num_nodes
        if shots_normal is not None or shots_anomaly is not None:
            if support_normal is not None or support_anomaly is not None:
                raise ValueError("pass either explicit support_* indices or shots_* counts, not both")
            if getattr(data, "y", None) is None:
                raise ValueError("shots_normal/shots_anomaly draw the support from data.y, but data.y is missing")
            sn, sa = sample_support(data.y, shots_normal or 0, shots_anomaly or 0,
                                    self.seed if seed is None else seed)
        else:
            sn = as_index(support_normal, n, "support_normal")
            sa = as_index(support_anomaly, n, "support_anomaly")
        if sn.numel() and sa.numel() and np.intersect1d(sn.numpy(), sa.numpy()).size:
            both = np.intersect1d(sn.numpy(), sa.numpy())
            raise ValueError(f"node {int(both[0])} is in both support_normal and support_anomaly ({both.size} nodes "
                             "overlap); a node is either a labelled normal or a labelled anomaly")
        if self.requires_normal and not sn.numel():
            raise ValueError(f"{type(self).__name__} needs labelled normal support nodes "
                             "(support_normal=... or shots_normal=k)")
        if self.requires_anomaly and not sa.numel():
            raise ValueError(f"{type(self).__name__} needs labelled anomalous support nodes "
                             "(support_anomaly=... or shots_anomaly=k)")
        if not (self.uses_anomaly or self.accepts_anomaly):
            sa = sa[:0]
        return sn, sa

    def decision_function(self, data, label=None, *, support_normal=None, support_anomaly=None,
                          shots_normal=None, shots_anomaly=None, seed=None) -> Tensor:
        """Anomaly scores ``[N]`` for every node of ``data``; higher means more anomalous.

        Args:
            data: the target graph.
            label: optional ground truth ``[N]`` (1 = anomaly), as in pygod: never read for scoring;
                with ``verbose > 0`` the AUROC outside the support is printed.
            support_normal, support_anomaly: labelled target nodes (ids or boolean masks).
            shots_normal, shots_anomaly, seed: or draw that many of each from ``data.y`` (a benchmark
                choice: ``seed`` defaults to the detector's).
        """
        self._check_params()
        check_graph(data)
        sn, sa = self.resolve_support(data, support_normal, support_anomaly, shots_normal, shots_anomaly, seed)
        if label is not None:
            label = check_anomaly_labels(label, data.num_nodes, "label")
        score = self._score(data, sn, sa).detach().float().cpu()
        if score.shape != (data.num_nodes,):
            raise RuntimeError(f"{type(self).__name__} returned scores of shape {list(score.shape)}")
        if not torch.isfinite(score).all():
            raise FloatingPointError(f"{type(self).__name__} produced NaN/Inf scores; this is a bug or "
                                     "degenerate input, not silently replaced")
        self.support_normal_, self.support_anomaly_ = sn, sa
        self.regime_ = self.regime(sn, sa)
        self.decision_score_ = score
        self.threshold_ = float(torch.quantile(score, 1.0 - self.contamination))
        self.label_ = (score > self.threshold_).long()
        if label is not None and self.verbose > 0:
            from sklearn.metrics import roc_auc_score

            keep = torch.ones(data.num_nodes, dtype=torch.bool)
            keep[torch.cat([sn, sa])] = False
            y = label[keep]
            if 0 < int(y.sum()) < y.numel():
                print(f"{type(self).__name__} [{self.regime_}]: AUROC {roc_auc_score(y.numpy(), score[keep].numpy()):.4f} "
                      "outside the support")
        return score

    def predict(self, data, label=None, return_pred: bool = True, return_score: bool = False,
                return_prob: bool = False, prob_method: str = "linear", return_conf: bool = False, *,
                support_normal=None, support_anomaly=None, shots_normal=None, shots_anomaly=None, seed=None):
        """pygod's arguments, order and return flags: the requested of ``(pred, score, prob, conf)``.

        The supports (see :meth:`decision_function`) are keyword-only, after pygod's arguments, so
        a positional pygod call means the same here."""
        score = self.decision_function(data, label, support_normal=support_normal, support_anomaly=support_anomaly,
                                       shots_normal=shots_normal, shots_anomaly=shots_anomaly, seed=seed)
        out = []
        if return_pred:
            out.append(self.label_)
        if return_score:
            out.append(score)
        if return_prob or return_conf:
            prob = self._probability(score, prob_method)
            if return_prob:
                out.append(prob)
            if return_conf:
                out.append(self._confidence(prob))
        if not out:
            raise ValueError("predict() was asked to return nothing: set one of return_pred/score/prob/conf")
        return out[0] if len(out) == 1 else tuple(out)

    def _probability(self, score: Tensor, method: str) -> Tensor:
        if method == "linear":
            lo, hi = score.min(), score.max()
            return ((score - lo) / (hi - lo).clamp_min(1e-12)).clamp(0, 1)
        if method == "unify":
            mu, sigma = score.mean(), score.std().clamp_min(1e-12)
            return torch.erf((score - mu) / (sigma * math.sqrt(2))).clamp(0, 1)
        raise ValueError(f"prob_method must be 'linear' or 'unify', got {method!r}")

    def _confidence(self, prob: Tensor) -> Tensor:
        """Perini et al.'s example-wise confidence: P(the prediction is stable) under a binomial model."""
        from scipy.stats import binom

        n = prob.numel()
        k = int(n * self.contamination)
        p_exceed = binom.cdf(n - k, n, prob.double().numpy())
        conf = np.where(self.label_.numpy() == 1, 1.0 - p_exceed, p_exceed)
        return torch.from_numpy(conf).float()
