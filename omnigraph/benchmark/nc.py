"""Zero-shot node-classification benchmark: every available graph of a suite, all models side by side.

Writes ``results.csv`` (one row per graph x model), ``results.md`` (accuracy table, means, wall
seconds) and ``results.png``. Graphs whose files are absent are listed as missing; graphs skipped on
purpose carry their reason in the table. Means are over the graphs on which *every* model ran.
"""
from __future__ import annotations

import csv
import json
import platform
import time
from pathlib import Path

import torch

from omnigraph._config import portable

# Graphs run by default only on request, with the reason printed in every table.
DEFAULT_SKIPS = {
    "deezer": "local copy has 31,241 raw multi-hot features instead of PyG's 128-d SVD ones (not comparable; "
              "RGVT views need ~17.7 GB) — datasets.md caveat 1",
}


def make_model(name: str, seed: int, protocol: str):
    if name in ("rgvt", "graphany"):
        from omnigraph.estimators.registry import load_estimator

        return load_estimator(name, seed=seed, **({"protocol": protocol} if name == "rgvt" else {}))
    if name.startswith("rgvt-ref:"):  # the authors' weights through the same code (parity column)
        from omnigraph.estimators.rgvt import RGVT

        return RGVT.from_reference_npz(name.split(":", 1)[1], seed=seed, protocol=protocol)
    if name in ("gcn", "mlp"):
        from omnigraph.estimators.baselines import SupervisedBaseline

        return SupervisedBaseline(name, seed=seed)
    raise ValueError(f"unknown model {name!r}; choose from rgvt, graphany, gcn, mlp, rgvt-ref:PATH")


def _label(model: str) -> str:
    return "rgvt (authors' weights)" if model.startswith("rgvt-ref:") else model


def suite_graphs(suite: str, graphs: list[str] | None = None, include: tuple[str, ...] = ()):
    """Yield ``(base, data, problem)`` for each graph of ``suite``, in suite order.

    ``base`` holds the row keys (dataset, split, split_seed). ``data`` is the loaded graph, or
    None when the graph is skipped on purpose or missing; then ``problem`` is the row that says
    so (status ``skipped`` / ``missing`` with the reason), and it is also printed.
    """
    from omnigraph.datasets import load_dataset, suite_members

    members = suite_members(suite)
    if graphs:
        members = [m for m in members if m["name"] in graphs]
    for member in members:
        name = member["name"]
        base = {"dataset": name, "split": member.get("split"), "split_seed": member.get("seed")}
        if name.lower() in DEFAULT_SKIPS and name.lower() not in include:
            print(f"[skip] {name}: {DEFAULT_SKIPS[name.lower()]}", flush=True)
            yield base, None, {**base, "model": "*", "status": "skipped", "note": DEFAULT_SKIPS[name.lower()]}
            continue
        try:
            data = load_dataset(name, split=member.get("split"), seed=member.get("seed", 0))
        except FileNotFoundError as err:
            print(f"[missing] {name}: {err}", flush=True)
            yield base, None, {**base, "model": "*", "status": "missing", "note": portable(str(err).splitlines()[0])}
            continue
        yield base, data, None


