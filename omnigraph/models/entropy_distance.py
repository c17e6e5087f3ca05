r"""Entropy-normalised distance features between channel predictions (GraphAny, §3.4).

Zhao et al., "Fully-inductive Node Classification on Arbitrary Graphs", ICLR 2025.

For every node :math:`u` the :math:`t` channel predictions :math:`y_u^{(c)} \in \mathbb{R}^C`
give squared distances :math:`d_{cc'} = \lVert y_u^{(c)} - y_u^{(c')} \rVert^2`. Each row
:math:`c` becomes a conditional Gaussian over the *other* channels,

.. math::
    p(c' \mid c) = \frac{\exp(-\beta_c d_{cc'})}{\sum_{c'' \neq c} \exp(-\beta_c d_{cc''})},
    \qquad p(c \mid c) = 0,

with the precision :math:`\beta_c` chosen by bisection so that the row's entropy equals
``entropy`` bits (perplexity :math:`2^{\text{entropy}}`). Normalising every row to the same
entropy makes the features invariant to the scale of the logits, hence to the number of
classes and to label permutations. The :math:`t(t-1)` off-diagonal values, row-major over
:math:`(c, c' \neq c)`, are the input of the attention MLP.

The precisions come from :func:`omnigraph.ops.perplexity.search_columns`, scikit-learn's
``_binary_search_perplexity`` run for all rows at once (same :math:`\beta` in the same step).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from omnigraph.ops.perplexity import PERPLEXITY_TOLERANCE, search_columns, target_entropy


def sq_dist_columns(y: Tensor) -> Tensor:
    r"""Off-diagonal squared distances of every node's channels, in the search's column layout.

    Args:
        y: ``[N, t, C]`` channel predictions.

    Returns:
        ``[t-1, t N]`` float64 (float32-rounded) distances: column ``c N + u`` holds the squared
        distances of channel ``c`` of node ``u`` to its other channels, in ascending channel order
        (computed in float64, rounded to float32 once). Each row's candidates lie in one column, so the search
        reduces over the short leading axis.
    """
    if y.dim() != 3:
        raise ValueError(f"channel predictions must have shape [N, t, C], got {list(y.shape)}")
    n, t, c = y.shape
    yt = torch.empty(t, c, n, dtype=torch.float64, device=y.device)
    yt.copy_(y.detach().permute(1, 2, 0))                                  # [t, C, N]: channel planes
    d32 = torch.empty(t - 1, t, n, dtype=torch.float32, device=y.device)
    diff = torch.empty(c, n, dtype=torch.float64, device=y.device)
    half = torch.empty(n, dtype=torch.float64, device=y.device)
    for a in range(t):
        for b in range(a + 1, t):                   # each unordered pair once, in float64
            torch.sum(torch.sub(yt[a], yt[b], out=diff).square_(), 0, out=half)
            d32[b - 1, a] = half                    # candidate b of row a (b > a), rounded to float32
            d32[a, b] = half                        # candidate a of row b (a < b)
    return d32.view(t - 1, t * n).to(torch.float64)


class EntropyDistance(nn.Module):
    r"""Entropy-normalised pairwise distance features of GraphAny (no parameters).

    Args:
        entropy: target entropy :math:`H^*` in bits (1 for the Wisconsin/Arxiv/Products
            checkpoints, 2 for Cora).
        tol: bisection tolerance in nats (scikit-learn: ``1e-5``).
        max_iter: bisection steps per row (scikit-learn: 100).
        chunk_size: process at most this many nodes at a time (bounds the float64
            temporaries on very large graphs; the result does not depend on it).

    Shapes:
        - input: ``[N, t, C]`` channel predictions
        - output: ``[N, t(t-1)]`` float32 features, order
          :math:`p(c'|c)` for :math:`c = 0..t-1`, :math:`c' \neq c` ascending.
    """

    def __init__(self, entropy: float = 1.0, tol: float = PERPLEXITY_TOLERANCE, max_iter: int = 100,
                 chunk_size: int | None = None):
        super().__init__()
        if not entropy > 0:
            raise ValueError(f"entropy must be > 0 bits, got {entropy}")
        if max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {max_iter}")
        self.entropy = float(entropy)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.chunk_size = chunk_size

    def reset_parameters(self) -> None:
        """Nothing to reset: the features are parameter-free."""

    @torch.no_grad()
    def forward(self, y: Tensor) -> Tensor:
        if y.dim() != 3 or y.size(1) < 2:
            raise ValueError(f"EntropyDistance expects [N, t>=2, C] channel predictions, got {list(y.shape)}")
        n, t, _ = y.shape
        if n == 0:
            return y.new_zeros(0, t * (t - 1), dtype=torch.float32)
        step = self.chunk_size or n
        h_star = target_entropy(self.entropy)
        out = torch.empty(n, t, t - 1, dtype=torch.float32, device=y.device)
        for s in range(0, n, step):
            part = y[s:s + step]
            p, _ = search_columns(sq_dist_columns(part), h_star, self.tol, self.max_iter)   # [t-1, t n']
            out[s:s + part.size(0)] = p.view(t - 1, t, -1).permute(2, 1, 0)
        return out.view(n, t * (t - 1))

    def extra_repr(self) -> str:
        return f"entropy={self.entropy}, tol={self.tol:g}, max_iter={self.max_iter}"


__all__ = ["EntropyDistance", "sq_dist_columns"]
