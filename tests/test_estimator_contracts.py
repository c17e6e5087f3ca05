"""The scikit-learn / pygod contracts users rely on, for every estimator.

``__init__`` stores its arguments unchanged (no conversion, no object building, no mutation of a
model passed in) and validation happens in ``fit`` / ``decision_function``; ``get_params(deep)``,
``set_params`` and ``sklearn.base.clone`` work; a small parameter sweep runs on clones; the fitted
attributes share one naming (``classes_``, ``n_classes_``, ``n_features_in_``).
"""
from __future__ import annotations

import pytest
import torch
from gad_helpers import hub_anomaly_graph
from rgvt_helpers import planted_graph
from sklearn.base import clone

from omnigraph import ARC, REFIGAD, RGVT, GraphAny
from omnigraph.estimators.baselines import SupervisedBaseline
from omnigraph.estimators.fingerprint import FingerprintDetector
from omnigraph.models.graphany import GraphAnyModel
from omnigraph.models.rgvt import RGVTEncoder

FACTORIES = {
    "rgvt": lambda: RGVT.from_pretrained("rgvt", max_epochs=30, depths=(1, 2)),
    "graphany": lambda: GraphAny.from_pretrained("graphany"),
    "refi-gad": lambda: REFIGAD.from_pretrained("refi-gad"),
    "arc": lambda: ARC.from_pretrained("arc"),
    "fingerprint": lambda: FingerprintDetector(column="degree"),
    "baseline": lambda: SupervisedBaseline(kind="mlp", max_epochs=20),
}
DETECTORS = ("refi-gad", "arc", "fingerprint")


def _module_params(est):
    return {k: v for k, v in est.get_params(deep=False).items() if isinstance(v, torch.nn.Module)}


@pytest.mark.parametrize("name", FACTORIES)
def test_get_params_set_params_and_clone(name):
    est = FACTORIES[name]()
    shallow, deep = est.get_params(deep=False), est.get_params(deep=True)
    assert set(shallow) <= set(deep) and "seed" in shallow
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est
    for key, value in twin.get_params(deep=False).items():
        if isinstance(value, torch.nn.Module):      # deep-copied: same weights, another object
            assert value is not shallow[key]
            ref = shallow[key].state_dict()
            assert all(torch.equal(t, ref[k]) for k, t in value.state_dict().items())
        else:
            assert value == shallow[key] or (value is None and shallow[key] is None), key
    assert twin.set_params(seed=7) is twin and twin.get_params()["seed"] == 7 and est.get_params()["seed"] != 7
    with pytest.raises(ValueError, match="Invalid parameter"):
        twin.set_params(no_such_parameter=1)


def test_init_stores_arguments_unchanged_and_validates_in_fit():
    enc = RGVTEncoder()
    depths = [3, 1]                                   # a list, unsorted: stored as given
    clf = RGVT(enc, depths=depths, lr=1, device="cpu")
    assert clf.encoder is enc and clf.depths is depths and clf.lr == 1 and clf.device == "cpu"
    bad = RGVT(enc, protocol="slow")                  # constructing never raises ...
    with pytest.raises(ValueError, match="protocol"):
        bad.fit(planted_graph())                      # ... fit does
    det = REFIGAD(contamination=0.7)
    assert det.contamination == 0.7
    with pytest.raises(ValueError, match="contamination"):
        det.fit(hub_anomaly_graph())
    with pytest.raises(ValueError, match="contamination"):
        FingerprintDetector(contamination=0.0).decision_function(hub_anomaly_graph(), support_normal=[0, 1])


def test_models_passed_in_are_never_modified():
    graph = planted_graph(seed=1)
    enc = RGVTEncoder().train()
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    RGVT(enc, max_epochs=5, depths=(1,), chunk_size=3).fit(graph).predict(graph)
    assert enc.training and all(p.requires_grad for p in enc.parameters())
    assert all(torch.equal(v, before[k]) for k, v in enc.state_dict().items())
    model = GraphAnyModel(n_hidden=8, entropy=2.0).train()
    GraphAny(model, entropy=1.0, chunk_size=3).fit(graph).predict(graph)
    assert model.training and model.entropy == 2.0 and model.channels.chunk_size is None


def test_one_naming_of_fitted_class_attributes():
    graph = planted_graph(seed=2)
    for est in (RGVT(RGVTEncoder(), max_epochs=5, depths=(1,)), GraphAny(GraphAnyModel(n_hidden=8)),
                SupervisedBaseline(kind="mlp", max_epochs=5)):
        est.fit(graph)
        assert est.n_classes_ == 3 and torch.equal(est.classes_, torch.arange(3)), type(est).__name__
        assert not hasattr(est, "num_classes_")


def test_parameter_sweep_on_clones_of_a_pretrained_classifier():
    graph = planted_graph(n=120, seed=3)
    base = RGVT.from_pretrained("rgvt", max_epochs=40, depths=(1, 2))
    sweep = {h: clone(base).set_params(hidden_channels=h).fit(graph) for h in (8, 32)}
    assert {h: est.head_.lins[0].out_features for h, est in sweep.items()} == {8: 8, 32: 32}
    assert all(0.0 <= est.score(graph) <= 1.0 for est in sweep.values())
    assert not hasattr(base, "head_")                 # the prototype stays unfitted


@pytest.mark.parametrize("name", DETECTORS)
def test_parameter_sweep_on_clones_of_a_pretrained_detector(name):
    """A clone of a pretrained detector keeps its weights (they are the ``model`` parameter)."""
    target = hub_anomaly_graph(seed=4)
    support = {"support_normal": torch.arange(10)} if name == "arc" else \
        {"support_normal": torch.arange(10), "support_anomaly": (target.y == 1).nonzero().flatten()[:5]}
    base = FACTORIES[name]()
    ref = base.decision_function(target, **support)
    flagged = {}
    for c in (0.05, 0.2):
        det = clone(base).set_params(contamination=c)
        assert torch.equal(det.decision_function(target, **support), ref)
        flagged[c] = int(det.label_.sum())
    assert flagged[0.05] < flagged[0.2]


@pytest.mark.parametrize("name", ["rgvt", "graphany", "baseline"])
def test_node_classifiers_share_one_checked_score(name):
    """RGVT, GraphAny and the GCN/MLP baseline score through one method: refused before fit, the
    accuracy of predict on the test mask, and unlabelled evaluated nodes named, not counted."""
    from sklearn.exceptions import NotFittedError

    data = planted_graph()
    est = FACTORIES[name]()
    with pytest.raises(NotFittedError):
        est.score(data)
    est.fit(data)
    acc = est.score(data)
    want = float((est.predict(data)[data.test_mask] == data.y[data.test_mask]).float().mean())
    assert acc == pytest.approx(want, abs=0.0) and 0.0 <= acc <= 1.0
    data.y = data.y.clone()
    data.y[data.test_mask.nonzero()[0]] = -1
    with pytest.raises(ValueError, match="unlabelled"):
        est.score(data)
