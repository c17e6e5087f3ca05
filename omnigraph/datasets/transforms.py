"""Feature transforms (PyG ``BaseTransform``s) used when preparing source graphs."""
from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform


class TruncatedSVDFeatures(BaseTransform):
    r"""Replace ``x`` by its top-``dim`` truncated-SVD projection :math:`X V_{:dim}` (seeded).

    RGVT's published encoders were pretrained on ogbn-arxiv, whose 128-d node features are dense
    averaged word embeddings. When arxiv is unavailable, projecting a bag-of-words source graph
    to 128 dense dimensions gives the encoder the same kind of input signal. Graphs with at most
    ``dim`` features are returned unchanged.
    """

    def __init__(self, dim: int = 128, seed: int = 0):
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim, self.seed = dim, seed

    def forward(self, data: Data) -> Data:
        from sklearn.decomposition import TruncatedSVD

        if data.x is None or data.x.size(1) <= self.dim:
            return data
        svd = TruncatedSVD(self.dim, random_state=self.seed)
        data = data.clone()
        data.x = torch.from_numpy(svd.fit_transform(data.x.double().numpy())).float()
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(dim={self.dim}, seed={self.seed})"
