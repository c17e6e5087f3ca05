r"""Training GraphAny's attention MLP with Lightning (node-classification spec §3.6).

Zhao et al., "Fully-inductive Node Classification on Arbitrary Graphs", ICLR 2025.

Schedule of the reference run, reproduced here:

* one Lightning "epoch" is exactly one optimisation step, so ``max_epochs = steps``;
* per source graph a batch is 128 shuffled training nodes; the references are the other
  training nodes (plus the first half of the batch when fewer than the batch remain, which
  happens on tiny graphs such as Wisconsin); every channel draws its own
  ``n_per_label_examples`` references per class before its least-squares solve;
* loss: cross-entropy of the fused logits, summed over source graphs;
* AdamW (lr 2e-4), weight decay 0.02 on tensors with >= 2 dimensions only;
* validation accuracy (all training labels as references, eval mode) every 5 epochs;
  the **final** model is returned, not the best-validation one.

The reference scales the learning rate by the number of GPUs; omnigraph uses ``lr`` as given.
Everything stochastic (initialisation, batches, reference sampling, dropout) follows ``seed``;
the same seed gives the same weights on the CPU.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import DataLoader

from omnigraph.models.graphany import GraphAnyModel
from omnigraph.training._trainer import fit_lightning, resolve_resume
from omnigraph.validation import check_graph


@dataclass
class GraphAnyGraph:
    """One graph prepared for training/validation: propagated channels and cached eval inputs.

    Attributes:
        name: label used in logs.
        features: channel feature matrices ``[N, F]`` (CPU, label-free).
        y: ``[N]`` labels (only training and validation entries are read).
        train_index / val_index: node ids of the masks (``val_index`` may be empty).
        num_classes: C = ``max(y[train ∪ val]) + 1``.
        val_logits / val_dist: channel logits and distance features of the validation nodes
            with all training nodes as references (independent of the MLP, so cached).
    """

    name: str
    features: list[Tensor]
    y: Tensor
    train_index: Tensor
    val_index: Tensor
    num_classes: int
    val_logits: Tensor | None = None
    val_dist: Tensor | None = None

    @classmethod
    def from_data(cls, model: GraphAnyModel, data, name: str = "graph") -> GraphAnyGraph:
        check_graph(data)
        n = data.num_nodes
        y = getattr(data, "y", None)
        if y is None or y.dim() != 1 or y.numel() != n:
            raise ValueError(f"{name}: data.y must be a 1-D tensor of length {n}")
        masks = {}
        for key in ("train_mask", "val_mask"):
            m = getattr(data, key, None)
            if m is None:
                if key == "train_mask":
                    raise ValueError(f"{name}: data.train_mask is missing; GraphAny trains on labelled nodes")
                m = torch.zeros(n, dtype=torch.bool)
            if m.dtype != torch.bool or m.shape != (n,):
                raise ValueError(f"{name}: data.{key} must be a boolean tensor of shape [{n}] "
                                 f"(pick one split column first)")
            masks[key] = m.cpu()
        train_index = masks["train_mask"].nonzero().flatten()
        val_index = masks["val_mask"].nonzero().flatten()
        if train_index.numel() < 2:
            raise ValueError(f"{name}: data.train_mask selects {train_index.numel()} nodes; need at least 2")
        y = y.long().cpu()
        used = torch.cat([train_index, val_index])
        if int(y[used].min()) < 0:
            raise ValueError(f"{name}: data.y has negative class ids on training/validation nodes")
        graph = cls(name, model.channel_features(data.x.detach().cpu(), data.edge_index.cpu(), n), y,
                    train_index, val_index, int(y[used].max()) + 1)
        if val_index.numel():
            with torch.no_grad():
                weights = model.solve(graph.features, y, train_index, graph.num_classes)
                graph.val_logits = model.channels.apply(graph.features, weights, rows=val_index)
                graph.val_dist = model.distance_features(graph.val_logits)
        return graph


def reference_nodes(train_index: Tensor, batch: Tensor) -> Tensor:
    """Training nodes outside the batch; on graphs too small for that, add half the batch back."""
    refs = train_index[~torch.isin(train_index, batch)]
    if refs.numel() < batch.numel():
        refs = torch.cat([refs, batch[: batch.numel() // 2]])
    return refs


class GraphAnyModule(L.LightningModule):
    """LightningModule around :class:`GraphAnyModel` (one optimisation step per epoch).

    Args:
        model: the model whose attention MLP is trained.
        graphs: prepared source graphs; one batch is drawn from each per step.
        val_graphs: graphs whose validation accuracy is logged (default ``graphs``).
        lr, weight_decay: AdamW settings (decay only on >= 2-D tensors).
        batch_size: training nodes per graph and step.
        seed: seeds batch and reference sampling (offset by the process rank under DDP).
    """

    def __init__(self, model: GraphAnyModel, graphs: list[GraphAnyGraph], val_graphs=None, lr: float = 2e-4,
                 weight_decay: float = 0.02, batch_size: int = 128, seed: int = 0):
        super().__init__()
        if not graphs:
            raise ValueError("need at least one source graph")
        self.model = model
        self.graphs = graphs
        self.val_graphs = [g for g in (graphs if val_graphs is None else val_graphs) if g.val_logits is not None]
        self.lr, self.weight_decay, self.batch_size, self.seed = lr, weight_decay, batch_size, seed
        self.generator = torch.Generator().manual_seed(seed)
        self._restored_generator: Tensor | None = None
        self.history: list[dict] = []

    def on_fit_start(self) -> None:
        self.generator = torch.Generator().manual_seed(self.seed + 100_003 * self.global_rank)
        if self._restored_generator is not None:  # resumed run: continue the batch stream
            self.generator.set_state(self._restored_generator)
            self._restored_generator = None

    # the batch generator and the history are not in the state dict: carry them in checkpoints so
    # that a resumed run ends with the weights of an uninterrupted one
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["graphany"] = {"generator": self.generator.get_state(), "history": list(self.history)}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        state = checkpoint.get("graphany")
        if state is not None:
            self._restored_generator = state["generator"]
            self.history = [dict(h) for h in state["history"]]

    def graph_loss(self, graph: GraphAnyGraph) -> Tensor:
        """Cross-entropy of one sampled batch of ``graph`` (spec §3.6 step 1-5)."""
        gen = self.generator
        perm = torch.randperm(graph.train_index.numel(), generator=gen)
        batch = graph.train_index[perm[: self.batch_size]]
        refs = reference_nodes(graph.train_index, batch)
        weights = self.model.solve(graph.features, graph.y, refs, graph.num_classes, sample=True, generator=gen)
        logits = self.model.channels.apply(graph.features, weights, rows=batch)
        fused, _ = self.model.fuse(logits.to(self.device))
        return F.cross_entropy(fused, graph.y[batch].to(self.device))

    def training_step(self, batch, batch_idx):
        losses = {g.name: self.graph_loss(g) for g in self.graphs}
        total = sum(losses.values())
        for name, value in losses.items():
            self.log(f"loss/{name}", value.detach(), on_step=False, on_epoch=True, batch_size=self.batch_size)
        self.log("train_loss", total.detach(), prog_bar=True, on_step=False, on_epoch=True,
                 batch_size=self.batch_size)
        self.history.append({"epoch": self.current_epoch, "loss": float(total.detach())})
        return total

    def validation_step(self, batch, batch_idx):
        accs = []
        for g in self.val_graphs:
            fused, _ = self.model.fuse(g.val_logits.to(self.device), g.val_dist.to(self.device))
            acc = (fused.argmax(-1).cpu() == g.y[g.val_index]).float().mean()
            accs.append(acc)
            self.log(f"val_acc/{g.name}", acc, batch_size=g.val_index.numel())
        if accs:
            mean = torch.stack(accs).mean()
            self.log("val_acc", mean, prog_bar=True, batch_size=1)
            if self.history:
                self.history[-1]["val_acc"] = float(mean)

    def configure_optimizers(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        return torch.optim.AdamW([
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": self.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ], lr=self.lr)

    # One dummy item per epoch: the batch itself is drawn in training_step from the seeded generator.
    def train_dataloader(self):
        return DataLoader([0], batch_size=1)

    def val_dataloader(self):
        return DataLoader([0], batch_size=1)


@torch.no_grad()
def evaluate(model: GraphAnyModel, graph: GraphAnyGraph) -> tuple[float, float]:
    """``(loss, accuracy)`` on the validation nodes of ``graph`` (eval mode, deterministic)."""
    if graph.val_logits is None:
        raise ValueError(f"{graph.name} has no validation nodes")
    was = model.training
    model.eval()
    try:
        fused, _ = model.fuse(graph.val_logits, graph.val_dist)
    finally:
        model.train(was)
    y = graph.y[graph.val_index].to(fused.device)
    return float(F.cross_entropy(fused, y)), float((fused.argmax(-1) == y).float().mean())


def pretrain_graphany(data_or_list, steps: int | None = 1000, seed: int = 0, entropy: float = 1.0, n_hidden: int = 32,
                      n_mlp_layer: int = 2, n_per_label_examples: int = 5, attn_temp: float = 5.0,
                      lr: float = 2e-4, weight_decay: float = 0.02, batch_size: int = 128, eval_every: int = 5,
                      val_data=None, names: list[str] | None = None, accelerator: str = "auto",
                      devices="auto", strategy: str = "auto", num_nodes: int = 1,
                      out_dir: str | os.PathLike | None = None, progress_bar: bool = True,
                      resume_from: str | os.PathLike | None = None,
                      callbacks: Sequence | None = None) -> GraphAnyModel:
    """Train a GraphAny attention MLP on one or more labelled source graphs.

    Args:
        data_or_list: a PyG ``Data`` or a list of them (each with ``y``, ``train_mask`` and
            optionally ``val_mask``).
        steps: optimisation steps (= Lightning epochs); None means 1000 (the released runs;
            the Cora checkpoint used 500).
        seed: seeds initialisation, batches, reference sampling and dropout.
        entropy, n_hidden, n_mlp_layer, n_per_label_examples, attn_temp: model config
            (the Wisconsin checkpoint: 1, 32, 2, 5, 5).
        lr, weight_decay, batch_size: optimiser and batch settings (2e-4, 0.02, 128).
        eval_every: validation period in epochs (5).
        val_data: extra graphs whose validation accuracy is logged (default: the sources).
        names: log names of the source graphs.
        accelerator, devices, strategy, num_nodes: passed to ``lightning.Trainer``. Under DDP
            every process draws its own batches (seed offset by rank); the learning rate is
            not scaled by the number of devices.
        out_dir: if given, CSV logs go to ``out_dir/logs``, a resumable Lightning checkpoint
            (every ``eval_every`` steps) to ``out_dir/checkpoints/last.ckpt`` and the final model
            to ``out_dir/model`` (``save_pretrained`` format); otherwise nothing is written.
        progress_bar: show Lightning's progress bar.
        resume_from: continue an interrupted run from its Lightning checkpoint: ``"last"``
            (``out_dir/checkpoints/last.ckpt``) or a ``.ckpt`` path; pass the arguments of the
            interrupted run. In a single process on the CPU the result equals that of an
            uninterrupted run (under DDP only rank 0's batch generator is checkpointed).
        callbacks: extra Lightning callbacks.

    Returns:
        The final :class:`GraphAnyModel` (eval mode, CPU); ``model.training_history_`` lists
        ``{"epoch", "loss", "val_acc"?}`` per step.
    """
    sources = list(data_or_list) if isinstance(data_or_list, (list, tuple)) else [data_or_list]
    if not sources:
        raise ValueError("data_or_list is empty: pass at least one source graph")
    steps = 1000 if steps is None else int(steps)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    resolve_resume(resume_from, out_dir)  # fail before the channels are propagated
    names = list(names) if names is not None else [f"graph{i}" for i in range(len(sources))]
    if len(names) != len(sources) or len(set(names)) != len(names):
        raise ValueError("names must give one distinct name per source graph")
    L.seed_everything(seed, workers=True, verbose=False)
    model = GraphAnyModel(n_hidden=n_hidden, n_mlp_layer=n_mlp_layer, entropy=entropy, attn_temp=attn_temp,
                          n_per_label_examples=n_per_label_examples)
    graphs = [GraphAnyGraph.from_data(model, d, nm) for d, nm in zip(sources, names)]
    val_graphs = None
    if val_data is not None:
        extra = list(val_data) if isinstance(val_data, (list, tuple)) else [val_data]
        val_graphs = graphs + [GraphAnyGraph.from_data(model, d, f"val{i}") for i, d in enumerate(extra)]
    module = GraphAnyModule(model, graphs, val_graphs, lr=lr, weight_decay=weight_decay, batch_size=batch_size,
                            seed=seed)
    trainer = fit_lightning(module, max_epochs=steps, out_dir=out_dir, checkpoint=None,
                            last_every_n_epochs=eval_every,  # a step takes milliseconds: not every step
                            callbacks=callbacks, resume_from=resume_from, accelerator=accelerator, devices=devices,
                            strategy=strategy, num_nodes=num_nodes, progress_bar=progress_bar,
                            limit_train_batches=1, check_val_every_n_epoch=eval_every,
                            limit_val_batches=1 if module.val_graphs else 0, log_every_n_steps=1,
                            default_root_dir=str(out_dir) if out_dir is not None else None)
    model = module.model.cpu().eval()
    model.training_history_ = module.history
    if out_dir is not None and trainer.is_global_zero:
        model.save_pretrained(Path(out_dir) / "model", card={
            "trained_on": names, "steps": steps, "seed": seed, "lr": lr, "weight_decay": weight_decay,
            "batch_size": batch_size, "paper": "Zhao et al., ICLR 2025 (GraphAny)"})
    return model
