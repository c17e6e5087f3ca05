r"""Episodic pretraining of the REFI-GAD scorer (:class:`~omnigraph.models.refi_gad.REFIGADNet`).

Anomaly-detection spec §5.5. The fingerprints of all source graphs are computed once. Every
epoch visits the source graphs in a fixed order with ``episodes_per_graph`` episodes each, one
Adam step per episode. One episode on a graph:

1. ``shots`` normal supports, drawn without replacement;
2. ``shots`` anomalous supports, drawn **with** replacement when the graph has fewer anomalies;
3. from the remaining nodes up to ``num_query_normal`` normal and ``num_query_anomaly``
   anomalous queries, shuffled;
4. loss :meth:`REFIGADNet.loss` (weighted BCE on :math:`\tilde y`, ``pos_weight`` 4).

That is the release's ``support_episodes="labelled"``; ``"normal-k"``, ``"zero-shot"`` and ``"mixed"``
give the scorer the pseudo-supports it gets at test time in the regimes without labelled anomalies
(:func:`sample_pseudo_episode`). After training, :func:`fit_orientation` fits on the same sources the
direction in which their anomalies deviate (stored as the model's ``orientation``; the estimator picks
pseudo-anomalies with it).

Episode ``i`` of epoch ``e`` is drawn from a generator seeded by ``(seed, e, i)`` and the model
initialisation and dropout by ``seed``: the same seed gives the same model on CPU.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from omnigraph.models.pseudo_support import atypicality, orientation_features, pseudo_support_size, ranked
from omnigraph.models.refi_gad import REFIGADNet
from omnigraph.training._trainer import fit_lightning, resolve_resume, source_names
from omnigraph.training.config import SUPPORT_EPISODES, REFIGADPretrainConfig
from omnigraph.training.episodes import LOSS_CHECKPOINT, episode_generator


def sample_episode(y: Tensor, shots: int, num_query_normal: int, num_query_anomaly: int,
                   generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One training episode: ``(normal support, anomalous support, queries, query labels)`` node ids.

    Raises ``ValueError`` when the graph has no anomalies or not more normal nodes than ``shots``.
    """
    y = y.flatten()
    normals = (y == 0).nonzero().flatten()
    anomalies = (y == 1).nonzero().flatten()
    if anomalies.numel() == 0:
        raise ValueError("a source graph has no anomalies (y == 1); REFI-GAD's episodes need labelled anomalies")
    if normals.numel() <= shots:
        raise ValueError(f"a source graph has {normals.numel()} normal nodes; an episode needs more than "
                         f"shots={shots}")
    perm_n = normals[torch.randperm(normals.numel(), generator=generator)]
    s_n, rest_n = perm_n[:shots], perm_n[shots:]
    if anomalies.numel() >= shots:
        perm_a = anomalies[torch.randperm(anomalies.numel(), generator=generator)]
        s_a, rest_a = perm_a[:shots], perm_a[shots:]
    else:  # too few anomalies: with replacement, as the release does
        s_a = anomalies[torch.randint(anomalies.numel(), (shots,), generator=generator)]
        used = torch.zeros(y.numel(), dtype=torch.bool)
        used[s_a] = True
        rest_a = anomalies[~used[anomalies]]
        rest_a = rest_a[torch.randperm(rest_a.numel(), generator=generator)]
    query = torch.cat([rest_n[:num_query_normal], rest_a[:num_query_anomaly]])
    query = query[torch.randperm(query.numel(), generator=generator)]
    return s_n, s_a, query, y[query]


