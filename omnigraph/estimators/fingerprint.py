r"""Training-free detectors on the relational fingerprint (REFI-GAD's "ReFi alone" ablation).

The fingerprint :math:`P \in [0, 100]^{N \times 5}` (:class:`~omnigraph.models.fingerprint.RelationalFingerprint`)
already separates many anomalies without any learning (anomaly-detection spec §5.1, §5.9):

* ``FingerprintDetector()`` ("ReFi + distance"): with normal supports :math:`S_n` and anomalous
  supports :math:`S_a`,

  .. math::
      s_i = \frac{1}{|S_a|}\sum_{j \in S_a} \cos(P_i, P_j) - \frac{1}{|S_n|}\sum_{j \in S_n} \cos(P_i, P_j),

  and :math:`s_i = -\frac{1}{|S_n|}\sum_{j\in S_n}\cos(P_i, P_j)` when only normal supports are given
  (the normal-k regime); without any support (zero-shot) the atypicality
  :math:`s_i = \sum_c |P_{ic} - 50|`, the distance from the median rank;
* ``FingerprintDetector(column="degree")``: a single column as the score, its sign taken from the
  supports (:math:`+` if the anomalous supports' mean exceeds the normal supports' mean) or fixed
  with ``sign=+1/-1`` (then zero-shot).

The fingerprint of a graph, with its preprocessing flags resolved and the last one cached, comes
from :func:`~omnigraph.models.fingerprint.graph_fingerprint` (shared with REFI-GAD and its training).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from omnigraph.estimators.detector import GeneralistDetector
from omnigraph.models.fingerprint import COLUMNS, column_index, graph_fingerprint
from omnigraph.models.pseudo_support import atypicality


class FingerprintDetector(GeneralistDetector):
    """Training-free scores on the relational fingerprint (see the module docstring).

    Args:
        column: ``None`` for "ReFi + distance", or one of ``gd``, ``nd``, ``np``, ``degree``, ``lc``.
        sign: for a single column: ``None`` (from the supports), ``+1`` or ``-1`` (fixed, zero-shot).
        sim_scale, ties, row_normalize, self_loops: fingerprint settings
            (:class:`~omnigraph.models.fingerprint.RelationalFingerprint`); the flags default to the
            graph's metadata.
        contamination, seed, verbose: as :class:`GeneralistDetector`.
    """

    def __init__(self, column: str | None = None, sign: int | None = None, contamination: float = 0.1,
                 seed: int = 0, verbose: int = 0, sim_scale: str = "edges", ties: str = "average",
                 row_normalize: bool | None = None, self_loops: bool | None = None):
        super().__init__(contamination=contamination, seed=seed, verbose=verbose)
        self.column, self.sign = column, sign
        self.sim_scale, self.ties = sim_scale, ties
        self.row_normalize, self.self_loops = row_normalize, self_loops

    def _check_params(self) -> None:
        super()._check_params()
        self._column()
        if self.sign not in (None, 1, -1):
            raise ValueError(f"sign must be None, 1 or -1, got {self.sign!r}")
        if self.sign is not None and self.column is None:
            raise ValueError("sign only applies to a single fingerprint column (column=...)")

    def _column(self) -> str | None:
        return None if self.column is None else COLUMNS[column_index(self.column)]

    # which supports this configuration reads (instance-level, from the current parameters)
    @property
    def uses_normal(self) -> bool:
        return self.column is None or self.sign is None

    @property
    def uses_anomaly(self) -> bool:
        return self.column is not None and self.sign is None

    @property
    def accepts_anomaly(self) -> bool:
        return self.sign is None

    @property
    def requires_normal(self) -> bool:         # a single column is oriented by both support sets
        return self.column is not None and self.sign is None

    @property
    def requires_anomaly(self) -> bool:
        return self.column is not None and self.sign is None

    @property
    def name(self) -> str:
        return "fingerprint" if self.column is None else f"fingerprint:{self._column()}"

    def fit(self, graphs=None, label=None) -> FingerprintDetector:
        """Nothing to learn; checks the parameters and returns ``self`` (the common detector interface)."""
        self._check_params()
        return self

    def fingerprint(self, data) -> Tensor:
        return graph_fingerprint(data, self.sim_scale, self.ties, self.row_normalize, self.self_loops)

    def _score(self, data, support_normal: Tensor, support_anomaly: Tensor) -> Tensor:
        p = self.fingerprint(data)
        if self.column is None:
            if not support_normal.numel() and not support_anomaly.numel():
                return atypicality(p)               # zero-shot: distance from the median rank
            unit = F.normalize(p, dim=1)
            score = torch.zeros(p.size(0), dtype=p.dtype)
            if support_normal.numel():
                score = score - (unit @ unit[support_normal].T).mean(1)
            if support_anomaly.numel():
                score = score + (unit @ unit[support_anomaly].T).mean(1)
            return score
        col = p[:, COLUMNS.index(self._column())]
        sign = self.sign
        if sign is None:
            sign = 1 if float(col[support_anomaly].mean()) >= float(col[support_normal].mean()) else -1
        self.sign_ = sign
        return sign * col


__all__ = ["FingerprintDetector"]
