"""The Lightning plumbing shared by every pretraining function: one ``Trainer`` recipe, and
checkpoints that resume a run exactly.

Every ``pretrain_*`` function builds its ``LightningModule`` and calls :func:`fit_lightning`,
which owns what they have in common: the CSV logger and the ``ModelCheckpoint`` under
``out_dir``, ``devices`` / ``strategy`` / ``num_nodes``, the quiet flags and the warnings
that one-graph-per-step training triggers by design.

**Resume.** A Lightning checkpoint holds the weights, the optimiser, the loop counters and the
callbacks' state, but not the global torch RNG (dropout, the base seed each ``DataLoader``
iterator draws). :class:`RNGStateCheckpoint`, attached whenever checkpoints are written, adds
it, so a run resumed from ``last.ckpt`` continues with the random stream of an uninterrupted
run; with the per-episode generators of the training modules this makes the resumed weights
bit-identical on the CPU (tested in ``tests/test_training_reliability.py``).
"""
from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

#: name of the checkpoint that ``resume_from="last"`` (CLI: ``--resume``) reads
LAST_CHECKPOINT = "last.ckpt"


class RNGStateCheckpoint(Callback):
    """Store the global torch RNG state in every checkpoint and reinstate it on resume.

    The state is captured when the checkpoint is written and set back at ``on_train_start``
    of the resumed run, i.e. after Lightning restored the weights and before the first
    training batch is drawn, the point an uninterrupted run had reached after the save.
    """

    def __init__(self):
        self._pending: dict | None = None

    @property
    def state_key(self) -> str:
        return "omnigraph.rng"

    def state_dict(self) -> dict:
        state = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        self._pending = dict(state_dict)

    def on_train_start(self, trainer, pl_module) -> None:
        if self._pending is None:
            return
        torch.set_rng_state(self._pending["torch"].cpu())
        if "cuda" in self._pending and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(self._pending["cuda"])
        self._pending = None
        # Lightning created the resumed epoch's DataLoader iterator before this hook, drawing its
        # base seed from the pre-restore stream; an uninterrupted run draws it from the restored
        # state at the start of that epoch. Recreate the iterator so that the draw matches (our
        # checkpoints are written at epoch ends, where a fresh iterator is due anyway).
        fetcher = getattr(trainer.fit_loop, "_data_fetcher", None)
        if fetcher is not None:
            iter(fetcher)


def source_names(graphs) -> list[str] | None:
    """The names of the source graphs for a checkpoint's card: catalogue names or file paths as given,
    ``data.name`` of loaded graphs; ``None`` when any source is unnamed (benchmarks then refuse the
    checkpoint unless told otherwise, since they cannot rule out that it saw their targets)."""
    from torch_geometric.data import Data

    if isinstance(graphs, (Data, str, os.PathLike)):
        graphs = [graphs]
    if not isinstance(graphs, (list, tuple)):
        return None
    names = []
    for g in graphs:
        name = str(g) if isinstance(g, (str, os.PathLike)) else getattr(g, "name", None) if isinstance(g, Data) else None
        if not isinstance(name, str) or not name:
            return None
        names.append(name)
    return names


def resolve_resume(resume_from: str | os.PathLike | None, out_dir: str | os.PathLike | None) -> str | None:
    """The checkpoint file to resume from: ``None`` (fresh run), ``"last"`` (the ``last.ckpt``
    that an earlier run with the same ``out_dir`` wrote) or a path to a ``.ckpt`` file."""
    if resume_from is None:
        return None
    if isinstance(resume_from, str) and resume_from == "last":
        if out_dir is None:
            raise ValueError("resume_from='last' reads out_dir/checkpoints/last.ckpt: pass the out_dir of the "
                             "interrupted run (CLI: --out), or a checkpoint path")
        path = Path(out_dir) / "checkpoints" / LAST_CHECKPOINT
    else:
        path = Path(resume_from)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint to resume from at {path}: point resume_from (CLI: --resume PATH) "
                                "at a Lightning .ckpt file, or drop it to start a fresh run")
    return str(path)


def _no_advert(record: logging.LogRecord) -> bool:
    """Drop Lightning's "Tip: ... litlogger" advertisement; every other record passes."""
    return "litlogger" not in str(record.msg)


