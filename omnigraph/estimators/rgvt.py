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
(:func:`train_heads`), which follows the same per-head trajectories as training them one
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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from torch import Tensor

from omnigraph._cache import GraphCache
from omnigraph.models.rgvt import RGVTEncoder, RGVTOperators
from omnigraph.models.rgvt_head import HEAD_KINDS, RGVTHead
from omnigraph.validation import (
    check_class_ids,
    check_eval_labels,
    check_graph,
    check_node_labels,
    not_fitted,
)

PROTOCOLS = ("fast", "reference")
# the head recipe of spec 2.7, shared by both protocols: they differ only in how L is chosen.
# (a fast mode with patience 50 lost 0.63 points on the suite mean; on airports_usa and wiki
# the shorter patience alone changed the test accuracy at the same depth)
PATIENCE = 200
# fast mode: early stopping watches at most this many validation nodes (a fixed random subset)
FAST_STOP_ROWS = 2048
# ridge strengths relative to the mean squared row norm of Z_L (scale-free across depths)
RIDGE_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0)


# --------------------------------------------------------------------------- head training
@dataclass
class HeadFit:
    """Outcome of training one head with early stopping (``epochs`` counts optimiser steps)."""

    val_correct: int
    val_accuracy: float
    best_epoch: int
    epochs: int


def train_heads(heads: Sequence[RGVTHead], z_train: Tensor, y_train: Tensor, z_val: Tensor, y_val: Tensor, *,
                lr: float = 5e-3, weight_decay: float = 0.0, max_epochs: int = 2500, patience: int = 200
                ) -> list[HeadFit]:
    """Train ``B`` independent heads, head ``b`` on ``z_train[b]``, as one batched model.

    Per head: full-batch Adam steps on the mean cross-entropy of the training rows; after
    each step the validation accuracy is measured; training stops after ``patience`` steps
    without a *strict* gain; the best-validation parameters are restored into the head.

    The heads' parameters are stacked into ``[B, ...]`` tensors so that every layer is one
    batched GEMM. This is exact: the summed loss gives each head its own gradient and Adam
    is element-wise, so each head follows the trajectory it would follow alone. When heads
    stop, the stacked parameters and Adam moments are sliced down to the running ones.

    Args:
        heads: ``B`` heads with identical shapes (modified in place).
        z_train: ``[B, n_train, F]``; ``y_train``: ``[n_train]`` class ids.
        z_val: ``[B, n_val, F]``; ``y_val``: ``[n_val]`` class ids.
    """
    n_heads = len(heads)
    if z_train.shape[0] != n_heads or z_val.shape[0] != n_heads:
        raise ValueError(f"need one representation per head: {n_heads} heads, z_train {list(z_train.shape)}, "
                         f"z_val {list(z_val.shape)}")
    # layer i: weight [B, in, out] (transposed, so z @ W needs no copy) and bias [B, 1, out]
    params = []
    for i in range(len(heads[0].lins)):
        params.append(torch.stack([h.lins[i].weight.detach().t() for h in heads]).contiguous().requires_grad_())
        params.append(torch.stack([h.lins[i].bias.detach() for h in heads]).unsqueeze(1).requires_grad_())
    optimizer = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)

    def logits(z: Tensor) -> Tensor:
        for i in range(0, len(params), 2):
            z = torch.baddbmm(params[i + 1], z if i == 0 else z.relu(), params[i])
        return z

    best = [-1] * n_heads
    best_epoch, epochs, waits = [0] * n_heads, [0] * n_heads, [0] * n_heads
    states: list[list[Tensor]] = [[] for _ in range(n_heads)]
    active = list(range(n_heads))
    zt, zv = z_train, z_val
    for epoch in range(1, max_epochs + 1):
        optimizer.zero_grad(set_to_none=True)
        with torch.enable_grad():  # also when the caller runs under torch.no_grad()
            loss = F.cross_entropy(logits(zt).transpose(1, 2), y_train.expand(len(active), -1), reduction="none")
            loss.mean(dim=1).sum().backward()
        optimizer.step()
        with torch.no_grad():
            correct = (logits(zv).argmax(-1) == y_val).sum(dim=1).tolist()
        still = []
        for slot, i in enumerate(active):
            epochs[i] = epoch
            if correct[slot] > best[i]:
                best[i], best_epoch[i], waits[i] = correct[slot], epoch, 0
                states[i] = [p.detach()[slot].clone() for p in params]
            else:
                waits[i] += 1
            if waits[i] < patience:
                still.append(slot)
        if len(still) < len(active):
            if not still:
                break
            keep = torch.tensor(still, device=zt.device)
            active = [active[s] for s in still]
            zt, zv = zt[keep], zv[keep]
            params, optimizer = _slice_adam(params, optimizer, keep)
    with torch.no_grad():
        for head, state in zip(heads, states):
            for i, lin in enumerate(head.lins):
                lin.weight.copy_(state[2 * i].t())
                lin.bias.copy_(state[2 * i + 1].squeeze(0))
    n_val = max(int(y_val.numel()), 1)
    return [HeadFit(best[i], best[i] / n_val, best_epoch[i], epochs[i]) for i in range(n_heads)]