def sample_pseudo_episode(y: Tensor, order: Tensor, kind: str, shots_normal: int, num_query_normal: int,
                          num_query_anomaly: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """An episode with the supports a label-poor regime gives the scorer at test time.

    ``order``: the graph's nodes by ascending atypicality (:func:`~omnigraph.models.pseudo_support.ranked`).
    ``kind="normal-k"``: ``shots_normal`` labelled normals, and the
    :func:`~omnigraph.models.pseudo_support.pseudo_support_size` most atypical other nodes as the
    anomalous support; ``"zero-shot"``: that many least and most atypical nodes. Queries: up to
    ``num_query_normal`` normal and ``num_query_anomaly`` anomalous other nodes (true labels), shuffled.
    """
    y = y.flatten()
    k = max(1, min(pseudo_support_size(y.numel()), (y.numel() - shots_normal) // 3))   # room for queries
    used = torch.zeros(y.numel(), dtype=torch.bool)
    if kind == "normal-k":
        normals = (y == 0).nonzero().flatten()
        if normals.numel() <= shots_normal:
            raise ValueError(f"a source graph has {normals.numel()} normal nodes; a normal-k episode needs more "
                             f"than pseudo_shots_normal={shots_normal}")
        s_n = normals[torch.randperm(normals.numel(), generator=generator)[:shots_normal]]
        used[s_n] = True
        free = order[~used[order]]
    elif kind == "zero-shot":
        free = order
        s_n = free[:k]
    else:
        raise ValueError(f"unknown pseudo-episode kind {kind!r}; use 'normal-k' or 'zero-shot'")
    s_a = free[-k:]
    used[s_n] = True
    used[s_a] = True
    rest = (~used).nonzero().flatten()
    rest = rest[torch.randperm(rest.numel(), generator=generator)]
    query = torch.cat([rest[y[rest] == 0][:num_query_normal], rest[y[rest] == 1][:num_query_anomaly]])
    query = query[torch.randperm(query.numel(), generator=generator)]
    return s_n, s_a, query, y[query]


class EpisodeDataset(Dataset):
    """``len = #graphs x episodes_per_graph`` episodes, graph-major (graph 0's episodes first).

    ``support_episodes`` (see :class:`~omnigraph.training.config.REFIGADPretrainConfig`) picks the
    episode kinds, which alternate with the episode index. Items are
    ``(p_normal [k,5], p_anomaly [k,5], p_query [b,5], y_query [b])``; call
    :meth:`set_epoch` before each epoch (the LightningModule does) to redraw them.
    """

    def __init__(self, fingerprints: Sequence[Tensor], labels: Sequence[Tensor], episodes_per_graph: int = 20,
                 shots: int = 50, num_query_normal: int = 500, num_query_anomaly: int = 50, seed: int = 0,
                 support_episodes: str = "labelled", pseudo_shots_normal: int = 10):
        if len(fingerprints) != len(labels) or not fingerprints:
            raise ValueError("need one label vector per fingerprint, and at least one source graph")
        if support_episodes not in SUPPORT_EPISODES:
            raise ValueError(f"support_episodes must be one of {sorted(SUPPORT_EPISODES)}, got {support_episodes!r}")
        self.kinds, self.pseudo_shots_normal = SUPPORT_EPISODES[support_episodes], int(pseudo_shots_normal)
        self._orders: list[Tensor | None] = [None] * len(fingerprints)   # nodes by atypicality, per graph
        self.fingerprints, self.labels = list(fingerprints), [y.flatten().long() for y in labels]
        self.episodes_per_graph, self.shots = int(episodes_per_graph), int(shots)
        self.num_query_normal, self.num_query_anomaly = int(num_query_normal), int(num_query_anomaly)
        self.seed, self.epoch = int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.fingerprints) * self.episodes_per_graph

    def __getitem__(self, index: int):
        g = index // self.episodes_per_graph
        p, y = self.fingerprints[g], self.labels[g]
        generator = episode_generator(self.seed, self.epoch, index)
        kind = self.kinds[index % len(self.kinds)]
        if kind == "labelled":
            s_n, s_a, q, y_q = sample_episode(y, self.shots, self.num_query_normal, self.num_query_anomaly,
                                              generator)
        else:
            s_n, s_a, q, y_q = sample_pseudo_episode(y, self._order(g), kind, self.pseudo_shots_normal,
                                                     self.num_query_normal, self.num_query_anomaly, generator)
        return p[s_n], p[s_a], p[q], y_q

    def _order(self, g: int) -> Tensor:
        if self._orders[g] is None:
            p = self.fingerprints[g]
            self._orders[g] = ranked(atypicality(p), p)
        return self._orders[g]


class EpisodeDataModule(L.LightningDataModule):
    """Serves :class:`EpisodeDataset` one episode per step, in order (DDP splits it across ranks)."""

    def __init__(self, dataset: EpisodeDataset):
        super().__init__()
        self.dataset = dataset

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.dataset, batch_size=None, shuffle=False, num_workers=0)


class REFIGADPretrainModule(L.LightningModule):
    """Adam on :meth:`REFIGADNet.loss`; logs ``train_loss`` (step, epoch) and ``train_score_gap``
    (mean query score of anomalies minus that of normals, per epoch)."""

    def __init__(self, model: REFIGADNet, lr: float = 1e-4, weight_decay: float = 5e-5, pos_weight: float = 4.0,
                 legacy_logit_bce: bool = False):
        super().__init__()
        self.model = model
        self.lr, self.weight_decay = lr, weight_decay
        self.pos_weight, self.legacy_logit_bce = pos_weight, legacy_logit_bce

    def on_train_epoch_start(self) -> None:
        dm = self.trainer.datamodule
        if dm is not None:
            dm.dataset.set_epoch(self.current_epoch)

    def training_step(self, batch, batch_idx: int) -> Tensor:
        p_n, p_a, p_q, y_q = batch
        score = self.model(p_n, p_a, p_q)
        loss = self.model.loss(score, y_q, self.pos_weight, self.legacy_logit_bce)
        gap = score[y_q == 1].mean() - score[y_q == 0].mean() if bool((y_q == 1).any()) else score.new_zeros(())
        # sync_dist: under DDP every rank logs these keys each step; report (and monitor) the rank mean
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=1, sync_dist=True)
        self.log("train_score_gap", gap, on_step=False, on_epoch=True, batch_size=1, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.lr, weight_decay=self.weight_decay)


