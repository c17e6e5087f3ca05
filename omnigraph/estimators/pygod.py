"""pygod's unsupervised detectors behind the generalist-detector interface: the side-by-side baseline.

A user with an unlabelled graph who does not use omnigraph trains a pygod detector (DOMINANT, CoLA,
AnomalyDAE, OCGNN, GAE) on that graph itself. :class:`PygodDetector` does exactly that inside
``decision_function``: it reads no label and no support (regime ``zero-shot``), trains the pygod
detector on the target with pygod's own defaults (its ``epoch`` unless given) and returns pygod's
``decision_score_``. Training therefore counts as scoring time, as it does for a pygod user.

pygod 1.1.0 is an optional dependency (``pip install omnigraph[baselines]``); its detectors need
``torch-sparse`` and ``torch-scatter``, which have no PyPI wheels for torch 2.13 (``make install``
installs the ones in ``../shared/wheels`` when that folder exists). pygod does not seed its runs; here
every run seeds torch, numpy and Python's ``random`` with ``seed`` (without touching the caller's
generators).
"""
from __future__ import annotations

import random

import numpy as np
import torch
from torch import Tensor

from omnigraph.estimators.detector import GeneralistDetector

PYGOD_DETECTORS = {"dominant": "DOMINANT", "cola": "CoLA", "anomalydae": "AnomalyDAE", "ocgnn": "OCGNN",
                   "gae": "GAE"}


def pygod_available() -> bool:
    try:
        import pygod.detector  # noqa: F401
    except ImportError:
        return False
    return True


def _pygod_class(name: str):
    key = str(name).lower()
    if key not in PYGOD_DETECTORS:
        raise ValueError(f"unknown pygod detector {name!r}; choose from {', '.join(PYGOD_DETECTORS)}")
    try:
        import pygod.detector as detectors
    except ImportError as err:
        raise ImportError(f"pygod is not installed ({err}): pip install 'omnigraph[baselines]'; its detectors also "
                          "need torch-sparse and torch-scatter (make install takes them from ../shared/wheels)") from None
    return getattr(detectors, PYGOD_DETECTORS[key])


class PygodDetector(GeneralistDetector):
    """A pygod detector trained unsupervised on each target it scores.

    Args:
        name: ``dominant``, ``cola``, ``anomalydae``, ``ocgnn`` or ``gae``.
        epoch: training epochs (``None``: pygod's default for that detector).
        contamination, seed, verbose: as :class:`~omnigraph.estimators.detector.GeneralistDetector`;
            ``seed`` seeds pygod's initialisation and sampling.
        kwargs: further keyword arguments for the pygod detector (``None``: its defaults).
    """

    uses_normal = False
    uses_anomaly = False
    requires_normal = False
    requires_anomaly = False

    def __init__(self, name: str = "dominant", epoch: int | None = None, contamination: float = 0.1, seed: int = 0,
                 verbose: int = 0, kwargs: dict | None = None):
        super().__init__(contamination=contamination, seed=seed, verbose=verbose)
        self.name, self.epoch, self.kwargs = name, epoch, kwargs

    def fit(self, graphs=None, label=None) -> PygodDetector:
        """Nothing to pretrain (pygod trains on each target); checks the parameters and that pygod imports."""
        self._check_params()
        _pygod_class(self.name)
        return self

    def _score(self, data, support_normal: Tensor, support_anomaly: Tensor) -> Tensor:
        from torch_geometric.data import Data

        cls = _pygod_class(self.name)
        settings = dict(self.kwargs or {})
        if self.epoch is not None:
            settings["epoch"] = int(self.epoch)
        graph = Data(x=data.x.detach().float().cpu(), edge_index=data.edge_index.cpu(), num_nodes=data.num_nodes)
        state = random.getstate(), np.random.get_state()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(self.seed))
                np.random.seed(int(self.seed))
                random.seed(int(self.seed))
                detector = cls(gpu=-1, verbose=0, **settings)
                detector.fit(graph)
                score = detector.decision_score_
        finally:
            random.setstate(state[0])
            np.random.set_state(state[1])
        self.pygod_ = detector
        return torch.as_tensor(np.asarray(score), dtype=torch.float32).flatten()


__all__ = ["PYGOD_DETECTORS", "PygodDetector", "pygod_available"]
