r"""RGVT's adaptation to a target: depth selection (``"fast"`` / ``"reference"``) and the head fit.

The protocols are described in :mod:`omnigraph.estimators.rgvt`; this module holds the functions
that implement them, on labelled representations (train rows first, then validation rows).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.models.rgvt_head import HeadFit, RGVTHead, train_heads
from omnigraph.ops import RGVTOperators
from omnigraph.validation import check_class_ids, check_graph, check_node_labels

PROTOCOLS = ("fast", "reference")
# the head recipe of spec 2.7, shared by both protocols: they differ only in how L is chosen.
# (a fast mode with patience 50 lost 0.63 points on the suite mean; on airports_usa and wiki
# the shorter patience alone changed the test accuracy at the same depth)
PATIENCE = 200
# fast mode: early stopping watches at most this many validation nodes (a fixed random subset)
FAST_STOP_ROWS = 2048
# ridge strengths relative to the mean squared row norm of Z_L (scale-free across depths)
RIDGE_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0)
# validation rows per block when the ridge scores read a depth (the hits do not depend on it)
RIDGE_BLOCK_ROWS = 2048




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
    return [ridge_hits(zt, y_train, [zv], y_val, num_classes, alphas, max_rows) for zt, zv in zip(z_train, z_val)]


def ridge_hits(z_train: Tensor, y_train: Tensor, val_blocks: Iterable[Tensor], y_val: Tensor, num_classes: int,
               alphas: Sequence[float] = RIDGE_ALPHAS, max_rows: int = 4096) -> int:
    """:func:`ridge_depth_scores` for one depth, the validation rows ``[m, F]`` given as
    consecutive row blocks (so that they need not be held at once; same hits for any blocking)."""
    if min(z_train.shape) > max_rows:
        z_train, y_train = z_train[:max_rows], y_train[:max_rows]
    y = F.one_hot(y_train, num_classes).to(z_train.dtype)
    prior = y.mean(dim=0)   # the intercept's share of the prediction
    y = y - prior
    mean = z_train.mean(dim=0)
    zt = z_train - mean
    dual = zt.shape[0] <= zt.shape[1]
    gram = zt @ zt.T if dual else zt.T @ zt               # n x n or F x F
    rhs = y if dual else zt.T @ y
    scale = float(gram.diagonal().sum()) / zt.shape[0] or 1.0
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    solutions = []
    for a in alphas:
        chol, info = torch.linalg.cholesky_ex(gram + a * scale * eye)
        solutions.append(torch.cholesky_solve(rhs, chol) if int(info) == 0
                         else torch.linalg.lstsq(gram + a * scale * eye, rhs).solution)
    hits, start = [0] * len(solutions), 0
    for zv in val_blocks:
        zv = zv - mean
        cross = zv @ zt.T if dual else zv                 # maps the solution to validation logits
        yv, start = y_val[start:start + zv.shape[0]], start + zv.shape[0]
        for i, sol in enumerate(solutions):
            hits[i] += int((cross @ sol + prior).argmax(dim=1).eq(yv).sum())
    return max(hits)


class LabelledRows:
    """The rows ``index`` of a representation ``z`` ``[N, F]``, gathered only when read
    (``rows[i:j]`` returns ``z[index[i:j]]``): the fast protocol scores a depth-major iterate's
    labelled rows block by block instead of copying all of them first. Valid while ``z`` is."""

    def __init__(self, z: Tensor, index: Tensor):
        self.z, self.index = z, index

    @property
    def shape(self) -> torch.Size:
        return torch.Size((self.index.numel(), self.z.size(1)))

    @property
    def device(self) -> torch.device:
        return self.z.device

    def __getitem__(self, item) -> Tensor:
        return self.z[self.index[item]]


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
                          y_val: Tensor, num_classes: int, *, protocol: str = "fast", seeds: Sequence[int] = (0,),
                          head: str = "mlp", hidden_channels: int = 128, lr: float = 5e-3,
                          weight_decay: float = 0.0, max_epochs: int = 2500, patience: int | None = None,
                          group_bytes: int = 1 << 30) -> list[Adaptation]:
    """Choose the depth and fit the head from labelled representations, depth by depth (spec 2.7).

    Args:
        representations: ``(depth, z)`` pairs in increasing depth, ``z`` ``[n_train + n_val, F]``
            with the training rows first (e.g. from :func:`labelled_representations`; ``"fast"``
            also takes :class:`LabelledRows`, read before the next pair is drawn). Consumed
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

    # fast: ridge scores per depth on every validation node, read in row blocks; only the
    # training rows and the early-stopping rows of the leading depth are kept
    k, n_rows = len(seeds), int(y_val.numel())
    stop = None
    if n_rows > FAST_STOP_ROWS:
        # the per-epoch validation pass dominates the cost on large graphs: early stopping
        # watches a fixed random subset of the validation nodes (the depth used all of them)
        stop = torch.randperm(n_rows, generator=torch.Generator().manual_seed(0))[:FAST_STOP_ROWS]
        stop = stop.sort().values.to(y_val.device)
    y_stop = y_val if stop is None else y_val[stop]
    scores: list[int] = []
    kept, chosen = None, []
    for depth, z in representations:
        depths.append(depth)
        z_train = z[:n_train]
        blocks = (z[n_train + s:n_train + min(s + RIDGE_BLOCK_ROWS, n_rows)] for s in range(0, n_rows, RIDGE_BLOCK_ROWS))
        score = ridge_hits(z_train, y_train, blocks, y_val, num_classes)
        # draw the heads the reference would draw for this depth; keep them while it leads
        drawn = [draw(gen, z) for gen in generators]
        if not scores or score > max(scores):
            kept, chosen = None, drawn   # the previous leader's rows go before the new ones are gathered
            kept = (z_train, z[n_train:n_train + n_rows] if stop is None else z[n_train + stop])
        scores.append(score)
    if kept is None:
        raise ValueError("no representations to adapt to")
    best = _argmax_first(scores)
    z_train, z_stop = kept
    out = train_heads(chosen, z_train[None].expand(k, -1, -1), y_train, z_stop[None].expand(k, -1, -1), y_stop,
                      **settings)
    return [Adaptation(seed, depths[best], h, f.val_accuracy, f.best_epoch, f.epochs,
                       {d: c / n_val for d, c in zip(depths, scores)},
                       [{"depth": d, "ridge_val_accuracy": c / n_val} for d, c in zip(depths, scores)])
            for seed, h, f in zip(seeds, chosen, out)]


