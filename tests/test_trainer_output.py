"""What a user sees while pretraining: progress and Lightning's own warnings, no advertisements."""
from __future__ import annotations

import logging

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

from omnigraph.training._trainer import fit_lightning


class _Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 3, generator=g), torch.randn(8, generator=g)), batch_size=4)


def test_fit_prints_no_litlogger_tip(tmp_path, capfd, caplog):
    caplog.set_level(logging.INFO)
    for quiet in (False, True):
        fit_lightning(_Tiny(), max_epochs=1, out_dir=tmp_path / str(quiet), progress_bar=False, quiet=quiet,
                      accelerator="cpu", devices=1)
    out, err = capfd.readouterr()
    seen = out + err + caplog.text
    assert "litlogger" not in seen.lower() and "Tip:" not in seen
    # the filter is removed again: it does not outlive the run
    assert not logging.getLogger("lightning.pytorch.utilities.rank_zero").filters