def _slice_adam(params: list[Tensor], optimizer: torch.optim.Adam, keep: Tensor
                ) -> tuple[list[Tensor], torch.optim.Adam]:
    """Restrict stacked parameters and their Adam state to the heads ``keep`` (exact: Adam is element-wise)."""
    new_params = [p.detach()[keep].clone().requires_grad_() for p in params]
    new_opt = torch.optim.Adam(new_params, **{k: optimizer.defaults[k] for k in ("lr", "betas", "eps",
                                                                                  "weight_decay", "amsgrad")})
    for old, new in zip(params, new_params):
        new_opt.state[new] = {k: (v[keep].clone() if v.dim() > 0 else v.clone())
                              for k, v in optimizer.state[old].items()}
    return new_params, new_opt


# --------------------------------------------------------------------------- depth selection
def ridge_depth_scores(z_train: Tensor, y_train: Tensor, z_val: Tensor, y_val: Tensor, num_classes: int,
                       alphas: Sequence[float] = RIDGE_ALPHAS, max_rows: int = 4096) -> list[int]:
    r"""Validation hits of a ridge classifier on each depth's representation (best over ``alphas``).

    Per depth: one-hot targets with an unpenalised intercept (columns and targets centred on
    the training rows) and :math:`W = (Z^\top Z + \alpha s I)^{-1} Z^\top Y`, where :math:`s`
    is the mean squared row norm, so that the strengths are scale-free across depths. Solved
    in the dual (``n x n``) or primal (``F x F``) form, whichever is smaller, with one Cholesky
    factorisation per strength (the smallest strength keeps the system well conditioned in
    float32). When both ``n`` and ``F`` exceed ``max_rows``, the first ``max_rows`` training
    rows are used.

    Args:
        z_train: ``[D, n, F]``; z_val: ``[D, m, F]``.

    Returns:
        ``D`` integers: the most validation nodes classified correctly at each depth.
    """
    if min(z_train.shape[1], z_train.shape[2]) > max_rows:
        z_train, y_train = z_train[:, :max_rows], y_train[:max_rows]
    y = F.one_hot(y_train, num_classes).to(z_train.dtype)
    prior = y.mean(dim=0)   # the intercept's share of the prediction
    y = y - prior
    scores = []
    for zt, zv in zip(z_train, z_val):
        mean = zt.mean(dim=0)
        zt, zv = zt - mean, zv - mean
        dual = zt.shape[0] <= zt.shape[1]
        gram = zt @ zt.T if dual else zt.T @ zt               # n x n or F x F
        cross = zv @ zt.T if dual else zv                     # maps the solution to validation logits
        rhs = y if dual else zt.T @ y
        scale = float(gram.diagonal().sum()) / zt.shape[0] or 1.0
        eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
        hits = []
        for a in alphas:
            chol, info = torch.linalg.cholesky_ex(gram + a * scale * eye)
            sol = torch.cholesky_solve(rhs, chol) if int(info) == 0 else torch.linalg.lstsq(gram + a * scale * eye,
                                                                                             rhs).solution
            hits.append(int((cross @ sol + prior).argmax(dim=1).eq(y_val).sum()))
        scores.append(max(hits))
    return scores