def labelled_representations(encoder: RGVTEncoder, x: Tensor, operators: RGVTOperators, rows: Tensor,
                             depths: Sequence[int], chunk_size: int | None = None,
                             keep_full: dict[int, Tensor] | None = None,
                             lazy: bool = False) -> Iterator[tuple[int, Tensor | LabelledRows]]:
    """Yield ``(depth, z[rows])`` for ``depths`` from one recurrence pass (no gradients).

    If ``keep_full`` is a dict, the full ``[N, F]`` matrices are also stored in it (depth ->
    matrix), so that the caller can predict without a second pass. With ``lazy``, a depth-major
    pass yields :class:`LabelledRows` of its iterate instead of copying the rows (read each
    before drawing the next: the iterate is overwritten).
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
            yield depth, LabelledRows(z, rows) if lazy else z[rows]


def labelled_rows(data, device) -> tuple[Tensor, Tensor, Tensor]:
    """Validated ``(train + val row ids, y_train, y_val)``; reads ``y`` at those rows only."""
    check_graph(data)
    train_mask, val_mask = check_node_labels(data)
    rows = torch.cat([train_mask.nonzero().flatten(), val_mask.nonzero().flatten()]).to(device)
    return rows, data.y[train_mask].to(device), data.y[val_mask].to(device)


def resolve_num_classes(num_classes: int | None, y_train: Tensor, y_val: Tensor) -> int:
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
    rows, y_train, y_val = labelled_rows(data, device)
    encoder = encoder.to(device).eval()
    ops = inference_operators(encoder, data, chunk_size, device)
    reps = labelled_representations(encoder, data.x.to(device, torch.float32), ops, rows, sorted(depths), chunk_size,
                                    lazy=protocol == "fast")
    return adapt_representations(reps, y_train.numel(), y_train, y_val, resolve_num_classes(num_classes, y_train, y_val),
                                 protocol=protocol, seeds=seeds, **kwargs)


__all__ = ["FAST_STOP_ROWS", "PATIENCE", "PROTOCOLS", "RIDGE_ALPHAS", "RIDGE_BLOCK_ROWS", "Adaptation", "LabelledRows",
           "adapt", "adapt_representations", "inference_operators", "labelled_representations", "labelled_rows",
           "resolve_num_classes", "ridge_depth_scores", "ridge_hits"]
