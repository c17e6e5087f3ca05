r"""ARC's label-free feature alignment: project any graph's features to :math:`d_u` columns whose
*position* means the same thing on every graph.

Liu et al., "ARC: A Generalist Graph Anomaly Detector with In-Context Learning", NeurIPS 2024
(anomaly-detection spec §6.1). Per graph, with no labels:

1. optional row normalisation :math:`x_i \leftarrow x_i / \sum_k x_{ik}` (zero rows stay zero);
   ARC does this only for Amazon, YelpChi, Tolokers and T-Finance;
2. if :math:`d < d_u`, a Gaussian random projection to 256 columns (fixed ``random_state=0``);
3. :math:`X_p = \mathrm{PCA}_{d_u}(X)` (fixed ``random_state=0``);
4. smoothness sort: with :math:`X_s` the column-wise min-max scaling of :math:`X_p` and
   :math:`E` the (directed, both-direction) edge set,

   .. math::
       s_k = \frac{1}{|E|} \sum_{(i,j) \in E} \big(X_s[i,k] - X_s[j,k]\big)^2,

   and the **unscaled** columns of :math:`X_p` are reordered by ascending :math:`s_k`: column 0
   is the smoothest (smallest edge-difference energy), the last one the least smooth.

Self-loops add zero terms and only change :math:`|E|`, a factor shared by every column, so
the order is the same with or without them; this module therefore drops them.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from omnigraph.datasets.flags import graph_flag
from omnigraph.ops import normalize_rows, simple_undirected


def smoothness(x: Tensor, edge_index: Tensor) -> Tensor:
    r"""Edge-difference energy :math:`s_k` of every column of ``x`` after min-max scaling.

    Args:
        x: ``[N, F]`` features.
        edge_index: ``[2, E]`` directed edges (pass both directions for an undirected graph).

    Returns:
        ``[F]`` smoothness, lower is smoother. A constant column (min = max) scales to 0 and has
        :math:`s_k = 0`; a graph without edges gives all zeros.
    """
    lo, hi = x.min(dim=0).values, x.max(dim=0).values
    span = hi - lo
    xs = (x - lo) / torch.where(span > 0, span, torch.ones_like(span))
    if edge_index.size(1) == 0:
        return torch.zeros(x.size(1), dtype=x.dtype)
    diff = xs[edge_index[0]] - xs[edge_index[1]]
    return diff.pow(2).sum(dim=0) / edge_index.size(1)


class ARCAlign(BaseTransform):
    r"""ARC's per-graph alignment: (row-normalise) → (random projection) → PCA → smoothness sort.

    Deterministic and label-free: the projection and the PCA use ``random_state`` and only
    ``x`` and ``edge_index`` are read. As a PyG transform it returns a copy of ``data`` with
    ``x`` replaced by the ``[N, d]`` aligned features; :meth:`align` is the tensor form.

    Args:
        d: output dimension :math:`d_u` (64 in ARC).
        projection_dim: width of the Gaussian random projection applied when the input has
            fewer than ``d`` columns (256 in ARC).
        row_normalize: row-normalise first; ``None`` reads ``data.row_normalize`` (default False).
        random_state: seed of the projection and of the PCA (ARC fixes 0).

    Graphs with fewer than ``d`` nodes (or a rank-deficient PCA input) get only
    ``min(d, N, F')`` PCA columns; the remaining columns are zero and placed **last**, so the
    informative columns keep their smoothness ranks.
    """

    def __init__(self, d: int = 64, projection_dim: int = 256, row_normalize: bool | None = None,
                 random_state: int = 0):
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        if projection_dim < d:
            raise ValueError(f"projection_dim ({projection_dim}) must be >= d ({d})")
        self.d = d
        self.projection_dim = projection_dim
        self.row_normalize = row_normalize
        self.random_state = random_state

    def align(self, x: Tensor, edge_index: Tensor, row_normalize: bool = False) -> Tensor:
        """Aligned features ``[N, d]`` (float32) for raw features ``x`` ``[N, F]``."""
        from sklearn.decomposition import PCA
        from sklearn.exceptions import DataDimensionalityWarning
        from sklearn.random_projection import GaussianRandomProjection

        if x.dim() != 2:
            raise ValueError(f"x must have shape [N, F], got {list(x.shape)}")
        n = x.size(0)
        x = x.detach().float().cpu()
        if row_normalize:
            x = normalize_rows(x)
        # float64 from here to the sort: in float32 the SVD's rounding (which depends on the row
        # order) rotates components of nearly equal variance into each other (gad/reddit: 4 of 64)
        feats = x.double().numpy()
        if feats.shape[1] < self.d:
            # too few columns for a d-dim PCA: lift them to projection_dim random directions first
            with warnings.catch_warnings():  # sklearn warns that this "projection" does not reduce
                warnings.simplefilter("ignore", DataDimensionalityWarning)
                feats = GaussianRandomProjection(n_components=self.projection_dim,
                                                 random_state=self.random_state).fit_transform(feats)
        k = min(self.d, n, feats.shape[1])
        proj = torch.from_numpy(np.ascontiguousarray(
            PCA(n_components=k, random_state=self.random_state).fit_transform(feats), dtype=np.float64))
        edges = simple_undirected(edge_index.cpu(), n, self_loops=False)
        s = smoothness(proj, edges)
        order = torch.sort(s, stable=True).indices  # ascending: smoothest column first
        self.smoothness_ = s[order].float()
        out = proj[:, order].float()
        if k < self.d:
            out = torch.cat([out, out.new_zeros(n, self.d - k)], dim=1)
        return out

    def forward(self, data: Data) -> Data:
        flag = graph_flag(data, "row_normalize", self.row_normalize, default=False)
        data.x = self.align(data.x, data.edge_index, row_normalize=flag)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d}, projection_dim={self.projection_dim}, " \
               f"row_normalize={self.row_normalize}, random_state={self.random_state})"


__all__ = ["ARCAlign", "smoothness"]