def _argmax_first(values: Sequence[float]) -> int:
    """Index of the largest value, the first one on ties (Python's ``max`` in the reference)."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


@dataclass
class Adaptation:
    """A fitted head for one seed: the chosen depth, its head and the per-depth validation record."""

    seed: int
    depth: int
    head: RGVTHead
    val_accuracy: float
    best_epoch: int
    epochs: int
    depth_scores: dict[int, float] = field(default_factory=dict)
    depth_results: list[dict] = field(default_factory=list)


def adapt_representations(representations: Iterable[tuple[int, Tensor]], n_train: int, y_train: Tensor,
                          y_val: Tensor, num_classes: int, protocol: str = "fast", seeds: Sequence[int] = (0,),
                          head: str = "mlp", hidden_channels: int = 128, lr: float = 5e-3,
                          weight_decay: float = 0.0, max_epochs: int = 2500, patience: int | None = None,
                          group_bytes: int = 1 << 30) -> list[Adaptation]:
    """Choose the depth and fit the head from labelled representations, depth by depth (spec 2.7).

    Args:
        representations: ``(depth, z)`` pairs in increasing depth, ``z`` ``[n_train + n_val, F]``
            with the training rows first (e.g. from :meth:`RGVTEncoder.iterate`). Consumed
            once; at most about ``group_bytes`` of them are held at a time.
        n_train: number of training rows at the top of each ``z``.
        y_train, y_val: ``[n_train]`` and ``[n_val]`` class ids.
        seeds: head seeds; the heads of all seeds are trained together in one batch.
        patience: epochs without a strict validation gain before a head stops (None: 200).
        group_bytes: ``"reference"`` trains the heads of consecutive depths as one batch while
            their representations fit in this many bytes (results do not depend on it).

    Returns:
        one :class:`Adaptation` per seed.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    patience = PATIENCE if patience is None else int(patience)
    settings = {"lr": lr, "weight_decay": weight_decay, "max_epochs": max_epochs, "patience": patience}
    n_val = max(int(y_val.numel()), 1)
    # the reference draws one fresh head per depth, in depth order, from one RNG stream per seed
    generators = [torch.Generator().manual_seed(int(s)) for s in seeds]

    def draw(gen: torch.Generator, z: Tensor) -> RGVTHead:
        return RGVTHead(z.shape[-1], num_classes, head, hidden_channels, generator=gen).to(z.device)

    depths: list[int] = []
    if protocol == "reference":
        heads: list[list[RGVTHead]] = [[] for _ in seeds]
        fits: list[list[HeadFit]] = [[] for _ in seeds]
        group: list[Tensor] = []

        def train_group() -> None:
            z = torch.stack(group)
            if len(seeds) > 1:
                z = z.repeat(len(seeds), 1, 1)                        # [seeds * depths, rows, F]
            new = [h for own in heads for h in own[len(own) - len(group):]]
            out = train_heads(new, z[:, :n_train], y_train, z[:, n_train:], y_val, **settings)
            for k in range(len(seeds)):
                fits[k].extend(out[k * len(group):(k + 1) * len(group)])
            group.clear()

        for depth, z in representations:
            depths.append(depth)
            for k, gen in enumerate(generators):
                heads[k].append(draw(gen, z))
            group.append(z)
            if len(group) * z.numel() * z.element_size() * len(seeds) >= group_bytes:
                train_group()
        if group:
            train_group()
        results = []
        for k, seed in enumerate(seeds):
            best = _argmax_first([f.val_correct for f in fits[k]])
            results.append(Adaptation(
                seed, depths[best], heads[k][best], fits[k][best].val_accuracy, fits[k][best].best_epoch,
                sum(f.epochs for f in fits[k]), {d: f.val_accuracy for d, f in zip(depths, fits[k])},
                [{"depth": d, "val_accuracy": f.val_accuracy, "best_epoch": f.best_epoch, "epochs": f.epochs}
                 for d, f in zip(depths, fits[k])]))
        return results

    # fast: ridge scores per depth; only the best depth's rows are kept
    scores: list[int] = []
    best_z, chosen = None, []
    for depth, z in representations:
        depths.append(depth)
        (score,) = ridge_depth_scores(z[None, :n_train], y_train, z[None, n_train:], y_val, num_classes)
        if not scores or score > max(scores):
            best_z = z
        scores.append(score)
        # draw the heads the reference would draw for this depth; keep them while it leads
        drawn = [draw(gen, z) for gen in generators]
        if best_z is z:
            chosen = drawn
    if best_z is None:
        raise ValueError("no representations to adapt to")
    best = _argmax_first(scores)
    k = len(seeds)
    z_val, y_stop = best_z[n_train:], y_val
    if y_val.numel() > FAST_STOP_ROWS:
        # the per-epoch validation pass dominates the cost on large graphs: early stopping
        # watches a fixed random subset of the validation nodes (the depth used all of them)
        keep = torch.randperm(y_val.numel(), generator=torch.Generator().manual_seed(0))[:FAST_STOP_ROWS]
        keep = keep.sort().values.to(y_val.device)
        z_val, y_stop = z_val[keep], y_val[keep]
    out = train_heads(chosen, best_z[None, :n_train].expand(k, -1, -1), y_train,
                      z_val[None].expand(k, -1, -1), y_stop, **settings)
    if y_stop is not y_val:   # report the accuracy on the whole validation set
        with torch.no_grad():
            full = [float((h(best_z[n_train:]).argmax(-1) == y_val).float().mean()) for h in chosen]
        out = [HeadFit(round(a * n_val), a, f.best_epoch, f.epochs) for a, f in zip(full, out)]
    return [Adaptation(seed, depths[best], h, f.val_accuracy, f.best_epoch, f.epochs,
                       {d: c / n_val for d, c in zip(depths, scores)},
                       [{"depth": d, "ridge_val_accuracy": c / n_val} for d, c in zip(depths, scores)])
            for seed, h, f in zip(seeds, chosen, out)]


