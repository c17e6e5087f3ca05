"""Reports of the node-classification benchmark: mean +- std over head seeds per graph, means of
means, balanced accuracy and macro-F1, and feature-type groups.

:func:`aggregate` turns the benchmark's rows (one per graph, model and seed) into those numbers;
:func:`write_reports` writes them as ``results.csv`` / ``results.md`` / ``summary.json`` /
``results.png``. Standard deviations are sample standard deviations (``n - 1``) over head seeds.
"""
from __future__ import annotations

import csv
import json
import platform
import statistics
from pathlib import Path

import torch

from omnigraph.datasets.features import FEATURE_TYPES

METRICS = ("test_accuracy", "balanced_accuracy", "macro_f1")
FIELDS = ["dataset", "split", "split_seed", "features", "model", "seed", "status", "val_accuracy", "test_accuracy",
          "balanced_accuracy", "macro_f1", "n_test", "depth", "seconds", "note"]


def _std(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def aggregate(rows: list[dict], models: list[str], sources: set[str] | frozenset = frozenset()) -> dict:
    """Per graph and model: mean and std over seeds of each metric, depths and seconds; per model:
    means of the per-graph means over the graphs every model ran on (``sources`` excluded), the
    std over seeds of the per-seed mean (over seeds every such graph has), and the same means per
    feature-type group."""
    ok = [r for r in rows if r["status"] == "ok"]
    graphs = list(dict.fromkeys(r["dataset"] for r in ok))
    cells: dict[str, dict[str, dict]] = {g: {} for g in graphs}
    for g in graphs:
        for m in models:
            mine = sorted((r for r in ok if r["dataset"] == g and r["model"] == m), key=lambda r: int(r["seed"]))
            if not mine:
                continue
            cell = {"seeds": [int(r["seed"]) for r in mine], "features": mine[0].get("features"),
                    "n_test": mine[0].get("n_test"),
                    "depths": sorted({int(r["depth"]) for r in mine if r.get("depth") not in (None, "")}),
                    "seconds": statistics.fmean(float(r["seconds"]) for r in mine),
                    "by_seed": {int(r["seed"]): float(r["test_accuracy"]) for r in mine}}
            for k in METRICS:
                values = [float(r[k]) for r in mine]
                cell[k], cell[k + "_std"] = statistics.fmean(values), _std(values)
            cells[g][m] = cell
    every = [g for g in graphs if all(m in cells[g] for m in models)]
    complete = [g for g in every if g not in sources]

    def mean_of(m: str, key: str, over: list[str]) -> float | None:
        return statistics.fmean(cells[g][m][key] for g in over) if over else None

    summary: dict = {"graphs": complete, "all_graphs": every, "per_graph": cells,
                     "seeds": {m: sorted({s for g in complete for s in cells[g][m]["seeds"]}) for m in models}}
    for k in METRICS:
        summary[k if k != "test_accuracy" else "mean"] = {m: mean_of(m, k, complete) for m in models}
    summary["mean_all"] = {m: mean_of(m, "test_accuracy", every) for m in models}
    summary["mean_std"] = {}
    for m in models:
        common = sorted(set.intersection(*(set(cells[g][m]["seeds"]) for g in complete))) if complete else []
        per_seed = [statistics.fmean(cells[g][m]["by_seed"][s] for g in complete) for s in common]
        summary["mean_std"][m] = _std(per_seed)
    summary["seconds"] = {m: sum(cells[g][m]["seconds"] for g in complete) for m in models}
    groups = {}
    for t in FEATURE_TYPES:
        members = [g for g in complete if next(iter(cells[g].values()))["features"] == t]
        groups[t] = {"graphs": members, "mean": {m: mean_of(m, "test_accuracy", members) for m in models}}
    summary["groups"] = groups
    return summary


def _cell(cell: dict | None, key: str, depth: bool = False) -> str:
    if cell is None:
        return "–"
    text = f"{cell[key]:.2f}" + (f" ± {cell[key + '_std']:.2f}" if len(cell["seeds"]) > 1 else "")
    if depth and cell["depths"]:
        text += f" (L={','.join(map(str, cell['depths']))})"
    return text


def _table(summary: dict, models: list[str], key: str, sources: set[str], depth: bool = False) -> list[str]:
    cells, means = summary["per_graph"], summary["mean" if key == "test_accuracy" else key]
    lines = ["| graph | features | " + " | ".join(models) + " |", "|---|---|" + "---:|" * len(models)]
    for g, row in cells.items():
        features = next((c["features"] for c in row.values()), "")
        lines.append(f"| {g}{' (pretraining source)' if g in sources else ''} | {features} | "
                     + " | ".join(_cell(row.get(m), key, depth) for m in models) + " |")
    n = len(summary["graphs"])
    spread = key == "test_accuracy" and any(len(s) > 1 for s in summary["seeds"].values())
    lines.append(f"| **mean over {n} graphs** | | " + " | ".join(
        "–" if means[m] is None else f"**{means[m]:.2f}**" + (f" ± {summary['mean_std'][m]:.2f}" if spread else "")
        for m in models) + " |")
    if key == "test_accuracy" and sources & set(summary["all_graphs"]):
        lines.append(f"| mean over all {len(summary['all_graphs'])} graphs (sources included) | | " + " | ".join(
            "–" if summary["mean_all"][m] is None else f"{summary['mean_all'][m]:.2f}" for m in models) + " |")
    return lines


def write_reports(rows: list[dict], models: list[str], out: Path, meta: dict) -> dict:
    """Write ``results.csv`` / ``results.md`` / ``summary.json`` / ``results.png`` in ``out``; returns the summary."""
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    sources = set(meta.get("sources", []))
    summary = aggregate(rows, models, sources)
    seeds = "; ".join(f"{m} {','.join(map(str, summary['seeds'][m]))}" for m in models)
    lines = [f"# Zero-shot node classification, suite `{meta['suite']}`", "",
             (f"Suite `{meta['suite']}`, RGVT adaptation `{meta['protocol']}`; head seeds: {seeds}. Test accuracy (%) "
             "at the best-validation model, mean ± sample std over head seeds (the mean row: mean of the per-graph "
             "means ± std over seeds of the per-seed mean). Machine: "
             f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}."), ""]
    lines += _table(summary, models, "test_accuracy", sources, depth=True)
    lines.append("| wall seconds per seed (sum) | | " + " | ".join(f"{summary['seconds'][m]:.0f}" for m in models) + " |")
    for key, title in (("balanced_accuracy", "Balanced accuracy"), ("macro_f1", "Macro-F1")):
        lines += ["", f"{title} (%) on the test nodes, mean ± std over head seeds:", ""]
        lines += _table(summary, models, key, sources)
    lines += ["", ("Mean test accuracy per feature-type group (`omnigraph.datasets.feature_type`: a rule on X, since "
              "the paper does not say which graph is in which group; pretraining sources excluded):"), "",
              "| group | graphs | " + " | ".join(models) + " |", "|---|---|" + "---:|" * len(models)]
    for t, group in summary["groups"].items():
        names = ", ".join(group["graphs"]) or "none in this run"
        lines.append(f"| {t} | {names} | " + " | ".join(
            "–" if group["mean"][m] is None else f"{group['mean'][m]:.2f}" for m in models) + " |")
    notes = [f"- {r['dataset']}: {r['status']} — {r['note']}" for r in rows if r["status"] != "ok"]
    notes += [f"- {g}: pretraining source of a shipped checkpoint (shown, not in the mean)"
              for g in summary["per_graph"] if g in sources]
    text = "\n".join(lines + ([""] + ["Not in the mean:"] + notes if notes else [])) + "\n"
    (out / "results.md").write_text(text)
    (out / "summary.json").write_text(json.dumps({**meta, **summary}, indent=2) + "\n")
    _plot(summary, models, out / "results.png")
    return summary


def _plot(summary: dict, models: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = summary["per_graph"]
    graphs = list(cells)
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(graphs) * len(models) / 2), 4.5))
    width = 0.8 / max(len(models), 1)
    for i, m in enumerate(models):
        have = [(j, cells[g][m]) for j, g in enumerate(graphs) if m in cells[g]]
        ax.bar([j + i * width for j, _ in have], [c["test_accuracy"] for _, c in have], width=width, label=m,
               yerr=[c["test_accuracy_std"] for _, c in have], capsize=1.5, error_kw={"elinewidth": 0.6})
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(graphs))], graphs, rotation=60, ha="right")
    ax.set_ylabel("test accuracy (%), mean ± std over seeds")
    ax.legend(ncols=len(models), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = ["FIELDS", "METRICS", "aggregate", "write_reports"]
