r"""Node orders with locality: renumber a graph so that neighbours get nearby ids.

Real graphs often arrive in an arbitrary node order, and a sparse product :math:`AX` then gathers
rows of :math:`X` from all over memory. Renumbering the nodes with a bandwidth-reducing order
brings each row's neighbours close together, so that the gathers hit the caches. Every model
here is permutation equivariant, so renumbering, computing and mapping back gives the same
result up to float rounding (sums are taken in another order).

A *permutation* ``perm`` is a ``[N]`` tensor with ``perm[new] = old``; its inverse
``inv = invert_permutation(perm)`` has ``inv[old] = new``. A node-level result ``out`` computed on
the renumbered graph returns to the user's order as ``out[inv]``.

Orders (``method``):

* ``"rcm"``: reverse Cuthill–McKee (:func:`scipy.sparse.csgraph.reverse_cuthill_mckee`) on the
  undirected pattern: breadth-first levels, low-degree nodes first within a level, reversed;
* ``"degree"``: nodes by decreasing degree (ties by id): the hubs, which most rows gather,
  share a few cache lines.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

REORDER_METHODS = ("rcm", "degree")
from omnigraph.ops.operator_pair import LARGE_GRAPH_NODES

#: ``reorder="auto"`` renumbers graphs of at least this many nodes (see :func:`resolve_reorder`)
REORDER_MIN_NODES = LARGE_GRAPH_NODES


def resolve_reorder(reorder: str | None, num_nodes: int, min_nodes: int = REORDER_MIN_NODES) -> str | None:
    """The order a ``reorder`` setting asks for on a graph of ``num_nodes``: ``None`` / ``"none"``
    (keep the user's order), a method of :data:`REORDER_METHODS`, or ``"auto"``: ``"rcm"`` from
    ``min_nodes`` nodes on (where the features outgrow the caches and the renumbering pays for
    itself, ``docs/results/performance.md``), none below."""
    if reorder is None or reorder == "none":
        return None
    if reorder == "auto":
        return "rcm" if int(num_nodes) >= min_nodes else None
    if reorder not in REORDER_METHODS:
        raise ValueError(f"reorder must be None, 'none', 'auto' or one of {REORDER_METHODS}, got {reorder!r}")
    return reorder


def locality_order(edge_index: Tensor, num_nodes: int, method: str = "rcm") -> Tensor:
    """A permutation ``perm`` (``perm[new] = old``, int64 ``[num_nodes]``) that numbers
    neighbours close together; deterministic (no random step)."""
    if method not in REORDER_METHODS:
        raise ValueError(f"reorder method must be one of {REORDER_METHODS}, got {method!r}")
    n = int(num_nodes)
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {list(edge_index.shape)}")
    row, col = edge_index.cpu().long()
    if method == "degree":
        deg = torch.bincount(row, minlength=n) + torch.bincount(col, minlength=n)
        return torch.argsort(-deg, stable=True)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    # boolean pattern, symmetrised as A + A^T (no int64 copies of the edges beyond torch's own)
    pattern = coo_matrix((np.ones(row.numel(), dtype=np.bool_), (row.numpy(), col.numpy())), shape=(n, n)).tocsr()
    pattern = pattern + pattern.T.tocsr()
    return torch.from_numpy(reverse_cuthill_mckee(pattern, symmetric_mode=True).astype(np.int64))


def invert_permutation(perm: Tensor) -> Tensor:
    """``inv`` with ``inv[perm[i]] = i``."""
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel(), dtype=perm.dtype, device=perm.device)
    return inv


def permute_graph(x: Tensor, edge_index: Tensor, perm: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The renumbered graph: ``(x[perm], inv[edge_index], inv)``, edges in their original order."""
    inv = invert_permutation(perm.to(edge_index.device))
    return x[perm.to(x.device)], inv[edge_index], inv


class PermutedRows:
    """``x[perm]`` (``[N, F]``) without the copy: a column slice ``rows[:, a:b]`` is gathered when read.

    A model that reads its input one column chunk at a time (RGVT) can so run on a renumbered
    graph without a second ``[N, F]`` matrix; each chunk holds the same numbers as the same
    columns of ``x[perm]``. Offers what such a reader needs: ``shape``, ``size``, ``dim``,
    ``dtype``, ``device``, ``requires_grad`` (False), ``new_empty`` and ``rows[:, cols]``.
    """

    requires_grad = False

    def __init__(self, x: Tensor, perm: Tensor):
        if x.dim() != 2 or perm.shape != (x.size(0),):
            raise ValueError(f"need x [N, F] and perm [N], got {list(x.shape)} and {list(perm.shape)}")
        self.x, self.perm = x, perm.to(x.device)

    shape = property(lambda self: self.x.shape)
    dtype = property(lambda self: self.x.dtype)
    device = property(lambda self: self.x.device)

    def dim(self) -> int:
        return 2

    def size(self, dim: int | None = None):
        return self.x.size() if dim is None else self.x.size(dim)

    def new_empty(self, *size) -> Tensor:
        return self.x.new_empty(*size)

    def __getitem__(self, key) -> Tensor:
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None) and isinstance(key[1], slice)):
            raise IndexError("PermutedRows reads whole column slices only: rows[:, a:b]")
        return self.x[:, key[1]].index_select(0, self.perm)


__all__ = ["REORDER_METHODS", "REORDER_MIN_NODES", "PermutedRows", "invert_permutation", "locality_order",
           "permute_graph", "resolve_reorder"]
