r"""ARC as a pygod-shaped generalist detector (regimes ``normal-k`` and ``zero-shot``).

Liu et al., "ARC: A Generalist Graph Anomaly Detector with In-Context Learning", NeurIPS 2024.
``fit`` pretrains on labelled source graphs; ``decision_function``/``predict`` score a target
given a few labelled **normal** nodes (``support_normal``, the in-context samples; ARC uses 10).
Anomalous support is ignored. Without any labelled node (``zero-shot``) the context is drawn at
random from the target, several times (``zero_shot_draws``), and the scores averaged.

Example::

    from omnigraph import ARC, load_dataset
    det = ARC(seed=0).fit([src1, src2])                 # or ARC.from_pretrained(path)
    score = det.decision_function(target, support_normal=idx)   # [N], higher = more anomalous
    pred, score = det.predict(target, shots_normal=10, seed=0, return_score=True)

Every node is scored, the support nodes included; benchmarks exclude the support from the
evaluated population (spec §2). ``threshold_`` is the ``(1 - contamination)`` quantile of the
target's scores.
"""
from __future__ import annotations

import copy
import os

import torch
from torch import Tensor

from omnigraph.datasets.flags import graph_flag
from omnigraph.estimators.detector import GeneralistDetector, label_free_draws, load_sources
from omnigraph.models.arc import ARCModel, arc_features
from omnigraph.training.config import ARCPretrainConfig

_CFG = ARCPretrainConfig()   # the constructor's pretraining defaults