def run_benchmark(suite: str, models: list[str], out: Path, protocol: str = "fast", seed: int = 0,
                  graphs: list[str] | None = None, include: tuple[str, ...] = (), resume: bool = False
                  ) -> list[dict]:
    """Run ``models`` on every graph of ``suite``; rows are appended to ``out/rows.jsonl`` as they
    finish, and ``resume=True`` keeps the rows already there (same suite, protocol and seed)
    instead of recomputing them, so that a killed run can be continued."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "rows.jsonl"
    settings = {"suite": suite, "protocol": protocol, "seed": seed}
    done: dict[tuple[str, str], dict] = {}
    if resume and log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if all(row.get(k) == v for k, v in settings.items()) and row["status"] == "ok":
                done[(row["dataset"], row["model"])] = row
    elif log.exists():
        log.unlink()
    rows: list[dict] = []
    for base, data, problem in suite_graphs(suite, graphs, include):
        if problem is not None:
            rows.append(problem)
            continue
        for model in models:
            if (base["dataset"], _label(model)) in done:
                rows.append(done[(base["dataset"], _label(model))])
                continue
            start = time.perf_counter()
            clf = make_model(model, seed, protocol).fit(data)
            row = {**base, "model": _label(model), "status": "ok",
                   "val_accuracy": 100 * clf.score(data, mask=data.val_mask),
                   "test_accuracy": 100 * clf.score(data, mask=data.test_mask),
                   "depth": getattr(clf, "depth_", None), "seconds": time.perf_counter() - start}
            rows.append(row)
            with open(log, "a") as f:
                f.write(json.dumps({**settings, **row}) + "\n")
            print(f"{base['dataset']:>22} {row['model']:>24}  test {row['test_accuracy']:6.2f}  "
                  f"({row['seconds']:.1f} s)", flush=True)
    meta = {**settings, "sources": pretraining_sources(models)}
    write_reports(rows, [_label(m) for m in models], out, meta)
    return rows


def pretraining_sources(models: list[str]) -> list[str]:
    """Graphs the shipped checkpoints were trained on: shown, but kept out of the transfer mean."""
    import json as _json

    from omnigraph.datasets import resolve
    from omnigraph.hub import pretrained_dir

    sources = []
    for name in ("rgvt", "graphany"):
        if name in models:
            card = _json.loads((pretrained_dir() / f"{name}.json").read_text())["card"]
            sources.append(resolve(card["training_data"].split()[0]))
    return sorted(set(sources))


def write_reports(rows: list[dict], models: list[str], out: Path, meta: dict) -> None:
    fields = ["dataset", "split", "split_seed", "model", "status", "val_accuracy", "test_accuracy", "depth",
              "seconds", "note"]
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    ok = [r for r in rows if r["status"] == "ok"]
    graphs = list(dict.fromkeys(r["dataset"] for r in ok))
    acc = {(r["dataset"], r["model"]): r for r in ok}
    sources = set(meta.get("sources", []))
    complete = [g for g in graphs if all((g, m) in acc for m in models) and g not in sources]
    lines = ["| graph | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for g in graphs:
        cells = []
        for m in models:
            r = acc.get((g, m))
            cells.append("–" if r is None else f"{r['test_accuracy']:.2f}"
                         + (f" (L={r['depth']})" if r.get("depth") else ""))
        lines.append(f"| {g}{' (pretraining source)' if g in sources else ''} | " + " | ".join(cells) + " |")
    means = {m: sum(acc[(g, m)]["test_accuracy"] for g in complete) / max(len(complete), 1) for m in models}
    secs = {m: sum(acc[(g, m)]["seconds"] for g in complete) for m in models}
    lines.append(f"| **mean over {len(complete)} graphs** | " + " | ".join(f"**{means[m]:.2f}**" for m in models) + " |")
    if sources & set(graphs):
        every = [g for g in graphs if all((g, m) in acc for m in models)]
        means_all = {m: sum(acc[(g, m)]["test_accuracy"] for g in every) / max(len(every), 1) for m in models}
        lines.append(f"| mean over all {len(every)} graphs (sources included) | "
                     + " | ".join(f"{means_all[m]:.2f}" for m in models) + " |")
    lines.append("| wall seconds (sum) | " + " | ".join(f"{secs[m]:.0f}" for m in models) + " |")
    notes = [f"- {r['dataset']}: {r['status']} — {r['note']}" for r in rows if r["status"] != "ok"]
    notes += [f"- {g}: pretraining source of a shipped checkpoint (shown, not in the mean)" for g in graphs
              if g in sources]
    header = [f"# Zero-shot node classification, suite `{meta['suite']}`", "",
              f"Suite `{meta['suite']}`, RGVT adaptation `{meta['protocol']}`, head seed {meta['seed']}; "
              f"test accuracy (%) at the best-validation model. Machine: {platform.machine()}, "
              f"{torch.get_num_threads()} torch threads, torch {torch.__version__}.", ""]
    text = "\n".join(header + lines + ([""] + ["Not in the mean:"] + notes if notes else [])) + "\n"
    (out / "results.md").write_text(text)
    (out / "summary.json").write_text(json.dumps({**meta, "graphs": complete, "mean": means,
                                                  "seconds": secs}, indent=2) + "\n")
    _plot(graphs, models, acc, out / "results.png")


def _plot(graphs, models, acc, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(graphs) * len(models) / 2), 4.5))
    width = 0.8 / max(len(models), 1)
    for i, m in enumerate(models):
        xs = [j + i * width for j, g in enumerate(graphs) if (g, m) in acc]
        ys = [acc[(g, m)]["test_accuracy"] for g in graphs if (g, m) in acc]
        ax.bar(xs, ys, width=width, label=m)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(graphs))], graphs, rotation=60, ha="right")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(ncols=len(models), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
