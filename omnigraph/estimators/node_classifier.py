"""What the node classifiers (:class:`~omnigraph.RGVT`, :class:`~omnigraph.GraphAny`) share."""
from __future__ import annotations

from torch import Tensor

from omnigraph.validation import check_eval_labels


class NodeClassifierMixin:
    """``score``: accuracy of ``predict``, for estimators with ``_check_fitted``, ``predict(data)``
    and the fitted ``train_labels_``."""

    def score(self, data, mask: Tensor | None = None) -> float:
        """Accuracy on ``mask`` (boolean or node ids; default ``data.test_mask``), in [0, 1]."""
        self._check_fitted()
        mask, y = check_eval_labels(data, mask, self.train_labels_)
        return float((self.predict(data)[mask] == y).float().mean())