@contextmanager
def _quiet_lightning(enabled: bool):
    """Raise the ``lightning.pytorch`` logger to WARNING (drops the "GPU available: ..." banner) and,
    quiet or not, drop the cloud-logging advertisement Lightning prints on every ``Trainer``."""
    logger = logging.getLogger("lightning.pytorch")
    adverts = logging.getLogger("lightning.pytorch.utilities.rank_zero")  # where rank_zero_info logs
    level = logger.level
    if enabled:
        logger.setLevel(logging.WARNING)
    adverts.addFilter(_no_advert)
    try:
        yield
    finally:
        logger.setLevel(level)
        adverts.removeFilter(_no_advert)


def fit_lightning(module: L.LightningModule, *, max_epochs: int, datamodule: L.LightningDataModule | None = None,
                  out_dir: str | os.PathLike | None = None, checkpoint: dict | None = None,
                  last_every_n_epochs: int = 1, callbacks: Sequence[Callback] | None = None,
                  resume_from: str | os.PathLike | None = None,
                  accelerator: str = "cpu", devices: int | str | list = 1, strategy: str = "auto",
                  num_nodes: int = 1, progress_bar: bool = True, quiet: bool = False,
                  **trainer_kwargs) -> L.Trainer:
    """Build the ``lightning.Trainer`` of a pretraining run and fit ``module``.

    Args:
        module: the ``LightningModule`` to train.
        max_epochs: Lightning epochs.
        datamodule: passed to ``Trainer.fit``.
        out_dir: if given, CSV logs go to ``out_dir/logs`` and Lightning checkpoints to
            ``out_dir/checkpoints``; nothing is written otherwise.
        checkpoint: arguments of a ``ModelCheckpoint`` that keeps the best epochs (``dirpath``
            is set here); ``None``: none.
        last_every_n_epochs: write ``out_dir/checkpoints/last.ckpt`` at the end of every
            ``n``-th epoch (``0``: never), for :func:`resolve_resume`. A separate callback from
            ``checkpoint``: Lightning refreshes a monitored callback's ``last.ckpt`` only when
            the monitored value improves.
        callbacks: further Lightning callbacks (early stopping, user hooks).
        resume_from: ``None``, ``"last"`` or a checkpoint path (see :func:`resolve_resume`);
            the checkpoint is read with ``weights_only=True``.
        accelerator, devices, strategy, num_nodes: passed to ``lightning.Trainer``
            (``strategy="ddp"`` with ``devices`` / ``num_nodes`` for multi-process training).
        progress_bar: show Lightning's progress bar.
        quiet: also silence Lightning's informational log lines.
        trainer_kwargs: any other ``lightning.Trainer`` argument (e.g. ``log_every_n_steps``).

    Returns:
        the fitted ``Trainer`` (``trainer.is_global_zero`` tells the process that saves).
    """
    ckpt_path = resolve_resume(resume_from, out_dir)
    callbacks = list(callbacks or [])
    logger = False
    if out_dir is not None:
        from lightning.pytorch.loggers import CSVLogger

        logger = CSVLogger(str(out_dir), name="logs")
        ckpt_dir = str(Path(out_dir) / "checkpoints")
        if checkpoint is not None:
            callbacks.append(ModelCheckpoint(dirpath=ckpt_dir, **checkpoint))
        if last_every_n_epochs:
            # at epoch ends (after validation), overwriting one file: what RNGStateCheckpoint expects
            callbacks.append(ModelCheckpoint(dirpath=ckpt_dir, filename=LAST_CHECKPOINT[:-len(".ckpt")], monitor=None,
                                             save_top_k=1, every_n_epochs=int(last_every_n_epochs),
                                             save_on_train_epoch_end=True, enable_version_counter=False))
    checkpointing = any(isinstance(c, ModelCheckpoint) for c in callbacks)
    if checkpointing or ckpt_path is not None:
        callbacks.append(RNGStateCheckpoint())
    trainer_kwargs.setdefault("enable_model_summary", False)
    trainer_kwargs.setdefault("num_sanity_val_steps", 0)
    with _quiet_lightning(quiet):
        trainer = L.Trainer(max_epochs=int(max_epochs), accelerator=accelerator, devices=devices, strategy=strategy,
                            num_nodes=num_nodes, logger=logger, callbacks=callbacks,
                            enable_checkpointing=checkpointing, enable_progress_bar=progress_bar, **trainer_kwargs)
        with warnings.catch_warnings():
            # one graph / one episode per step by design: loader workers would only add overhead
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            warnings.filterwarnings("ignore", message=".*number of training batches.*")
            trainer.fit(module, datamodule=datamodule, ckpt_path=ckpt_path, weights_only=True if ckpt_path else None)
    return trainer


__all__ = ["LAST_CHECKPOINT", "RNGStateCheckpoint", "fit_lightning", "resolve_resume"]
