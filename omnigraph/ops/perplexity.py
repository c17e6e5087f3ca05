r"""Perplexity calibration: per row, the precision :math:`\beta` whose Gaussian over the row's
candidates has a target entropy (t-SNE's and GraphAny's bisection, vectorised over rows).

For squared distances :math:`d_{j}` of one row, :math:`p_j \propto \exp(-\beta d_j)`; the search finds
:math:`\beta` with :math:`H(p) = H^*`.

The bisection follows scikit-learn's ``_binary_search_perplexity`` step for step (start at
:math:`\beta = 1`; double/halve until the target is bracketed, then bisect; stop when
:math:`|H - H^*| \le 10^{-5}` nats or after 100 steps; all arithmetic in float64 on float32
distances), but runs it for all rows at once instead of a Python loop over nodes; it reaches
the same :math:`\beta` in the same step, and the same :math:`P` up to float64 rounding. What makes
it fast (:func:`search_columns`):

* the doubling/halving steps whose outcome a bound on the entropy already decides are skipped
  (:func:`_walk_start`; a third of all steps for logits of widely varying scale);
* one column per row (``[K, M]``), so sums over a row's few candidates run along the short
  leading axis; finished rows are frozen and dropped in batches; work arrays are reused;
* exponents are clamped where ``exp`` would leave its vectorised path, and the rare rows near
  complete underflow are evaluated exactly (:class:`_Evaluator`);
* the last handful of rows (those that never reach the target) finish in plain Python.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

# scikit-learn declares both constants as C ``float``; use the same float32-rounded values.
PERPLEXITY_TOLERANCE = float(np.float32(1e-5))
EPSILON_DBL = float(np.float32(1e-8))


def target_entropy(entropy: float) -> float:
    r"""Target entropy in nats for ``entropy`` bits: :math:`\ln 2^{\text{entropy}}`.

    The perplexity is rounded to float32 first, as scikit-learn receives it as a C ``float``.
    """
    return math.log(float(np.float32(2.0 ** float(entropy))))


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
        ``[M]`` precisions that produced them -- scikit-learn's betas, and its ``P`` up to float64
        rounding. A row whose distances are all zero has the entropy :math:`\ln K` for every
        :math:`\beta`, so it stays uniform.
    """
    if sqdist.dim() != 2:
        raise ValueError(f"sqdist must have shape [M, K], got {list(sqdist.shape)}")
    d = sqdist.detach().to(torch.float64).t().contiguous()     # [K, M]: see search_columns
    p, beta = search_columns(d, target_entropy(entropy), tol, max_iter)
    return p.t().contiguous(), beta


# Exponents x = -beta d: exp is vectorised only while exp(x) is a normal float64 (x >= -708.39);
# below, each element takes a scalar path that is 15-60x slower, so exponents are clamped here.
_EXP_FLOOR = -708.0
# Rows whose sum of exponentials s is below e^-575 (~1e-250) are evaluated exactly; above, the
# clamped exponentials (each < e^-708 ~ 3e-308) change P and H by less than e^-133 ~ 1e-58.
_LOG_S_EXACT = -575.0
# exp(x) rounds to 0.0 for x < -745.13; with a margin, below this it certainly does.
_EXP_ZERO = -746.0
# _walk_start: while beta * min d <= _EXACT_H, exp(-beta min d) >= e^-690 and the computed entropy
# is the exact one up to rounding (< 1e-12 nats; exponentials that underflow change it by < 1e-20),
# so a bound on the exact entropy that clears H* -+ tol by _BOUND_MARGIN decides the comparison.
_EXACT_H = 690.0
_BOUND_MARGIN = 1e-9
_NO_UPPER = float(np.finfo(np.float64).max)   # "no upper bound yet"; finite, so that lerp stays exact
_COMPACT_FRACTION = 0.25                      # drop finished rows once they are this share of the rest
_TAIL_ROWS = 16                               # finish at most this many rows in plain Python


