r"""Generalist anomaly-detection benchmark: every available target, every model, both regimes.

Reduced protocol (anomaly-detection spec §8) on the locally available graphs. For each target,
regime and seed one support set is drawn from the labels and shared by every model; each model
scores the whole target; AUROC (``roc_auc_score``) and AUPRC (``average_precision_score``) are
computed over all nodes **minus the support** (the default) and, as the second variant, over all
nodes. Means and **population** standard deviations over seeds, in percent.

Regimes: ``normal-10`` (10 labelled normals; ARC's setting) and ``normal+anomaly-k`` (``k``
normal + ``k`` anomalous; REFI-GAD's setting, ``k = 50``, or 10 when the target has fewer than
100 anomalies, i.e. Facebook). A model that needs a support it does not get is reported as n/a.

Outputs (``write_outputs``): ``gad_results.csv``, ``gad_results.md``, ``gad_results.png`` and
``gad_results.json`` (per-seed numbers and the run's metadata).
"""
from __future__ import annotations

import csv
import json
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

#: Reduced protocols (spec §8.2). Sources are never targets within one protocol.
PROTOCOLS: dict[str, dict] = {
    "reduced-v1": {
        "title": "Reduced protocol v1 (R-ARC split of spec §8.2; both regimes)",
        "sources": ["gad/flickr_inj", "gad/cs_inj", "gad/tolokers"],
        "targets": ["gad/cora", "gad/citeseer", "gad/blogcatalog_inj", "gad/facebook", "gad/reddit",
                    "gad/amazon", "gad/photo_inj"],
    },
    "r-refi-a2b": {
        "title": "R-REFI A'->B' (spec §8.2)",
        "sources": ["gad/citeseer", "gad/cs_inj", "gad/blogcatalog_inj", "gad/amazon", "gad/photo_inj"],
        "targets": ["gad/cora", "gad/flickr_inj", "gad/facebook", "gad/reddit", "gad/tolokers"],
    },
    "r-refi-b2a": {
        "title": "R-REFI B'->A' (spec §8.2)",
        "sources": ["gad/cora", "gad/flickr_inj", "gad/facebook", "gad/reddit", "gad/tolokers"],
        "targets": ["gad/citeseer", "gad/cs_inj", "gad/blogcatalog_inj", "gad/amazon", "gad/photo_inj"],
    },
    "smoke": {
        "title": "Smoke protocol (spec §8.2): plumbing only",
        "sources": ["gad/citeseer"],
        "targets": ["gad/cora", "gad/facebook"],
    },
}

REGIMES = ("zero-shot", "normal-10", "normal+anomaly-k")
DEFAULT_MODELS = ("refi-gad", "arc", "fingerprint")

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


# ------------------------------------------------------------------------------------------ data
def load_gad(name: str):
    """An anomaly-detection graph by name or path (``load_dataset(name, task="gad")``, which also records
    the catalogue's per-graph preprocessing flags as ``data.<flag>``)."""
    from omnigraph.datasets import load_dataset

    return load_dataset(name, task="gad")


def default_shots(y: Tensor) -> int:
    """REFI-GAD's k: 50, or 10 when the graph has fewer than 100 anomalies (the release's Facebook rule)."""
    return 50 if int((torch.as_tensor(y) == 1).sum()) >= 100 else 10


def regime_shots(regime: str, y: Tensor) -> tuple[int, int]:
    if regime == "normal-10":
        return 10, 0
    if regime == "normal+anomaly-k":
        k = default_shots(y)
        return k, k
    if regime == "zero-shot":
        return 0, 0
    raise ValueError(f"unknown regime {regime!r}; choose from {REGIMES}")


def metrics(y: Tensor, score: Tensor, keep: Tensor | None = None) -> tuple[float, float]:
    """(AUROC, AUPRC) with sklearn's ``roc_auc_score`` / ``average_precision_score``, on ``keep``."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y, score = torch.as_tensor(y).flatten(), torch.as_tensor(score).flatten()
    if keep is not None:
        y, score = y[keep], score[keep]
    if not torch.isfinite(score).all():
        raise FloatingPointError("scores contain NaN/Inf; refusing to evaluate (spec §2)")
    y_np, s_np = (y > 0).numpy().astype(int), score.double().numpy()
    if y_np.min() == y_np.max():
        raise ValueError("the evaluated population contains a single class; AUROC is undefined")
    return float(roc_auc_score(y_np, s_np)), float(average_precision_score(y_np, s_np))


def support_mask(num_nodes: int, *supports: Tensor) -> Tensor:
    keep = torch.ones(num_nodes, dtype=torch.bool)
    for s in supports:
        keep[s] = False
    return keep


def summarize(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std (ddof = 0), in percent."""
    arr = 100.0 * np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=0))


