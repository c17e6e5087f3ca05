r"""Pretraining of the RGVT encoder with Lightning (node-classification spec, section 2.6).

The encoder :math:`\Psi` and one fresh ``mlp`` head per source graph are trained jointly,
full batch: every epoch is one Adam step on

.. math::
    \mathcal{L} = \sum_{g} \mathrm{CE}\bigl(h_g(\Psi^{L}(X_g))[\mathrm{train}_g],\; y_g[\mathrm{train}_g]\bigr),
    \qquad L = \texttt{max\_depth} = 8,

with gradients through all :math:`L` recurrent steps, followed by a no-grad validation pass.
Training stops after ``patience`` epochs without a strict gain in validation accuracy (the
mean over source graphs when there are several), and the **encoder** state of the best
validation epoch is returned; the heads are discarded. The reference pretrains on ogbn-arxiv
alone (Adam 5e-3, wd 0, <= 2500 epochs, patience 200).
"""
from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader

from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.models.rgvt_head import RGVTHead
from omnigraph.ops import RGVTOperators
from omnigraph.training._trainer import fit_lightning, resolve_resume
from omnigraph.validation import check_graph, check_node_labels

#: the best-validation Lightning checkpoint of a run with ``out_dir`` (``last.ckpt``, to resume, is written as well)
CHECKPOINT = {"monitor": "val_acc", "mode": "max", "save_top_k": 1, "filename": "best-{epoch}-{val_acc:.4f}"}


@dataclass
class RGVTSource:
    """One source graph, preprocessed once: raw features, operators, labels and split."""

    x: Tensor
    operators: RGVTOperators
    y: Tensor
    train_idx: Tensor
    val_idx: Tensor
    num_classes: int

    def to(self, device) -> RGVTSource:
        return RGVTSource(self.x.to(device), self.operators.to(device), self.y.to(device),
                          self.train_idx.to(device), self.val_idx.to(device), self.num_classes)


def prepare_sources(graphs) -> list[RGVTSource]:
    """Validate source graphs (features, labels, train/val masks) and build their operators."""
    from torch_geometric.data import Data

    if isinstance(graphs, Data):
        graphs = [graphs]
    graphs = list(graphs)
    if not graphs:
        raise ValueError("pretrain_rgvt needs at least one labelled source graph")
    sources = []
    for data in graphs:
        check_graph(data)
        train, val = check_node_labels(data)
        labelled = data.y[train | val]
        sources.append(RGVTSource(data.x.float(), RGVTEncoder.build_operators(data.edge_index, data.num_nodes),
                                  data.y.long(), train.nonzero().flatten(), val.nonzero().flatten(),
                                  int(labelled.max()) + 1))
    return sources


class FullBatchGraphs(L.LightningDataModule):
    """Source graphs for full-batch training: each epoch is a single batch holding every graph.

    The loaders yield the list of graph ids; the graphs themselves (features, operators,
    labels) are prepared once in :meth:`setup` and moved to the device by the module.
    """

    def __init__(self, graphs):
        super().__init__()
        self.graphs = graphs
        self.sources: list[RGVTSource] | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.sources is None:
            self.sources = prepare_sources(self.graphs)

    def _loader(self) -> DataLoader:
        ids = list(range(len(self.sources)))
        return DataLoader([ids], batch_size=None, shuffle=False)

    def train_dataloader(self) -> DataLoader:
        return self._loader()

    def val_dataloader(self) -> DataLoader:
        return self._loader()


