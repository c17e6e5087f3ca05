"""Triangles through each node of a simple undirected graph, without an N x N matrix."""
from __future__ import annotations

import torch
from torch import Tensor


def triangle_counts(edge_index: Tensor, num_nodes: int, budget: int = 1 << 22) -> Tensor:
    r"""Triangles through each node of a simple undirected graph (``edge_index`` symmetric, loop-free).

    Nodes are ranked by (degree, id) and every edge is oriented from the lower to the higher
    rank, giving a DAG whose out-degrees are at most :math:`\sqrt{2|E|}`. Each triangle
    :math:`u \prec v \prec w` is then the one *wedge* :math:`(v, w)` of two out-neighbours of
    :math:`u` that is closed by the oriented edge :math:`v \to w`: all
    :math:`\sum_u \binom{d^+_u}{2} = O(|E|^{1.5})` wedges are enumerated and looked up among
    the sorted edge keys (binary search), and each closed one counts once for :math:`u`,
    :math:`v` and :math:`w`. Wedges are processed in blocks of about ``budget``, so memory
    stays :math:`O(|E| + \text{budget})`; no :math:`N \times N` matrix is formed.
    """
    n = int(num_nodes)
    row, col = edge_index.cpu()
    deg = torch.bincount(row, minlength=n)
    rank = torch.empty(n, dtype=torch.long)
    rank[torch.argsort(deg * n + torch.arange(n))] = torch.arange(n)
    keep = rank[row] < rank[col]
    keys = rank[row[keep]].mul_(n).add_(rank[col[keep]])     # oriented edges u -> w, in rank space
    del keep
    keys = keys.sort().values                                # grouped by u, w ascending within u
    src = keys.div(n, rounding_mode="floor")
    dst = keys.remainder(n)
    out_deg = torch.bincount(src, minlength=n)
    row_end = torch.cumsum(out_deg, 0)[src]                  # end of each position's out-list
    later = row_end.sub_(torch.arange(keys.numel())).sub_(1)  # out-neighbours after each position
    cum = torch.cumsum(later, 0)
    tri = torch.zeros(n, dtype=torch.long)
    p0 = 0
    while p0 < keys.numel():
        base = int(cum[p0 - 1]) if p0 else 0
        p1 = min(max(int(torch.searchsorted(cum, base + budget, right=True)), p0 + 1), keys.numel())
        count = later[p0:p1]
        first = torch.repeat_interleave(torch.arange(p0, p1), count)       # wedge (first, second)
        second = torch.arange(first.numel()).sub_(torch.repeat_interleave(torch.cumsum(count, 0) - count, count))
        second.add_(first).add_(1)
        v, w = dst[first], dst[second]                                       # v < w in rank
        wanted = v * n + w
        pos = torch.searchsorted(keys, wanted).clamp_max_(max(keys.numel() - 1, 0))
        closed = keys[pos] == wanted
        for corner in (src[first[closed]], v[closed], w[closed]):
            tri += torch.bincount(corner, minlength=n)
        p0 = p1
    return tri[rank]                                          # back from rank to node ids


__all__ = ["triangle_counts"]
