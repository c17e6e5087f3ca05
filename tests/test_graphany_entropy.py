"""GraphAny entropy-normalised distance features: vectorised search vs a plain per-node loop."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_graphany_model import one_thread  # noqa: F401  (autouse fixture: one thread)
from tolerance import assert_same_up_to_kernel
from torch import Tensor

import omnigraph.ops.perplexity as pp
from omnigraph.models.entropy_distance import EntropyDistance, sq_dist_columns
from omnigraph.ops.perplexity import binary_search_perplexity, search_columns, target_entropy

TOL = float(np.float32(1e-5))
EPS = float(np.float32(1e-8))


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


def slow_row(d: list[float], entropy: float) -> list[float]:
    """One row, written out as the reference's per-node loop does it (scikit-learn semantics)."""
    h_star = math.log(float(np.float32(2.0 ** entropy)))
    beta, lo, hi = 1.0, -math.inf, math.inf
    p = [0.0] * len(d)
    for _ in range(100):
        p = [math.exp(-dj * beta) for dj in d]
        s = sum(p)
        if s == 0.0:
            s = EPS
        p = [pj / s for pj in p]
        h = math.log(s) + beta * sum(dj * pj for dj, pj in zip(d, p))
        if abs(h - h_star) <= TOL:
            break
        if h > h_star:
            lo = beta
            beta = beta * 2.0 if hi == math.inf else (beta + hi) / 2.0
        else:
            hi = beta
            beta = beta / 2.0 if lo == -math.inf else (beta + lo) / 2.0
    return p


def slow_features(y: np.ndarray, entropy: float) -> np.ndarray:
    """Per node: float32 squared distances of the t channels, then one search per row."""
    n, t, _ = y.shape
    out = np.zeros((n, t * (t - 1)))
    for u in range(n):
        y64 = y[u].astype(np.float64)
        feats = []
        for c in range(t):
            d = [float(np.float32(((y64[c] - y64[o]) ** 2).sum())) for o in range(t) if o != c]
            feats.extend(slow_row(d, entropy))
        out[u] = feats
    return out


