r"""Episodic pretraining of :class:`~omnigraph.models.arc.ARCModel` on labelled source graphs.

Anomaly-detection spec §6.4: every epoch visits the source graphs in a fixed order and takes one
Adam step per graph. One step (an *episode*) on a graph with anomalies :math:`\mathcal P`:

- queries: all of :math:`\mathcal P` plus :math:`|\mathcal P|` random normals :math:`\mathcal N`;
- context: ``num_context`` random normals outside :math:`\mathcal N`;
- loss: :func:`~omnigraph.models.arc.arc_loss` of the queries reconstructed from the context.

The MLP is node-wise, so only the episode's rows of the precomputed propagated features are
encoded: the gradient equals that of ARC's full-graph forward pass, at a fraction of the cost.
Each episode is drawn from its own generator seeded by ``(seed, epoch, graph)``, so a run is a
deterministic function of the seed, also when DDP splits the graphs across ranks.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader

from omnigraph.datasets.flags import graph_flag
from omnigraph.models.arc import ARCModel, arc_features
from omnigraph.training._trainer import fit_lightning, resolve_resume, source_names
from omnigraph.training.config import ARCPretrainConfig
from omnigraph.training.episodes import LOSS_CHECKPOINT, episode_generator
from omnigraph.validation import source_labels


def sample_episode(y: Tensor, num_context: int, generator: torch.Generator,
                   max_queries: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """ARC's training episode: ``(anomalies, normal queries, context)`` node ids of one graph.

    All anomalies are queries; as many normals are drawn without replacement; the context is
    ``num_context`` further normals, disjoint from the normal queries. ``max_queries`` (not in
    ARC, which uses ``None``) keeps a random subset of at most that many anomalies, to bound the
    cost of an episode on graphs with thousands of anomalies.
    """
    y = y.flatten()
    anomalies = (y == 1).nonzero().flatten()
    normals = (y == 0).nonzero().flatten()
    if max_queries is not None and anomalies.numel() > max_queries:
        keep = torch.randperm(anomalies.numel(), generator=generator)[:max_queries]
        anomalies = anomalies[keep.sort().values]
    if anomalies.numel() == 0:
        raise ValueError("a source graph has no anomalies (y == 1); ARC's episodes need labelled anomalies")
    if normals.numel() < anomalies.numel() + num_context:
        raise ValueError(f"a source graph has {normals.numel()} normal nodes, fewer than its {anomalies.numel()} "
                         f"anomalies + {num_context} context nodes that an ARC episode draws")
    perm = normals[torch.randperm(normals.numel(), generator=generator)]
    return anomalies, perm[:anomalies.numel()], perm[anomalies.numel():anomalies.numel() + num_context]


class ARCPretrainModule(L.LightningModule):
    """Lightning wrapper: one training step = one episode on one source graph.

    Args:
        model: the :class:`ARCModel` to train.
        features: per source graph, its ``[L+1, N, d]`` propagated aligned features.
        labels: per source graph, its ``[N]`` binary labels.
        lr, weight_decay: Adam's (ARC: 1e-5, 5e-5).
        num_context: context size per episode (ARC: 10).
        seed: seeds the episodes.
    """

    def __init__(self, model: ARCModel, features: Sequence[Tensor], labels: Sequence[Tensor], lr: float = 1e-5,
                 weight_decay: float = 5e-5, num_context: int = 10, seed: int = 0, max_queries: int | None = None):
        super().__init__()
        self.model = model
        self.features = list(features)
        self.labels = [torch.as_tensor(y).flatten().long() for y in labels]
        self.lr, self.weight_decay, self.num_context, self.seed = lr, weight_decay, num_context, seed
        self.max_queries = max_queries

    def train_dataloader(self) -> DataLoader:
        # the "dataset" is the list of graph ids, visited in a fixed order every epoch
        return DataLoader(torch.arange(len(self.features)), batch_size=1, shuffle=False)

    def training_step(self, batch: Tensor, batch_idx: int) -> Tensor:
        g = int(batch.item())
        gen = episode_generator(self.seed, self.current_epoch, g)
        anomalies, normals, context = sample_episode(self.labels[g], self.num_context, gen, self.max_queries)
        rows = torch.cat([normals, anomalies, context])
        xs = self.features[g][:, rows].to(self.device)
        h = self.model.encode(xs)
        n_n, n_a = normals.numel(), anomalies.numel()
        loss = self.model.loss(h[:n_n], h[n_n:n_n + n_a], h[n_n + n_a:])
        # train_loss: every rank logs it each step, so under DDP report (and monitor) the rank mean;
        # loss_graph{g} is logged by the rank that drew graph g only, so it cannot be synchronised
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True, batch_size=1, sync_dist=True)
        self.log(f"loss_graph{g}", loss, on_step=False, on_epoch=True, batch_size=1)
        return loss

    def configure_optimizers(self):
        params = list(self.model.parameters())
        try:  # the fused kernel (torch >= 2.4) is much faster on CPU for ARC's 10.6 M parameters
            return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay, fused=True)
        except (RuntimeError, TypeError):
            return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)


@dataclass
class ARCSources:
    """Source graphs prepared for pretraining: per graph ``[L+1, N, d]`` features and ``[N]`` labels."""

    features: list[Tensor]
    labels: list[Tensor]

    @property
    def d(self) -> int:
        return self.features[0].size(-1)

    @property
    def num_hops(self) -> int:
        return self.features[0].size(0) - 1


def prepare_sources(graphs, d: int = 64, num_hops: int = 2, row_normalize: bool | None = None,
                    self_loops: bool | None = None, label: Sequence | None = None) -> ARCSources:
    """Align and propagate every source graph once (label-free), and check its binary labels."""
    feats, labels = [], []
    for data, y in source_labels(graphs, label, "pretrain_arc"):
        feats.append(arc_features(data.x, data.edge_index, d=d, num_hops=num_hops,
                                  row_normalize=graph_flag(data, "row_normalize", row_normalize, False),
                                  self_loops=graph_flag(data, "self_loops", self_loops, True)))
        labels.append(y)
    return ARCSources(feats, labels)


def pretrain_arc(graphs, config: ARCPretrainConfig | None = None, *, seed: int = 0, devices: int | str | list = 1,
                 strategy: str = "auto", accelerator: str = "cpu", out_dir: str | os.PathLike | None = None,
                 row_normalize: bool | None = None, self_loops: bool | None = None, label: Sequence | None = None,
                 model: ARCModel | None = None, progress_bar: bool = True, num_nodes: int = 1,
                 resume_from: str | os.PathLike | None = None, callbacks: Sequence | None = None,
                 **overrides) -> ARCModel:
    """Pretrain ARC on labelled source graphs (spec §6.4); defaults are ``params/ARC_10.json``.

    Args:
        graphs: a ``Data`` or a list of them with raw ``x``, ``edge_index`` and binary ``y``, or
            an :class:`ARCSources` from :func:`prepare_sources`. Per-graph ``data.row_normalize``
            / ``data.self_loops`` flags are honoured unless the arguments of the same name
            override them for every graph.
        config: the hyper-parameters (:class:`~omnigraph.training.config.ARCPretrainConfig`:
            epochs, lr, weight_decay, num_context, max_queries and a fresh model's architecture);
            ``overrides`` replace single fields (``pretrain_arc(graphs, epochs=2)``).
        seed: seeds the initialisation and every episode; same seed, same model on CPU.
        devices, strategy, accelerator, num_nodes: passed to ``lightning.Trainer``.
        out_dir: if given, CSV logs (``out_dir/logs``), Lightning checkpoints
            (``out_dir/checkpoints``, with ``last.ckpt``) and the final model (``out_dir/model``,
            safetensors) go there.
        resume_from: continue an interrupted run from its Lightning checkpoint: ``"last"``
            (``out_dir/checkpoints/last.ckpt``) or a ``.ckpt`` path; pass the arguments of the
            interrupted run. The result equals that of an uninterrupted run.
        callbacks: extra Lightning callbacks.
        model: continue from this model instead of a fresh one (its architecture wins).
        label: optional per-graph label overrides.

    Returns:
        the trained :class:`ARCModel` on CPU, in eval mode.
    """
    config = (config or ARCPretrainConfig()).replace(**overrides)
    resolve_resume(resume_from, out_dir)  # fail before the sources are prepared
    if model is None:
        with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
            torch.manual_seed(seed)
            model = ARCModel(**config.model_kwargs())
    names = source_names(graphs)
    if isinstance(graphs, ARCSources):
        sources = graphs
        if (sources.d, sources.num_hops) != (model.in_channels, model.num_hops):
            raise ValueError(f"prepared sources have d={sources.d}, num_hops={sources.num_hops} but the model "
                             f"expects d={model.in_channels}, num_hops={model.num_hops}")
    else:
        sources = prepare_sources(graphs, d=model.in_channels, num_hops=model.num_hops,
                                  row_normalize=row_normalize, self_loops=self_loops, label=label)
    module = ARCPretrainModule(model, sources.features, sources.labels, lr=config.lr,
                               weight_decay=config.weight_decay, num_context=config.num_context, seed=seed,
                               max_queries=config.max_queries)
    with torch.random.fork_rng(devices=[]):
        trainer = fit_lightning(module, max_epochs=int(config.epochs), out_dir=out_dir, checkpoint=LOSS_CHECKPOINT,
                                callbacks=callbacks, resume_from=resume_from, accelerator=accelerator,
                                devices=devices, strategy=strategy, num_nodes=num_nodes, progress_bar=progress_bar,
                                quiet=not progress_bar, log_every_n_steps=1)
    model = module.model.cpu().eval()
    if out_dir is not None and trainer.is_global_zero:
        model.save_pretrained(Path(out_dir) / "model", card={
            "method": "ARC (Liu et al., NeurIPS 2024)", "epochs": int(config.epochs), "seed": seed, "lr": config.lr,
            "weight_decay": config.weight_decay, "num_context": config.num_context, "max_queries": config.max_queries,
            "num_sources": len(sources.features), **({"sources": names} if names else {})})
    return model
