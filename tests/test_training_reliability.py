"""Pretraining reliability on the CPU: resume after a crash, seeded determinism, 2-process DDP.

* **Resume**: a run killed mid-epoch (a callback raises, as a crash would) and resumed from its
  ``last.ckpt`` ends with exactly the weights, optimiser state and bookkeeping of an
  uninterrupted run (REFI-GAD, RGVT, GraphAny, ARC).
* **Determinism**: the same seed gives bit-identical weights, whatever the caller's RNG state.
* **DDP**: RGVT pretraining with ``strategy="ddp", devices=2`` on the CPU (gloo). Both ranks see
  the same full-batch graph, so the averaged gradient is bit-identical to the single-process
  one (DDP divides each rank's gradient by 2 and sums: ``g/2 + g/2 == g`` exactly in floating
  point), and both ranks must end with the weights of a single-process run.

Tiny graphs and a few steps keep the whole file under ~60 s on one thread.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from gad_helpers import hub_anomaly_graph
from lightning.pytorch.callbacks import Callback
from rgvt_helpers import planted_graph
from torch_geometric.data import Data

from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.training.arc import pretrain_arc
from omnigraph.training.graphany import pretrain_graphany
from omnigraph.training.refi_gad import pretrain_refi_gad
from omnigraph.training.rgvt import pretrain_rgvt

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
QUIET = {"progress_bar": False, "accelerator": "cpu", "devices": 1}


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Crash(RuntimeError):
    """Stands for a killed job."""


class CrashAfter(Callback):
    """Raise after optimiser step ``step`` (mid-epoch when an epoch has several steps)."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step >= self.step:
            raise Crash(f"killed after step {trainer.global_step}")


def gad_graph(n: int = 120, n_anom: int = 15, seed: int = 0) -> Data:
    return hub_anomaly_graph(n, n_anom, seed, num_features=12, hub_degree=6, shift=1.5)


def assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        assert torch.equal(value, b[key]), key


def last_checkpoint(out_dir: Path) -> dict:
    return torch.load(out_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)


def assert_same_optimizer(a: dict, b: dict) -> None:
    (sa,), (sb,) = a["optimizer_states"], b["optimizer_states"]
    assert sa["state"].keys() == sb["state"].keys()
    for i in sa["state"]:
        for key, value in sa["state"][i].items():
            assert torch.equal(value, sb["state"][i][key]), (i, key)


def crash_then_resume(train, tmp_path: Path, crash_step: int, saved_step: int):
    """``train(out_dir, resume_from, callbacks)`` killed after ``crash_step`` steps, then resumed;
    ``saved_step``: the step of the latest epoch-end checkpoint before the crash. Returns
    ``(resumed result, uninterrupted result, both out_dirs)``."""
    broken, clean = tmp_path / "broken", tmp_path / "clean"
    with pytest.raises(Crash):
        train(broken, None, [CrashAfter(crash_step)])
    assert last_checkpoint(broken)["global_step"] == saved_step   # last.ckpt is the latest epoch, not the best
    resumed = train(broken, "last", None)
    reference = train(clean, None, None)
    return resumed, reference, broken, clean


# ------------------------------------------------------------------------------------ resume
def test_refi_gad_resume_after_crash_equals_uninterrupted(tmp_path):
    graphs = [gad_graph(seed=0), gad_graph(n=100, seed=1)]
    kw = {"epochs": 3, "episodes_per_graph": 3, "shots": 5, "num_query_normal": 30, "num_query_anomaly": 6,
          "seed": 4, "d_model": 16, "num_layers": 1, "ff_dim": 32, "progress_bar": False}  # 6 steps/epoch, dropout

    def train(out_dir, resume_from, callbacks):
        return pretrain_refi_gad(graphs, out_dir=out_dir, resume_from=resume_from, callbacks=callbacks, **kw)

    resumed, reference, broken, clean = crash_then_resume(train, tmp_path, crash_step=8, saved_step=6)  # mid epoch 1
    assert_same_state(resumed.state_dict(), reference.state_dict())
    a, b = last_checkpoint(broken), last_checkpoint(clean)
    assert a["global_step"] == b["global_step"] == 18 and a["epoch"] == b["epoch"]
    assert_same_optimizer(a, b)


