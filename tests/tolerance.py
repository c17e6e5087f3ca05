"""What the suite may compare bit for bit, and the tolerance everywhere else (the user's path: any x86 CPU).

**Exact** (``torch.equal``) only where the code guarantees it on every machine:
integers, indices, masks and labels; values copied, selected or loaded rather than computed; the same
call with the same shapes run twice on one machine and thread count (determinism); results that depend
on floats only through comparisons whose outcome the test fixes.

**Up to rounding** (:func:`assert_same_up_to_kernel`) when two float computations that are equal in
exact arithmetic run through kernels of different shapes: row subsets against the full pass, column
chunks or blocks against one pass, batched against single heads, another operator layout. BLAS and
the vectorised sparse kernels pick their micro-kernels, tails and reduction order by shape and by CPU
(AVX2, AVX-512, FMA or not), so such results agree to a few ulps, not bit for bit; on an Intel Xeon a
row subset of the RGVT pass differed from the full pass although it matched on this machine.
"""
from __future__ import annotations

import torch

RTOL = 1e-5   # float32: a few ulps after a handful of fused or re-associated sums
ATOL = 1e-6


def assert_same_up_to_kernel(actual: torch.Tensor, expected: torch.Tensor, rtol: float = RTOL,
                             atol: float = ATOL) -> None:
    """``actual`` and ``expected`` are the same quantity computed through kernels of different shapes."""
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


def assert_all_same_up_to_kernel(actual, expected, rtol: float = RTOL, atol: float = ATOL) -> None:
    actual, expected = list(actual), list(expected)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        assert_same_up_to_kernel(a, b, rtol, atol)