def evaluate_detector(detector, data, shots_normal: int, shots_anomaly: int, seeds: Iterable[int],
                      include_support: bool = False) -> dict:
    """Score ``data`` once per seed with a freshly drawn support; AUROC/AUPRC in both variants.

    Returns a dict with ``auroc``/``auroc_std``/``auprc``/``auprc_std`` for the chosen population
    (support excluded unless ``include_support``), the same for the other variant under
    ``"support_included"`` / ``"support_excluded"``, the per-seed numbers and the scoring seconds.
    """
    from omnigraph.estimators.detector import sample_support

    seeds = [int(s) for s in seeds]
    per_seed, seconds = [], 0.0
    for seed in seeds:
        sn, sa = sample_support(data.y, shots_normal, shots_anomaly, seed)
        own_seed = detector.seed
        detector.set_params(seed=seed)     # the seed also drives label-free draws (e.g. ARC's zero-shot context)
        start = time.perf_counter()
        try:
            score = detector.decision_function(data, support_normal=sn if shots_normal else None,
                                               support_anomaly=sa if shots_anomaly else None)
        finally:
            detector.set_params(seed=own_seed)
        seconds += time.perf_counter() - start
        excl = metrics(data.y, score, support_mask(data.num_nodes, sn, sa))
        incl = metrics(data.y, score)
        per_seed.append({"seed": seed, "auroc_excluded": excl[0], "auprc_excluded": excl[1],
                         "auroc_included": incl[0], "auprc_included": incl[1]})
    out = {"seeds": seeds, "per_seed": per_seed, "seconds": seconds, "include_support": include_support}
    for variant in ("excluded", "included"):
        roc = summarize([r[f"auroc_{variant}"] for r in per_seed])
        prc = summarize([r[f"auprc_{variant}"] for r in per_seed])
        out[f"support_{variant}"] = {"auroc": roc[0], "auroc_std": roc[1], "auprc": prc[0], "auprc_std": prc[1]}
    main = out["support_included" if include_support else "support_excluded"]
    out.update(main)
    return out


# ---------------------------------------------------------------------------------------- models
def make_detector(model: str, seed: int = 0, sources: Sequence[str] | None = None, train: bool = False,
                  epochs: int | None = None, verbose: int = 0, source_graphs: list | None = None):
    """A detector for a model spec: ``refi-gad``, ``arc``, ``fingerprint[:column]`` or a checkpoint path.

    ``train=True`` pretrains ``refi-gad``/``arc`` on ``sources`` (or ``source_graphs``) with ``seed``
    (``epochs`` overrides the schedule); otherwise the shipped checkpoint of that name is loaded.
    """
    from omnigraph.estimators.fingerprint import FingerprintDetector

    if model == "fingerprint" or model.startswith("fingerprint:"):
        column = model.split(":", 1)[1] if ":" in model else None
        return FingerprintDetector(column=column, seed=seed)
    if model.startswith("pygod:"):
        from omnigraph.estimators.pygod import PygodDetector

        return PygodDetector(model.split(":", 1)[1], seed=seed).fit()   # fit checks that pygod imports
    from omnigraph.estimators.registry import estimator_class, load_estimator

    if model in ("refi-gad", "arc") and train:
        kwargs = {} if epochs is None else {"epochs": int(epochs)}
        graphs = source_graphs if source_graphs is not None else [load_gad(s) for s in sources or []]
        if not graphs:
            raise ValueError(f"training {model} needs source graphs")
        return estimator_class(model)(seed=seed, verbose=verbose, **kwargs).fit(graphs)
    return load_estimator(model, task="gad", seed=seed, hint="anomaly detection takes refi-gad or arc checkpoints "
                          "(or the names refi-gad, arc, fingerprint, fingerprint:<column>)")


def checkpoint_sources(detector) -> list[str] | None:
    """The source graphs a loaded checkpoint's card says it was trained on (``None`` if unknown)."""
    card = getattr(detector, "card_", None) or {}
    src = card.get("sources")
    if isinstance(src, str):
        src = [s.strip() for s in src.split(",") if s.strip()]
    return list(src) if src else None


def _canonical(name: str) -> str:
    from omnigraph.datasets import get_entry

    try:
        return get_entry(name)["name"]
    except (ValueError, KeyError):  # a file path or an unknown name: compare as given
        return str(name)