def test_rgvt_resume_after_crash_equals_uninterrupted(tmp_path):
    data = planted_graph(n=60, num_classes=3, f=6, seed=2, signal=0.6)
    kw = dict(max_depth=2, max_epochs=12, patience=4, seed=4, **QUIET)   # one full-batch step per epoch

    def train(out_dir, resume_from, callbacks):
        return pretrain_rgvt(data, out_dir=out_dir, resume_from=resume_from, callbacks=callbacks, **kw)

    # killed during epoch 5, before its validation; last.ckpt is from the end of epoch 4
    resumed, reference, broken, clean = crash_then_resume(train, tmp_path, crash_step=6, saved_step=5)
    # this fixture's best epoch precedes the crash and early stopping ends the run: both the
    # best-encoder bookkeeping and EarlyStopping's counter must survive the restart
    assert reference.card_["best_epoch"] < 5 and reference.card_["epochs_run"] < kw["max_epochs"]
    assert resumed.card_ == reference.card_
    assert_same_state(resumed.state_dict(), reference.state_dict())    # the best-validation encoder
    a, b = last_checkpoint(broken), last_checkpoint(clean)
    assert_same_state(a["state_dict"], b["state_dict"])                 # final encoder + heads
    assert_same_optimizer(a, b)


def test_graphany_resume_after_crash_equals_uninterrupted(tmp_path):
    data = planted_graph(n=120, num_classes=3, f=8, seed=5)
    kw = dict(steps=12, seed=1, lr=1e-2, n_hidden=8, batch_size=16, eval_every=3, **QUIET)

    def train(out_dir, resume_from, callbacks):
        return pretrain_graphany(data, out_dir=out_dir, resume_from=resume_from, callbacks=callbacks, **kw)

    resumed, reference, _, _ = crash_then_resume(train, tmp_path, crash_step=8, saved_step=6)
    assert_same_state(resumed.state_dict(), reference.state_dict())
    assert resumed.training_history_ == reference.training_history_ and len(reference.training_history_) == 12


def test_arc_resume_after_crash_equals_uninterrupted(tmp_path):
    graphs = [gad_graph(seed=2), gad_graph(n=90, seed=3)]
    kw = {"epochs": 4, "seed": 2, "d": 8, "hidden_channels": 16, "num_layers": 2, "lr": 1e-3, "num_context": 5,
          "progress_bar": False}

    def train(out_dir, resume_from, callbacks):
        return pretrain_arc(graphs, out_dir=out_dir, resume_from=resume_from, callbacks=callbacks, **kw)

    resumed, reference, _, _ = crash_then_resume(train, tmp_path, crash_step=5, saved_step=4)  # mid epoch 2
    assert_same_state(resumed.state_dict(), reference.state_dict())


def test_resume_errors(tmp_path):
    data = planted_graph(n=30, f=4)
    with pytest.raises(ValueError, match="out_dir"):
        pretrain_rgvt(data, max_epochs=1, resume_from="last", **QUIET)
    with pytest.raises(FileNotFoundError, match="last.ckpt"):
        pretrain_rgvt(data, max_epochs=1, out_dir=tmp_path, resume_from="last", **QUIET)
    with pytest.raises(FileNotFoundError, match="nope.ckpt"):
        pretrain_refi_gad([gad_graph()], epochs=1, resume_from=tmp_path / "nope.ckpt", progress_bar=False)


def test_cli_resume_flag_reaches_the_trainer():
    from omnigraph.cli import build_parser
    from omnigraph.cli._common import trainer_kwargs

    parser = build_parser()
    for argv, expected in ((["pretrain", "rgvt", "--dataset", "cora"], None),
                           (["pretrain", "rgvt", "--dataset", "cora", "--resume"], "last"),
                           (["pretrain", "refi-gad", "--sources", "gad/cora", "--resume", "x.ckpt"], "x.ckpt")):
        kw = trainer_kwargs(parser.parse_args(argv))
        assert kw["resume_from"] == expected
    kw = trainer_kwargs(parser.parse_args(["pretrain", "arc", "--sources", "gad/cora", "--devices", "2",
                                           "--num-nodes", "3", "--strategy", "ddp"]))
    assert kw == {"devices": 2, "strategy": "ddp", "accelerator": "cpu", "num_nodes": 3, "resume_from": None}
    assert trainer_kwargs(parser.parse_args(["pretrain", "graphany", "--dataset", "cora"]))["devices"] == "auto"


# ------------------------------------------------------------------------------- determinism
def test_refi_gad_pretraining_is_bit_identical_for_a_seed():
    graphs = [gad_graph(seed=6)]
    kw = {"epochs": 2, "episodes_per_graph": 3, "shots": 5, "num_query_normal": 30, "num_query_anomaly": 6,
          "d_model": 16, "num_layers": 1, "ff_dim": 32, "progress_bar": False}
    torch.manual_seed(0)
    a = pretrain_refi_gad(graphs, seed=11, **kw)
    torch.manual_seed(999)  # the caller's RNG state must not leak into training (dropout is seeded)
    b = pretrain_refi_gad(graphs, seed=11, **kw)
    c = pretrain_refi_gad(graphs, seed=12, **kw)
    assert_same_state(a.state_dict(), b.state_dict())
    assert any(not torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))