def random_inputs(seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    y = g.standard_normal((60, 5, 4)).astype(np.float32)
    y[:20] *= np.float32(10.0) ** g.integers(-6, 7, size=(20, 1, 1)).astype(np.float32)  # extreme scales
    y[20:24] = 0.0                       # all distances zero -> uniform
    y[24:26] = 3.0                       # identical channels, non-zero -> uniform
    y[26:30, 1] = y[26:30, 0]            # one exact tie at distance zero
    y[30:32, 2:] = 1e15                  # huge distances: exp underflows for some rows
    y[32:34] *= np.float32(1e-20)        # tiny distances
    return y


@pytest.mark.parametrize("entropy", [1.0, 2.0, 0.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_vectorised_matches_per_node_loop(entropy, seed):
    y = random_inputs(seed)
    fast = EntropyDistance(entropy)(torch.from_numpy(y))
    assert fast.shape == (60, 20) and fast.dtype == torch.float32
    slow = slow_features(y, entropy)
    np.testing.assert_allclose(fast.numpy(), slow, atol=1e-5, rtol=0)
    if entropy >= 1.0:
        # each conditional row is a distribution over the 4 other channels. (At 0.5 bits a row
        # whose two nearest channels tie cannot reach the target -- its entropy stays above ln 2 --
        # and the search ends on an underflowed all-zero row, exactly like the loop above.)
        np.testing.assert_allclose(fast.view(60, 5, 4).sum(-1).numpy(), 1.0, atol=1e-5)


def test_all_zero_and_identical_channels_are_uniform():
    y = torch.zeros(3, 5, 7)
    y[1] = 2.5
    assert torch.equal(EntropyDistance(1.0)(y), torch.full((3, 20), 0.25))


def test_target_entropy_is_reached():
    torch.manual_seed(0)
    y = torch.randn(200, 5, 6) * 3
    for entropy in (1.0, 1.5):
        d = off_diagonal(pairwise_sq_dist(y)).reshape(-1, 4)
        p, beta = binary_search_perplexity(d, entropy)
        h = -(p * torch.log(p.clamp_min(1e-300))).sum(1)
        assert (h - target_entropy(entropy)).abs().max() < 1e-4
        assert (beta > 0).all()


def test_row_major_order():
    """Feature j is p(c'|c) in row-major order over (c, c' != c): X's row comes first."""
    y = torch.zeros(1, 5, 2)
    y[0, :, 0] = torch.tensor([0.0, 0.1, 5.0, 9.0, 20.0])
    f = EntropyDistance(1.0)(y).view(5, 4)
    # row X: L1 (index 1) is by far the closest, so p(L1|X) is the row's largest entry and comes first
    assert int(f[0].argmax()) == 0
    # row L1: X (index 0) is the closest; in L1's row it is the first entry
    assert int(f[1].argmax()) == 0
    # row H2: H1 (index 3) is the closest; it is the last entry of the last row
    assert int(f[4].argmax()) == 3


def test_matches_scikit_learn_when_available():
    utils = pytest.importorskip("sklearn.manifold._utils")
    search = getattr(utils, "_binary_search_perplexity", None)
    if search is None:
        pytest.skip("scikit-learn no longer exposes _binary_search_perplexity")
    y = random_inputs(3)
    fast = EntropyDistance(1.0)(torch.from_numpy(y)).numpy()
    mask = ~np.eye(5, dtype=bool)
    for u in range(y.shape[0]):
        d = pairwise_sq_dist(torch.from_numpy(y[u:u + 1]))[0].numpy()
        ref = search(d, 2.0, 0)
        np.testing.assert_allclose(fast[u], np.asarray(ref)[mask], atol=1e-5, rtol=0)


def test_chunking_does_not_change_result():
    torch.manual_seed(1)
    y = torch.randn(101, 5, 3)
    assert_same_up_to_kernel(EntropyDistance(1.0, chunk_size=17)(y), EntropyDistance(1.0)(y))


def test_bad_input():
    with pytest.raises(ValueError, match="entropy"):
        EntropyDistance(0.0)
    with pytest.raises(ValueError, match=r"\[N, t>=2, C\]"):
        EntropyDistance(1.0)(torch.zeros(4, 5))
    assert EntropyDistance(1.0)(torch.zeros(0, 5, 3)).shape == (0, 20)


# -- the fast paths of the vectorised search ---------------------------------------------------------

def wide_rows(seed: int, n: int = 400) -> torch.Tensor:
    """[n, 4] distances of 5-channel nodes over 18 orders of magnitude of logit scale (exponentials
    underflow completely, partly or into denormals along the walk), with ties, a common offset and
    all-zero rows."""
    g = np.random.default_rng(seed)
    y = g.standard_normal((n // 5, 5, 3)).astype(np.float32)
    y *= (10.0 ** g.uniform(-9, 9, size=(n // 5, 1, 1))).astype(np.float32)
    y[:6, 1] = y[:6, 0]                                  # ties at the minimum
    y[6:12, 1:] = y[6:12, 1:2] + np.float32(1e-3) * y[6:12, 1:]   # far from X, close to each other
    y[12:14] = 0.0
    return off_diagonal(pairwise_sq_dist(torch.from_numpy(y))).reshape(-1, 4)


def plain_walk(d: torch.Tensor, h_star: float, tol: float, max_iter: int):
    """``_walk_start`` that skips nothing: beta = 1, no bounds, no steps taken."""
    ones = torch.ones(d.size(1), dtype=torch.float64)
    return ones, 0 * ones, pp._NO_UPPER * ones, 0 * ones


@pytest.mark.parametrize("max_iter", [100, 9])
@pytest.mark.parametrize("entropy", [0.5, 1.0, 2.0])
def test_skipping_the_certain_walk_changes_nothing(entropy, max_iter, monkeypatch):
    """Starting after the certain doubling/halving steps gives the very same beta (and P) as walking them."""
    d = wide_rows(0).to(torch.float64).t().contiguous()
    p, beta = search_columns(d, target_entropy(entropy), max_iter=max_iter)
    _, _, _, skipped = pp._walk_start(d, target_entropy(entropy), pp.PERPLEXITY_TOLERANCE, max_iter)
    assert skipped.sum() > 3 * d.size(1)                 # the skip is substantial here
    monkeypatch.setattr(pp, "_walk_start", plain_walk)
    p_walk, beta_walk = search_columns(d, target_entropy(entropy), max_iter=max_iter)
    assert torch.equal(beta, beta_walk)
    assert torch.equal(p, p_walk)


def sklearn_gap(d: list[float], beta: float, h_star: float) -> float:
    """H - H* as scikit-learn computes it (math.exp, epsilon when everything underflows)."""
    e = [math.exp(-dj * beta) for dj in d]
    s = sum(e) or EPS
    return math.log(s) + beta * sum(dj * (ej / s) for dj, ej in zip(d, e)) - h_star


@pytest.mark.parametrize("entropy", [0.5, 1.0, 1.5, 2.0])
def test_skipped_steps_have_the_predicted_outcome(entropy):
    """Each skipped step is a doubling (H > H* + tol) or a halving (H < H* - tol) for scikit-learn too."""
    h_star = target_entropy(entropy)
    rows = wide_rows(1)
    beta, _, _, skipped = pp._walk_start(rows.to(torch.float64).t(), h_star, TOL, 100)
    for d, b, n in zip(rows.tolist(), beta.tolist(), skipped.long().tolist()):
        up = b > 1.0
        for j in range(n):
            gap = sklearn_gap(d, 2.0 ** j if up else 2.0 ** -j, h_star)
            assert (gap > TOL) if up else (gap < -TOL), (d, j)


def test_rows_near_complete_underflow():
    """Nearly tied nearest candidates far away: beta ends where exp(-beta d) is denormal (exact path)."""
    a = torch.logspace(-2, 4, 64, dtype=torch.float64)
    d = torch.stack([a, a * (1 + 3e-7), 2 * a, 3 * a], 1).to(torch.float32)
    for entropy in (0.5, 1.0):
        p, beta = binary_search_perplexity(d, entropy)
        slow = np.array([slow_row(row, entropy) for row in d.double().tolist()])
        np.testing.assert_allclose(p.numpy(), slow, atol=1e-12, rtol=0)
        assert ((beta * d[:, 0]) > 700).any()              # some rows did end near underflow


def test_few_rows_finish_in_python_like_many():
    """At most _TAIL_ROWS rows go through the plain-Python loop; the result is that of the vectorised one."""
    d = wide_rows(2)
    p_all, beta_all = binary_search_perplexity(d, 1.0)
    for lo in range(0, 40, 8):
        p, beta = binary_search_perplexity(d[lo:lo + 8], 1.0)
        assert_same_up_to_kernel(beta, beta_all[lo:lo + 8], rtol=1e-6, atol=0)
        np.testing.assert_allclose(p.numpy(), p_all[lo:lo + 8].numpy(), atol=1e-15, rtol=0)


def test_torch_exp_and_log_give_the_same_result(monkeypatch):
    """Off CPU or on more threads (forced here) torch's exp/log replace numpy's: same betas, same P up to
    rounding."""
    d = wide_rows(3)
    p, beta = binary_search_perplexity(d, 1.0)
    monkeypatch.setattr(pp, "_numpy_is_faster", lambda x: False)
    p_torch, beta_torch = binary_search_perplexity(d, 1.0)
    assert torch.equal(beta, beta_torch)
    np.testing.assert_allclose(p.numpy(), p_torch.numpy(), atol=1e-14, rtol=0)


def test_step_cap_and_degenerate_rows():
    """scikit-learn's step cap: equal distances keep H = ln K, so beta doubles to 2**(max_iter-1) --
    unless exp(-beta d) underflows first; a single candidate (H = 0) halves beta to 2**-(max_iter-1)."""
    p, beta = binary_search_perplexity(torch.zeros(3, 4), 1.0)
    assert torch.equal(beta, torch.full((3,), 2.0 ** 99, dtype=torch.float64))
    assert torch.equal(p, torch.full((3, 4), 0.25, dtype=torch.float64))
    _, beta = binary_search_perplexity(torch.full((2, 4), 1e-3), 1.0, max_iter=10)
    assert torch.equal(beta, torch.full((2,), 2.0 ** 9, dtype=torch.float64))
    # 1, 2, ..., 128, then exp(-256 * 5) underflows (H = ln eps): bisect to 192 in the 10th step
    _, beta = binary_search_perplexity(torch.full((2, 4), 5.0), 1.0, max_iter=10)
    assert torch.equal(beta, torch.full((2,), 192.0, dtype=torch.float64))
    p, beta = binary_search_perplexity(torch.tensor([[0.0], [3.0]]), 1.0)
    assert torch.equal(beta, torch.full((2,), 2.0 ** -99, dtype=torch.float64))
    assert torch.equal(p, torch.ones(2, 1, dtype=torch.float64))


def test_non_finite_distances_follow_scikit_learn():
    """inf distances make scikit-learn's entropy nan, which is never 'done' and counts as 'too low'."""
    d = torch.tensor([[math.inf, math.inf, math.inf, math.inf], [math.inf, 1.0, 2.0, 0.5]] * 10)
    p, beta = binary_search_perplexity(d, 1.0)
    slow = np.array([slow_row(row, 1.0) for row in d.double().tolist()])
    np.testing.assert_allclose(p.numpy(), slow, atol=1e-12, rtol=0)
    assert torch.equal(beta, torch.full((20,), 2.0 ** -99, dtype=torch.float64))


def test_column_layout_of_the_distances():
    torch.manual_seed(2)
    y = torch.randn(7, 5, 3) * 10
    expected = off_diagonal(pairwise_sq_dist(y)).permute(2, 1, 0).reshape(4, 35).double()
    assert torch.equal(sq_dist_columns(y), expected)