def _numpy_is_faster(x: Tensor) -> bool:
    """On CPU numpy's SIMD float64 ``exp`` and ``log`` are 2-3x as fast as torch's, but single-threaded."""
    return x.device.type == "cpu" and torch.get_num_threads() <= 2


def _unary(name: str, x: Tensor, out: Tensor) -> Tensor:
    """``name`` (``"exp"`` or ``"log"``, the same in numpy and torch) of ``x`` into ``out``."""
    if _numpy_is_faster(x):
        getattr(np, name)(x.numpy(), out=out.numpy())
        return out
    return getattr(torch, name)(x, out=out)


def _pow2(k: Tensor) -> Tensor:
    """Exact float64 powers of two ``2**k`` for integer-valued ``k`` in [-1022, 1023]."""
    return ((k.to(torch.int64) + 1023) << 52).view(torch.float64)


def _floor_log2(x: Tensor) -> Tensor:
    """Exact ``floor(log2(x))`` (as float64) of positive normal float64 ``x``: its binary exponent.

    Any input gives a finite number: 0 gives -1023 and +inf 1024, which act as -inf and +inf here.
    """
    return ((x.view(torch.int64) >> 52) - 1023).to(torch.float64)


class _Evaluator:
    r"""Evaluates :math:`H(\beta) - H^*` (and finally :math:`P`) of columns of :math:`-d`, in reused buffers.

    scikit-learn computes, in float64 and with ``s = EPSILON_DBL`` if every exponential underflows,

    .. math::
        e_j = \exp(-\beta d_j), \quad s = \textstyle\sum_j e_j, \quad p_j = e_j / s, \quad
        H = \ln s + \beta \textstyle\sum_j d_j p_j.

    Here the exponents :math:`x_j = -\beta d_j` are clamped at ``_EXP_FLOOR`` so that ``exp`` stays
    vectorised, and :math:`H = \ln s - \sum_j x_j e_j / s` with the clamped :math:`x` (the same value
    up to rounding). The few rows with :math:`s < e^{-575}` -- near or past complete underflow,
    where the clamping would matter -- are recomputed exactly as scikit-learn does, denormals and
    epsilon included.
    """

    def __init__(self, k: int, m: int, h_star: float, device: torch.device):
        self.h_star = h_star
        self.kbuf = torch.empty(2, k * m, dtype=torch.float64, device=device)
        self.mbuf = torch.empty(2, m, dtype=torch.float64, device=device)
        self.low = torch.empty(m, dtype=torch.bool, device=device)

    def __call__(self, nd: Tensor, b: Tensor, final: bool = False) -> tuple[Tensor | None, Tensor]:
        """``nd = -d`` ``[K, n]``, ``b`` ``[n]`` -> ``(P [K, n], H - H* [n])``, views into the buffers.

        ``P`` is only computed (``None`` otherwise) with ``final``, which also sets the probabilities
        of clamped exponentials to exactly 0.
        """
        k, n = nd.shape
        x, e = self.kbuf[0, :k * n].view(k, n), self.kbuf[1, :k * n].view(k, n)
        s, gap = self.mbuf[:, :n]
        torch.mul(nd, b, out=x)
        normal = x >= _EXP_FLOOR if final else None
        _unary("exp", x.clamp_min_(_EXP_FLOOR), out=e)
        torch.sum(e, 0, out=s)
        torch.sum(x.mul_(e), 0, out=gap).div_(s)          # sum_j x_j p_j = -beta <d>_p
        p = e.div_(s).mul_(normal) if final else None
        torch.sub(_unary("log", s, out=s), gap, out=gap).sub_(self.h_star)      # s now holds ln s
        low = torch.lt(s, _LOG_S_EXACT, out=self.low[:n])
        if int(low.count_nonzero()):
            # scikit-learn's own arithmetic: unclamped exp, epsilon if everything underflowed
            r = low.nonzero().squeeze(1)
            ndr, br = nd[:, r], b[r]
            er = torch.exp(ndr * br)
            sr = er.sum(0)
            sr = torch.where(sr == 0.0, EPSILON_DBL, sr)
            pr = er.div_(sr)
            gap[r] = torch.log(sr).sub_(self.h_star).addcmul_(br, (ndr * pr).sum(0), value=-1.0)
            if p is not None:
                p[:, r] = pr
        return p, gap


