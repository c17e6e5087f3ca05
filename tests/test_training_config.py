"""The pretraining config objects: one place for each detector's hyper-parameters and defaults."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from omnigraph.estimators.arc import ARC
from omnigraph.estimators.refi_gad import REFIGAD
from omnigraph.training.config import ARCPretrainConfig, REFIGADPretrainConfig

PAIRS = [(ARC, ARCPretrainConfig), (REFIGAD, REFIGADPretrainConfig)]


@pytest.mark.parametrize(("estimator", "config"), PAIRS)
def test_estimator_defaults_come_from_the_config(estimator, config):
    params = inspect.signature(estimator.__init__).parameters
    for field in dataclasses.fields(config):
        assert field.name in params, (estimator.__name__, field.name)
        assert params[field.name].default == field.default, (estimator.__name__, field.name)
    # and the estimator's parameters reach the trainer unchanged
    det = estimator(epochs=3, lr=0.5, num_layers=2)
    cfg = config.from_params(det.get_params(deep=False))
    assert (cfg.epochs, cfg.lr, cfg.num_layers) == (3, 0.5, 2)
    assert cfg == config().replace(epochs=3, lr=0.5, num_layers=2)


@pytest.mark.parametrize("config", [ARCPretrainConfig, REFIGADPretrainConfig])
def test_config_rejects_bad_values_and_unknown_fields(config):
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        config(epochs=0)
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        config().replace(epochs=2.5)
    with pytest.raises(TypeError, match=r"unknown .*PretrainConfig field\(s\) \['epoch'\]"):
        config().replace(epoch=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config().epochs = 3


def test_trainers_take_a_config_or_overrides():
    from omnigraph.training.arc import pretrain_arc
    from omnigraph.training.refi_gad import pretrain_refi_gad

    with pytest.raises(TypeError, match="unknown ARCPretrainConfig field"):
        pretrain_arc([], ARCPretrainConfig(), epochz=1)
    with pytest.raises(ValueError, match="num_context must be >= 1"):
        pretrain_arc([], num_context=0)
    with pytest.raises(ValueError, match="num_query_normal must be >= 1"):
        pretrain_refi_gad([], REFIGADPretrainConfig(), num_query_normal=0)
