"""RGVT pretraining with Lightning: the loss falls, early stopping keeps the best encoder, seeds."""
from __future__ import annotations

import csv

import pytest
import torch
from rgvt_helpers import planted_graph

from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.training.rgvt import pretrain_rgvt

QUIET = {"progress_bar": False, "accelerator": "cpu", "devices": 1}


def _metrics(out_dir) -> list[dict]:
    (path,) = list((out_dir / "logs").rglob("metrics.csv"))
    with open(path) as f:
        return list(csv.DictReader(f))


def test_pretraining_reduces_the_loss_and_saves_artifacts(tmp_path):
    data = planted_graph(n=80, num_classes=3, f=10, seed=1, signal=0.6)
    enc = pretrain_rgvt(data, max_depth=2, max_epochs=25, patience=100, seed=0, out_dir=tmp_path, **QUIET)
    assert isinstance(enc, RGVTEncoder) and not enc.training
    losses = [float(r["train_loss"]) for r in _metrics(tmp_path) if r.get("train_loss")]
    assert len(losses) == 25 and losses[-1] < 0.8 * losses[0]
    assert enc.card_["epochs_run"] == 25 and 0 <= enc.card_["best_epoch"] < 25
    again = RGVTEncoder.from_pretrained(tmp_path / "model")
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), enc.state_dict().values()))
    assert list((tmp_path / "checkpoints").glob("best-*.ckpt"))


def test_early_stopping_keeps_the_best_validation_encoder(tmp_path):
    data = planted_graph(n=60, num_classes=3, f=6, seed=2, signal=0.8)
    enc = pretrain_rgvt(data, max_depth=2, max_epochs=60, patience=3, seed=0, out_dir=tmp_path, **QUIET)
    rows = [r for r in _metrics(tmp_path) if r.get("val_acc")]
    accs = [float(r["val_acc"]) for r in rows]
    best_epoch = max(range(len(accs)), key=lambda i: (accs[i], -i))     # first maximum
    assert enc.card_["best_epoch"] == best_epoch
    assert len(accs) - 1 - best_epoch == 3 or len(accs) == 60          # stopped after 3 epochs without gain
    (ckpt,) = list((tmp_path / "checkpoints").glob("best-*.ckpt"))
    assert f"epoch={best_epoch}-" in ckpt.name
    state = torch.load(ckpt, map_location="cpu", weights_only=True)["state_dict"]
    for key, value in enc.state_dict().items():
        assert torch.equal(state[f"encoder.{key}"], value)


def test_several_sources_and_seeds():
    graphs = [planted_graph(n=50, num_classes=3, f=5, seed=3), planted_graph(n=40, num_classes=4, f=9, seed=4)]
    a = pretrain_rgvt(graphs, max_depth=2, max_epochs=4, patience=10, seed=7, **QUIET)
    b = pretrain_rgvt(graphs, max_depth=2, max_epochs=4, patience=10, seed=7, **QUIET)
    c = pretrain_rgvt(graphs, max_depth=2, max_epochs=4, patience=10, seed=8, **QUIET)
    assert a.card_["num_sources"] == 2
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.mlp.lins[0].weight, c.mlp.lins[0].weight)


def test_pretraining_input_errors():
    data = planted_graph(n=30, f=4)
    with pytest.raises(ValueError, match="at least one"):
        pretrain_rgvt([], **QUIET)
    with pytest.raises(ValueError, match="max_epochs"):
        pretrain_rgvt(data, max_epochs=0, **QUIET)
    del data.val_mask
    with pytest.raises(ValueError, match="val_mask"):
        pretrain_rgvt(data, max_epochs=1, **QUIET)
