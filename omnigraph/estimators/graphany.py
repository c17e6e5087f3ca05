r"""GraphAny as a scikit-learn-style estimator (baseline for zero-shot node classification).

Zhao et al., "Fully-inductive Node Classification on Arbitrary Graphs", ICLR 2025.

Usage::

    from omnigraph import GraphAny
    clf = GraphAny.from_pretrained("path/to/checkpoint")      # or a reference .npz
    clf.fit(data)                 # closed-form least squares on data.train_mask only
    clf.predict(data)             # [N] class ids
    clf.predict_proba(data)       # [N, C] softmax of the fused logits
    clf.score(data)               # accuracy on data.test_mask (or mask=...)
    clf.transform(data)           # [N, C] fused logits; output="attention" -> [N, 3] weights

``fit`` takes no gradient step: it propagates the five channels of ``data`` and solves one
least-squares problem per channel on the training nodes. Only ``data.y[data.train_mask]`` is
read, so validation/test labels can be absent or garbage.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import torch
from sklearn.base import BaseEstimator
from torch import Tensor

from omnigraph._cache import GraphCache
from omnigraph.estimators.node_classifier import NodeClassifierMixin
from omnigraph.models.graphany import GraphAnyModel
from omnigraph.validation import (
    check_class_ids,
    check_disjoint,
    check_graph,
    check_mask,
    check_train_classes,
)

TRANSFORM_OUTPUTS = ("logits", "attention", "channels", "distance")


def _as_mask(mask, num_nodes: int, name: str) -> Tensor:
    """Boolean ``[N]`` mask from a boolean mask or an index tensor/list."""
    return check_mask(mask, num_nodes, name, allow_index=True)


class GraphAny(NodeClassifierMixin, BaseEstimator):
    """Zero-shot node classifier: frozen GraphAny attention + per-graph least squares.

    Args:
        model: a :class:`~omnigraph.models.graphany.GraphAnyModel` (pretrained); a freshly
            initialised one when ``None`` (only useful before :func:`pretrain_graphany`).
        entropy: override the model's distance entropy (bits). GraphAny evaluates with the
            run's entropy, not the checkpoint's; omnigraph stores it with the weights, so this
            is only needed to reproduce unusual settings.
        num_classes: number of classes C (None: largest training label + 1).
        seed: kept for API symmetry with :class:`~omnigraph.estimators.rgvt.RGVT`; inference is
            deterministic (closed-form least squares, eval-mode MLP), so nothing reads it.
        chunk_size: feature columns per propagation chunk and nodes per entropy chunk
            (memory bound; results do not depend on it).

    Fitted attributes (after :meth:`fit`):
        ``n_classes_``: C, ``max(y[train]) + 1`` unless ``num_classes`` is given.
        ``classes_``: ``arange(C)``.
        ``n_features_in_``: feature dimension F of the fitted graph.
        ``channel_weights_``: list of ``[F, C]`` least-squares weights, one per channel.
        ``train_index_``: the reference (training) node ids.
        ``train_labels_``: their class ids.

    Input rules (``docs/validation.md``): ``train_mask`` may be a boolean mask or node ids and
    must hold at least two classes; ``val_mask`` / ``test_mask``, when present, must not overlap
    it. :meth:`score` warns about evaluation classes that no training node has.
    """

    _fitted_attribute = "channel_weights_"

    def __init__(self, model: GraphAnyModel | None = None, *, entropy: float | None = None,
                 num_classes: int | None = None, seed: int = 0, chunk_size: int | None = None):
        self.model = model
        self.entropy, self.num_classes, self.seed, self.chunk_size = entropy, num_classes, seed, chunk_size
        self._graphs = GraphCache(1)

    def _fitted_model(self) -> GraphAnyModel:
        """A copy of ``model`` with this estimator's ``entropy`` / ``chunk_size`` (the one passed in is never modified)."""
        if self.model is not None and not isinstance(self.model, GraphAnyModel):
            raise TypeError(f"model must be a GraphAnyModel, got {type(self.model).__name__}")
        if self.num_classes is not None and (isinstance(self.num_classes, bool) or int(self.num_classes) < 1):
            raise ValueError(f"num_classes must be >= 1, got {self.num_classes}")
        model = copy.deepcopy(self.model) if self.model is not None else GraphAnyModel()
        if self.entropy is not None:
            model.entropy = self.entropy
        model.channels.chunk_size = self.chunk_size
        model.distance.chunk_size = self.chunk_size
        return model.eval()

    # -- checkpoints -----------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike = "graphany", **kwargs) -> GraphAny:
        """Load a shipped name, a saved folder or ``.safetensors`` file, or a reference ``.npz``.

        A ``.npz`` is read as the authors' released weights together with the ``.json`` next to
        it (:meth:`GraphAnyModel.from_reference_npz`). ``kwargs`` go to ``__init__``
        (``entropy``, ``num_classes``, ``seed``, ``chunk_size``).
        """
        if Path(name_or_path).suffix == ".npz":
            model = GraphAnyModel.from_reference_npz(name_or_path)
        else:
            model = GraphAnyModel.from_pretrained(name_or_path)
        return cls(model, **kwargs)

    @classmethod
    def from_reference_npz(cls, path: str | os.PathLike, **kwargs) -> GraphAny:
        """The authors' released weights (``graphany/graph_any_*.npz`` + ``.json``), read in place."""
        return cls(GraphAnyModel.from_reference_npz(path), **kwargs)

    def save_pretrained(self, directory: str | os.PathLike, card: dict | None = None) -> Path:
        """Save the attention weights and config (the per-graph least squares is not saved)."""
        return self._fitted_model().save_pretrained(directory, card=card)

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, data, y=None) -> GraphAny:
        """Solve the per-channel least squares on ``data.train_mask`` nodes.

        Args:
            data: PyG ``Data`` with ``x``, ``edge_index``, ``y`` and ``train_mask``.
            y: must be None (scikit-learn signature); labels come from ``data.y``, read at the
                training nodes only.
        """
        if y is not None:
            raise TypeError("pass labels as data.y (fit(data) reads data.y at training nodes only)")
        model = self._fitted_model()
        check_graph(data)
        n = data.num_nodes
        train = _as_mask(getattr(data, "train_mask", None), n, "data.train_mask")
        train_index = train.nonzero().flatten()
        if train_index.numel() == 0:
            raise ValueError("data.train_mask selects no nodes; GraphAny needs labelled training nodes")
        # evaluation masks, when present, must not share nodes with the training nodes (or each other)
        masks = {"data.train_mask": train}
        for name in ("val_mask", "test_mask"):
            if getattr(data, name, None) is not None:
                masks[f"data.{name}"] = _as_mask(getattr(data, name), n, f"data.{name}")
        check_disjoint(masks)
        y = getattr(data, "y", None)
        if y is None:
            raise ValueError("data.y is missing; fit needs the labels of the training nodes")
        if not isinstance(y, Tensor) or y.dim() != 1 or y.numel() != n:
            raise ValueError(f"data.y must be a 1-D tensor of length {n} (single-label classes)")
        y_train = y[train_index]
        if y_train.dtype == torch.bool or (y_train.is_floating_point()
                                          and not torch.equal(y_train, y_train.round())):
            raise TypeError("data.y must hold integer class ids on the training nodes")
        # Only the training labels are ever read: everything else is -1 from here on.
        y_train = y_train.long()
        if int(y_train.min()) < 0:
            raise ValueError("data.y has negative class ids on training nodes (y = -1 marks unlabelled nodes, "
                             "which must not be in data.train_mask)")
        check_train_classes(y_train)
        c = int(y_train.max()) + 1
        if self.num_classes is not None and self.num_classes < c:
            raise ValueError(f"num_classes={self.num_classes} but the training labels go up to {c - 1}")
        c = check_class_ids(y_train, "data.y[train_mask]", self.num_classes)
        y_ref = torch.full((n,), -1, dtype=torch.long)
        y_ref[train_index] = y_train

        features = model.channel_features(data.x.detach().cpu(), data.edge_index.cpu(), n)
        self.model_ = model
        self.channel_weights_ = model.solve(features, y_ref, train_index, c)
        self.n_classes_ = c
        self.classes_ = torch.arange(c)
        self.n_features_in_ = int(data.x.size(1))
        self.train_index_ = train_index
        self.train_labels_ = y_train
        self._graphs.clear()
        self._compute(data, features)
        return self

    # -- inference -------------------------------------------------------------------------------
    @torch.no_grad()
    def _compute(self, data, features=None) -> dict:
        """Channel logits, distances, fused logits and attention for every node of ``data``."""
        hit = self._graphs.get((data.x, data.edge_index), (data.num_nodes,))
        if hit is not None:
            return hit
        check_graph(data)
        if data.x.size(1) != self.n_features_in_:
            raise ValueError(f"data.x has {data.x.size(1)} features but this GraphAny was fitted on "
                             f"{self.n_features_in_}; call fit(data) on the new graph first")
        model = self.model_.eval()
        if features is None:
            features = model.channel_features(data.x.detach().cpu(), data.edge_index.cpu(), data.num_nodes)
        logits = model.channels.apply(features, self.channel_weights_)
        dist = model.distance_features(logits)
        fused, alpha = model.fuse(logits, dist)
        return self._graphs.put((data.x, data.edge_index), (data.num_nodes,),
                                {"logits": logits, "distance": dist, "fused": fused.cpu(), "attention": alpha.cpu()})

    def transform(self, data, output: str = "logits") -> Tensor:
        """Per-node representations of ``data``.

        Args:
            output: ``"logits"`` fused logits ``[N, C]`` (default; unnormalised, the argmax is
                the prediction); ``"attention"`` the channel weights :math:`\\alpha` ``[N, 3]``
                over ``model.pred_channels``; ``"channels"`` the least-squares logits of every
                channel ``[N, t, C]``; ``"distance"`` the entropy-normalised distance features
                ``[N, t(t-1)]``.
        """
        if output not in TRANSFORM_OUTPUTS:
            raise ValueError(f"output must be one of {TRANSFORM_OUTPUTS}, got {output!r}")
        self._check_fitted()
        out = self._compute(data)
        return out[{"logits": "fused", "channels": "logits"}.get(output, output)].clone()

    def decision_function(self, data) -> Tensor:
        """Fused logits ``[N, C]`` (same as ``transform(data)``)."""
        return self.transform(data, "logits")

    def predict_proba(self, data) -> Tensor:
        """Class probabilities ``[N, C]``: softmax of the fused logits."""
        return torch.softmax(self.transform(data, "logits"), dim=-1)

    def predict(self, data) -> Tensor:
        """Predicted class ids ``[N]`` (argmax of the fused logits)."""
        return self.transform(data, "logits").argmax(-1)

    def __repr__(self) -> str:
        m = self.model if self.model is not None else GraphAnyModel()
        entropy = m.entropy if self.entropy is None else self.entropy
        return (f"GraphAny(n_hidden={m.n_hidden}, n_mlp_layer={m.n_mlp_layer}, entropy={entropy:g}, "
                f"attn_temp={m.attn_temp:g})")
