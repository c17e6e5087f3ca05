r"""RGVT zero-shot node classifier: a frozen pretrained encoder plus a per-target head.

Lee, Kong, Jeong, Yoo, *View Space: Learning Representation across Arbitrary Graphs*
(arXiv 2512.11561, ICML 2026); node-classification spec, sections 2.5 and 2.7.

>>> from omnigraph import RGVT, load_dataset
>>> data = load_dataset("Cora")
>>> clf = RGVT.from_pretrained("rgvt").fit(data)      # head + depth from train/val labels only
>>> clf.score(data, mask=data.test_mask)               # accuracy at the chosen depth

Adaptation never reads labels outside ``train_mask`` and ``val_mask``. The representations
:math:`Z_L = \Psi^L(X)` of all candidate depths come from one recurrence pass
(:meth:`RGVTEncoder.iterate`); only their labelled rows are kept. Two protocols:

``"reference"`` -- spec 2.7: for each L = 1..8 a fresh head (drawn in depth order from one
generator), Adam (lr 5e-3, wd 0), full batch, at most 2500 epochs, stop after 200 epochs
without a strict gain in validation accuracy, keep the best-validation state; L* = argmax of
validation accuracy, ties to the smallest L. The eight heads are trained as one batched model
(:func:`~omnigraph.models.rgvt_head.train_heads`), which follows the same per-head trajectories as training them one
after another, at a fraction of the wall time.

``"fast"`` (default) -- the depth is chosen by a closed-form ridge classifier on each
:math:`Z_L` (best validation accuracy over a few strengths, ties to the smallest L; one small
Cholesky solve per depth and strength), and only that depth's head is trained, with the
reference recipe (patience 200 included). It is the very head the reference protocol draws
for that depth. On graphs with at most ``FAST_STOP_ROWS`` (2048) validation nodes it is
also trained identically, so whenever both protocols pick the same L they return identical
predictions. On larger graphs, where the per-epoch validation pass dominates the cost, early
stopping watches a fixed random subset of 2048 validation nodes. The side-by-side comparison on the
``rgvt28`` graphs available offline (adaptation time, chosen depths, test accuracy) is
``benchmarks/rgvt_fast_vs_reference.py``, committed in ``docs/results/rgvt_fast_vs_reference.md``.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from sklearn.base import BaseEstimator
from torch import Tensor
from torch_geometric.data import Data

from omnigraph._cache import GraphCache
from omnigraph.estimators.node_classifier import NodeClassifierMixin
from omnigraph.estimators.rgvt_adapt import (
    PROTOCOLS,
    adapt_representations,
    inference_operators,
    labelled_representations,
    labelled_rows,
    resolve_num_classes,
)
from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.models.rgvt_head import HEAD_KINDS
from omnigraph.ops import PermutedRows, invert_permutation, locality_order, resolve_reorder
from omnigraph.validation import check_graph


class RGVT(NodeClassifierMixin, BaseEstimator):
    r"""Zero-shot node classification with a pretrained RGVT encoder (scikit-learn style).

    Args:
        encoder: the pretrained :class:`~omnigraph.models.rgvt.RGVTEncoder` (kept frozen).
            Usually built with :meth:`from_pretrained` or :meth:`from_reference_npz`.
        protocol: ``"fast"`` (default) or ``"reference"`` (spec 2.7, for parity).
        head: ``"mlp"`` (Linear-ReLU-Linear, 128 hidden) or ``"linear"``.
        hidden_channels: hidden width of the ``mlp`` head.
        depths: candidate recurrence depths (default 1..8).
        lr, weight_decay, max_epochs: Adam settings and epoch budget of the head (5e-3, 0, 2500).
        patience: epochs without a strict validation gain before a head stops (None: 200,
            the reference recipe, for both protocols).
        num_classes: number of outputs C (None: largest train/val label + 1).
        seed: seed of the head initialisation; same seed, same numbers on CPU.
        chunk_size: feature columns per encoder chunk (None: automatic; results identical).
        device: where the encoder and heads run (default CPU).
        reorder: renumber the nodes for locality before propagating (:mod:`omnigraph.ops.reorder`)
            and return every result in the user's order: ``"auto"`` (default: reverse
            Cuthill-McKee from 2^16 nodes on, none below), ``"rcm"``, ``"degree"`` or ``None``.
            Results agree with the unreordered run up to float rounding.

    Fitted attributes: ``depth_``, ``head_``, ``val_accuracy_`` (on the validation nodes that
    early stopping watched: all of them, or ``FAST_STOP_ROWS`` of them in the fast protocol),
    ``best_epoch_``, ``epochs_`` (head-training epochs, all heads), ``depth_scores_`` (depth ->
    validation accuracy of the selection criterion, every validation node), ``depth_results_``,
    ``n_classes_``, ``classes_``, ``n_features_in_``, ``fit_seconds_``.

    Memory: besides X and the two operators (one shared int32 CSR pattern), ``fit`` holds the
    labelled rows of the depths it compares when they number at most ``N / max(depths)``;
    otherwise one ``[N, F]`` iterate, from which the fast protocol reads the labelled rows in
    place (keeping only the leading depth's training and early-stopping rows) and the reference
    protocol copies them. A renumbered graph (``reorder``) is read through
    :class:`~omnigraph.ops.PermutedRows`, not copied. On graphs whose :math:`Z_L` exceeds :attr:`keep_full_bytes`,
    ``predict`` never holds :math:`Z_L`: see :attr:`predict_block_bytes` and
    ``docs/results/performance.md``.
    """

    #: keep every depth's full representation after ``fit`` when they fit in this many bytes,
    #: so that ``predict`` / ``score`` on the fitted graph need no second recurrence pass
    keep_full_bytes: int = 256 << 20
    #: on larger graphs ``decision_function`` holds at most this many bytes of ``[rows, min(F,
    #: hidden)]`` buffer (Z_L rows or the head's first layer), working on blocks of rows with
    #: one encoder pass per block: memory for time, as scikit-learn's ``working_memory`` (whose
    #: default, 1 GiB, this is)
    predict_block_bytes: int = 1 << 30

    _fitted_attribute = "head_"

    def __init__(self, encoder: RGVTEncoder | None = None, *, protocol: str = "fast", head: str = "mlp",
                 hidden_channels: int = 128, depths: Sequence[int] = tuple(range(1, 9)), lr: float = 5e-3,
                 weight_decay: float = 0.0, max_epochs: int = 2500, patience: int | None = None,
                 num_classes: int | None = None, seed: int = 0, chunk_size: int | None = None,
                 device: str | torch.device | None = None, reorder: str | None = "auto"):
        self.encoder = encoder
        self.protocol, self.head, self.hidden_channels, self.depths = protocol, head, hidden_channels, depths
        self.lr, self.weight_decay, self.max_epochs, self.patience = lr, weight_decay, max_epochs, patience
        self.num_classes, self.seed, self.chunk_size, self.device = num_classes, seed, chunk_size, device
        self.reorder = reorder
        self._graphs = GraphCache(1, keep_alive=True)

    def _check_params(self) -> tuple[int, ...]:
        """Validate the constructor arguments (``fit`` runs this; :meth:`_encoder` checks ``encoder``);
        returns the sorted depths."""
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        if self.head not in HEAD_KINDS:
            raise ValueError(f"head must be one of {HEAD_KINDS}, got {self.head!r}")
        depths = tuple(int(d) for d in self.depths)
        if not depths or min(depths) < 1 or len(set(depths)) != len(depths):
            raise ValueError(f"depths must be distinct integers >= 1, got {depths}")
        for name in ("max_epochs", "patience", "num_classes", "hidden_channels"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        resolve_reorder(self.reorder, 0)
        return tuple(sorted(depths))

    def _device(self) -> torch.device:
        return torch.device(self.device) if self.device is not None else torch.device("cpu")

    def _encoder(self) -> RGVTEncoder:
        """The frozen encoder on ``device``: a copy of ``encoder`` (the one passed in is never modified)."""
        key = (id(self.encoder), str(self._device()))
        if getattr(self, "_encoder_key", None) != key:
            if self.encoder is not None and not isinstance(self.encoder, RGVTEncoder):
                raise TypeError(f"encoder must be an RGVTEncoder, got {type(self.encoder).__name__}")
            # untrained when None: for tests and ablations; use from_pretrained
            enc = copy.deepcopy(self.encoder) if self.encoder is not None else RGVTEncoder()
            self.encoder_ = enc.to(self._device()).eval().requires_grad_(False)
            self._encoder_key = key
        return self.encoder_

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(cls, name_or_path: str | Path = "rgvt", **kwargs) -> RGVT:
        """A shipped checkpoint name, a saved folder or a ``.safetensors`` file; ``kwargs`` go to ``__init__``."""
        return cls(RGVTEncoder.from_pretrained(name_or_path), **kwargs)

    @classmethod
    def from_reference_npz(cls, path: str | Path, **kwargs) -> RGVT:
        """The authors' released encoder (``rgvt/seed_*.npz``), read in place."""
        return cls(RGVTEncoder.from_reference_npz(path), **kwargs)

    def save_pretrained(self, directory: str | Path, card: dict | None = None) -> Path:
        """Save the encoder (heads are refitted per graph and are not saved)."""
        return self._encoder().save_pretrained(directory, card=card)

    def __repr__(self) -> str:
        enc = self.encoder.get_config() if isinstance(self.encoder, RGVTEncoder) else self.encoder
        return (f"RGVT(protocol={self.protocol!r}, head={self.head!r}, depths={list(self.depths)}, "
                f"seed={self.seed}, encoder={enc})")

    # ------------------------------------------------------------------ graph cache
    def _graph(self, data) -> dict[str, Any]:
        """Operators (and representations) of ``data``, rebuilt when its x / edge_index change.

        The entry holds references to the tensors it was built from, so their ids cannot be
        recycled while cached; in-place edits bump ``Tensor._version`` and invalidate it.
        """
        encoder, device = self._encoder(), self._device()
        order = resolve_reorder(self.reorder, data.num_nodes)
        config = (data.num_nodes, id(encoder), str(device), self.chunk_size, order)
        graph = self._graphs.get((data.x, data.edge_index), config)
        if graph is None:
            x, inv, work = data.x.to(device, torch.float32), None, data
            if order is not None:   # renumbered: operators and z live in the new order; x is read in it
                perm = locality_order(data.edge_index, data.num_nodes, order)
                inv = invert_permutation(perm.to(data.edge_index.device))
                work = Data(x=data.x, edge_index=inv[data.edge_index], num_nodes=data.num_nodes)
                x, inv = PermutedRows(x, perm), inv.to(device)
            graph = self._graphs.put((data.x, data.edge_index), config, {
                "x": x, "ops": inference_operators(encoder, work, self.chunk_size, device), "z": {}, "inv": inv})
        return graph

    @staticmethod
    def _to_user(graph: dict[str, Any], out: Tensor) -> Tensor:
        """Rows of a node-level result back in the user's node order."""
        return out if graph["inv"] is None else out[graph["inv"]]

    def _encode(self, data, depth: int) -> Tensor:
        graph = self._graph(data)
        if depth not in graph["z"]:
            with torch.no_grad():
                z = self._encoder()(graph["x"], depth=depth, operators=graph["ops"], chunk_size=self.chunk_size)
            graph["z"] = {depth: z}  # one depth at a time: a full [N, F] matrix can be large
        return graph["z"][depth]

    # ------------------------------------------------------------------ fit
    def fit(self, data, y=None) -> RGVT:
        """Choose the depth and fit the head using ``data.train_mask`` / ``data.val_mask`` only.

        ``y`` exists for scikit-learn compatibility and must be None: labels come from ``data.y``,
        which is read at training and validation nodes only.
        """
        if y is not None:
            raise TypeError("pass labels as data.y (fit(data) reads data.y at train/val nodes only)")
        self._encoder_key = None       # fit reads the encoder as it is now
        return self._fit(data, [self])[0]

    def fit_seeds(self, data, seeds: Sequence[int]) -> list[RGVT]:
        """One fitted copy of this estimator per head seed, from a single encoder pass.

        ``fit_seeds(data, seeds)[k]`` is ``set_params(seed=seeds[k]).fit(data)`` on a copy: the
        heads of all seeds are trained as one batch, each on its own trajectory (the depth
        choice of the fast protocol does not depend on the seed). The copies share the encoder
        and the graph cache; this estimator itself is left as it was. ``fit_seconds_`` is the
        joint fit's time. For head-seed spreads, e.g. ``omnigraph benchmark nc --seeds``.
        """
        seeds = [int(s) for s in seeds]
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct integers, got {seeds}")
        self._encoder_key = None
        self._encoder()
        copies = []
        for s in seeds:
            est = copy.copy(self)             # shallow: the encoder and the graph cache are shared
            est.seed = s
            copies.append(est)
        return self._fit(data, copies)

    def _fit(self, data, targets: list[RGVT]) -> list[RGVT]:
        """Fit one head per estimator of ``targets`` (their seeds; every other setting is ours)."""
        start = time.perf_counter()
        depths = self._check_params()
        self._encoder()
        rows, y_train, y_val = labelled_rows(data, self._device())
        num_classes = resolve_num_classes(self.num_classes, y_train, y_val)
        graph = self._graph(data)
        if graph["inv"] is not None:
            rows = graph["inv"][rows]       # the same nodes, in the same order, under their new ids
        full: dict[int, Tensor] | None = {} if len(depths) * data.x.numel() * 4 <= self.keep_full_bytes else None
        reps = labelled_representations(self._encoder(), graph["x"], graph["ops"], rows, depths,
                                        self.chunk_size, full, lazy=self.protocol == "fast")
        results = adapt_representations(
            reps, y_train.numel(), y_train, y_val, num_classes, protocol=self.protocol,
            seeds=tuple(int(est.seed) for est in targets), head=self.head, hidden_channels=int(self.hidden_channels),
            lr=float(self.lr), weight_decay=float(self.weight_decay), max_epochs=int(self.max_epochs),
            patience=self.patience)
        if full:
            graph["z"] = {d: full[d] for d in {r.depth for r in results}}
        seconds = time.perf_counter() - start
        for est, result in zip(targets, results):
            est.depth_, est.head_ = result.depth, result.head.eval().requires_grad_(False)
            est.val_accuracy_, est.best_epoch_, est.epochs_ = result.val_accuracy, result.best_epoch, result.epochs
            est.depth_scores_, est.depth_results_ = result.depth_scores, result.depth_results
            est.n_classes_, est.n_features_in_ = num_classes, int(data.x.size(1))
            est.classes_ = torch.arange(num_classes)
            est.train_labels_ = torch.unique(y_train).cpu()  # classes seen in training (for score's warning)
            est.fit_seconds_ = seconds
        return targets

    # ------------------------------------------------------------------ inference
    def transform(self, data, depth: int | None = None) -> Tensor:
        r"""The representation :math:`\Psi^L(X)` ``[N, F]`` at ``depth`` (default: the fitted ``depth_``)."""
        if depth is None:
            self._check_fitted()
            depth = self.depth_
        if int(depth) < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        check_graph(data)
        return self._to_user(self._graph(data), self._encode(data, int(depth))).cpu()

    def decision_function(self, data) -> Tensor:
        """Head logits ``[N, C]``."""
        self._check_fitted()
        check_graph(data)
        if data.x.size(1) != self.n_features_in_:
            raise ValueError(f"data.x has {data.x.size(1)} features but the head was fitted on "
                             f"{self.n_features_in_}; fit on this graph first")
        graph = self._graph(data)
        n, f = data.x.shape
        block = self.predict_block_rows(data)
        with torch.no_grad():
            if self.depth_ in graph["z"] or block is None:
                return self._to_user(graph, self._head_rows(self._encode(data, self.depth_))).cpu()
            # large graph: Z_L is never held whole. The encoder yields it column chunk by column
            # chunk; the head's first layer is accumulated over them when it is narrower than F,
            # else the block's Z_L rows are assembled (see predict_block_rows).
            encoder, out = self._encoder(), []
            for start in range(0, n, block):
                rows = None if block >= n else torch.arange(start, min(start + block, n), device=self._device())
                args = {"depth": self.depth_, "operators": graph["ops"], "chunk_size": self.chunk_size, "rows": rows}
                if self.head_.lins[0].out_features < f:
                    out.append(self.head_.forward_chunks(encoder.column_chunks(graph["x"], **args)).cpu())
                else:
                    out.append(self._head_rows(encoder(graph["x"], **args)).cpu())
            out = torch.cat(out) if len(out) > 1 else out[0]
            return self._to_user(graph, out.to(self._device())).cpu()

    def predict_block_rows(self, data) -> int | None:
        """Rows per encoder pass in ``decision_function``; None when ``Z_L`` (at most
        ``keep_full_bytes``) is simply built whole. Otherwise the buffer ``[rows, min(F, hidden)]``
        is kept within ``predict_block_bytes``, one encoder pass per block of rows."""
        n, f = data.x.shape
        if n * f * 4 <= self.keep_full_bytes:
            return None
        return max(1, self.predict_block_bytes // (4 * min(f, self.head_.lins[0].out_features)))

    def _head_rows(self, z: Tensor, rows: int = 1 << 14) -> Tensor:
        """The head on ``z`` in blocks of rows (its ``[rows, hidden]`` temporaries stay small)."""
        if z.size(0) <= rows:
            return self.head_(z)
        return torch.cat([self.head_(z[s:s + rows]) for s in range(0, z.size(0), rows)])

    def predict_proba(self, data) -> Tensor:
        """Class probabilities ``[N, C]``."""
        return self.decision_function(data).softmax(dim=-1)

    def predict(self, data) -> Tensor:
        """Predicted class ids ``[N]``."""
        return self.decision_function(data).argmax(dim=-1)


__all__ = ["RGVT"]
