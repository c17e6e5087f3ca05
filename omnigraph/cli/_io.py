"""What ``predict`` and ``detect`` read (a catalogue name, a graph file, or a node table + edge list)
and what they write (one row per node, as CSV, ``.npy`` or ``.pt`` by the extension of ``--out``)."""
from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

import numpy as np
import torch

OUT_SUFFIXES = (".csv", ".npy", ".pt")


def add_graph_args(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument("--dataset", default=default,
                        help="catalogue name (see `omnigraph datasets list`) or a graph file (.npz, .pt, .mat)")
    parser.add_argument("--nodes", default=None, help="instead of --dataset: a CSV node table (id, features, label)")
    parser.add_argument("--edges", default=None, help="with --nodes: a CSV edge list (source id, target id)")
    parser.add_argument("--label-column", default=None, help="with --nodes: the label column (empty cell = unlabelled)")
    parser.add_argument("--out", default=None,
                        help="write one row per node to this file: .csv (with a header), .npy (the same columns "
                             "as a float array) or .pt (a dict of tensors)")


def load_graph(args, task: str):
    """The graph of ``--dataset`` or ``--nodes/--edges``, read as ``task`` (``"nc"`` or ``"gad"``)."""
    if args.out is not None and Path(args.out).suffix.lower() not in OUT_SUFFIXES:
        raise ValueError(f"--out {args.out}: the extension must be one of {', '.join(OUT_SUFFIXES)}")
    if args.nodes or args.edges:
        if not (args.nodes and args.edges):
            raise ValueError("--nodes and --edges go together (a node table and an edge list)")
        from omnigraph.datasets.tables import read_tables

        return read_tables(args.nodes, args.edges, label_column=args.label_column, task=task)
    if args.dataset is None:
        raise ValueError("give --dataset (a name or a graph file) or --nodes and --edges")
    if task == "gad":
        from omnigraph.benchmark.gad import load_gad

        return load_gad(args.dataset)
    from omnigraph.datasets import load_dataset

    return load_dataset(args.dataset, split=getattr(args, "split_arg", None), seed=args.split_seed, task="nc")


def parse_ids(spec: str | None, data, name: str):
    """``--support-*``: comma-separated node ids, or a file with one id per line; with a node table the
    ids are the table's, otherwise node indices."""
    if spec is None:
        return None
    path = Path(spec)
    items = path.read_text().split() if path.is_file() else [s for s in spec.split(",")]
    items = [s.strip() for s in items if s.strip()]
    ids = getattr(data, "node_ids", None)
    if ids is not None:
        where = {node: i for i, node in enumerate(ids)}
        unknown = [s for s in items if s not in where]
        if unknown:
            raise ValueError(f"{name}: node {unknown[0]!r} is not in the node table")
        return torch.tensor([where[s] for s in items], dtype=torch.long)
    try:
        return torch.tensor([int(s) for s in items], dtype=torch.long)
    except ValueError:
        raise ValueError(f"{name} must list integer node ids (or name a file of them), got {spec!r}") from None


def write_nodes(path: str | Path, columns: dict[str, torch.Tensor], node_ids=None) -> Path:
    """One row per node, columns in order; written atomically (never a half-written file)."""
    from omnigraph.hub import atomic_write_bytes

    path = Path(path)
    cols = {k: torch.as_tensor(v).detach().cpu() for k, v in columns.items()}
    n = next(iter(cols.values())).shape[0]
    suffix = path.suffix.lower()
    if suffix == ".csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["node", *cols])
        names = node_ids if node_ids is not None else range(n)
        values = [c.tolist() for c in cols.values()]
        for i, node in enumerate(names):
            writer.writerow([node, *(_cell(v[i]) for v in values)])
        blob = buf.getvalue().encode()
    elif suffix == ".npy":
        arr = np.stack([c.double().numpy() for c in cols.values()], axis=1)
        out = io.BytesIO()
        np.save(out, arr, allow_pickle=False)
        blob = out.getvalue()
    elif suffix == ".pt":
        out = io.BytesIO()
        torch.save(cols, out)
        blob = out.getvalue()
    else:
        raise ValueError(f"{path}: the extension must be one of {', '.join(OUT_SUFFIXES)}")
    atomic_write_bytes(path, blob)
    return path


def emit(args, result: dict, data, columns: dict | None = None, described: str = "") -> int:
    """End of ``predict`` / ``detect``: per-node rows to ``--out`` (when asked), the result to ``--json``."""
    import json

    if args.out and columns is not None:
        write_nodes(args.out, columns, getattr(data, "node_ids", None))
        result["out"] = args.out
        print(f"wrote {data.num_nodes} rows (node, {described}) to {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _cell(v):
    return f"{v:.6g}" if isinstance(v, float) else v
