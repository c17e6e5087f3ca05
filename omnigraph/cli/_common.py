"""Options shared by the ``omnigraph pretrain <model>`` commands (Lightning devices, outputs, resume)."""
from __future__ import annotations

import argparse


def devices_arg(value: str) -> int | str:
    """``--devices``: a count (``2``) stays an int; ``auto`` or a device list (``0,1``) a string."""
    value = value.strip()
    return int(value) if value.isdigit() else value


def add_trainer_args(parser: argparse.ArgumentParser, name: str, devices: int | str = "auto",
                     accelerator: str = "auto") -> None:
    """Add ``--devices --num-nodes --strategy --accelerator --out --publish --resume`` to a
    ``pretrain <name>`` parser; :func:`trainer_kwargs` turns the parsed values into the
    keyword arguments of the ``pretrain_*`` functions."""
    parser.add_argument("--devices", type=devices_arg, default=devices,
                        help=f"Lightning devices per node: a count, 'auto' or a list such as 0,1 (default: {devices})")
    parser.add_argument("--num-nodes", type=int, default=1, help="machines for multi-node DDP (default: 1)")
    parser.add_argument("--strategy", default="auto", help="Lightning strategy, e.g. ddp (default: auto)")
    parser.add_argument("--accelerator", default=accelerator, help=f"cpu, gpu or auto (default: {accelerator})")
    parser.add_argument("--out", default=f"runs/{name}", help="logs, checkpoints and the final model")
    parser.add_argument("--publish", default=None, help="also ship into pretrained/ under this name")
    parser.add_argument("--resume", nargs="?", const="last", default=None, metavar="CKPT",
                        help="continue an interrupted run with the same options: from --out's "
                             "checkpoints/last.ckpt, or from the Lightning checkpoint CKPT")


def trainer_kwargs(args) -> dict:
    """The Lightning keyword arguments of the ``pretrain_*`` functions from parsed options."""
    if args.num_nodes < 1:
        raise ValueError(f"--num-nodes must be >= 1, got {args.num_nodes}")
    return {"devices": args.devices, "strategy": args.strategy, "accelerator": args.accelerator,
            "num_nodes": args.num_nodes, "resume_from": args.resume}


def is_global_zero() -> bool:
    """Whether this process is rank 0 of the (finished) Lightning run: under DDP every rank runs
    the command, and only rank 0 may write the model card, publish and print."""
    from lightning.pytorch.utilities import rank_zero_only

    return int(getattr(rank_zero_only, "rank", 0) or 0) == 0


__all__ = ["add_trainer_args", "devices_arg", "is_global_zero", "trainer_kwargs"]
