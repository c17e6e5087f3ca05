"""``omnigraph datasets list [--task nc|gad] [--suite NAME] [--json]`` and ``omnigraph datasets info NAME``."""
from __future__ import annotations

import argparse
import json


def register(parsers: dict) -> None:
    parser = parsers["top"].add_parser("datasets", help="list the dataset catalogue and describe datasets")
    sub = parser.add_subparsers(dest="datasets_command", metavar="ACTION")
    lister = sub.add_parser("list", help="every catalogued dataset with N/E/F/C and local availability")
    lister.add_argument("--task", choices=["nc", "gad"], help="only node-classification or anomaly-detection sets")
    lister.add_argument("--suite", help="only the graphs of a benchmark suite (rgvt28, graphany31)")
    lister.add_argument("--json", action="store_true", help="machine-readable output")
    lister.set_defaults(func=_list)
    info = sub.add_parser("info", help="catalogue entry, files and local status of one dataset")
    info.add_argument("name", help="dataset name or alias (case-insensitive)")
    info.add_argument("--json", action="store_true", help="print the full entry as JSON")
    info.set_defaults(func=_info)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _rows(task: str | None, suite_name: str | None) -> list[dict]:
    from omnigraph.datasets import get_entry, is_available, list_datasets, suite

    names = list_datasets(task)
    if suite_name:
        wanted = suite(suite_name)
        names = [n for n in wanted if n in names]
    rows = []
    for name in names:
        entry = get_entry(name)
        stats = entry["stats"]
        row = {"name": name, "task": entry["task"], "title": entry["title"],
               "num_nodes": stats.get("num_nodes"), "num_edges": stats.get("num_edges"),
               "num_features": stats.get("num_features"), "num_classes": stats.get("num_classes"),
               "available": is_available(name), "fidelity": entry["fidelity"], "aliases": entry.get("aliases", [])}
        if entry["task"] == "gad":
            row["num_anomalies"] = stats.get("num_anomalies")
        rows.append(row)
    return rows


def _fmt(value) -> str:
    return "?" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _list(args: argparse.Namespace) -> int:
    rows = _rows(args.task, args.suite)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    header = ("name", "task", "N", "E", "F", "C", "local")
    table = [header] + [(r["name"], r["task"], _fmt(r["num_nodes"]), _fmt(r["num_edges"]), _fmt(r["num_features"]),
                         _fmt(r["num_classes"]), "yes" if r["available"] else "no") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) if i in (0, 1, 6) else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))))
    local = sum(r["available"] for r in rows)
    print(f"\n{len(rows)} datasets, {local} available locally (E = edge_index columns; '?' = unknown)")
    return 0


def _info(args: argparse.Namespace) -> int:
    from omnigraph.datasets import dataset_info

    info = dataset_info(args.name)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    stats = info["stats"]
    lines = [
        f"{info['name']}: {info['title']}",
        f"  task:      {info['task']}" + (f" ({info['anomaly_type']}; {info['role']})" if info["task"] == "gad" else ""),
        f"  aliases:   {', '.join(info.get('aliases', [])) or '-'}",
        f"  stats:     N={_fmt(stats.get('num_nodes'))} E={_fmt(stats.get('num_edges'))} "
        f"F={_fmt(stats.get('num_features'))} C={_fmt(stats.get('num_classes'))}"
        + (f" anomalies={_fmt(stats.get('num_anomalies'))}" if info["task"] == "gad" else "")
        + f"  [{stats.get('source', '')}]",
        f"  loader:    {json.dumps(info['loader'])}",
    ]
    if info["task"] == "nc":
        protocols = ", ".join(f"{p}:0..{c - 1}" if c else p for p, c in info["splits"]["protocols"].items())
        lines.append(f"  splits:    default {info['splits']['default']}; {protocols}")
    if info.get("suites"):
        lines.append("  suites:    " + ", ".join(f"{s} ({split})" for s, split in info["suites"].items()))
    lines += [f"  fidelity:  {info['fidelity']}",
              f"  available: {'yes' if info['available'] else 'no'}" + (f" (mirror {info['mirror']})"
                                                                          if info["mirror"] else ""),
              f"  download:  {info.get('download', '-')}"]
    for src in info.get("source", []):
        lines.append(f"  source:    {src.get('repo')} {src.get('path')} @ {str(src.get('commit', ''))[:12]}")
    files = info.get("files", [])
    if files:
        lines.append(f"  files:     {len(files)} ({sum(1 for f in files if 'sha256' in f)} with sha256), "
                     f"e.g. {files[0]['path']}")
    if info.get("notes"):
        lines.append(f"  notes:     {info['notes']}")
    print("\n".join(lines))
    return 0
