"""Small synthetic anomaly-detection graphs shared by the tests."""
from __future__ import annotations

import torch
from torch_geometric.data import Data


def hub_anomaly_graph(n: int = 200, n_anom: int = 20, seed: int = 0, num_features: int = 16,
                      hub_degree: int = 10, shift: float = 2.0) -> Data:
    """Random graph whose last ``n_anom`` nodes (label 1) are high-degree hubs with features
    shifted by ``shift``, so every fingerprint column sees them."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (3 * n,), generator=g)
    dst = torch.randint(0, n, (3 * n,), generator=g)
    hubs = torch.arange(n - n_anom, n).repeat_interleave(hub_degree)
    ei = torch.stack([torch.cat([src, hubs]), torch.cat([dst, torch.randint(0, n, (hubs.numel(),), generator=g)])])
    x = torch.rand(n, num_features, generator=g)
    x[n - n_anom:] += shift
    y = torch.zeros(n, dtype=torch.long)
    y[n - n_anom:] = 1
    return Data(x=x, edge_index=torch.cat([ei, ei.flip(0)], 1), y=y, num_nodes=n)