def labelled_representations(encoder: RGVTEncoder, x: Tensor, operators: RGVTOperators, rows: Tensor,
                             depths: Sequence[int], chunk_size: int | None = None,
                             keep_full: dict[int, Tensor] | None = None) -> Iterator[tuple[int, Tensor]]:
    """Yield ``(depth, z[rows])`` for ``depths`` from one recurrence pass (no gradients).

    If ``keep_full`` is a dict, the full ``[N, F]`` matrices are also stored in it (depth ->
    matrix), so that the caller can predict without a second pass.
    """
    wanted = set(depths)
    if keep_full is None and max(wanted) * rows.numel() <= x.size(0):
        # few labelled rows (e.g. 20 per class): one chunk-major pass keeps only their rows, for
        # every depth at once, so no full [N, F] iterate is ever held (X and one chunk's views)
        with torch.no_grad():
            outs = encoder(x, depth=max(wanted), operators=operators, chunk_size=chunk_size, return_all=True,
                           rows=rows)
        for depth, z in enumerate(outs, start=1):
            if depth in wanted:
                yield depth, z
        return
    # otherwise depth-major; without keep_full only row copies leave this function, so one
    # buffer can serve all depths
    steps = encoder.iterate(x, depth=max(depths), operators=operators, chunk_size=chunk_size,
                            reuse=keep_full is None)
    while True:
        with torch.no_grad():  # entered per step: grad mode must not stay off while we are suspended
            item = next(steps, None)
        if item is None:
            return
        depth, z = item
        if depth in wanted:
            if keep_full is not None:
                keep_full[depth] = z
            yield depth, z[rows]


def _labelled(data, device) -> tuple[Tensor, Tensor, Tensor]:
    """Validated ``(train + val row ids, y_train, y_val)``; reads ``y`` at those rows only."""
    check_graph(data)
    train_mask, val_mask = check_node_labels(data)
    rows = torch.cat([train_mask.nonzero().flatten(), val_mask.nonzero().flatten()]).to(device)
    return rows, data.y[train_mask].to(device), data.y[val_mask].to(device)


def _num_classes(num_classes: int | None, y_train: Tensor, y_val: Tensor) -> int:
    labelled_max = int(torch.maximum(y_train.max(), y_val.max()))
    if num_classes is not None and labelled_max >= int(num_classes):
        raise ValueError(f"num_classes={num_classes} but the train/val labels go up to {labelled_max}")
    return check_class_ids(torch.cat([y_train, y_val]), "data.y[train_mask | val_mask]", num_classes)