def test_rgvt_pretraining_is_bit_identical_for_a_seed():
    graphs = [planted_graph(n=50, num_classes=3, f=5, seed=7), planted_graph(n=40, num_classes=2, f=7, seed=8)]
    kw = dict(max_depth=3, max_epochs=6, patience=10, **QUIET)
    torch.manual_seed(0)
    a = pretrain_rgvt(graphs, seed=21, **kw)
    torch.manual_seed(999)
    b = pretrain_rgvt(graphs, seed=21, **kw)
    c = pretrain_rgvt(graphs, seed=22, **kw)
    assert_same_state(a.state_dict(), b.state_dict())
    assert a.card_ == b.card_
    assert not torch.equal(a.mlp.lins[0].weight, c.mlp.lins[0].weight)


# --------------------------------------------------------------------------------------- DDP
_DDP_SCRIPT = """
import sys
from datetime import timedelta

import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.strategies import DDPStrategy

sys.path.insert(0, {tests!r})
from gad_helpers import hub_anomaly_graph
from rgvt_helpers import planted_graph
from omnigraph.training.rgvt import pretrain_rgvt


class SaveFinal(Callback):
    def on_train_end(self, trainer, pl_module):
        torch.save({{k: v.detach().cpu() for k, v in pl_module.state_dict().items()}},
                   {out!r} + f"/final_rank{{trainer.global_rank}}.pt")


if __name__ == "__main__":
    torch.set_num_threads(1)
    strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=90))
    encoder = pretrain_rgvt(planted_graph(**{graph!r}), **{kw!r}, strategy=strategy, devices=2,
                            accelerator="cpu", callbacks=[SaveFinal()])
    from lightning.pytorch.utilities import rank_zero_only
    torch.save(encoder.state_dict(), {out!r} + f"/best_rank{{rank_zero_only.rank}}.pt")
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(script: Path, cwd: Path, ranks: int | None = None, timeout: float = 180) -> str:
    """Run ``script`` once (``ranks=None``: it launches its own peers) or once per rank with the
    ``env://`` variables set; fail with the output on a non-zero exit or after ``timeout`` s."""
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    for key in ("LOCAL_RANK", "NODE_RANK", "GLOBAL_RANK", "RANK", "WORLD_SIZE"):  # a clean launch
        env.pop(key, None)
    per_rank = [{}] if ranks is None else [{"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(ranks)}
                                           for r in range(ranks)]
    # own sessions, so that a timeout can kill a process together with the peers it started
    procs = [subprocess.Popen([sys.executable, str(script)], cwd=cwd, env={**env, **extra}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True) for extra in per_rank]
    logs = []
    try:
        for proc in procs:
            logs.append(proc.communicate(timeout=timeout)[0])
    except subprocess.TimeoutExpired:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"{script.name} did not finish in {timeout} s:\n" + "\n".join(p.communicate()[0][-2000:]
                                                                             for p in procs))
    for proc, log in zip(procs, logs):
        assert proc.returncode == 0, log[-3000:]
    return "\n".join(logs)


class SaveFinal(Callback):
    def __init__(self):
        self.state = None

    def on_train_end(self, trainer, pl_module):
        self.state = {k: v.detach().cpu().clone() for k, v in pl_module.state_dict().items()}


def test_two_process_ddp_matches_a_single_process(tmp_path):
    graph = {"n": 60, "num_classes": 3, "f": 6, "seed": 9, "signal": 0.6}
    kw = {"max_depth": 2, "max_epochs": 6, "patience": 10, "seed": 5, "progress_bar": False}
    script = tmp_path / "ddp_rgvt.py"
    script.write_text(textwrap.dedent(_DDP_SCRIPT).format(tests=str(TESTS), out=str(tmp_path), graph=graph, kw=kw))
    _launch(script, tmp_path)   # Lightning's launcher starts rank 1 from rank 0

    final = SaveFinal()
    single = pretrain_rgvt(planted_graph(**graph), **kw, accelerator="cpu", devices=1, callbacks=[final])
    ranks = [torch.load(tmp_path / f"final_rank{r}.pt", weights_only=True) for r in (0, 1)]
    best = [torch.load(tmp_path / f"best_rank{r}.pt", weights_only=True) for r in (0, 1)]
    assert_same_state(ranks[0], ranks[1])           # the ranks agree: encoder and heads
    assert_same_state(ranks[0], final.state)        # ... and equal the single-process run
    assert_same_state(best[0], best[1])
    assert_same_state(best[0], single.state_dict())
    init = RGVTEncoder()
    init.reset_parameters(torch.Generator().manual_seed(kw["seed"]))
    assert not torch.equal(final.state["encoder.mlp.lins.0.weight"], init.mlp.lins[0].weight)  # training moved it


