"""Per-graph supervised baselines for the node-classification table: MLP and GCN.

Both are PyG's own models (:class:`torch_geometric.nn.models.MLP`, :class:`~torch_geometric.nn.models.GCN`)
trained from scratch on each target with one fixed recipe, so that every graph gets the same budget:

* 2 layers, 64 hidden units, ReLU, dropout 0.5 on raw features;
* Adam, lr 0.01, weight decay 5e-4, full batch, at most 500 epochs;
* early stopping after 100 epochs without a strict gain in validation accuracy; the best-validation
  weights are kept (test labels are never read).
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from torch import Tensor
from torch_geometric.nn.models import GCN, MLP

from omnigraph._cache import GraphCache
from omnigraph.estimators.node_classifier import NodeClassifierMixin
from omnigraph.ops import simple_undirected
from omnigraph.validation import check_class_ids, check_graph, check_node_labels


class SupervisedBaseline(NodeClassifierMixin, BaseEstimator):
    """``kind="mlp"`` or ``"gcn"`` trained on ``data.train_mask``, selected on ``data.val_mask``."""

    _fitted_attribute = "model_"

    def __init__(self, kind: str = "gcn", hidden: int = 64, num_layers: int = 2, dropout: float = 0.5,
                 lr: float = 0.01, weight_decay: float = 5e-4, max_epochs: int = 500, patience: int = 100,
                 seed: int = 0):
        self.kind, self.hidden, self.num_layers, self.dropout = kind, hidden, num_layers, dropout
        self.lr, self.weight_decay, self.max_epochs, self.patience, self.seed = (
            lr, weight_decay, max_epochs, patience, seed)

    def _forward(self, data) -> Tensor:
        if self.kind == "mlp":
            return self.model_(data.x)
        return self.model_(data.x, self._edges(data))

    def _edges(self, data) -> Tensor:
        if not hasattr(self, "_graphs"):
            self._graphs = GraphCache(1)
        edges = self._graphs.get((data.edge_index,), (data.num_nodes,))
        if edges is None:
            edges = self._graphs.put((data.edge_index,), (data.num_nodes,),
                                     simple_undirected(data.edge_index, data.num_nodes, self_loops=False))
        return edges

    def fit(self, data) -> SupervisedBaseline:
        if self.kind not in ("mlp", "gcn"):
            raise ValueError(f"kind must be 'mlp' or 'gcn', got {self.kind!r}")
        check_graph(data)
        train, val = check_node_labels(data)
        y = data.y
        self.n_classes_ = check_class_ids(y[train | val], "data.y[train_mask | val_mask]")
        self.classes_ = torch.arange(self.n_classes_)
        self.train_labels_ = torch.unique(y[train]).cpu()  # classes seen in training (for score's warning)
        torch.manual_seed(self.seed)
        f_in = data.x.size(1)
        if self.kind == "mlp":
            self.model_ = MLP(in_channels=f_in, hidden_channels=self.hidden, out_channels=self.n_classes_,
                              num_layers=self.num_layers, dropout=self.dropout, norm=None)
        else:
            self.model_ = GCN(in_channels=f_in, hidden_channels=self.hidden, out_channels=self.n_classes_,
                              num_layers=self.num_layers, dropout=self.dropout)
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        best, best_state, wait = -1.0, None, 0
        for epoch in range(self.max_epochs):
            self.model_.train()
            opt.zero_grad()
            loss = F.cross_entropy(self._forward(data)[train], y[train])
            loss.backward()
            opt.step()
            self.model_.eval()
            with torch.no_grad():
                acc = (self._forward(data)[val].argmax(1) == y[val]).float().mean().item()
            if acc > best:
                best, best_state, wait, self.best_epoch_ = acc, copy.deepcopy(self.model_.state_dict()), 0, epoch
            else:
                wait += 1
                if wait >= self.patience:
                    break
        self.model_.load_state_dict(best_state)
        self.model_.eval()
        self.val_accuracy_ = best
        return self

    @torch.no_grad()
    def predict_proba(self, data) -> Tensor:
        self._check_fitted()
        check_graph(data)
        return self._forward(data).softmax(dim=-1)

    def predict(self, data) -> Tensor:
        return self.predict_proba(data).argmax(dim=-1)
