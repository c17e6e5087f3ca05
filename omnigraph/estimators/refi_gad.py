r"""REFI-GAD as a pygod-shaped generalist detector (regime ``normal+anomaly-k``).

Liu, Liu, Zheng, Liew, Cao, Pan, "REFI-GAD", ICML 2026 (arXiv 2605.25429). ``fit`` pretrains
the small in-context scorer (:class:`~omnigraph.models.refi_gad.REFIGADNet`) on the relational
fingerprints of labelled source graphs; ``decision_function``/``predict`` score a target graph
given ``k`` labelled normal **and** ``k`` labelled anomalous nodes, without gradient steps.

Example::

    from omnigraph import REFIGAD, load_dataset
    det = REFIGAD.from_pretrained("refi-gad")             # or REFIGAD(seed=0).fit([src1, src2])
    target = load_dataset("gad/cora")
    score = det.decision_function(target, support_normal=idx_n, support_anomaly=idx_a)
    pred, score = det.predict(target, shots_normal=50, shots_anomaly=50, seed=0, return_score=True)

Every node is scored, the support nodes included (the release evaluates them too); benchmarks
exclude them from the evaluated population by default (spec §2). The SNR reference pool is
global by default: the normal supports plus every non-support node, computed once, so scores
do not depend on node order or chunking (``snr_pool="batch"`` reproduces the release's
per-chunk pool). ``threshold_`` is the ``(1 - contamination)`` quantile of the target's scores.
"""
from __future__ import annotations

import copy
import os

import torch
from torch import Tensor

from omnigraph.estimators.detector import GeneralistDetector, load_sources
from omnigraph.models.fingerprint import graph_fingerprint
from omnigraph.models.pseudo_support import (
    atypicality,
    highest,
    lowest,
    oriented_atypicality,
    pseudo_support_size,
)
from omnigraph.models.refi_gad import REFIGADNet
from omnigraph.training.config import REFIGADPretrainConfig

#: how the anomalous pseudo-supports are picked (``pseudo_anomaly``)
PSEUDO_ANOMALY_RULES = ("oriented", "atypical")
_CFG = REFIGADPretrainConfig()   # the constructor's pretraining defaults
_ARCH = ("d_model", "num_heads", "num_layers", "ff_dim", "dropout", "temperature")


