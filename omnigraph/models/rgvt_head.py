r"""Per-target prediction head of RGVT (node-classification spec, section 2.5).

A fresh head is fitted on every target graph on top of the frozen encoder output
:math:`Z \in \mathbb{R}^{N \times F}`:

.. math::
    \texttt{mlp}:\; \hat{Y} = \mathrm{ReLU}(Z W_1^\top + b_1) W_2^\top + b_2, \qquad
    \texttt{linear}:\; \hat{Y} = Z W^\top + b,

with :math:`W_1 \in \mathbb{R}^{128 \times F}`, :math:`W_2 \in \mathbb{R}^{C \times 128}`,
orthogonal weights and zero biases at initialisation, no dropout and no normalisation.
:math:`C` is the largest label plus one. :func:`train_heads` fits several heads at once (one batched
model, the per-head trajectories unchanged).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import Tensor, nn

HEAD_KINDS = ("mlp", "linear")


class RGVTHead(nn.Module):
    """``mlp``: Linear(F, hidden) -> ReLU -> Linear(hidden, C); ``linear``: Linear(F, C).

    Args:
        in_channels: feature dimension F of the target graph.
        out_channels: number of classes C.
        kind: ``"mlp"`` (default, the headline "RGVT + MLP") or ``"linear"``.
        hidden_channels: hidden width of the ``mlp`` head (128 in the paper).
        generator: RNG for the orthogonal initialisation (None: global RNG).

    Shapes:
        - **input:** ``[*, F]``; **output:** ``[*, C]`` logits.
    """

    def __init__(self, in_channels: int, out_channels: int, kind: str = "mlp", hidden_channels: int = 128,
                 generator: torch.Generator | None = None):
        super().__init__()
        if kind not in HEAD_KINDS:
            raise ValueError(f"head kind must be one of {HEAD_KINDS}, got {kind!r}")
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels),
                            ("hidden_channels", hidden_channels)):
            if int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kind, self.hidden_channels = kind, int(hidden_channels)
        dims = [self.in_channels, self.hidden_channels, self.out_channels] if kind == "mlp" else \
            [self.in_channels, self.out_channels]
        self.lins = nn.ModuleList([nn.Linear(a, b) for a, b in pairwise(dims)])
        self.reset_parameters(generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Orthogonal weights, zero biases (the default reset before it only matters for the
        global RNG stream, so it is skipped when a ``generator`` is given)."""
        for lin in self.lins:
            if generator is None:
                lin.reset_parameters()
            nn.init.orthogonal_(lin.weight, generator=generator)
            nn.init.zeros_(lin.bias)

    def get_config(self) -> dict:
        return {"in_channels": self.in_channels, "out_channels": self.out_channels, "kind": self.kind,
                "hidden_channels": self.hidden_channels}

    def forward(self, z: Tensor) -> Tensor:
        for i, lin in enumerate(self.lins):
            z = lin(z) if i == 0 else lin(z.relu())
        return z

    def forward_chunks(self, chunks: Iterable[tuple[slice, Tensor]]) -> Tensor:
        r"""``forward(z)`` for ``z`` given as column chunks ``(cols, z[:, cols])`` covering all F
        columns once (e.g. :meth:`RGVTEncoder.column_chunks`).

        The first layer is linear, :math:`z W_1^\top = \sum_k z_{:,k} W_{1,:,k}^\top`, so it is
        accumulated chunk by chunk into ``[N, out]`` and ``z`` is never held whole. Equal to
        ``forward`` up to the order of the float sums.
        """
        first, acc, seen = self.lins[0], None, 0
        for cols, z in chunks:
            part = z @ first.weight[:, cols].t()
            acc = part if acc is None else acc.add_(part)
            seen += (cols.stop - cols.start)
        if acc is None or seen != self.in_channels:
            raise ValueError(f"the chunks cover {seen} columns but the head takes {self.in_channels}")
        out = acc.add_(first.bias)
        for lin in self.lins[1:]:
            out = lin(out.relu_())     # in place: the accumulator is ours
        return out


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