# ------------------------------------------------------------------ column-parallel inference
_COLUMN_SCRIPT = """
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, {tests!r})
from gad_helpers import hub_anomaly_graph
from rgvt_helpers import planted_graph
from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.ops.distributed import column_parallel, column_range

if __name__ == "__main__":
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=90))
    data = planted_graph(**{graph!r})
    encoder = RGVTEncoder()
    encoder.reset_parameters(torch.Generator().manual_seed(0))
    ops = RGVTEncoder.build_operators(data.edge_index, data.num_nodes)
    with torch.no_grad():
        fn = lambda xb: encoder(xb, depth={depth}, operators=ops)
        full = column_parallel(fn, data.x)
        local = column_parallel(fn, data.x, gather=False)
    rank = dist.get_rank()
    torch.save({{"full": full, "local": local, "range": torch.tensor(column_range(data.x.size(1)))}},
               {out!r} + f"/columns_rank{{rank}}.pt")
    dist.destroy_process_group()
"""


def _rgvt_encoder():
    encoder = RGVTEncoder()
    encoder.reset_parameters(torch.Generator().manual_seed(0))
    return encoder


def test_rgvt_is_column_separable_and_column_parallel_runs_in_one_process():
    from omnigraph.ops.distributed import column_blocks, column_parallel

    data = planted_graph(n=70, num_classes=3, f=11, seed=3)
    encoder = _rgvt_encoder()
    ops = RGVTEncoder.build_operators(data.edge_index, data.num_nodes)
    with torch.no_grad():
        full = encoder(data.x, depth=4, operators=ops)
        # encoding a column block = that block of the output, up to float rounding: the sparse
        # products take another vectorised path for another number of columns (CPU-dependent)
        for start, stop in column_blocks(11, 3):
            torch.testing.assert_close(encoder(data.x[:, start:stop], depth=4, operators=ops), full[:, start:stop],
                                       rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(column_parallel(lambda xb: encoder(xb, depth=4, operators=ops), data.x), full,
                                   rtol=1e-5, atol=1e-7)
    assert column_blocks(11, 2) == [(0, 6), (6, 11)]
    with pytest.raises(ValueError, match="column-separable"):
        column_parallel(lambda xb: xb.sum(1, keepdim=True), data.x)
    with pytest.raises(ValueError, match="at most as many ranks"):
        column_blocks(3, 4)


def test_two_process_column_parallel_rgvt_equals_one_process(tmp_path):
    graph, depth = {"n": 70, "num_classes": 3, "f": 11, "seed": 3}, 4
    script = tmp_path / "columns.py"
    script.write_text(textwrap.dedent(_COLUMN_SCRIPT).format(tests=str(TESTS), out=str(tmp_path), graph=graph,
                                                             depth=depth))
    _launch(script, tmp_path, ranks=2)
    data = planted_graph(**graph)
    with torch.no_grad():
        single = _rgvt_encoder()(data.x, data.edge_index, depth=depth)
    parts = [torch.load(tmp_path / f"columns_rank{r}.pt", weights_only=True) for r in (0, 1)]
    assert [p["range"].tolist() for p in parts] == [[0, 6], [6, 11]]
    for part in parts:
        torch.testing.assert_close(part["full"], single, rtol=1e-5, atol=1e-7)  # gathered on every rank
        start, stop = part["range"].tolist()
        torch.testing.assert_close(part["local"], single[:, start:stop], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------- per-graph preprocessing of the sources
def test_loaded_sources_carry_the_catalogue_preprocessing_flags(data_root):
    from omnigraph.datasets import load_dataset
    from omnigraph.datasets.flags import graph_flag
    from omnigraph.models.arc import arc_features
    from omnigraph.training.arc import prepare_sources

    facebook, cora = load_dataset("gad/facebook"), load_dataset("gad/cora")
    assert facebook.self_loops is False and getattr(cora, "self_loops", None) is None
    assert load_dataset("gad/amazon").row_normalize is True
    assert graph_flag(facebook, "self_loops", None, True) is False      # the catalogue's value...
    assert graph_flag(facebook, "self_loops", True, True) is True       # ...an explicit argument wins
    assert graph_flag(cora, "row_normalize", None, False) is False       # nothing recorded: the default
    # ARC pretraining on a plain load_dataset() graph preprocesses it like the paper (no self-loops)
    (feats,) = prepare_sources(facebook, d=8, num_hops=1).features
    assert torch.equal(feats, arc_features(facebook.x, facebook.edge_index, d=8, num_hops=1, self_loops=False))
    assert not torch.equal(feats, arc_features(facebook.x, facebook.edge_index, d=8, num_hops=1, self_loops=True))
