r"""GraphAny: fully-inductive node classification on arbitrary graphs (the baseline).

Zhao, Zhu, Galkin, Mostafa, Bronstein, Tang, "Fully-inductive Node Classification on
Arbitrary Graphs", ICLR 2025.

Pipeline for one graph (node-classification spec §3):

1. :class:`~omnigraph.models.linear_gnn.LinearGNNChannels`: channel features
   :math:`F_c \in \{X, PX, P^2X, (I-P)X, (I-P)^2X\}` and closed-form least-squares logits
   :math:`\hat Y_c = F_c F_c[R]^{+} Y_R` on the reference (training) nodes :math:`R`.
2. :class:`~omnigraph.models.entropy_distance.EntropyDistance`: per node, the
   :math:`t(t-1) = 20` entropy-normalised distances between the :math:`t = 5` channel logits.
3. :class:`GraphAnyAttention`: an MLP maps them to one score per *prediction* channel
   (X, L1, L2) and fuses :math:`z_u = \sum_c \alpha_{u,c} \hat Y_c[u]` with
   :math:`\alpha_u = \mathrm{softmax}(s_u / T)`.

Only the attention MLP is learned; it never sees features or labels directly, which is what
lets one set of weights serve graphs with any feature dimension and label set.
"""
from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from omnigraph._npz import load_npz
from omnigraph.hub import PretrainedMixin
from omnigraph.models.entropy_distance import EntropyDistance
from omnigraph.models.linear_gnn import DEFAULT_CHANNELS, LinearGNNChannels, parse_channel

DEFAULT_PRED_CHANNELS = ("X", "L1", "L2")
#: prefix of the attention MLP in the authors' Lightning state dicts
REFERENCE_PREFIX = "gnn_model.mlp."


