"""Feature-type groups of node-classification graphs, read off the feature matrix.

The RGVT paper reports its averages per feature type (signed dense, unsigned dense, sparse,
binary dense, binary sparse, one-hot) without saying which graph falls in which group. Here the
group is a rule on ``X`` itself, so that any graph, including a user's, gets one:

* ``one-hot``: ``F == N`` and every row has exactly one non-zero (node ids as features);
* ``binary dense`` / ``binary sparse``: every entry is 0 or 1, with at least / less than
  :data:`DENSE_FRACTION` of the entries non-zero;
* ``signed dense``: some entry is negative and at least :data:`DENSE_FRACTION` are non-zero;
* ``unsigned dense``: non-negative, not binary, at least :data:`DENSE_FRACTION` non-zero;
* ``sparse``: any other matrix (less than :data:`DENSE_FRACTION` non-zero).

>>> import torch
>>> feature_type(torch.eye(4))
'one-hot'
>>> feature_type(torch.randn(10, 3))
'signed dense'
"""
from __future__ import annotations

from torch import Tensor

#: a matrix with at least this fraction of non-zero entries is dense
DENSE_FRACTION = 0.1
#: the groups, in the paper's column order
FEATURE_TYPES = ("signed dense", "unsigned dense", "sparse", "binary dense", "binary sparse", "one-hot")


def feature_type(x: Tensor, rows: int = 1 << 14) -> str:
    """The feature-type group of ``x`` ``[N, F]`` (see the module docstring); reads ``x`` in blocks
    of ``rows`` rows, so no copy of it is made."""
    if x.dim() != 2:
        raise ValueError(f"x must be [N, F], got shape {list(x.shape)}")
    n, f = x.shape
    nonzero, binary, negative, one_per_row = 0, True, False, n == f
    for start in range(0, n, rows):
        block = x[start:start + rows]
        nz = block != 0
        nonzero += int(nz.sum())
        binary = binary and bool(((block == 0) | (block == 1)).all())
        negative = negative or bool((block < 0).any())
        one_per_row = one_per_row and bool((nz.sum(dim=1) == 1).all())
    dense = nonzero >= DENSE_FRACTION * max(n * f, 1)
    if binary and one_per_row:
        return "one-hot"
    if binary:
        return "binary dense" if dense else "binary sparse"
    if not dense:
        return "sparse"
    return "signed dense" if negative else "unsigned dense"


__all__ = ["DENSE_FRACTION", "FEATURE_TYPES", "feature_type"]