def inference_operators(encoder: RGVTEncoder, data, chunk_size: int | None,
                         device: str | torch.device = "cpu") -> RGVTOperators:
    """Operators without transposes, built directly in the layout the encoder will use on ``device``."""
    columns = encoder.chunk_columns(data.num_nodes, data.x.size(1), chunk_size)
    return encoder.build_operators(data.edge_index, data.num_nodes, transposes=False,
                                   layout=encoder.layout_for(columns, device),
                                   blocks=encoder.blocks_for(data.num_nodes, columns, device)).to(device)


def adapt(encoder: RGVTEncoder, data, protocol: str = "fast", seeds: Sequence[int] = (0,),
          depths: Sequence[int] = tuple(range(1, 9)), num_classes: int | None = None, chunk_size: int | None = None,
          device: str | torch.device = "cpu", **kwargs) -> list[Adaptation]:
    """Adapt a frozen encoder to ``data`` for each head seed, reading labels at train/val nodes only.

    ``kwargs`` go to :func:`adapt_representations` (head, lr, patience, ...).
    """
    device = torch.device(device)
    rows, y_train, y_val = _labelled(data, device)
    encoder = encoder.to(device).eval()
    ops = inference_operators(encoder, data, chunk_size, device)
    reps = labelled_representations(encoder, data.x.to(device, torch.float32), ops, rows, sorted(depths), chunk_size)
    return adapt_representations(reps, y_train.numel(), y_train, y_val, _num_classes(num_classes, y_train, y_val),
                                 protocol, seeds, **kwargs)


