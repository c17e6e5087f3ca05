"""Outputs of the anomaly-detection benchmark: CSV, markdown tables, plots and JSON of a run's result."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

#: Published AUROC / AUPRC (percent) in the ARC setting (normal-10, ARC's original files, 5 runs),
#: spec §9.1 (IA-GGAD Table 1) and §9.2 (IA-GGAD Table 8). Not comparable with reduced-protocol
#: numbers: different files for BlogCatalog/Amazon/Reddit, different sources.
PUBLISHED = {
    "ARC": {
        "auroc": {"gad/cora": 87.45, "gad/citeseer": 90.95, "gad/facebook": 67.56, "gad/reddit": 60.04,
                  "gad/amazon": 80.67, "gad/blogcatalog_inj": 74.76},
        "auprc": {"gad/cora": 49.33, "gad/citeseer": 45.77, "gad/facebook": 8.38, "gad/reddit": 4.48,
                  "gad/amazon": 44.25, "gad/blogcatalog_inj": 36.06},
    },
    "IA-GGAD": {
        "auroc": {"gad/cora": 88.68, "gad/citeseer": 91.83, "gad/facebook": 80.03, "gad/reddit": 60.29,
                  "gad/amazon": 83.78, "gad/blogcatalog_inj": 75.28},
        "auprc": {"gad/cora": 52.47, "gad/citeseer": 48.71, "gad/facebook": 6.55, "gad/reddit": 4.74,
                  "gad/amazon": 56.54, "gad/blogcatalog_inj": 35.52},
    },
}
PUBLISHED_SOURCE = ("published, ARC setting (normal-10, ARC's original files incl. BlogCatalog, 4 original "
                    "sources): anomaly-detection spec §9.1/§9.2 (IA-GGAD Tables 1 and 8)")


def mean_over_targets(rows: list[dict], regime: str, model: str, key: str = "auroc") -> float | None:
    """Mean of ``key`` over the targets where every model of the regime ran (``None`` if none)."""
    ok = [r for r in rows if r["regime"] == regime and r.get("status") == "ok"]
    models = {r["model"] for r in rows if r["regime"] == regime}
    targets = sorted({r["target"] for r in ok})
    common = [t for t in targets if all(any(r["target"] == t and r["model"] == m for r in ok)
                                        for m in models if any(r["model"] == m for r in ok))]
    vals = [r[key] for r in ok if r["model"] == model and r["target"] in common]
    return float(np.mean(vals)) if vals else None


def seconds_per_graph(row: dict, seeds: int) -> float:
    """Wall seconds of one call on the row's graph: the first, cold call (every per-graph cache
    cleared: features aligned, fingerprint computed) where the run recorded it, else the mean per seed."""
    if "cold_seconds" in row:
        return float(row["cold_seconds"])
    return float(row["seconds"]) / max(1, seeds)


def _seconds_table(rows: list[dict], meta: dict) -> list[str]:
    if not any("cold_seconds" in r for r in rows):
        return []
    seeds = len(meta["seeds"])
    lines = ["## Seconds per graph", "",
             ("One call on the target, mean over the targets where the detector ran: the first call with every "
              "per-graph cache cleared (feature alignment, fingerprint; pygod: training on the target), then "
              "the mean per seed of all calls (later seeds reuse the caches)."), "",
             "| regime | detector | first call | mean per seed |", "|---|---|---:|---:|"]
    for regime in meta["regimes"]:
        for model in meta["models"]:
            ok = [r for r in rows if r["regime"] == regime and r["model"] == model and r.get("status") == "ok"]
            if ok:
                first = np.mean([seconds_per_graph(r, seeds) for r in ok])
                per_seed = np.mean([r["seconds"] for r in ok]) / max(1, seeds)
                lines.append(f"| {regime} | {model} | {first:.3f} | {per_seed:.3f} |")
    return lines + [""]


def _cell(row: dict | None, key: str) -> str:
    if row is None:
        return "–"
    if row.get("status") != "ok":
        return "n/a"
    return f"{row[key]:.2f} ± {row[key.replace('auroc', 'auroc_std').replace('auprc', 'auprc_std')]:.2f}"


def markdown(result: dict, command: str | None = None) -> str:
    rows, meta = result["rows"], result["meta"]
    models = meta["models"]
    lines = [f"# GAD benchmark: {meta['title']}", ""]
    if command:
        lines += ["Command:", "", f"```\n{command}\n```", ""]
    lines += [f"- protocol `{meta['protocol']}`; sources: {', '.join(meta['sources'])}",
              f"- seeds {meta['seeds']}: each seed redraws the support"
              + (f"; {', '.join(meta['trained_in_run'])} re-trained per seed on the sources in this run"
                 if meta["trained_in_run"] else "")
              + "; other learned models: checkpoints trained once (listed below)",
              ("- AUROC / AUPRC in percent, mean ± population std; evaluated population = all nodes minus the "
               "support (support-included variant below)"),
              f"- date {meta['date']}, torch {meta['torch']}"
              + (f" ({meta['torch_threads']} threads)" if "torch_threads" in meta else "")
              + f", python {meta['python']}"]
    if meta["missing_targets"]:
        lines.append(f"- targets not available locally: {', '.join(meta['missing_targets'])}")
    for model, info in meta.get("checkpoints", {}).items():
        lines.append(f"- `{model}` checkpoint `{info.get('spec')}`: sources {info.get('sources')}, seed "
                     f"{info.get('seed')}, epochs {info.get('epochs')}, date {info.get('date')}")
    for model, secs in meta.get("train_seconds", {}).items():
        lines.append(f"- `{model}` training seconds per seed: {secs}")
    if meta.get("spliced"):
        sp = meta["spliced"]
        lines.append(f"- rows of {', '.join(f'`{m}`' for m in sp['models'])} replaced on {sp['date']} by those of "
                     f"a newer run ({sp.get('torch_threads')} threads; `benchmarks/gad_splice.py`): `{sp['command']}`")
    lines.append("")
    for suffix, title in (("", "support excluded"), ("_incl", "support included")):
        for metric in ("auroc", "auprc"):
            for regime in meta["regimes"]:
                sub = [r for r in rows if r["regime"] == regime]
                if not sub:
                    continue
                lines += [f"## {metric.upper()}, regime `{regime}`, {title}", "",
                          "| target | k | " + " | ".join(models) + " |",
                          "|---|---|" + "---|" * len(models)]
                for target in meta["targets"]:
                    cells = []
                    k = ""
                    for m in models:
                        row = next((r for r in sub if r["target"] == target and r["model"] == m), None)
                        if row is not None:
                            k = f"{row['k_normal']}+{row['k_anomaly']}"
                        cells.append(_cell(row, metric + suffix))
                    lines.append(f"| {target} | {k} | " + " | ".join(cells) + " |")
                means = []
                for m in models:
                    v = mean_over_targets(sub, regime, m, metric + suffix)
                    means.append("n/a" if v is None else f"**{v:.2f}**")
                lines += ["| mean | | " + " | ".join(means) + " |", ""]
    lines += _seconds_table(rows, meta)
    lines += [f"## Published reference numbers ({PUBLISHED_SOURCE})", "",
              "Not comparable with the tables above (different sources, original files); shown for scale.", "",
              "| target | " + " | ".join(f"{m} AUROC | {m} AUPRC" for m in PUBLISHED) + " |",
              "|---|" + "---|---|" * len(PUBLISHED)]
    for target in meta["targets"]:
        cells = []
        for m, vals in PUBLISHED.items():
            for metric in ("auroc", "auprc"):
                v = vals[metric].get(target)
                cells.append("–" if v is None else f"{v:.2f}")
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    lines += ["", ("BlogCatalog published numbers are on ARC's injected file; ours on `gad/blogcatalog_inj` "
                   "(PyG host, injected locally with seed 0)."), ""]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, meta = result["rows"], result["meta"]
    regimes = meta["regimes"]
    fig, axes = plt.subplots(len(regimes), 1, figsize=(max(8, 1.6 * len(meta["targets"]) + 5), 3.6 * len(regimes)),
                             squeeze=False)
    for ax, regime in zip(axes[:, 0], regimes):
        ran = {r["model"] for r in rows if r["regime"] == regime and r.get("status") == "ok"}
        series = [(m, "ours", None) for m in meta["models"] if m in ran]  # n/a models take no slot
        if regime == "normal-10":
            series += [(m, "published", None) for m in PUBLISHED]
        width = 0.8 / max(len(series), 1)
        xs = np.arange(len(meta["targets"]))
        for i, (m, kind, _) in enumerate(series):
            vals, errs = [], []
            for t in meta["targets"]:
                if kind == "ours":
                    row = next((r for r in rows if r["regime"] == regime and r["target"] == t and r["model"] == m
                                and r.get("status") == "ok"), None)
                    vals.append(np.nan if row is None else row["auroc"])
                    errs.append(0 if row is None else row["auroc_std"])
                else:
                    vals.append(PUBLISHED[m]["auroc"].get(t, np.nan))
                    errs.append(0)
            label = m if kind == "ours" else f"{m} (published, ARC setting)"
            # one colour per model across panels; published series after ours
            slot = meta["models"].index(m) if kind == "ours" else len(meta["models"]) + list(PUBLISHED).index(m)
            ax.bar(xs + (i - (len(series) - 1) / 2) * width, vals, width, yerr=errs, label=label,
                   color=plt.get_cmap("tab20" if slot >= 10 else "tab10")(slot % 10 if slot < 10 else slot),
                   hatch="//" if kind == "published" else None, alpha=0.6 if kind == "published" else 1.0,
                   capsize=2)
        ax.set_xticks(xs, [t.replace("gad/", "") for t in meta["targets"]], rotation=20)
        ax.set_ylim(0, 100)
        ax.axhline(50, color="grey", lw=0.5, ls="--")
        ax.set_ylabel("AUROC (%)")
        ax.set_title(f"{meta['protocol']} — regime {regime} (support excluded)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_time(result: dict, path: Path) -> Path:
    """Mean AUROC against scoring seconds per graph (log scale): one point per detector and regime.

    Seconds are :func:`seconds_per_graph` (one cold call where recorded), averaged over the targets
    where the detector ran; for detectors that train on the target (pygod) they include that training."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, meta = result["rows"], result["meta"]
    seeds = max(1, len(meta.get("seeds", [])))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    markers = dict(zip(meta["regimes"], "os^"))
    for regime in meta["regimes"]:
        for model in meta["models"]:
            ok = [r for r in rows if r["regime"] == regime and r["model"] == model and r.get("status") == "ok"]
            if not ok:
                continue
            auroc = mean_over_targets(rows, regime, model)
            seconds = max(float(np.mean([seconds_per_graph(r, seeds) for r in ok])), 1e-4)
            ax.scatter(seconds, auroc, marker=markers.get(regime, "o"), s=45)
            ax.annotate(f"{model} ({regime})", (seconds, auroc), fontsize=7, xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("seconds per graph (one call; pygod: training on the target included)")
    ax.set_ylabel("mean AUROC (%)")
    ax.set_title(f"{meta['protocol']}: AUROC against time")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(result: dict, out_dir: str | Path, command: str | None = None, stem: str = "gad_results") -> dict:
    """Write CSV, markdown, PNG and JSON into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = result["rows"]
    fields = ["protocol", "regime", "k_normal", "k_anomaly", "target", "model", "status", "auroc", "auroc_std",
              "auprc", "auprc_std", "auroc_incl", "auroc_std_incl", "auprc_incl", "auprc_std_incl", "seconds"]
    if any("cold_seconds" in r for r in rows):
        fields.append("cold_seconds")
    with open(out / f"{stem}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
    (out / f"{stem}.md").write_text(markdown(result, command))
    (out / f"{stem}.json").write_text(json.dumps({**result, "command": command}, indent=1) + "\n")
    paths = {"csv": out / f"{stem}.csv", "md": out / f"{stem}.md", "json": out / f"{stem}.json"}
    paths["png"] = plot(result, out / f"{stem}.png")
    paths["time_png"] = plot_time(result, out / f"{stem}_time.png")
    return paths


__all__ = ["PUBLISHED", "PUBLISHED_SOURCE", "markdown", "mean_over_targets", "plot", "plot_time", "seconds_per_graph",
           "write_outputs"]