class ARC(GeneralistDetector):
    """ARC detector: residual MLP encoder + cross-attention reconstruction from normal context.

    Args:
        contamination: expected anomaly fraction for ``threshold_``/``label_``.
        seed: seeds pretraining (initialisation and episodes) and benchmark support draws.
        verbose: 0 silent; >0 shows the Lightning progress bar during ``fit``.
        device: where ``decision_function`` runs (default CPU).
        epochs, lr, weight_decay, num_context, max_queries: pretraining schedule; these and the
            architecture below default to :class:`~omnigraph.training.config.ARCPretrainConfig`
            (``params/ARC_10.json``; ``max_queries=None``: every anomalous query, as ARC).
        d, hidden_channels, num_layers, num_hops, act, dropout: architecture of a fresh model.
        row_normalize, self_loops: override the per-graph ``data.row_normalize`` /
            ``data.self_loops`` metadata (defaults False / True when absent).
        devices, strategy, accelerator, out_dir: passed to :func:`~omnigraph.training.arc.pretrain_arc`.
        chunk_size: encode at most this many nodes at once when scoring.
        model: an :class:`ARCModel` to score with (what :meth:`from_pretrained` passes); ``fit``
            trains a copy of it further instead of a fresh one. Never modified.
        zero_shot_draws: without labelled normal nodes (regime ``zero-shot``), the context is
            ``num_context`` nodes drawn pseudo-uniformly from the target (anomalies are rare, so nearly
            all are normal; ``omnigraph.estimators.detector.label_free_draw``, independent of the
            node numbering), redrawn this many times with ``seed``; the score is the mean over the draws.
    """

    uses_normal = True
    uses_anomaly = False
    requires_normal = False      # zero-shot: random context nodes drawn from the target itself

    def __init__(self, contamination: float = 0.1, seed: int = 0, verbose: int = 0, device: str | None = None,
                 epochs: int = _CFG.epochs, lr: float = _CFG.lr, weight_decay: float = _CFG.weight_decay,
                 num_context: int = _CFG.num_context, d: int = _CFG.d, hidden_channels: int = _CFG.hidden_channels,
                 num_layers: int = _CFG.num_layers, num_hops: int = _CFG.num_hops, act: str = _CFG.act,
                 dropout: float = _CFG.dropout, row_normalize: bool | None = None,
                 self_loops: bool | None = None, devices: int | str | list = 1, strategy: str = "auto",
                 accelerator: str = "cpu", out_dir: str | os.PathLike | None = None,
                 max_queries: int | None = _CFG.max_queries,
                 chunk_size: int = 16384, model: ARCModel | None = None, zero_shot_draws: int = 5):
        super().__init__(contamination=contamination, seed=seed, verbose=verbose)
        self.device = device
        self.epochs, self.lr, self.weight_decay, self.num_context = epochs, lr, weight_decay, num_context
        self.d, self.hidden_channels, self.num_layers, self.num_hops = d, hidden_channels, num_layers, num_hops
        self.act, self.dropout = act, dropout
        self.row_normalize, self.self_loops = row_normalize, self_loops
        self.devices, self.strategy, self.accelerator, self.out_dir = devices, strategy, accelerator, out_dir
        self.max_queries, self.chunk_size = max_queries, chunk_size
        self.model = model
        self.zero_shot_draws = zero_shot_draws

    def _check_params(self) -> None:
        super()._check_params()
        if self.model is not None and not isinstance(self.model, ARCModel):
            raise TypeError(f"model must be an ARCModel, got {type(self.model).__name__}")
        if isinstance(self.zero_shot_draws, bool) or not isinstance(self.zero_shot_draws, int) or \
                self.zero_shot_draws < 1:
            raise ValueError(f"zero_shot_draws must be an int >= 1, got {self.zero_shot_draws!r}")

    # -- checkpoints ---------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, **kwargs) -> ARC:
        """Load a saved :class:`ARCModel` (directory, ``.safetensors`` file or shipped name)."""
        model = ARCModel.from_pretrained(name_or_path)
        arch = {"d": model.in_channels, "hidden_channels": model.hidden_channels, "num_layers": model.num_layers,
                "num_hops": model.num_hops, "act": model.act_name, "dropout": model.dropout}
        return cls._wrap_pretrained(model, arch, kwargs)

    # -- fit / score ---------------------------------------------------------------------
    def fit(self, graphs, label=None) -> ARC:
        """Pretrain a fresh model on labelled source graphs (``Data`` or list; ``y``: 1 = anomaly).

        ``label`` optionally overrides the labels: a tensor for one graph or a list, one per graph.
        """
        from omnigraph.training.arc import pretrain_arc

        self._check_params()
        graphs, label = load_sources(graphs, label)
        start = None if self.model is None else copy.deepcopy(self.model)
        self.model_ = pretrain_arc(
            graphs, ARCPretrainConfig.from_params(self.get_params(deep=False)), seed=self.seed,
            devices=self.devices, strategy=self.strategy, accelerator=self.accelerator, out_dir=self.out_dir,
            row_normalize=self.row_normalize, self_loops=self.self_loops, label=label,
            progress_bar=self.verbose > 0, model=start)
        return self

    @torch.no_grad()
    def embed(self, data) -> Tensor:
        """ARC's residual embeddings ``H`` ``[N, num_hops * hidden_channels]`` of a (raw) graph."""
        device = self._device()
        model = self._fitted_model().to(device).eval()
        feats = arc_features(data.x, data.edge_index, d=model.in_channels, num_hops=model.num_hops,
                             row_normalize=graph_flag(data, "row_normalize", self.row_normalize, False),
                             self_loops=graph_flag(data, "self_loops", self.self_loops, True))
        return model.encode(feats.to(device), chunk_size=self.chunk_size)

    @torch.no_grad()
    def _score(self, data, support_normal: Tensor, support_anomaly: Tensor) -> Tensor:
        h = self.embed(data)
        model = self._fitted_model()
        if support_normal.numel():
            return model.score(h, h[support_normal.to(h.device)]).cpu()
        # zero-shot: context drawn from the target itself (never from the labels, nor by node id)
        total = torch.zeros(data.num_nodes, dtype=torch.float64)
        draws = label_free_draws(data, self.num_context, self.seed, range(self.zero_shot_draws),
                                 exclude=support_anomaly)
        for context in draws:
            total += model.score(h, h[context.to(h.device)]).cpu().double()
        return (total / self.zero_shot_draws).float()
