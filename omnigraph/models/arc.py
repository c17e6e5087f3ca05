r"""ARC: in-context graph anomaly detection by reconstructing queries from a few normal nodes.

Liu et al., "ARC: A Generalist Graph Anomaly Detector with In-Context Learning", NeurIPS 2024
(anomaly-detection spec §6.2-6.4; reference code ``yixinliu233/ARC`` at ``1f51c6e``).

**Inputs.** Aligned features :math:`\tilde X \in \mathbb{R}^{N \times d_u}` (:class:`ARCAlign`)
propagated with :math:`\hat A = D^{-1/2}(A+I)D^{-1/2}` (or :math:`D^{-1/2}AD^{-1/2}` when
``self_loops=False``, ARC's choice for YelpChi/Facebook): :math:`X^{(0)} = \tilde X`,
:math:`X^{(l)} = \hat A X^{(l-1)}`, :math:`l = 1..L`. This is ``omnigraph.ops.sym_adjacency``.

**Encoder (ego-neighbour residuals).** A shared MLP :math:`f` (``num_layers`` Linear layers,
activation between them, none after the last) and

.. math::
    Z^{(l)} = f(X^{(l)}), \qquad H = \big[Z^{(1)} - Z^{(0)} \,\|\, \cdots \,\|\, Z^{(L)} - Z^{(0)}\big]
    \in \mathbb{R}^{N \times L h}.

**In-context reconstruction.** With the context (labelled normal) embeddings :math:`H_C`,

.. math::
    \mathbf{A} = \mathrm{softmax}_{\text{row}}\Big(\frac{(H_Q W_q + b_q)(H_C W_k + b_k)^\top}{\sqrt{Lh}}\Big),
    \qquad \tilde H_Q = \mathbf{A} H_C,
    \qquad s_i = \lVert H_i - \tilde H_i \rVert_2,

so a query the normal context cannot rebuild scores high. There is no value projection.

**Loss** (query normals :math:`\mathcal N`, anomalies :math:`\mathcal P`):

.. math::
    \mathcal L = \frac{1}{|\mathcal N|}\sum_{i \in \mathcal N} \big(1 - \cos(H_i, \tilde H_i)\big)
      + \frac{1}{|\mathcal P|}\sum_{i \in \mathcal P} \max\big(0, \cos(H_i, \tilde H_i)\big).

ARC's config says ``num_layers=4``, which builds **3** Linear layers; here ``num_layers`` is the
number of Linear layers, so ARC is ``num_layers=3`` (64→1024→1024→1024, ≈10.6 M parameters
with the two 2048×2048 attention projections).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn.resolver import activation_resolver

from omnigraph._cache import GraphCache
from omnigraph.hub import PretrainedMixin
from omnigraph.models.arc_align import ARCAlign
from omnigraph.ops import propagate, sym_adjacency

# arc_features results per graph: a benchmark re-trains and re-scores the same graphs for every
# seed, and the features do not depend on the seed (see omnigraph._cache)
_FEATURE_CACHE = GraphCache(16)


def arc_features(x: Tensor, edge_index: Tensor, d: int = 64, num_hops: int = 2, row_normalize: bool = False,
                 self_loops: bool = True, cache: bool = True) -> Tensor:
    r"""ARC's per-graph input: align to ``d`` columns, then ``[X^{(0)}, ..., X^{(L)}]``.

    Returns:
        ``[num_hops + 1, N, d]`` float32. Label-free and deterministic (fixed PCA seed). The
        result may be shared with later calls on the same tensors: do not modify it in place.
    """
    config = (d, num_hops, bool(row_normalize), bool(self_loops))
    hit = _FEATURE_CACHE.get((x, edge_index), config) if cache else None
    if hit is not None:
        return hit
    aligned = ARCAlign(d=d).align(x, edge_index, row_normalize=row_normalize)
    op = sym_adjacency(edge_index.cpu(), aligned.size(0), self_loops=self_loops)
    out = torch.stack(propagate(op, aligned, num_hops))
    if cache:
        _FEATURE_CACHE.put((x, edge_index), config, out)
    return out


def arc_loss(h_normal: Tensor, rec_normal: Tensor, h_anomaly: Tensor, rec_anomaly: Tensor) -> Tensor:
    r"""ARC's loss: pull normal queries towards their reconstruction, push anomalies to :math:`\cos \le 0`.

    Two ``cosine_embedding_loss`` terms with margin 0 (targets +1 and −1), each a mean over its group.
    """
    if h_normal.size(0) == 0 or h_anomaly.size(0) == 0:
        raise ValueError("arc_loss needs at least one normal and one anomalous query")
    pos = F.cosine_embedding_loss(h_normal, rec_normal, h_normal.new_ones(h_normal.size(0)))
    neg = F.cosine_embedding_loss(h_anomaly, rec_anomaly, -h_anomaly.new_ones(h_anomaly.size(0)))
    return pos + neg


class ARCModel(nn.Module, PretrainedMixin):
    r"""ARC's residual encoder and cross-attention scorer (see the module docstring for the math).

    Args:
        in_channels: aligned feature width :math:`d_u` (64).
        hidden_channels: MLP width :math:`h` (1024).
        num_layers: number of Linear layers in the shared MLP (3, ARC's ``num_layers=4``).
        num_hops: propagation hops :math:`L` (2); the embedding width is ``num_hops * hidden_channels``.
        act: activation between Linear layers (``"elu"``), any name ``torch_geometric`` resolves.
        dropout: dropout before every Linear layer but the first (0 in ARC).

    Shapes:
        - ``encode``: ``[L+1, n, d_u]`` → ``[n, L h]``
        - ``reconstruct`` / ``score``: queries ``[q, L h]``, context ``[c, L h]`` → ``[q, L h]`` / ``[q]``
    """

    model_type = "arc"

    def __init__(self, in_channels: int = 64, hidden_channels: int = 1024, num_layers: int = 3,
                 num_hops: int = 2, act: str = "elu", dropout: float = 0.0):
        super().__init__()
        for name, value, lo in (("in_channels", in_channels, 1), ("hidden_channels", hidden_channels, 1),
                                ("num_layers", num_layers, 1), ("num_hops", num_hops, 1)):
            if int(value) != value or value < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {value}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.in_channels, self.hidden_channels = in_channels, hidden_channels
        self.num_layers, self.num_hops = num_layers, num_hops
        self.act_name, self.dropout = act, dropout
        self.act = activation_resolver(act)
        dims = [in_channels] + [hidden_channels] * num_layers
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))
        self.emb_channels = hidden_channels * num_hops
        self.W_q = nn.Linear(self.emb_channels, self.emb_channels)
        self.W_k = nn.Linear(self.emb_channels, self.emb_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for lin in [*self.lins, self.W_q, self.W_k]:
            lin.reset_parameters()  # torch's default init, as in ARC

    def get_config(self) -> dict[str, Any]:
        return {"in_channels": self.in_channels, "hidden_channels": self.hidden_channels,
                "num_layers": self.num_layers, "num_hops": self.num_hops, "act": self.act_name,
                "dropout": self.dropout}

    # -- encoder -------------------------------------------------------------------------
    def mlp(self, x: Tensor) -> Tensor:
        """The shared node-wise MLP :math:`f`: ``[n, d_u]`` → ``[n, h]``."""
        for i, lin in enumerate(self.lins):
            if i > 0:
                x = F.dropout(x, self.dropout, self.training)
            x = lin(x)
            if i < len(self.lins) - 1:
                x = self.act(x)
        return x

    def encode(self, xs: Tensor | Sequence[Tensor], chunk_size: int | None = None) -> Tensor:
        r"""Residual embeddings :math:`H` from propagated features ``xs = [X^{(0)}, ..., X^{(L)}]``.

        The MLP is node-wise, so any row subset of ``xs`` may be encoded on its own (training
        encodes only the episode's nodes); ``chunk_size`` bounds memory at inference.
        """
        if len(xs) != self.num_hops + 1:
            raise ValueError(f"expected {self.num_hops + 1} propagated feature matrices (hops 0..{self.num_hops}), "
                             f"got {len(xs)}")
        if xs[0].size(-1) != self.in_channels:
            raise ValueError(f"features have {xs[0].size(-1)} columns but the model expects in_channels="
                             f"{self.in_channels}; align them first (ARCAlign(d={self.in_channels}))")
        n = xs[0].size(0)
        if chunk_size is not None and n > chunk_size:
            return torch.cat([self.encode([x[s:s + chunk_size] for x in xs]) for s in range(0, n, chunk_size)])
        z0 = self.mlp(xs[0])
        return torch.cat([self.mlp(x) - z0 for x in xs[1:]], dim=-1)

    def forward(self, x: Tensor, edge_index: Tensor, self_loops: bool = True,
                chunk_size: int | None = None) -> Tensor:
        r"""Embeddings ``[N, L h]`` of every node from **aligned** features ``x`` ``[N, d_u]``."""
        op = sym_adjacency(edge_index, x.size(0), self_loops=self_loops).to(x.device)
        return self.encode(propagate(op, x, self.num_hops), chunk_size=chunk_size)

    # -- in-context scoring --------------------------------------------------------------
    def reconstruct(self, h_query: Tensor, h_context: Tensor) -> Tensor:
        r""":math:`\tilde H_Q = \mathrm{softmax}(Q K^\top / \sqrt{Lh})\, H_C`.

        Computed as :math:`H_Q (W_q^\top K^\top) + b_q K^\top`, which equals :math:`(H_Q W_q^\top + b_q)K^\top`
        but costs :math:`O(q \cdot Lh \cdot c)` instead of :math:`O(q \cdot (Lh)^2)` for a small context.
        """
        if h_context.size(0) == 0:
            raise ValueError("ARC needs at least one context (labelled normal) node")
        k = self.W_k(h_context)                                  # [c, Lh]
        # (k W_q)^T = W_q^T k^T: multiplying in this order is several times faster on CPU
        logits = h_query @ (k @ self.W_q.weight).t() + self.W_q.bias @ k.t()
        attn = torch.softmax(logits / math.sqrt(self.emb_channels), dim=-1)
        return attn @ h_context

    def score(self, h_query: Tensor, h_context: Tensor) -> Tensor:
        r"""Anomaly scores :math:`\lVert H_i - \tilde H_i \rVert_2` ``[q]``; higher = more anomalous."""
        return (h_query - self.reconstruct(h_query, h_context)).norm(dim=-1)

    def loss(self, h_normal: Tensor, h_anomaly: Tensor, h_context: Tensor) -> Tensor:
        """:func:`arc_loss` of normal and anomalous queries reconstructed from one context."""
        rec = self.reconstruct(torch.cat([h_normal, h_anomaly]), h_context)
        return arc_loss(h_normal, rec[:h_normal.size(0)], h_anomaly, rec[h_normal.size(0):])
