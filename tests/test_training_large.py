"""Every trainer runs on a graph above 2^16 nodes on CPU (the user's path: real source graphs are big).

The RGVT validation pass switches to column-blocked CSR operators once ``4 * N * columns`` exceeds the
block budget; before the fix, every source graph of 65,536+ nodes (ogbn-arxiv included) crashed there.
One or two epochs each, small models: these tests check that the code paths taken only at this size run
end to end and give finite results, not accuracy.
"""
from __future__ import annotations

import pytest
import torch

from omnigraph.datasets.synthetic import synthetic_graph
from omnigraph.training.arc import pretrain_arc
from omnigraph.training.graphany import pretrain_graphany
from omnigraph.training.refi_gad import pretrain_refi_gad
from omnigraph.training.rgvt import pretrain_rgvt

N = 70_000          # > 2^16 = 65,536
QUIET = {"progress_bar": False, "accelerator": "cpu", "devices": 1}


@pytest.fixture(scope="module")
def big_nc_graph():
    data = synthetic_graph(N, 2 * N, num_features=32, num_classes=3, seed=0)
    gen = torch.Generator().manual_seed(0)
    order = torch.randperm(N, generator=gen)
    data.train_mask = torch.zeros(N, dtype=torch.bool)
    data.val_mask = torch.zeros(N, dtype=torch.bool)
    data.train_mask[order[:700]] = True
    data.val_mask[order[700:1400]] = True
    return data


@pytest.fixture(scope="module")
def big_gad_graph():
    data = synthetic_graph(N, 2 * N, num_features=16, num_classes=2, seed=1)
    gen = torch.Generator().manual_seed(1)
    y = torch.zeros(N, dtype=torch.long)
    y[torch.randperm(N, generator=gen)[:700]] = 1            # 1% anomalies, shifted features
    data.x = data.x + 2.0 * y[:, None].float()
    data.y = y
    return data


def test_rgvt_pretrains_above_2_16_nodes_on_cpu(big_nc_graph):
    enc = pretrain_rgvt(big_nc_graph, max_depth=2, max_epochs=2, hidden_channels=16, **QUIET)
    assert enc.card_["epochs_run"] == 2
    assert all(torch.isfinite(p).all() for p in enc.parameters())


def test_graphany_pretrains_above_2_16_nodes_on_cpu(big_nc_graph):
    model = pretrain_graphany(big_nc_graph, steps=2, n_hidden=8, batch_size=64, eval_every=1, **QUIET)
    assert len(model.training_history_) == 2
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize("support_episodes", ["labelled", "mixed"])
def test_refi_gad_pretrains_above_2_16_nodes_on_cpu(big_gad_graph, support_episodes):
    model = pretrain_refi_gad(big_gad_graph, epochs=1, episodes_per_graph=3, shots=10, num_query_normal=50,
                              num_query_anomaly=10, d_model=16, num_layers=1, ff_dim=32, progress_bar=False,
                              support_episodes=support_episodes)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_arc_pretrains_above_2_16_nodes_on_cpu(big_gad_graph):
    model = pretrain_arc(big_gad_graph, epochs=1, d=8, hidden_channels=16, num_layers=2, num_context=5,
                         progress_bar=False)
    assert all(torch.isfinite(p).all() for p in model.parameters())