class RGVTPretrainModule(L.LightningModule):
    """Encoder + one head per source graph; full-batch cross-entropy at depth ``max_depth``.

    Args:
        encoder: the :class:`RGVTEncoder` to train.
        in_channels, num_classes: per source graph, its feature dimension and class count.
        max_depth: recurrence depth during pretraining (8).
        lr, weight_decay: Adam settings for encoder and heads (5e-3, 0).
        head, hidden_channels: head kind and width (``"mlp"``, 128).
        seed: seeds the head initialisation.
        chunk_size: encoder column chunks (None: automatic).
    """

    def __init__(self, encoder: RGVTEncoder, in_channels: Sequence[int], num_classes: Sequence[int],
                 max_depth: int = 8, lr: float = 5e-3, weight_decay: float = 0.0, head: str = "mlp",
                 hidden_channels: int = 128, seed: int = 0, chunk_size: int | None = None):
        super().__init__()
        if len(in_channels) != len(num_classes):
            raise ValueError("in_channels and num_classes need one entry per source graph")
        self.encoder = encoder
        gen = torch.Generator().manual_seed(int(seed))
        self.heads = nn.ModuleList([RGVTHead(f, c, head, hidden_channels, generator=gen)
                                    for f, c in zip(in_channels, num_classes)])
        self.max_depth, self.lr, self.weight_decay, self.chunk_size = int(max_depth), lr, weight_decay, chunk_size
        self.sources: list[RGVTSource] = []
        self.best_val_acc, self.best_epoch = -1.0, -1
        self.best_encoder_state: dict[str, Tensor] | None = None
        self.train_losses: list[float] = []

    def on_fit_start(self) -> None:
        self.sources = [s.to(self.device) for s in self.trainer.datamodule.sources]

    def _logits(self, g: int, rows: Tensor) -> Tensor:
        src = self.sources[g]
        z = self.encoder(src.x, depth=self.max_depth, operators=src.operators, rows=rows, chunk_size=self.chunk_size)
        return self.heads[g](z)

    def training_step(self, batch, batch_idx: int) -> Tensor:
        loss = 0.0
        for g in batch:
            src = self.sources[int(g)]
            loss_g = F.cross_entropy(self._logits(int(g), src.train_idx), src.y[src.train_idx])
            self.log(f"train_loss_graph{int(g)}", loss_g, on_step=False, on_epoch=True, batch_size=1)
            loss = loss + loss_g
        self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True, batch_size=1)
        self.train_losses.append(float(loss.detach()))
        return loss

    def validation_step(self, batch, batch_idx: int) -> None:
        accs = []
        for g in batch:
            src = self.sources[int(g)]
            pred = self._logits(int(g), src.val_idx).argmax(-1)
            acc = (pred == src.y[src.val_idx]).float().mean()
            self.log(f"val_acc_graph{int(g)}", acc, on_step=False, on_epoch=True, batch_size=1)
            accs.append(acc)
        val_acc = torch.stack(accs).mean()
        self.log("val_acc", val_acc, prog_bar=True, on_step=False, on_epoch=True, batch_size=1)
        if float(val_acc) > self.best_val_acc:  # strict gain, as the early stopping below
            self.best_val_acc, self.best_epoch = float(val_acc), int(self.current_epoch)
            self.best_encoder_state = {k: v.detach().cpu().clone() for k, v in self.encoder.state_dict().items()}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)

    # the best-validation bookkeeping lives outside the state dict: carry it in checkpoints so
    # that a resumed run returns the same encoder as an uninterrupted one
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["rgvt_best"] = {"val_acc": self.best_val_acc, "epoch": self.best_epoch,
                                   "encoder_state": self.best_encoder_state, "train_losses": list(self.train_losses)}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        best = checkpoint.get("rgvt_best")
        if best is not None:
            self.best_val_acc, self.best_epoch = float(best["val_acc"]), int(best["epoch"])
            self.best_encoder_state = best["encoder_state"]
            self.train_losses = [float(v) for v in best["train_losses"]]