def source_fingerprints(graphs, fingerprint: dict | None = None, row_normalize: bool | None = None,
                        self_loops: bool | None = None, label: Sequence | None = None
                        ) -> tuple[list[Tensor], list[Tensor]]:
    """Fingerprints ``[N_g, 5]`` and binary labels of the source graphs (``Data`` objects)."""
    from omnigraph.models.fingerprint import graph_fingerprint
    from omnigraph.validation import source_labels

    fp_cfg = dict(fingerprint or {})
    fps, labels = [], []
    for data, y in source_labels(graphs, label, "pretrain_refi_gad"):
        fps.append(graph_fingerprint(data, fp_cfg.get("sim_scale", "edges"), fp_cfg.get("ties", "average"),
                                     row_normalize, self_loops, cache=False))
        labels.append(y)
    return fps, labels


def fit_orientation(fingerprints: Sequence[Tensor], labels: Sequence[Tensor], c: float = 1.0) -> list[float]:
    r"""The pseudo-anomaly orientation ``w [10]``: a logistic regression of the source graphs' labels on
    :func:`~omnigraph.models.pseudo_support.orientation_features` of their ranked fingerprints (L2,
    inverse strength ``c``), each graph's normal and anomalous nodes weighing one half each, so that every
    source counts the same whatever its size and anomaly rate. Deterministic (lbfgs)."""
    from sklearn.linear_model import LogisticRegression

    feats, ys, weights = [], [], []
    for p, y in zip(fingerprints, labels):
        y = y.flatten().long().numpy()
        num_anomalies = int(y.sum())
        if num_anomalies in (0, y.size):
            raise ValueError("every source graph needs normal and anomalous nodes to fit the orientation")
        feats.append(orientation_features(p).numpy())
        ys.append(y)
        weights.append(np.where(y == 1, 0.5 / num_anomalies, 0.5 / (y.size - num_anomalies)))
    lr = LogisticRegression(C=c, max_iter=2000).fit(np.concatenate(feats), np.concatenate(ys),
                                                    sample_weight=np.concatenate(weights))
    return [float(w) for w in lr.coef_[0]]


