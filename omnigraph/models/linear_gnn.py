r"""LinearGNN channels of GraphAny: propagated features + closed-form least squares (§3.2-3.3).

Zhao et al., "Fully-inductive Node Classification on Arbitrary Graphs", ICLR 2025.

With :math:`P = D^{-1}A` the neighbour mean (no self-loops; isolated nodes get a zero row),
the channels for ``n_hops = 2`` are

.. math::
    F_X = X,\quad F_{L1} = PX,\quad F_{L2} = P^2X,\quad
    F_{H1} = (I-P)X,\quad F_{H2} = (I-P)^2X .

Each channel gets its own linear classifier, solved in closed form on the reference nodes
:math:`R` with one-hot labels :math:`Y_R \in \{0,1\}^{|R| \times C}`:

.. math::
    W_c = \arg\min_W \lVert F_c[R]\,W - Y_R \rVert_F^2 = F_c[R]^{+} Y_R,
    \qquad \hat Y_c = F_c W_c \in \mathbb{R}^{N \times C}.

The solve uses ``torch.linalg.lstsq(driver="gelss")`` (SVD, minimum-norm solution) in float32
on the CPU, exactly like the reference; the logits are not passed through a softmax.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from omnigraph.ops import identity_minus, mean_adjacency, propagate

DEFAULT_CHANNELS = ("X", "L1", "L2", "H1", "H2")
_CHANNEL = re.compile(r"^(X|L[1-9]\d*|H[1-9]\d*)$")


def parse_channel(name: str) -> tuple[str, int]:
    """``"X" -> ("X", 0)``, ``"L2" -> ("L", 2)``, ``"H1" -> ("H", 1)``."""
    if not isinstance(name, str) or not _CHANNEL.match(name):
        raise ValueError(f"unknown GraphAny channel {name!r}; use 'X', 'L<k>' (P^k X) or 'H<k>' ((I-P)^k X)")
    return ("X", 0) if name == "X" else (name[0], int(name[1:]))


def least_squares(a: Tensor, b: Tensor) -> Tensor:
    r"""Minimum-norm least-squares solution :math:`a^{+} b` (``gelss``, CPU, float32).

    Args:
        a: ``[R, F]`` design matrix.
        b: ``[R, C]`` targets.

    Returns:
        ``[F, C]`` float32 solution on the CPU (zeros if ``R == 0``).
    """
    a = a.detach().to("cpu", torch.float32)
    b = b.detach().to("cpu", torch.float32)
    if a.size(0) == 0:
        return a.new_zeros(a.size(1), b.size(1))
    return torch.linalg.lstsq(a, b, driver="gelss").solution


def sample_per_class(y: Tensor, ref_index: Tensor, k: int, num_classes: int,
                     generator: torch.Generator | None = None) -> Tensor:
    """At most ``k`` random reference nodes of every class (fewer if the class is smaller).

    Returns node ids grouped by class in ascending class order.
    """
    labels = y[ref_index]
    picks = []
    for c in range(num_classes):
        members = ref_index[labels == c]
        picks.append(members[torch.randperm(members.numel(), generator=generator)[:k]])
    return torch.cat(picks) if picks else ref_index[:0]


class LinearGNNChannels(nn.Module):
    r"""Parameter-free LinearGNN channels with closed-form least-squares heads.

    Args:
        channels: channel names in output order; ``"X"``, ``"L<k>"`` for :math:`P^kX` and
            ``"H<k>"`` for :math:`(I-P)^kX`.
        chunk_size: feature columns per propagation chunk (same result, bounded memory).

    Shapes:
        - :meth:`propagate`: ``x [N, F]`` -> list of ``t`` tensors ``[N, F]``
        - :meth:`solve`: -> list of ``t`` weights ``[F, C]``
        - :meth:`forward`: -> logits ``[N, t, C]`` (rows restricted to ``rows`` if given)
    """

    def __init__(self, channels: Sequence[str] = DEFAULT_CHANNELS, chunk_size: int | None = None):
        super().__init__()
        channels = tuple(channels)
        if not channels:
            raise ValueError("channels must name at least one channel")
        if len(set(channels)) != len(channels):
            raise ValueError(f"channels contain duplicates: {channels}")
        self.parsed = [parse_channel(c) for c in channels]
        self.channels = channels
        self.n_hops = max(k for _, k in self.parsed)
        self.chunk_size = chunk_size

    def reset_parameters(self) -> None:
        """Nothing to reset: the channels have no trainable parameters."""

    def propagate(self, x: Tensor, edge_index: Tensor, num_nodes: int | None = None) -> list[Tensor]:
        """Channel feature matrices ``F_c`` (float32) in :attr:`channels` order."""
        num_nodes = x.size(0) if num_nodes is None else num_nodes
        x = x.to(torch.float32)
        needs = {kind: max((k for kk, k in self.parsed if kk == kind), default=0) for kind in "LH"}
        hops = {"X": [x]}
        if needs["L"] or needs["H"]:
            p = mean_adjacency(edge_index.to(x.device), num_nodes)
            if needs["L"]:
                hops["L"] = propagate(p, x, needs["L"], self.chunk_size)
            if needs["H"]:
                hops["H"] = propagate(identity_minus(p), x, needs["H"], self.chunk_size)
        return [hops[kind][k] if kind != "X" else x for kind, k in self.parsed]

    @staticmethod
    def one_hot(y: Tensor, num_classes: int) -> Tensor:
        return F.one_hot(y.long(), num_classes).to(torch.float32)

    def solve(self, features: Sequence[Tensor], y: Tensor, ref_index: Tensor, num_classes: int,
              n_per_class: int | None = None, generator: torch.Generator | None = None) -> list[Tensor]:
        """Least-squares weights ``W_c`` per channel on the reference nodes.

        With ``n_per_class`` set (training), every channel draws its own ``n_per_class``
        references per class from ``ref_index`` before solving (§3.3).
        """
        if len(features) != len(self.channels):
            raise ValueError(f"expected {len(self.channels)} channel feature matrices, got {len(features)}")
        ref_index = ref_index.to(y.device)
        weights = []
        for feat in features:
            ref = ref_index if n_per_class is None else sample_per_class(
                y, ref_index, n_per_class, num_classes, generator)
            ref = ref.to(feat.device)
            weights.append(least_squares(feat[ref], self.one_hot(y[ref.to(y.device)], num_classes)))
        return weights

    @staticmethod
    def apply(features: Sequence[Tensor], weights: Sequence[Tensor], rows: Tensor | None = None) -> Tensor:
        """Channel logits ``[N or |rows|, t, C]`` from features and solved weights."""
        out = []
        for feat, w in zip(features, weights):
            f = feat if rows is None else feat[rows.to(feat.device)]
            out.append(f @ w.to(f.device, f.dtype))
        return torch.stack(out, dim=1)

    def forward(self, x: Tensor, edge_index: Tensor, y: Tensor, ref_index: Tensor, num_classes: int,
                rows: Tensor | None = None) -> Tensor:
        features = self.propagate(x, edge_index)
        return self.apply(features, self.solve(features, y, ref_index, num_classes), rows)

    def extra_repr(self) -> str:
        return f"channels={list(self.channels)}"
