"""Independent dense references and small synthetic graphs for the RGVT tests."""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import erf
from torch_geometric.data import Data


def dense_operators(edge_index: torch.Tensor, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A_rw, A_sym of the undirected graph with exactly one self-loop per node (float64, dense)."""
    a = np.zeros((n, n))
    ei = edge_index.numpy()
    a[ei[0], ei[1]] = 1.0
    a[ei[1], ei[0]] = 1.0
    np.fill_diagonal(a, 1.0)
    deg = a.sum(axis=1)
    return a / deg[:, None], a / np.sqrt(deg)[:, None] / np.sqrt(deg)[None, :]


def dense_views(x: np.ndarray, rw: np.ndarray, sym: np.ndarray) -> np.ndarray:
    """[N, F, 5] in the order X, A_rw X, A_sym X, A_rw^2 X, A_sym^2 X."""
    return np.stack([x, rw @ x, sym @ x, rw @ (rw @ x), sym @ (sym @ x)], axis=-1)


def dense_phi(v: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
    """phi(v) = W1 GELU(W0 v + b0) + b1 applied to the last axis (exact erf GELU)."""
    h = v @ weights["mlp.lins.0.weight"].T.astype(np.float64) + weights["mlp.lins.0.bias"]
    h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
    return (h @ weights["mlp.lins.1.weight"].T.astype(np.float64) + weights["mlp.lins.1.bias"])[..., 0]


def dense_rgvt(x: np.ndarray, edge_index: torch.Tensor, weights: dict[str, np.ndarray], depth: int) -> list[np.ndarray]:
    """[Psi^1(X), ..., Psi^depth(X)] with dense float64 algebra."""
    rw, sym = dense_operators(edge_index, x.shape[0])
    out, cur = [], x.astype(np.float64)
    for _ in range(depth):
        cur = dense_phi(dense_views(cur, rw, sym), weights)
        out.append(cur)
    return out


def messy_graph(n: int = 40, f: int = 12, seed: int = 0) -> Data:
    """A random graph with duplicate edges, one-directional edges, self-loops and an isolated node."""
    g = torch.Generator().manual_seed(seed)
    e = torch.randint(0, n - 1, (2, 3 * n), generator=g)            # node n-1 stays isolated
    e = torch.cat([e, e[:, :10], torch.tensor([[0, 1, 2], [0, 1, 2]])], dim=1)  # duplicates + self-loops
    x = (torch.rand(n, f, generator=g) < 0.3).float() * torch.rand(n, f, generator=g) * 3
    return Data(x=x, edge_index=e, num_nodes=n)


def planted_graph(n: int = 90, num_classes: int = 3, f: int = 16, seed: int = 0, p_in: float = 0.12,
                  p_out: float = 0.01, signal: float = 1.0) -> Data:
    """Planted-partition graph with class-correlated features and 40/30/30 % train/val/test masks."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % num_classes
    y = y[torch.randperm(n, generator=g)]
    same = y[:, None] == y[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    adj = torch.triu(torch.rand(n, n, generator=g) < prob, diagonal=1)
    edge_index = adj.nonzero().t()
    edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    centers = torch.randn(num_classes, f, generator=g)
    x = signal * centers[y] + torch.randn(n, f, generator=g)
    perm = torch.randperm(n, generator=g)
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    n_tr, n_va = int(0.4 * n), int(0.3 * n)
    masks[0][perm[:n_tr]] = True
    masks[1][perm[n_tr:n_tr + n_va]] = True
    masks[2][perm[n_tr + n_va:]] = True
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=n, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2])