class GraphAnyAttention(nn.Module):
    r"""Channel attention of GraphAny: MLP over distance features, then softmax fusion.

    .. math::
        s_u = \mathrm{MLP}(\delta_u) \in \mathbb{R}^{t_{\text{pred}}}, \qquad
        \alpha_u = \mathrm{softmax}(s_u / T), \qquad
        z_u = \sum_c \alpha_{u,c}\, \hat Y_c[u].

    Hidden blocks are ``Linear -> ReLU -> BatchNorm1d -> Dropout``; BatchNorm is applied only
    when the batch has more than one row (a single node skips it, as in the reference). With
    ``num_layers = 1`` the MLP is one ``Linear(in -> out)`` and keeps an unused
    ``BatchNorm1d(out)`` so that the released state dicts load unchanged.

    Args:
        in_channels: distance-feature width :math:`t(t-1)` (20).
        hidden_channels: hidden width.
        out_channels: number of prediction channels (3).
        num_layers: number of Linear layers.
        dropout: dropout after each hidden block (0.5).
        temperature: softmax temperature :math:`T` (5).

    Shapes:
        - input: ``dist [N, in_channels]``, ``y_pred [N, out_channels, C]``
        - output: ``(z [N, C], alpha [N, out_channels])``
    """

    def __init__(self, in_channels: int = 20, hidden_channels: int = 32, out_channels: int = 3,
                 num_layers: int = 2, dropout: float = 0.5, temperature: float = 5.0):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers (n_mlp_layer) must be >= 1, got {num_layers}")
        if not temperature > 0:
            raise ValueError(f"temperature (attn_temp) must be > 0, got {temperature}")
        self.dropout = float(dropout)
        self.temperature = float(temperature)
        self.lins = nn.ModuleList()
        self.bns = nn.ModuleList()
        if num_layers == 1:
            self.lins.append(nn.Linear(in_channels, out_channels))
            self.bns.append(nn.BatchNorm1d(out_channels))  # unused; kept for state-dict parity
        else:
            widths = [in_channels] + [hidden_channels] * (num_layers - 1)
            for a, b in itertools.pairwise(widths):
                self.lins.append(nn.Linear(a, b))
                self.bns.append(nn.BatchNorm1d(b))
            self.lins.append(nn.Linear(hidden_channels, out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for lin in self.lins:
            lin.reset_parameters()
        for bn in self.bns:
            bn.reset_parameters()

    def scores(self, dist: Tensor) -> Tensor:
        """Unnormalised channel scores ``[N, out_channels]``."""
        h = dist
        for lin, bn in zip(self.lins[:-1], self.bns):
            h = F.relu(lin(h))
            if h.size(0) > 1:  # BatchNorm only for batches of more than one row
                h = bn(h)
            h = F.dropout(h, p=self.dropout, training=self.training)
        return self.lins[-1](h)

    def forward(self, dist: Tensor, y_pred: Tensor) -> tuple[Tensor, Tensor]:
        alpha = torch.softmax(self.scores(dist) / self.temperature, dim=-1)
        return (alpha.unsqueeze(-1) * y_pred).sum(1), alpha


class GraphAnyModel(PretrainedMixin, nn.Module):
    r"""The full GraphAny model: LinearGNN channels + entropy distances + attention fusion.

    Args:
        n_hidden: hidden width of the attention MLP.
        n_mlp_layer: Linear layers in the attention MLP (1 = a single Linear).
        entropy: target entropy (bits) of the distance features; stored with the weights
            because the Cora checkpoint needs 2 (spec pitfall 6).
        attn_temp: softmax temperature :math:`T`.
        n_per_label_examples: references sampled per class and channel during training.
        feat_channels: channels whose logits feed the distance features.
        pred_channels: channels fused into the prediction.
        dropout: dropout of the attention MLP.

    Shapes:
        - :meth:`forward`: ``x [N, F]``, ``edge_index [2, E]``, ``y [N]``, ``ref_index [R]``
          -> ``(z [N, C], alpha [N, len(pred_channels)])``
    """

    model_type = "graphany"

    def __init__(self, n_hidden: int = 32, n_mlp_layer: int = 2, entropy: float = 1.0, attn_temp: float = 5.0,
                 n_per_label_examples: int = 5, feat_channels: Sequence[str] = DEFAULT_CHANNELS,
                 pred_channels: Sequence[str] = DEFAULT_PRED_CHANNELS, dropout: float = 0.5):
        super().__init__()
        feat_channels, pred_channels = tuple(feat_channels), tuple(pred_channels)
        for c in feat_channels + pred_channels:
            parse_channel(c)
        if len(feat_channels) < 2:
            raise ValueError(f"feat_channels needs at least 2 channels for distances, got {feat_channels}")
        if n_per_label_examples < 1:
            raise ValueError(f"n_per_label_examples must be >= 1, got {n_per_label_examples}")
        self.n_hidden, self.n_mlp_layer = int(n_hidden), int(n_mlp_layer)
        self.attn_temp = float(attn_temp)
        self.n_per_label_examples = int(n_per_label_examples)
        self.feat_channels, self.pred_channels = feat_channels, pred_channels
        self.dropout = float(dropout)
        # one least-squares solve per distinct channel, shared by features and predictions
        all_channels = feat_channels + tuple(c for c in pred_channels if c not in feat_channels)
        self.channels = LinearGNNChannels(all_channels)
        self.feat_idx = [all_channels.index(c) for c in feat_channels]
        self.pred_idx = [all_channels.index(c) for c in pred_channels]
        self.distance = EntropyDistance(entropy)
        t = len(feat_channels)
        self.attention = GraphAnyAttention(t * (t - 1), n_hidden, len(pred_channels), n_mlp_layer, dropout,
                                           attn_temp)

    @property
    def entropy(self) -> float:
        """Target entropy (bits) of the distance features; settable (e.g. 2 for the Cora weights)."""
        return self.distance.entropy

    @entropy.setter
    def entropy(self, value: float) -> None:
        if not float(value) > 0:
            raise ValueError(f"entropy must be > 0 bits, got {value}")
        self.distance.entropy = float(value)

    def reset_parameters(self) -> None:
        self.attention.reset_parameters()

    def get_config(self) -> dict[str, Any]:
        return {"n_hidden": self.n_hidden, "n_mlp_layer": self.n_mlp_layer, "entropy": self.entropy,
                "attn_temp": self.attn_temp, "n_per_label_examples": self.n_per_label_examples,
                "feat_channels": list(self.feat_channels), "pred_channels": list(self.pred_channels),
                "dropout": self.dropout}

    # -- the three stages, exposed separately so that estimators and training can cache ----------
    def channel_features(self, x: Tensor, edge_index: Tensor, num_nodes: int | None = None) -> list[Tensor]:
        """Propagated feature matrices, one per channel of :attr:`channels` (label-free, cacheable)."""
        return self.channels.propagate(x, edge_index, num_nodes)

    def solve(self, features: Sequence[Tensor], y: Tensor, ref_index: Tensor, num_classes: int,
              sample: bool = False, generator: torch.Generator | None = None) -> list[Tensor]:
        """Least-squares weights per channel on ``ref_index`` (with per-class sampling if ``sample``)."""
        k = self.n_per_label_examples if sample else None
        return self.channels.solve(features, y, ref_index, num_classes, k, generator)

    def fuse(self, logits: Tensor, dist: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``logits [N, t_all, C]`` -> fused ``[N, C]`` and attention ``[N, t_pred]``."""
        if dist is None:
            dist = self.distance_features(logits)
        dist = dist.to(self.attention.lins[0].weight.device)
        y_pred = logits[:, self.pred_idx].to(dist.device)
        return self.attention(dist, y_pred)

    def distance_features(self, logits: Tensor) -> Tensor:
        """Entropy-normalised distances ``[N, t(t-1)]`` of the feature channels (no gradient)."""
        return self.distance(logits[:, self.feat_idx])

    def forward(self, x: Tensor, edge_index: Tensor, y: Tensor, ref_index: Tensor,
                num_classes: int | None = None) -> tuple[Tensor, Tensor]:
        if num_classes is None:
            num_classes = int(y[ref_index].max()) + 1
        features = self.channel_features(x, edge_index)
        logits = self.channels.apply(features, self.solve(features, y, ref_index, num_classes))
        return self.fuse(logits)

    # -- reference weights --------------------------------------------------------------------------
    @classmethod
    def from_reference_npz(cls, path: str | os.PathLike, json_path: str | os.PathLike | None = None,
                           **overrides) -> GraphAnyModel:
        """Load the authors' released weights from the ``.npz`` + ``.json`` pair (read in place).

        The hyper-parameters (including ``entropy``) come from the JSON next to the npz; the
        tensors ``gnn_model.mlp.lins.*`` / ``gnn_model.mlp.bns.*`` map onto :attr:`attention`.
        ``overrides`` replace config values (e.g. ``entropy=2``).
        """
        path = Path(path)
        json_path = Path(json_path) if json_path is not None else path.with_suffix(".json")
        if not path.is_file():
            raise FileNotFoundError(f"GraphAny reference weights not found: {path}")
        if not json_path.is_file():
            raise FileNotFoundError(f"GraphAny reference config not found: {json_path} (expected next to "
                                    f"{path.name})")
        meta = json.loads(json_path.read_text())
        try:
            arch, run = meta["graph_any_config"], meta.get("run_config_subset", {})
            config = {"n_hidden": arch["n_hidden"], "n_mlp_layer": arch["n_mlp_layer"],
                      "entropy": arch["entropy"], "attn_temp": arch["att_temperature"],
                      "feat_channels": arch["feat_channels"], "pred_channels": arch["pred_channels"],
                      "n_per_label_examples": run.get("n_per_label_examples", 5),
                      "dropout": run.get("dropout", 0.5)}
        except KeyError as err:
            raise ValueError(f"{json_path} lacks the GraphAny config key {err}") from None
        config.update(overrides)
        model = cls(**config)
        state = {}
        for key, value in load_npz(path).items():
            if not key.startswith(REFERENCE_PREFIX):
                raise ValueError(f"unexpected tensor {key!r} in {path} (expected {REFERENCE_PREFIX}*)")
            state["attention." + key[len(REFERENCE_PREFIX):]] = torch.from_numpy(np.array(value))
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as err:
            raise ValueError(f"{path} does not match the config in {json_path.name}: {err}") from err
        model.card_ = {"source": meta.get("source", {}), "trained_on": meta.get("trained_on")}
        return model.eval()