def _walk_start(d: Tensor, h_star: float, tol: float, max_iter: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""Skips the doubling/halving steps whose outcome is certain: the state before the first uncertain one.

    From :math:`\beta = 1` scikit-learn doubles :math:`\beta` while :math:`H > H^* + \text{tol}` and
    halves it while :math:`H < H^* - \text{tol}`; with logits of widely varying scale this walk is a
    third of all steps. A step is skipped only where a bound on the exact entropy decides the
    comparison by a margin (``_BOUND_MARGIN``, far above the rounding error of the computed entropy
    while :math:`\beta d_{\min} \le 690`), so the decisions, the bounds they set and hence all later
    steps are exactly scikit-learn's. With :math:`R = d_{\max} - d_{\min}` and, when the nearest
    candidate is unique, :math:`g_+ = d_{(2)} - d_{\min}`:

    * :math:`H \ge \ln K - \beta R`, as :math:`\mathrm{KL}(p \,\|\, \text{uniform}) \le
      \ln(p_{\max} / p_{\min}) = \beta R`: doubling is certain while
      :math:`\beta R < \ln K - H^* - \text{tol}`;
    * for :math:`z = \beta g_+ \ge 1`, :math:`H \le (K - 1)(1 + z) e^{-z}` (by :math:`\ln(1 + q) \le q`
      and :math:`z e^{-z}` decreasing), so halving is certain while :math:`z \ge z^*`, where the bound
      is below :math:`H^* - \text{tol}`;
    * while :math:`\beta d_{\min} > 746` every exponential underflows and scikit-learn's
      :math:`H = \ln \varepsilon < H^* - \text{tol}`: halving is certain;
    * with an infinite (or nan) distance scikit-learn's :math:`H` is nan at every :math:`\beta`
      (:math:`\infty \cdot 0` in :math:`\sum_j d_j p_j`), which counts as too low: it halves to the end.

    Step counts are exact binary exponents (:func:`_floor_log2`) of ratios; the thresholds 690 and
    746 and the margin absorb the one rounding of each ratio.

    Returns ``(beta, lo, hi, steps)`` per row: the first beta to evaluate, the bounds set by the
    skipped steps (0 and ``_NO_UPPER`` for none), and how many steps were skipped.
    """
    k = d.size(0)
    cap = min(max_iter - 1, 1000)             # the last step's index (and 2**cap must not overflow)
    dmin = d.amin(0)
    gaps = d - dmin
    spread = gaps.amax(0)
    ties = torch.eq(gaps, 0.0, out=torch.empty_like(gaps))          # 0/1 as float64: cheaper than bool
    unique_min = torch.eq(ties.sum(0), 1.0, out=torch.empty_like(dmin))
    gpos = gaps.add_(ties, alpha=1e300).amin(0)                    # smallest positive gap (1e300: none)
    # doubling is certain at beta = 2**j for j = 0..j_up
    c_up = math.log(k) - h_star - tol - _BOUND_MARGIN
    if c_up > 0:
        j_up = torch.minimum(_floor_log2(c_up / spread), _floor_log2(_EXACT_H / dmin))
    else:
        j_up = torch.full_like(dmin, -1.0)
    # halving is certain at beta = 2**-j for j = 0..j_down-1
    j_zero = _floor_log2(-_EXP_ZERO / dmin).neg_().clamp_min_(0.0)     # j < j_zero: all underflow
    j_exact = _floor_log2(dmin / _EXACT_H).add_(1.0).clamp_min_(0.0)    # j >= j_exact: H exact
    j_bound = _floor_log2(gpos / _z_star(k, h_star - tol - _BOUND_MARGIN)).add_(1.0).mul_(unique_min)
    # j < j_bound: z >= z*; the bound takes over where the underflow ends if that is in the exact range
    bound_too = torch.le(j_exact, j_zero, out=torch.empty_like(dmin)).mul_(j_zero < j_bound)
    j_down = torch.lerp(j_zero, j_bound, bound_too)
    # an inf or nan distance makes scikit-learn's entropy nan at every beta (inf * 0 in sum d_j p_j),
    # never close enough and never too high: halving to the last step is certain
    finite = torch.lt(dmin + spread, math.inf, out=torch.empty_like(dmin))
    j_down.mul_(finite).add_((1.0 - finite).mul_(cap))          # (the j_* are all finite numbers)
    up = torch.ge(j_up, 0.0, out=torch.empty_like(dmin)).mul_(finite)
    down = torch.ge(j_down, 1.0, out=torch.empty_like(dmin)).mul_(1.0 - up)
    steps = (up * (j_up + 1.0) + down * j_down).clamp_(0.0, cap)
    beta = _pow2(steps * (2.0 * up - 1.0))                  # 2**steps up, 2**-steps down, else 1
    lo = beta * (0.5 * up)                                  # the last doubled beta
    hi = torch.lerp(torch.full_like(dmin, _NO_UPPER), beta * 2.0, down)   # the last halved beta
    return beta, lo, hi, steps


def _z_star(k: int, c_down: float) -> float:
    """Smallest z >= 1 with (k - 1)(1 + z) e^-z < c_down, rounded up (inf if c_down <= 0)."""
    if c_down <= 0:
        return math.inf

    def bound(z: float) -> float:
        return (k - 1) * (1.0 + z) * math.exp(-z)

    lo, hi = 1.0, 1.0
    while bound(hi) >= c_down:
        lo, hi = hi, 2.0 * hi
    if hi == 1.0:
        return 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bound(mid) >= c_down else (lo, mid)
    return hi


def _finish_row(nd: list[float], beta: float, lo: float, hi: float, n_steps: int, h_star: float,
                tol: float) -> float:
    """scikit-learn's loop for one row (``nd = -d``), continued for at most ``n_steps`` steps from a
    state of :func:`search_columns`; returns the final beta."""
    for i in range(n_steps):
        s, e = 0.0, []
        for x in nd:
            e.append(math.exp(x * beta))
            s += e[-1]
        if s == 0.0:
            s = EPSILON_DBL
        m = 0.0
        for x, ej in zip(nd, e):
            m -= x * (ej / s)
        gap = math.log(s) + beta * m - h_star
        if abs(gap) <= tol or i == n_steps - 1:
            break
        if gap > 0:
            lo = beta
        else:
            hi = beta
        beta = min(2.0 * beta, (lo + hi) / 2.0)
    return beta


def search_columns(d: Tensor, h_star: float, tol: float = PERPLEXITY_TOLERANCE,
                   max_iter: int = 100) -> tuple[Tensor, Tensor]:
    r"""The search of :func:`binary_search_perplexity` on ``[K, M]`` float64 distances, one row per column.

    ``h_star`` is the target entropy in nats (:func:`target_entropy`). Returns ``(P [K, M], beta [M])``.

    Every row goes through scikit-learn's sequence of :math:`\beta` values, starting after the
    certain doubling/halving steps (:func:`_walk_start`) with the steps that scikit-learn would have
    left (``max_iter`` in all). The bounds are kept without infinities or
    branches: a missing lower bound is 0 and a missing upper bound a huge finite number, so that
    all of scikit-learn's updates (double, halve, bisect) read

    .. math::
        \beta \leftarrow \min\bigl(2\beta, (\text{lo} + \text{hi}) / 2\bigr)

    after ``lo`` (entropy too high) or ``hi`` (too low) has been set to :math:`\beta`, bit for bit
    (``lerp`` with a 0/1 weight copies exactly). A finished row gets ``lo = hi = beta``, which freezes
    it until it is dropped from the working set. ``P`` is computed once at the end, from the final
    :math:`\beta` of every row.
    """
    k, m = d.shape
    if k == 0 or max_iter < 1:
        raise ValueError(f"need K >= 1 candidates per row and max_iter >= 1, got K={k}, max_iter={max_iter}")
    beta_out = torch.empty(m, dtype=torch.float64, device=d.device)
    if m == 0:
        return d.clone(), beta_out
    evaluate = _Evaluator(k, m, h_star, d.device)
    # working set, one column per unfinished row: -d (k rows), beta, lo, hi, column, steps left
    state = torch.empty(2, (k + 5) * m, dtype=torch.float64, device=d.device)   # ping-pong for compaction
    z = state[0].view(k + 5, m)
    torch.neg(d, out=z[:k])
    beta0, lo0, hi0, skipped = _walk_start(d, h_star, tol, max_iter)
    z[k], z[k + 1], z[k + 2] = beta0, lo0, hi0
    torch.arange(m, out=z[k + 3])
    torch.sub(max_iter, skipped, out=z[k + 4])
    first_cap = int(z[k + 4].min())           # no row runs out of steps before this iteration
    flag, buf = torch.empty(2, m, dtype=torch.float64, device=d.device)
    cur = 0
    for it in range(max_iter):
        n = z.size(1)
        nd, b, lo, hi, left = z[:k], z[k], z[k + 1], z[k + 2], z[k + 4]
        if n <= _TAIL_ROWS:
            # a few stragglers (typically rows that never reach the target and use all max_iter
            # steps): plain Python is cheaper than the ~40 tensor ops of a vectorised step
            rows = z.t().tolist()
            z[k] = torch.tensor([_finish_row(r[:k], r[k], r[k + 1], r[k + 2], int(r[k + 4]) - it, h_star, tol)
                                 for r in rows], dtype=torch.float64, device=z.device)
            break
        _, gap = evaluate(nd, b)
        # 1.0 / 0.0; a nan entropy (from inf or nan distances) is never done, as in scikit-learn
        todo = torch.le(torch.abs(gap, out=buf[:n]), tol, out=flag[:n]).neg_().add_(1.0)
        if it + 1 >= first_cap:
            todo.mul_(torch.gt(left, it + 1, out=buf[:n]))                   # that was a row's last step
        n_todo = int(todo.sum())
        if n_todo == 0:
            break
        if n - n_todo >= _COMPACT_FRACTION * n:
            # record every row's beta (unfinished ones are overwritten later) and keep the unfinished
            beta_out.index_copy_(0, z[k + 3].long(), b)
            keep = todo.bool().nonzero().squeeze(1)             # (nonzero is twice as fast on bool)
            gap = torch.index_select(gap, 0, keep, out=buf[:n_todo])
            cur = 1 - cur
            z_next = state[cur, :(k + 5) * n_todo].view(k + 5, n_todo)
            for row, row_next in zip(z, z_next):                # row by row: 3x as fast as along dim 1
                torch.index_select(row, 0, keep, out=row_next)
            z = z_next
            n, b, lo, hi = n_todo, z[k], z[k + 1], z[k + 2]
        else:
            gap.mul_(todo)                      # finished rows: 0, i.e. both lo and hi <- beta
        torch.lerp(lo, b, torch.ge(gap, 0.0, out=flag[:n]), out=lo)          # entropy too high: lo <- beta
        torch.lerp(hi, b, torch.gt(gap, 0.0, out=flag[:n]).neg_().add_(1.0), out=hi)   # else hi <- beta
        torch.minimum(torch.add(lo, hi, out=buf[:n]).mul_(0.5), b.mul_(2.0), out=b)
    # the beta update after a row's last evaluated step is never used (as in scikit-learn)
    beta_out.index_copy_(0, z[k + 3].long(), z[k])
    p, _ = evaluate(d.neg(), beta_out, final=True)
    return p, beta_out


__all__ = ["EPSILON_DBL", "PERPLEXITY_TOLERANCE", "binary_search_perplexity", "search_columns", "target_entropy"]