# --------------------------------------------------------------------------- estimator
class RGVT(BaseEstimator):
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

    Fitted attributes: ``depth_``, ``head_``, ``val_accuracy_``, ``best_epoch_``, ``epochs_``
    (head-training epochs, all heads), ``depth_scores_`` (depth -> validation accuracy of the
    selection criterion), ``depth_results_``, ``n_classes_``, ``classes_``, ``n_features_in_``,
    ``fit_seconds_``.

    Memory: besides X and the two operators (one shared int32 CSR pattern), ``fit`` holds the
    labelled rows of the depths it compares, plus one ``[N, F]`` iterate only when those rows
    outnumber ``N / max(depths)``. On graphs whose :math:`Z_L` exceeds :attr:`keep_full_bytes`,
    ``predict`` never holds :math:`Z_L`: see :attr:`predict_block_bytes` and
    ``docs/results/performance.md``.
    """

    #: keep every depth's full representation after ``fit`` when they fit in this many bytes,
    #: so that ``predict`` / ``score`` on the fitted graph need no second recurrence pass
    keep_full_bytes: int = 256 << 20
    #: on larger graphs ``decision_function`` holds at most this many bytes of ``[rows, min(F,
    #: hidden)]`` buffer (Z_L rows or the head's first layer), working on blocks of rows with
    #: one encoder pass per block: memory for time, as scikit-learn's ``working_memory``
    predict_block_bytes: int = 128 << 20

    def __init__(self, encoder: RGVTEncoder | None = None, *, protocol: str = "fast", head: str = "mlp",
                 hidden_channels: int = 128, depths: Sequence[int] = tuple(range(1, 9)), lr: float = 5e-3,
                 weight_decay: float = 0.0, max_epochs: int = 2500, patience: int | None = None,
                 num_classes: int | None = None, seed: int = 0, chunk_size: int | None = None,
                 device: str | torch.device | None = None):
        self.encoder = encoder
        self.protocol, self.head, self.hidden_channels, self.depths = protocol, head, hidden_channels, depths
        self.lr, self.weight_decay, self.max_epochs, self.patience = lr, weight_decay, max_epochs, patience
        self.num_classes, self.seed, self.chunk_size, self.device = num_classes, seed, chunk_size, device
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
        config = (data.num_nodes, id(encoder), str(device), self.chunk_size)
        graph = self._graphs.get((data.x, data.edge_index), config)
        if graph is None:
            graph = self._graphs.put((data.x, data.edge_index), config, {
                "x": data.x.to(device, torch.float32), "ops": inference_operators(encoder, data, self.chunk_size, device),
                "z": {}})
        return graph

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
        start = time.perf_counter()
        depths = self._check_params()
        self._encoder_key = None       # fit reads the encoder as it is now
        self._encoder()
        rows, y_train, y_val = _labelled(data, self._device())
        num_classes = _num_classes(self.num_classes, y_train, y_val)
        graph = self._graph(data)
        full: dict[int, Tensor] | None = {} if len(depths) * data.x.numel() * 4 <= self.keep_full_bytes else None
        reps = labelled_representations(self._encoder(), graph["x"], graph["ops"], rows, depths,
                                        self.chunk_size, full)
        (result,) = adapt_representations(
            reps, y_train.numel(), y_train, y_val, num_classes, self.protocol, (int(self.seed),), self.head,
            int(self.hidden_channels), float(self.lr), float(self.weight_decay), int(self.max_epochs), self.patience)
        if full and result.depth in full:
            graph["z"] = {result.depth: full[result.depth]}
        self.depth_, self.head_ = result.depth, result.head.eval().requires_grad_(False)
        self.val_accuracy_, self.best_epoch_, self.epochs_ = result.val_accuracy, result.best_epoch, result.epochs
        self.depth_scores_, self.depth_results_ = result.depth_scores, result.depth_results
        self.n_classes_, self.n_features_in_ = num_classes, int(data.x.size(1))
        self.classes_ = torch.arange(num_classes)
        self.train_labels_ = torch.unique(y_train).cpu()  # classes seen in training (for score's warning)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        if not hasattr(self, "head_"):
            raise not_fitted("RGVT estimator")

    def transform(self, data, depth: int | None = None) -> Tensor:
        r"""The representation :math:`\Psi^L(X)` ``[N, F]`` at ``depth`` (default: the fitted ``depth_``)."""
        if depth is None:
            self._check_fitted()
            depth = self.depth_
        if int(depth) < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        check_graph(data)
        return self._encode(data, int(depth)).cpu()

    def decision_function(self, data) -> Tensor:
        """Head logits ``[N, C]``."""
        self._check_fitted()
        check_graph(data)
        if data.x.size(1) != self.n_features_in_:
            raise ValueError(f"data.x has {data.x.size(1)} features but the head was fitted on "
                             f"{self.n_features_in_}; fit on this graph first")
        graph = self._graph(data)
        n, f = data.x.shape
        block = self._predict_block(data)
        with torch.no_grad():
            if self.depth_ in graph["z"] or block is None:
                return self._head_rows(self._encode(data, self.depth_)).cpu()
            # large graph: Z_L is never held whole. The encoder yields it column chunk by column
            # chunk; the head's first layer is accumulated over them when it is narrower than F,
            # else the block's Z_L rows are assembled (see _predict_block).
            encoder, out = self._encoder(), []
            for start in range(0, n, block):
                rows = None if block >= n else torch.arange(start, min(start + block, n), device=self._device())
                args = {"depth": self.depth_, "operators": graph["ops"], "chunk_size": self.chunk_size, "rows": rows}
                if self.head_.lins[0].out_features < f:
                    out.append(self.head_.forward_chunks(encoder.column_chunks(graph["x"], **args)).cpu())
                else:
                    out.append(self._head_rows(encoder(graph["x"], **args)).cpu())
            return torch.cat(out) if len(out) > 1 else out[0]

    def _predict_block(self, data) -> int | None:
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

    def score(self, data, mask: Tensor | None = None) -> float:
        """Accuracy on ``mask`` (boolean or node ids; default ``data.test_mask``), in [0, 1]."""
        self._check_fitted()
        mask, y = check_eval_labels(data, mask, self.train_labels_)
        return float((self.predict(data)[mask] == y).float().mean())


__all__ = [
    "PROTOCOLS",
    "RGVT",
    "Adaptation",
    "HeadFit",
    "adapt",
    "adapt_representations",
    "inference_operators",
    "labelled_representations",
    "ridge_depth_scores",
    "train_heads",
]
