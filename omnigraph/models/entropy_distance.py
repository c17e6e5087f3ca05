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

The bisection follows scikit-learn's ``_binary_search_perplexity`` step for step (start at
:math:`\beta = 1`; double/halve until the target is bracketed, then bisect; stop when
:math:`|H - H^*| \le 10^{-5}` nats or after 100 steps; all arithmetic in float64 on float32
distances), but runs it for all rows at once instead of a Python loop over nodes.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

# scikit-learn declares both constants as C ``float``; use the same float32-rounded values.
PERPLEXITY_TOLERANCE = float(np.float32(1e-5))
EPSILON_DBL = float(np.float32(1e-8))


def target_entropy(entropy: float) -> float:
    r"""Target entropy in nats for ``entropy`` bits: :math:`\ln 2^{\text{entropy}}`.

    The perplexity is rounded to float32 first, as scikit-learn receives it as a C ``float``.
    """
    return math.log(float(np.float32(2.0 ** float(entropy))))


def pairwise_sq_dist(y: Tensor) -> Tensor:
    r"""Squared Euclidean distances between the channels of every node.

    Args:
        y: ``[N, t, C]`` channel predictions.

    Returns:
        ``[N, t, t]`` float32 distances, computed in float64 and rounded once, with an exact
        zero diagonal.
    """
    if y.dim() != 3:
        raise ValueError(f"channel predictions must have shape [N, t, C], got {list(y.shape)}")
    n, t, _ = y.shape
    i, j = torch.triu_indices(t, t, 1, device=y.device)
    y64 = y.detach().to(torch.float64)
    diff = y64[:, i] - y64[:, j]                       # each unordered pair once
    half = (diff * diff).sum(-1).to(torch.float32)     # [N, t(t-1)/2]
    out = torch.zeros(n, t, t, dtype=torch.float32, device=y.device)
    out[:, i, j] = half
    out[:, j, i] = half
    return out


def off_diagonal(m: Tensor) -> Tensor:
    """``[N, t, t] -> [N, t, t-1]``: drop the diagonal, keep row-major order of the rest."""
    n, t, _ = m.shape
    keep = ~torch.eye(t, dtype=torch.bool, device=m.device)
    return m[:, keep].view(n, t, t - 1)


def binary_search_perplexity(sqdist: Tensor, entropy: float, tol: float = PERPLEXITY_TOLERANCE,
                             max_iter: int = 100) -> tuple[Tensor, Tensor]:
    r"""Vectorised perplexity calibration of independent rows.

    Args:
        sqdist: ``[M, K]`` non-negative squared distances of each row to its ``K`` candidates
            (the row's own entry already removed).
        entropy: target entropy in bits.
        tol: stop a row once :math:`|H - H^*| \le` ``tol`` (nats).
        max_iter: at most this many bisection steps per row.

    Returns:
        ``(P, beta)``: ``[M, K]`` float64 conditional probabilities (each row sums to 1) and the
        ``[M]`` precisions that produced them. A row whose distances are all zero has the
        entropy :math:`\ln K` for every :math:`\beta`, so it stays uniform.
    """
    if sqdist.dim() != 2:
        raise ValueError(f"sqdist must have shape [M, K], got {list(sqdist.shape)}")
    # Column-major [K, M] layout: reductions over the K candidates run over the outer axis.
    d = sqdist.detach().to(torch.float64).t().contiguous()
    m = d.size(1)
    h_star = target_entropy(entropy)
    p_out = torch.empty_like(d)
    beta_out = torch.empty(m, dtype=torch.float64, device=d.device)
    idx = torch.arange(m, device=d.device)      # rows still held in the working arrays
    da = d
    b = torch.ones(m, dtype=torch.float64, device=d.device)
    # Bounds without infinities or torch.where (which is slow on CPU): a missing lower bound
    # is 0 and a missing upper bound is +inf. Then, exactly as in scikit-learn,
    #   raise: beta <- (beta + hi) / 2, or 2 beta without hi  ==  min(2 beta, (beta + hi) / 2)
    #   lower: beta <- (beta + lo) / 2, or beta / 2 without lo ==  (beta + lo) / 2
    # because lo < beta < hi <= 2 lo once both bounds exist. A finished row gets lo = hi = beta,
    # which freezes it: it recomputes the same p and stays finished until it is dropped.
    lo = torch.zeros_like(b)
    hi = torch.full_like(b, math.inf)
    p_buf, w_buf = torch.empty_like(d), torch.empty_like(d)   # reused [K, M] work arrays
    p = p_buf
    for step in range(max_iter):
        n_act = idx.numel()
        p, w = p_buf[:, :n_act], w_buf[:, :n_act]
        torch.mul(da, b.neg(), out=p).exp_()
        s = p.sum(0)
        s = torch.maximum(s, (s == 0.0) * EPSILON_DBL)     # all underflowed: sklearn's epsilon
        # normalise before weighting the distances, as scikit-learn does: with denormal
        # exponentials, sum(d * e) / s underflows where sum(d * (e / s)) does not
        p.div_(s)
        diff = torch.log(s).sub_(h_star).addcmul_(b, torch.mul(da, p, out=w).sum(0))
        done = diff.abs() <= tol
        n_done = int(done.sum())
        if n_done == idx.numel() or step == max_iter - 1:
            break
        if 2 * n_done >= idx.numel():
            fin, keep = done.nonzero().squeeze(1), (~done).nonzero().squeeze(1)
            p_out[:, idx[fin]] = p[:, fin]
            beta_out[idx[fin]] = b[fin]
            idx, da, b, lo, hi, diff, done = (idx[keep], da[:, keep], b[keep], lo[keep], hi[keep], diff[keep],
                                             done[keep])
        up = (diff > 0).to(torch.float64)             # entropy too high: sharpen, i.e. raise beta
        fixed = done.to(torch.float64)
        # lo <- beta when raising or finished; hi <- beta when lowering or finished (b / 0 = inf)
        torch.maximum(lo, torch.maximum(up, fixed).mul_(b), out=lo)
        torch.minimum(hi, torch.div(b, torch.maximum(1.0 - up, fixed)), out=hi)
        b_up = torch.minimum(torch.add(b, hi).mul_(0.5), b * 2.0)
        b = torch.maximum(torch.add(b, lo).mul_(0.5), b_up.mul_(up))   # b_up >= beta >= b_down > 0
    # the beta update after the last evaluated step is never used (as in scikit-learn)
    p_out[:, idx] = p
    beta_out[idx] = b
    p_out = p_out.t().contiguous()
    return p_out, beta_out


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
        out = []
        for s in range(0, n, step):
            d = off_diagonal(pairwise_sq_dist(y[s:s + step]))            # [n', t, t-1]
            p, _ = binary_search_perplexity(d.reshape(-1, t - 1), self.entropy, self.tol, self.max_iter)
            out.append(p.view(-1, t * (t - 1)).to(torch.float32))
        return torch.cat(out).to(y.device)

    def extra_repr(self) -> str:
        return f"entropy={self.entropy}, tol={self.tol:g}, max_iter={self.max_iter}"
