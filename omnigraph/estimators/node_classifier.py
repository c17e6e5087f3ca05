"""What the node classifiers (:class:`~omnigraph.RGVT`, :class:`~omnigraph.GraphAny`, the supervised baselines) share."""
from __future__ import annotations

from torch import Tensor

from omnigraph.validation import check_eval_labels, not_fitted


class NodeClassifierMixin:
    """``score``: accuracy of ``predict``, and ``_check_fitted``, for estimators with ``predict(data)``,
    the fitted ``train_labels_`` and ``_fitted_attribute``: the attribute that only ``fit`` sets."""

    _fitted_attribute: str

    def _check_fitted(self) -> None:
        if not hasattr(self, self._fitted_attribute):
            raise not_fitted(type(self).__name__)

    def score(self, data, mask: Tensor | None = None) -> float:
        """Accuracy on ``mask`` (boolean or node ids; default ``data.test_mask``), in [0, 1]."""
        self._check_fitted()
        mask, y = check_eval_labels(data, mask, self.train_labels_)
        return float((self.predict(data)[mask] == y).float().mean())