def pretrain_rgvt(graphs, max_depth: int = 8, max_epochs: int | None = 2500, patience: int = 200, seed: int = 0,
                  devices: int | str | list = "auto", strategy: str = "auto", accelerator: str = "auto",
                  num_nodes: int = 1, out_dir: str | os.PathLike | None = None, lr: float = 5e-3,
                  weight_decay: float = 0.0, head: str = "mlp", hidden_channels: int = 128, adj_max_hop: int = 2,
                  vt_depth: int = 2, encoder: RGVTEncoder | None = None, chunk_size: int | None = None,
                  progress_bar: bool = True, resume_from: str | os.PathLike | None = None,
                  callbacks: Sequence | None = None) -> RGVTEncoder:
    """Pretrain an RGVT encoder on one or more labelled source graphs (spec 2.6).

    Args:
        graphs: a ``Data`` or a list of them with raw ``x``, ``edge_index``, ``y`` and 1-D
            boolean ``train_mask`` / ``val_mask`` (one head per graph, losses summed).
        max_depth: recurrence depth L during pretraining.
        max_epochs: epoch budget (one full-batch step each; None: 2500).
        patience: stop after this many epochs without a strict gain in validation accuracy.
        seed: seeds the encoder and head initialisation; same seed, same encoder on CPU.
        devices, strategy, accelerator, num_nodes: passed to ``lightning.Trainer``. Under DDP
            every process trains on the full batch of every graph, so the averaged gradient is
            the single-process one.
        out_dir: if given, CSV logs (``out_dir/logs``), the best and the last Lightning
            checkpoints (``out_dir/checkpoints``) and the returned encoder (``out_dir/model``) go there.
        encoder: continue from this encoder instead of a fresh one.
        resume_from: continue an interrupted run from its Lightning checkpoint: ``"last"``
            (``out_dir/checkpoints/last.ckpt``) or a ``.ckpt`` path; pass the arguments of the
            interrupted run. On the CPU the result equals that of an uninterrupted run.
        callbacks: extra Lightning callbacks.

    Returns:
        the encoder at the best validation epoch, on CPU, in eval mode. Its ``card_`` dict
        records the best epoch, the best validation accuracy and the epochs run.
    """
    max_epochs = 2500 if max_epochs is None else int(max_epochs)
    if max_epochs < 1 or patience < 1 or max_depth < 1:
        raise ValueError(f"max_epochs, patience and max_depth must be >= 1, got {max_epochs}, {patience}, "
                         f"{max_depth}")
    resolve_resume(resume_from, out_dir)  # fail before the operators are built
    data = FullBatchGraphs(graphs)
    data.setup()
    if encoder is None:
        encoder = RGVTEncoder(adj_max_hop=adj_max_hop, vt_depth=vt_depth)
        encoder.reset_parameters(torch.Generator().manual_seed(int(seed)))
    module = RGVTPretrainModule(encoder, [s.x.size(1) for s in data.sources], [s.num_classes for s in data.sources],
                                max_depth=max_depth, lr=lr, weight_decay=weight_decay, head=head,
                                hidden_channels=hidden_channels, seed=seed + 1, chunk_size=chunk_size)
    from lightning.pytorch.callbacks import EarlyStopping

    # min_delta=0 with mode="max" stops after `patience` epochs without a strict gain
    early = EarlyStopping(monitor="val_acc", mode="max", patience=patience, min_delta=0.0)
    trainer = fit_lightning(module, max_epochs=max_epochs, datamodule=data, out_dir=out_dir, checkpoint=CHECKPOINT,
                            callbacks=[early, *(callbacks or [])], resume_from=resume_from, accelerator=accelerator,
                            devices=devices, strategy=strategy, num_nodes=num_nodes, progress_bar=progress_bar,
                            log_every_n_steps=1, check_val_every_n_epoch=1, deterministic=False)
    encoder = copy.deepcopy(module.encoder).cpu().eval()
    if module.best_encoder_state is not None:
        encoder.load_state_dict(module.best_encoder_state)
    encoder.card_ = {"method": "RGVT (Lee et al., ICML 2026)", "max_depth": max_depth, "seed": seed, "lr": lr,
                     "weight_decay": weight_decay, "patience": patience, "epochs_run": int(trainer.current_epoch),
                     "best_epoch": module.best_epoch, "best_val_acc": round(module.best_val_acc, 6),
                     "num_sources": len(data.sources)}
    if out_dir is not None and trainer.is_global_zero:
        encoder.save_pretrained(Path(out_dir) / "model", card=encoder.card_)
    return encoder


__all__ = ["FullBatchGraphs", "RGVTPretrainModule", "RGVTSource", "prepare_sources", "pretrain_rgvt"]