class REFIGAD(GeneralistDetector):
    """REFI-GAD detector: relational fingerprint + Transformer in-context scorer with an SNR gate.

    Args:
        contamination: expected anomaly fraction for ``threshold_``/``label_``.
        seed: seeds pretraining (initialisation, dropout, episodes) and benchmark support draws.
        verbose: 0 silent; >0 shows the Lightning progress bar during ``fit``.
        device: where scoring runs (default CPU).
        epochs, episodes_per_graph, shots, num_query_normal, num_query_anomaly: pretraining
            schedule; these and the arguments below default to the release's values in
            :class:`~omnigraph.training.config.REFIGADPretrainConfig`.
        lr, weight_decay, pos_weight, legacy_logit_bce: pretraining optimiser and loss
            (``legacy_logit_bce=False`` uses a proper BCE, see :meth:`REFIGADNet.loss`).
        d_model, num_heads, num_layers, ff_dim, dropout, temperature: architecture of a fresh model.
        sim_scale, ties: fingerprint settings of a fresh model (a checkpoint brings its own).
        snr_pool: ``"global"`` (default, deterministic) or ``"batch"`` (the release's per-chunk pool).
        chunk_size: queries per encoder call when scoring (512 as the release).
        row_normalize, self_loops: override the per-graph preprocessing metadata.
        devices, strategy, accelerator, out_dir: passed to
            :func:`~omnigraph.training.refi_gad.pretrain_refi_gad`.
        model: a :class:`REFIGADNet` to score with (what :meth:`from_pretrained` passes); ``fit``
            trains a copy of it further instead of a fresh one. Never modified.
        pseudo_k, pseudo_anomaly, pseudo_rounds: regimes without one of the support sets (``zero-shot``,
            ``normal-k``): the missing set is filled from the target itself, label-free, with ``pseudo_k``
            nodes (``None``: :math:`\\mathrm{clip}(N/50, 20, 100)`): the least atypical as normal supports,
            atypicality being :math:`\\sum_c |r_{ic} - 50|`, the distance of a node's ranked fingerprint
            from the median rank; as anomalous supports, with ``pseudo_anomaly="oriented"`` (default), the
            highest under the checkpoint's source-learned ``orientation``
            (:func:`~omnigraph.models.pseudo_support.oriented_atypicality`; a checkpoint without one falls
            back to atypicality), with ``"atypical"`` the most atypical. ``pseudo_rounds`` rounds then
            redraw both from REFI-GAD's own scores (0: none; measured no gain, see the anomaly-detection
            page). The rule used is ``pseudo_rule_``.
        support_episodes, pseudo_shots_normal: the supports of ``fit``'s pretraining episodes:
            ``"labelled"`` (the release) or episodes built like those pseudo-supports (``"normal-k"``,
            ``"zero-shot"``, ``"mixed"``; see :class:`~omnigraph.training.config.REFIGADPretrainConfig`).
    """

    uses_normal = True
    uses_anomaly = True
    requires_normal = False      # missing supports are filled with pseudo-supports from the target
    requires_anomaly = False

    def __init__(self, contamination: float = 0.1, seed: int = 0, verbose: int = 0, device: str | None = None,
                 epochs: int = _CFG.epochs, episodes_per_graph: int = _CFG.episodes_per_graph,
                 shots: int = _CFG.shots, num_query_normal: int = _CFG.num_query_normal,
                 num_query_anomaly: int = _CFG.num_query_anomaly, lr: float = _CFG.lr,
                 weight_decay: float = _CFG.weight_decay, pos_weight: float = _CFG.pos_weight,
                 legacy_logit_bce: bool = _CFG.legacy_logit_bce, d_model: int = _CFG.d_model,
                 num_heads: int = _CFG.num_heads, num_layers: int = _CFG.num_layers, ff_dim: int = _CFG.ff_dim,
                 dropout: float = _CFG.dropout, temperature: float = _CFG.temperature,
                 sim_scale: str = "edges", ties: str = "average", snr_pool: str = "global", chunk_size: int = 512,
                 row_normalize: bool | None = None, self_loops: bool | None = None,
                 devices: int | str | list = 1, strategy: str = "auto", accelerator: str = "cpu",
                 out_dir: str | os.PathLike | None = None, model: REFIGADNet | None = None,
                 pseudo_k: int | None = None, pseudo_anomaly: str = "oriented", pseudo_rounds: int = 0,
                 support_episodes: str = _CFG.support_episodes, pseudo_shots_normal: int = _CFG.pseudo_shots_normal):
        super().__init__(contamination=contamination, seed=seed, verbose=verbose)
        self.device = device
        self.epochs, self.episodes_per_graph, self.shots = epochs, episodes_per_graph, shots
        self.num_query_normal, self.num_query_anomaly = num_query_normal, num_query_anomaly
        self.lr, self.weight_decay, self.pos_weight = lr, weight_decay, pos_weight
        self.legacy_logit_bce = legacy_logit_bce
        self.d_model, self.num_heads, self.num_layers = d_model, num_heads, num_layers
        self.ff_dim, self.dropout, self.temperature = ff_dim, dropout, temperature
        self.sim_scale, self.ties = sim_scale, ties
        self.snr_pool, self.chunk_size = snr_pool, chunk_size
        self.row_normalize, self.self_loops = row_normalize, self_loops
        self.devices, self.strategy, self.accelerator, self.out_dir = devices, strategy, accelerator, out_dir
        self.model = model
        self.pseudo_k, self.pseudo_anomaly, self.pseudo_rounds = pseudo_k, pseudo_anomaly, pseudo_rounds
        self.support_episodes, self.pseudo_shots_normal = support_episodes, pseudo_shots_normal

    def _check_params(self) -> None:
        super()._check_params()
        if self.snr_pool not in ("global", "batch"):
            raise ValueError(f"snr_pool must be 'global' or 'batch', got {self.snr_pool!r}")
        if self.model is not None and not isinstance(self.model, REFIGADNet):
            raise TypeError(f"model must be a REFIGADNet, got {type(self.model).__name__}")
        if self.pseudo_anomaly not in PSEUDO_ANOMALY_RULES:
            raise ValueError(f"pseudo_anomaly must be one of {PSEUDO_ANOMALY_RULES}, got {self.pseudo_anomaly!r}")
        for name, low in (("pseudo_k", 1), ("pseudo_rounds", 0)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise ValueError(f"{name} must be None or an int >= {low}, got {value!r}")

    # -- checkpoints ---------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike = "refi-gad", **kwargs) -> REFIGAD:
        """Load a saved :class:`REFIGADNet` (shipped name, directory or ``.safetensors`` file)."""
        model = REFIGADNet.from_pretrained(name_or_path)
        cfg = model.get_config()
        arch = {k: cfg[k] for k in _ARCH}
        arch.update(sim_scale=model.fingerprint.get("sim_scale", "edges"),
                    ties=model.fingerprint.get("ties", "average"))
        return cls._wrap_pretrained(model, arch, kwargs)

    # -- fit / score ---------------------------------------------------------------------
    def fit(self, graphs, label=None) -> REFIGAD:
        """Pretrain a fresh scorer on labelled source graphs (``Data``, list of ``Data`` or names).

        ``label`` optionally overrides the labels: a tensor for one graph or a list, one per graph.
        """
        from omnigraph.training.refi_gad import pretrain_refi_gad

        self._check_params()
        graphs, label = load_sources(graphs, label)
        start = None if self.model is None else copy.deepcopy(self.model)
        self.model_ = pretrain_refi_gad(
            graphs, REFIGADPretrainConfig.from_params(self.get_params(deep=False)), seed=self.seed,
            out_dir=self.out_dir, devices=self.devices, strategy=self.strategy, accelerator=self.accelerator,
            progress_bar=self.verbose > 0, label=label, fingerprint={"sim_scale": self.sim_scale, "ties": self.ties},
            row_normalize=self.row_normalize, self_loops=self.self_loops, model=start)
        return self

    def fingerprint(self, data) -> Tensor:
        """The ranked relational fingerprint ``[N, 5]`` the scorer reads (cached for the last graph)."""
        fitted = getattr(self, "model_", None) or self.model
        fp = fitted.fingerprint if fitted is not None else {}
        return graph_fingerprint(data, fp.get("sim_scale", self.sim_scale), fp.get("ties", self.ties),
                                 self.row_normalize, self.self_loops)

    @torch.no_grad()
    def _score(self, data, support_normal: Tensor, support_anomaly: Tensor) -> Tensor:
        device = self._device()
        model = self._fitted_model().to(device).eval()
        p = self.fingerprint(data).to(device)

        def score_with(sn: Tensor, sa: Tensor) -> Tensor:
            pool = torch.ones(data.num_nodes, dtype=torch.bool, device=device)
            pool[sn] = False
            pool[sa] = False
            return model.score_nodes(p[sn], p[sa], p, chunk_size=self.chunk_size, snr_pool=self.snr_pool,
                                     pool_mask=pool).cpu()

        if support_normal.numel() and support_anomaly.numel():
            self.pseudo_rule_ = None
            return score_with(support_normal, support_anomaly)
        # a support set is missing: fill it from the target itself (never from labels)
        n = data.num_nodes
        k = self.pseudo_k if self.pseudo_k is not None else pseudo_support_size(n)
        labelled = torch.cat([support_normal, support_anomaly])
        free = torch.ones(n, dtype=torch.bool)
        free[labelled] = False
        k = max(1, min(k, int(free.sum()) // 2))
        pc = p.cpu()
        orientation = model.orientation if self.pseudo_anomaly == "oriented" else None
        self.pseudo_rule_ = "oriented" if orientation is not None else "atypical"
        key_n = atypicality(pc)
        key_a = oriented_atypicality(pc, orientation) if orientation is not None else key_n
        sn, sa = support_normal, support_anomaly
        for _ in range(int(self.pseudo_rounds) + 1):
            if not support_normal.numel():
                sn = lowest(key_n, pc, free, k)
            if not support_anomaly.numel():
                pool = free.clone()
                pool[sn] = False            # never both a normal and an anomalous support
                sa = highest(key_a, pc, pool, k)
            score = score_with(sn, sa)
            key_n = key_a = score
        self.pseudo_support_normal_ = sn if not support_normal.numel() else sn[:0]
        self.pseudo_support_anomaly_ = sa if not support_anomaly.numel() else sa[:0]
        return score


__all__ = ["REFIGAD"]
