"""Write ``docs/results/node_classification.md`` from a finished ``omnigraph benchmark nc`` run.

Copies the run's ``results.csv`` / ``results.md`` / ``results.png`` / ``summary.json`` into
``docs/results/nc/`` and adds the comparisons issue #7 asks for (RGVT against GraphAny and MLP,
the shipped checkpoint against the authors' seed_42 weights, fast against reference
adaptation), each computed from those files.

    python benchmarks/nc_page.py --run runs/nc_full --command "omnigraph benchmark nc ..."
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
from pathlib import Path

AUTHORS = "rgvt (authors' weights)"


def _without_title(text: str) -> str:
    """The run's table without its ``# ...`` heading (the page has its own)."""
    lines = text.strip().splitlines()
    return "\n".join(lines[1:] if lines and lines[0].startswith("# ") else lines).strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="the --out folder of `omnigraph benchmark nc`")
    parser.add_argument("--command", required=True, help="the exact command that produced the run")
    parser.add_argument("--note", default="", help="a remark printed after the command")
    parser.add_argument("--docs", default="docs/results")
    args = parser.parse_args(argv)

    run, docs = Path(args.run), Path(args.docs)
    target = docs / "nc"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("results.csv", "results.md", "results.png", "summary.json"):
        shutil.copy(run / name, target / name)
    summary = json.loads((run / "summary.json").read_text())
    with open(run / "results.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    acc = {(r["dataset"], r["model"]): float(r["test_accuracy"]) for r in rows}
    graphs = list(dict.fromkeys(r["dataset"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    every = [g for g in graphs if all((g, m) in acc for m in models)]

    def mean(model: str, over: list[str]) -> float:
        return statistics.fmean(acc[(g, model)] for g in over)

    transfer = summary["graphs"]  # pretraining sources of the shipped checkpoints excluded
    lines = ["# Zero-shot node classification", "",
             f"Command: `{args.command}`" + (f" ({args.note})" if args.note else ""), "",
             "Test accuracy (%) per graph; RGVT and the authors' RGVT weights adapt a fresh head and the depth "
             "on each graph's train/validation labels (fast protocol), GraphAny solves its least squares on the "
             "train labels, GCN and MLP are trained on each graph (PyG models, fixed recipe). Full table with "
             "per-model wall seconds: [nc/results.md](nc/results.md); the same rows as CSV: "
             "[nc/results.csv](nc/results.csv).", "",
             _without_title((run / "results.md").read_text()), "",
             "![per-graph accuracy](nc/results.png)", "",
             "## Comparisons asked for by the benchmark (issue #7)", "",
             "| comparison | over | value | target | holds |", "|---|---|---:|---|---|"]

    def check(label: str, over: list[str], value: float, target: str, ok: bool) -> None:
        lines.append(f"| {label} | {len(over)} graphs | {value:+.2f} | {target} | {'yes' if ok else '**no**'} |")

    for over, name in ((transfer, "transfer graphs (pretraining sources excluded)"), (every, "all graphs run")):
        lines.append(f"| *{name}* | | | | |")
        d = mean("rgvt", over) - mean("graphany", over)
        check("RGVT mean − GraphAny mean", over, d, ">= +6", d >= 6)
        d = mean("rgvt", over) - mean("mlp", over)
        check("RGVT mean − MLP mean", over, d, ">= 0", d >= 0)
        if AUTHORS in models:
            d = mean("rgvt", over) - mean(AUTHORS, over)
            check("shipped RGVT − authors' seed_42 weights", over, d, ">= −1", d >= -1)
    fvr = docs / "rgvt_fast_vs_reference.json"
    if fvr.exists():
        f = json.loads(fvr.read_text())
        lines += ["", f"Fast against reference adaptation ([rgvt_fast_vs_reference.md](rgvt_fast_vs_reference.md), "
                  f"{len(f['graphs'])} graphs, same encoder pass): reference − fast = "
                  f"**{f['mean_loss_points']:+.2f} points** (target <= 0.5), adaptation **{f['adaptation_speedup']:.1f}x** "
                  f"faster (target >= 10x), end to end (encoder included) {f['end_to_end_speedup']:.1f}x."]
    lines += ["", "Graphs of the suite that did not run are listed under the table with the reason; they are "
              "in no mean.", ""]
    (docs / "node_classification.md").write_text("\n".join(lines))
    print((docs / "node_classification.md").read_text())


if __name__ == "__main__":
    main()
