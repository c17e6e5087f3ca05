"""GraphAny training mechanics (spec §3.6) on a small synthetic graph: no reference data needed."""
from __future__ import annotations

import csv

import lightning as L
import pytest
import torch
from test_graphany_model import make_graph, one_thread  # noqa: F401  (autouse fixture)

from omnigraph.estimators.graphany import GraphAny
from omnigraph.models.graphany import GraphAnyModel
from omnigraph.training.graphany import (
    GraphAnyGraph,
    GraphAnyModule,
    evaluate,
    pretrain_graphany,
    reference_nodes,
)

FAST = {"n_hidden": 16, "n_per_label_examples": 5, "batch_size": 32, "eval_every": 5, "progress_bar": False}


def test_reference_nodes_rule():
    train = torch.arange(200)
    batch = torch.tensor([5, 3, 150])
    refs = reference_nodes(train, batch)
    assert refs.numel() == 197 and not torch.isin(batch, refs).any()
    small = torch.arange(120)                         # Wisconsin: 120 training nodes, batch of 128
    batch = small[torch.randperm(120, generator=torch.Generator().manual_seed(0))]
    refs = reference_nodes(small, batch)
    assert torch.equal(refs, batch[:60])              # nothing left outside: first half of the batch


def test_optimizer_decays_only_matrices():
    model = GraphAnyModel(n_hidden=8)
    graph = GraphAnyGraph.from_data(model, make_graph())
    opt = GraphAnyModule(model, [graph]).configure_optimizers()
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.02 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    assert decay["lr"] == 2e-4
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_training_reduces_loss_and_is_seeded(tmp_path):
    data = make_graph(n=160, seed=2)
    L.seed_everything(0, verbose=False)
    init = GraphAnyModel(n_hidden=16)                 # pretrain_graphany initialises exactly like this
    graph = GraphAnyGraph.from_data(init, data)
    loss0, _ = evaluate(init, graph)
    model = pretrain_graphany(data, steps=60, seed=0, lr=1e-2, out_dir=tmp_path, **FAST)
    loss1, _ = evaluate(model, graph)
    # the X channel is the noisy one on this homophilous graph: training moves weight to L1/L2
    with torch.no_grad():
        alpha0 = init.eval().fuse(graph.val_logits, graph.val_dist)[1].mean(0)
        alpha1 = model.fuse(graph.val_logits, graph.val_dist)[1].mean(0)
    assert loss1 < loss0 - 0.03, (loss0, loss1)
    assert alpha1[0] < alpha0[0] - 0.05, (alpha0, alpha1)
    assert len(model.training_history_) == 60
    assert sum("val_acc" in h for h in model.training_history_) == 12   # every 5 epochs
    # same seed -> same weights; another seed -> different weights
    a = pretrain_graphany(data, steps=6, seed=0, lr=1e-2, **FAST)
    b = pretrain_graphany(data, steps=6, seed=0, lr=1e-2, **FAST)
    assert all(torch.equal(u, v) for u, v in zip(a.state_dict().values(), b.state_dict().values()))
    other = pretrain_graphany(data, steps=6, seed=1, lr=1e-2, **FAST)
    assert not torch.equal(other.attention.lins[0].weight, a.attention.lins[0].weight)
    # CSV log and a loadable final model
    metrics = list((tmp_path / "logs").rglob("metrics.csv"))
    assert metrics, "CSVLogger wrote no metrics.csv"
    rows = list(csv.DictReader(metrics[0].open()))
    assert any(r.get("train_loss") for r in rows) and any(r.get("val_acc") for r in rows)
    clf = GraphAny.from_pretrained(tmp_path / "model").fit(data)
    assert torch.equal(clf.model.state_dict()["attention.lins.0.weight"], model.attention.lins[0].weight)


def test_multiple_sources_and_validation_errors():
    a, b = make_graph(seed=0), make_graph(n=60, f=7, c=4, seed=1)
    model = pretrain_graphany([a, b], steps=2, seed=0, names=["a", "b"], **FAST)
    assert len(model.training_history_) == 2
    with pytest.raises(ValueError, match="names"):
        pretrain_graphany([a, b], steps=1, names=["a", "a"], **FAST)
    bad = a.clone()
    del bad.train_mask
    with pytest.raises(ValueError, match="train_mask"):
        pretrain_graphany(bad, steps=1, **FAST)
    with pytest.raises(ValueError, match="steps"):
        pretrain_graphany(a, steps=0, **FAST)


def test_sources_without_validation_mask_train():
    data = make_graph(seed=4)
    del data.val_mask
    model = pretrain_graphany(data, steps=6, seed=0, **FAST)
    assert len(model.training_history_) == 6
    assert not any("val_acc" in h for h in model.training_history_)