# ------------------------------------------------------------------------------------- benchmark
def run_benchmark(protocol: str = "reduced-v1", models: Sequence[str] = DEFAULT_MODELS,
                  regimes: Sequence[str] = REGIMES, seeds: Sequence[int] = (0, 1, 2, 3, 4),
                  targets: Sequence[str] | None = None, train: bool | Sequence[str] = False,
                  epochs: dict | None = None, allow_unknown_sources: bool = False,
                  log: Callable[[str], None] = print) -> dict:
    """Run every (target, regime, model) with shared supports; returns ``{"rows", "meta"}``.

    Args:
        protocol: a key of :data:`PROTOCOLS`.
        models: model specs (see :func:`make_detector`); ``"LABEL=SPEC"`` reports SPEC under LABEL.
        regimes: subset of :data:`REGIMES`.
        seeds: support-draw seeds (and training seeds with ``train``).
        targets: restrict the protocol's targets.
        train: pretrain ``refi-gad``/``arc`` on the protocol's sources once per seed (the spec's
            "each run re-trains"): ``True`` for both, or a list of the models to train; the others
            use their shipped checkpoints (trained once).
        epochs: per-model epoch override for ``train`` (``{"refi-gad": 30}``).
        allow_unknown_sources: evaluate a checkpoint whose card names no source graphs (refused by
            default: nothing shows that it did not see a target).
    """
    from omnigraph.datasets import is_available

    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
    for r in regimes:
        if r not in REGIMES:
            raise ValueError(f"unknown regime {r!r}; choose from {', '.join(REGIMES)}")
    proto = PROTOCOLS[protocol]
    sources = list(proto["sources"])
    wanted = list(targets) if targets else list(proto["targets"])
    unknown = [t for t in wanted if _canonical(t) not in proto["targets"]]
    if unknown:
        raise ValueError(f"{unknown} are not targets of protocol {protocol!r} ({proto['targets']})")
    wanted = [_canonical(t) for t in wanted]
    available = [t for t in wanted if is_available(t)]
    missing = [t for t in wanted if t not in available]
    seeds = [int(s) for s in seeds]
    epochs = dict(epochs or {})
    # "LABEL=SPEC" shows SPEC (e.g. a checkpoint path) under LABEL in the tables
    specs = {}
    for item in models:
        label, sep, what = str(item).partition("=")
        specs[label if sep else item] = what if sep else item
    models = list(specs)
    trained = {"refi-gad", "arc"} if train is True else set(train or ())
    bad = trained - {"refi-gad", "arc"}
    if bad:
        raise ValueError(f"only refi-gad and arc can be trained in the run, got {sorted(bad)}")
    meta = {"protocol": protocol, "title": proto["title"], "sources": sources, "targets": available,
            "missing_targets": missing, "models": list(models), "regimes": list(regimes), "seeds": seeds,
            "model_specs": specs, "trained_in_run": sorted(trained & set(specs.values())), "torch": torch.__version__, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"), "train_seconds": {}, "checkpoints": {}, "datasets": {}}

    # detectors: per seed when training in the run, else one per model
    detectors: dict[tuple[str, int], object] = {}
    source_graphs = None
    for model in models:
        spec = specs[model]
        if spec in trained:
            if source_graphs is None:
                log(f"loading sources {sources}")
                source_graphs = [load_gad(s) for s in sources]
            for seed in seeds:
                start = time.perf_counter()
                log(f"training {model} (seed {seed}) on {sources}")
                detectors[model, seed] = make_detector(spec, seed, train=True, epochs=epochs.get(spec),
                                                       source_graphs=source_graphs)
                meta["train_seconds"].setdefault(model, []).append(round(time.perf_counter() - start, 1))
        else:
            det = make_detector(spec, seeds[0])
            trained_on = checkpoint_sources(det)
            if not spec.startswith(("fingerprint", "pygod:")):   # those train on nothing but the target, unsupervised
                card = getattr(det, "card_", {}) or {}
                meta["checkpoints"][model] = {"spec": spec, "sources": trained_on, "seed": card.get("seed"),
                                              "date": card.get("date"), "epochs": card.get("epochs")}
                if trained_on is None and not allow_unknown_sources:
                    raise ValueError(f"the {model} checkpoint ({spec}) does not say which graphs it was trained on "
                                     "(no 'sources' in its card), so it may have seen the targets of protocol "
                                     f"{protocol!r}; record them in the card, or pass allow_unknown_sources=True "
                                     "(--allow-unknown-sources) to evaluate it anyway")
                leak = sorted(set(map(_canonical, trained_on or [])) & set(available))
                if leak:
                    raise ValueError(f"the {model} checkpoint was trained on {leak}, which are targets of protocol "
                                     f"{protocol!r}; train it on {sources} (omnigraph pretrain) or pass --train")
            for seed in seeds:
                detectors[model, seed] = det

    rows = []
    for target in available:
        data = load_gad(target)
        meta["datasets"][target] = {"nodes": data.num_nodes, "anomalies": int((data.y == 1).sum()),
                                    "fidelity": getattr(data, "fidelity", None),
                                    "injection_seed": getattr(data, "injection_seed", None)}
        for regime in regimes:
            kn, ka = regime_shots(regime, data.y)
            for model in models:
                det0 = detectors[model, seeds[0]]
                row = {"protocol": protocol, "regime": regime, "k_normal": kn, "k_anomaly": ka,
                       "target": target, "model": model}
                if (ka == 0 and det0.requires_anomaly) or (kn == 0 and det0.requires_normal):
                    row.update(status="n/a: needs anomalous support" if ka == 0 else "n/a: needs normal support")
                    rows.append(row)
                    continue
                per_seed, seconds = [], 0.0
                for seed in seeds:
                    res = evaluate_detector(detectors[model, seed], data, kn, ka, [seed])
                    per_seed.extend(res["per_seed"])
                    seconds += res["seconds"]
                for variant in ("excluded", "included"):
                    roc = summarize([r[f"auroc_{variant}"] for r in per_seed])
                    prc = summarize([r[f"auprc_{variant}"] for r in per_seed])
                    suffix = "" if variant == "excluded" else "_incl"
                    row.update({f"auroc{suffix}": roc[0], f"auroc_std{suffix}": roc[1],
                                f"auprc{suffix}": prc[0], f"auprc_std{suffix}": prc[1]})
                row.update(status="ok", seconds=round(seconds, 2), per_seed=per_seed)
                rows.append(row)
                log(f"{target:22s} {regime:17s} {model:14s} AUROC {row['auroc']:6.2f}±{row['auroc_std']:.2f}  "
                    f"AUPRC {row['auprc']:6.2f}±{row['auprc_std']:.2f}  ({seconds:.1f} s)")
        del data
    return {"rows": rows, "meta": meta}


# --------------------------------------------------------------------------------------- outputs
def mean_over_targets(rows: list[dict], regime: str, model: str, key: str = "auroc") -> float | None:
    """Mean of ``key`` over the targets where every model of the regime ran (``None`` if none)."""
    ok = [r for r in rows if r["regime"] == regime and r.get("status") == "ok"]
    models = {r["model"] for r in rows if r["regime"] == regime}
    targets = sorted({r["target"] for r in ok})
    common = [t for t in targets if all(any(r["target"] == t and r["model"] == m for r in ok)
                                        for m in models if any(r["model"] == m for r in ok))]
    vals = [r[key] for r in ok if r["model"] == model and r["target"] in common]
    return float(np.mean(vals)) if vals else None


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
              f"- date {meta['date']}, torch {meta['torch']}, python {meta['python']}"]
    if meta["missing_targets"]:
        lines.append(f"- targets not available locally: {', '.join(meta['missing_targets'])}")
    for model, info in meta.get("checkpoints", {}).items():
        lines.append(f"- `{model}` checkpoint `{info.get('spec')}`: sources {info.get('sources')}, seed "
                     f"{info.get('seed')}, epochs {info.get('epochs')}, date {info.get('date')}")
    for model, secs in meta.get("train_seconds", {}).items():
        lines.append(f"- `{model}` training seconds per seed: {secs}")
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

    Seconds are per graph and seed, averaged over the targets where the detector ran; for detectors
    that train on the target (pygod) they include that training."""
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
            seconds = max(float(np.mean([r["seconds"] for r in ok])) / seeds, 1e-4)
            ax.scatter(seconds, auroc, marker=markers.get(regime, "o"), s=45)
            ax.annotate(f"{model} ({regime})", (seconds, auroc), fontsize=7, xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("seconds per graph (scoring; pygod: training on the target included)")
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


__all__ = [
    "PROTOCOLS",
    "PUBLISHED",
    "REGIMES",
    "default_shots",
    "evaluate_detector",
    "load_gad",
    "make_detector",
    "markdown",
    "mean_over_targets",
    "metrics",
    "plot",
    "plot_time",
    "regime_shots",
    "run_benchmark",
    "write_outputs",
]
