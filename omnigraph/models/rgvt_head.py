r"""Per-target prediction head of RGVT (node-classification spec, section 2.5).

A fresh head is fitted on every target graph on top of the frozen encoder output
:math:`Z \in \mathbb{R}^{N \times F}`:

.. math::
    \texttt{mlp}:\; \hat{Y} = \mathrm{ReLU}(Z W_1^\top + b_1) W_2^\top + b_2, \qquad
    \texttt{linear}:\; \hat{Y} = Z W^\top + b,

with :math:`W_1 \in \mathbb{R}^{128 \times F}`, :math:`W_2 \in \mathbb{R}^{C \times 128}`,
orthogonal weights and zero biases at initialisation, no dropout and no normalisation.
:math:`C` is the largest label plus one.
"""
from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

import torch
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