def pretrain_refi_gad(graphs, config: REFIGADPretrainConfig | None = None, *, seed: int = 0,
                      out_dir: str | os.PathLike | None = None, devices: int | str | list = 1,
                      strategy: str = "auto", accelerator: str = "cpu", progress_bar: bool = True,
                      model: REFIGADNet | None = None, label: Sequence | None = None,
                      fingerprint: dict | None = None, row_normalize: bool | None = None,
                      self_loops: bool | None = None, card: dict | None = None, num_nodes: int = 1,
                      resume_from: str | os.PathLike | None = None, callbacks: Sequence | None = None,
                      **overrides) -> REFIGADNet:
    """Pretrain REFI-GAD on labelled source graphs (spec §5.5); defaults are the release's.

    Args:
        graphs: ``Data`` objects (raw ``x``, ``edge_index``, binary ``y``), or a
            tuple ``(fingerprints, labels)`` precomputed with :func:`source_fingerprints`.
        config: the schedule, optimiser, loss and a fresh model's architecture
            (:class:`~omnigraph.training.config.REFIGADPretrainConfig`; defaults are the release's);
            ``overrides`` replace single fields (``pretrain_refi_gad(graphs, epochs=2, d_model=32)``).
        seed: seeds the initialisation, dropout and every episode.
        out_dir: CSV logs (``out_dir/logs``), Lightning checkpoints (``out_dir/checkpoints``,
            with ``last.ckpt``) and the final model (``out_dir/model``, safetensors) go there.
        devices, strategy, accelerator, num_nodes, progress_bar: passed to ``lightning.Trainer``.
            Under DDP the episodes of an epoch are split across the processes (one per step
            each) and their gradients averaged.
        resume_from: continue an interrupted run from its Lightning checkpoint: ``"last"``
            (``out_dir/checkpoints/last.ckpt``) or a ``.ckpt`` path; pass the arguments of the
            interrupted run. On the CPU the result equals that of an uninterrupted run.
        callbacks: extra Lightning callbacks.
        model: continue from this model (its architecture wins over the config's).
        label: optional per-graph label overrides.
        fingerprint: ``{"sim_scale": ..., "ties": ...}``, recorded in the model's config.
        row_normalize, self_loops: override every graph's preprocessing flags.

    Returns:
        the trained :class:`REFIGADNet` on CPU, in eval mode.
    """
    config = (config or REFIGADPretrainConfig()).replace(**overrides)
    resolve_resume(resume_from, out_dir)  # fail before the fingerprints are computed
    fp_cfg = {"sim_scale": "edges", "ties": "average", **(fingerprint or {})}
    if model is None:
        with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
            torch.manual_seed(seed)
            model = REFIGADNet(fingerprint=fp_cfg, **config.model_kwargs())
    prepared = isinstance(graphs, tuple) and len(graphs) == 2 and isinstance(graphs[0], list)
    names = None if prepared else source_names(graphs)
    if prepared:
        fps, labels = graphs
    else:
        fps, labels = source_fingerprints(graphs, model.fingerprint, row_normalize, self_loops, label)
    dataset = EpisodeDataset(fps, labels, config.episodes_per_graph, config.shots, config.num_query_normal,
                             config.num_query_anomaly, seed, config.support_episodes, config.pseudo_shots_normal)
    module = REFIGADPretrainModule(model, config.lr, config.weight_decay, config.pos_weight, config.legacy_logit_bce)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # dropout (a resumed run restores the RNG state from its checkpoint)
        trainer = fit_lightning(module, max_epochs=int(config.epochs), datamodule=EpisodeDataModule(dataset),
                                out_dir=out_dir, checkpoint=LOSS_CHECKPOINT, callbacks=callbacks, resume_from=resume_from,
                                accelerator=accelerator, devices=devices, strategy=strategy, num_nodes=num_nodes,
                                progress_bar=progress_bar, log_every_n_steps=10)
    model = module.model.cpu().eval()
    model.orientation = fit_orientation(fps, labels)   # used for pseudo-anomalies at inference only
    if out_dir is not None and trainer.is_global_zero:
        model.save_pretrained(Path(out_dir) / "model", card={
            "method": "REFI-GAD (Liu et al., ICML 2026)", "epochs": int(config.epochs), "seed": seed,
            "episodes_per_graph": config.episodes_per_graph, "shots": config.shots, "lr": config.lr,
            "weight_decay": config.weight_decay, "support_episodes": config.support_episodes,
            "num_sources": len(fps), **({"sources": names} if names else {}), **(card or {})})
    return model


__all__ = [
    "EpisodeDataModule",
    "EpisodeDataset",
    "REFIGADPretrainModule",
    "fit_orientation",
    "pretrain_refi_gad",
    "sample_episode",
    "sample_pseudo_episode",
    "source_fingerprints",
]
