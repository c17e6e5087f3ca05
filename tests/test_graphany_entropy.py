"""GraphAny entropy-normalised distance features: vectorised search vs a plain per-node loop."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_graphany_model import one_thread  # noqa: F401  (autouse fixture: one thread)

from omnigraph.models.entropy_distance import (
    EntropyDistance,
    binary_search_perplexity,
    off_diagonal,
    pairwise_sq_dist,
    target_entropy,
)

TOL = float(np.float32(1e-5))
EPS = float(np.float32(1e-8))


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
    assert torch.equal(EntropyDistance(1.0)(y), EntropyDistance(1.0, chunk_size=17)(y))


def test_bad_input():
    with pytest.raises(ValueError, match="entropy"):
        EntropyDistance(0.0)
    with pytest.raises(ValueError, match=r"\[N, t>=2, C\]"):
        EntropyDistance(1.0)(torch.zeros(4, 5))
    assert EntropyDistance(1.0)(torch.zeros(0, 5, 3)).shape == (0, 20)
