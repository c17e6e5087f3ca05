"""``omnigraph`` command line. Each feature module registers its own sub-commands.

Modules listed in ``_MODULES`` expose ``register(parsers)`` where ``parsers`` maps
``"top"``, ``"pretrain"`` and ``"benchmark"`` to argparse sub-parser groups; every
sub-command sets ``func(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

_MODULES = ["omnigraph.cli.data", "omnigraph.cli.nc", "omnigraph.cli.gad"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="omnigraph", description="Graph foundation models: zero-shot node "
                                     "classification and generalist graph anomaly detection.")
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    pretrain = top.add_parser("pretrain", help="pretrain a model with Lightning").add_subparsers(
        dest="model", metavar="MODEL")
    benchmark = top.add_parser("benchmark", help="run a benchmark suite").add_subparsers(
        dest="suite", metavar="SUITE")
    parsers = {"top": top, "pretrain": pretrain, "benchmark": benchmark}
    for name in _MODULES:
        importlib.import_module(name).register(parsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"omnigraph: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
