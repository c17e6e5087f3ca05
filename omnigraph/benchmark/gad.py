r"""Generalist anomaly-detection benchmark: every available target, every model, both regimes.

Reduced protocol (anomaly-detection spec §8) on the locally available graphs. For each target,
regime and seed one support set is drawn from the labels and shared by every model; each model
scores the whole target; AUROC (``roc_auc_score``) and AUPRC (``average_precision_score``) are
computed over all nodes **minus the support** (the default) and, as the second variant, over all
nodes. Means and **population** standard deviations over seeds, in percent.

Regimes: ``normal-10`` (10 labelled normals; ARC's setting) and ``normal+anomaly-k`` (``k``
normal + ``k`` anomalous; REFI-GAD's setting, ``k = 50``, or 10 when the target has fewer than
100 anomalies, i.e. Facebook). A model that needs a support it does not get is reported as n/a.

This module runs the benchmark; :mod:`omnigraph.benchmark.gad_metrics` holds the metrics and
:mod:`omnigraph.benchmark.gad_report` writes the outputs (``gad_results.csv``, ``.md``, ``.png``,
``_time.png`` and ``.json``: per-seed numbers and the run's metadata).
"""
from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor

from omnigraph._cache import clear_graph_caches
from omnigraph.benchmark.gad_metrics import metrics, summarize, support_mask

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
            "model_specs": specs, "trained_in_run": sorted(trained & set(specs.values())), "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
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
                per_seed, seconds, cold = [], 0.0, None
                clear_graph_caches()   # the first seed pays what a user's first call pays (cold)
                for seed in seeds:
                    res = evaluate_detector(detectors[model, seed], data, kn, ka, [seed])
                    per_seed.extend(res["per_seed"])
                    seconds += res["seconds"]
                    cold = res["seconds"] if cold is None else cold
                for variant in ("excluded", "included"):
                    roc = summarize([r[f"auroc_{variant}"] for r in per_seed])
                    prc = summarize([r[f"auprc_{variant}"] for r in per_seed])
                    suffix = "" if variant == "excluded" else "_incl"
                    row.update({f"auroc{suffix}": roc[0], f"auroc_std{suffix}": roc[1],
                                f"auprc{suffix}": prc[0], f"auprc_std{suffix}": prc[1]})
                row.update(status="ok", seconds=round(seconds, 2), cold_seconds=round(cold, 3), per_seed=per_seed)
                rows.append(row)
                log(f"{target:22s} {regime:17s} {model:14s} AUROC {row['auroc']:6.2f}±{row['auroc_std']:.2f}  "
                    f"AUPRC {row['auprc']:6.2f}±{row['auprc_std']:.2f}  ({seconds:.1f} s, first call {cold:.2f} s)")
        del data
    return {"rows": rows, "meta": meta}


__all__ = [
    "DEFAULT_MODELS",
    "PROTOCOLS",
    "REGIMES",
    "checkpoint_sources",
    "default_shots",
    "evaluate_detector",
    "load_gad",
    "make_detector",
    "regime_shots",
    "run_benchmark",
]
