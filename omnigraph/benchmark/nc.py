"""Zero-shot node-classification benchmark: every available graph of a suite, all models side by side.

Every model runs with several head seeds (``--seeds``, default 0..4). Writes ``results.csv`` (one
row per graph x model x seed: accuracy, balanced accuracy, macro-F1, chosen depth, seconds),
``results.md`` (mean +- std over seeds per graph, means of means, feature-type groups),
``summary.json`` and ``results.png`` (:mod:`omnigraph.benchmark.nc_report`). Graphs whose files
are absent are listed as missing; graphs skipped on purpose carry their reason in the table.
Means are over the graphs on which *every* model ran.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from omnigraph._config import portable
from omnigraph.benchmark.nc_report import write_reports

# Graphs run by default only on request, with the reason printed in every table.
DEFAULT_SKIPS = {
    "deezer": "local copy has 31,241 raw multi-hot features instead of PyG's 128-d SVD ones (not comparable; "
              "RGVT views need ~17.7 GB) — datasets.md caveat 1",
}


def make_model(name: str, seed: int, protocol: str):
    if name in ("rgvt", "graphany"):
        from omnigraph.estimators.registry import load_estimator

        return load_estimator(name, seed=seed, **({"protocol": protocol} if name == "rgvt" else {}))
    if name.startswith("rgvt:"):  # an RGVT checkpoint folder or file, e.g. a pretraining candidate
        from omnigraph.estimators.rgvt import RGVT

        return RGVT.from_pretrained(name.split(":", 1)[1], seed=seed, protocol=protocol)
    if name.startswith("rgvt-ref:"):  # the authors' weights through the same code (parity column)
        from omnigraph.estimators.rgvt import RGVT

        return RGVT.from_reference_npz(name.split(":", 1)[1], seed=seed, protocol=protocol)
    if name in ("gcn", "mlp"):
        from omnigraph.estimators.baselines import SupervisedBaseline

        return SupervisedBaseline(name, seed=seed)
    raise ValueError(f"unknown model {name!r}; choose from rgvt, graphany, gcn, mlp, rgvt:PATH, "
                     "rgvt-ref:PATH")


def _label(model: str) -> str:
    if model.startswith("rgvt:"):
        return f"rgvt ({Path(model.split(':', 1)[1]).parent.name or model.split(':', 1)[1]})"
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


def fit_seeds(model: str, data, seeds: list[int], protocol: str) -> list:
    """One fitted estimator per head seed. RGVT estimators fit all seeds from one encoder pass
    (:meth:`RGVT.fit_seeds`, identical to fitting each seed alone); the others fit seed by seed."""
    clf = make_model(model, seeds[0], protocol)
    if hasattr(clf, "fit_seeds"):
        return clf.fit_seeds(data, seeds)
    return [clf.fit(data)] + [make_model(model, s, protocol).fit(data) for s in seeds[1:]]


def _share_representation(fitted: list, data, max_bytes: int = 2 << 30) -> None:
    """RGVT copies from one ``fit_seeds`` share a graph cache: when they chose one depth, its
    ``Z_L`` (at most ``max_bytes``) is computed once and every copy's ``predict`` reads it,
    instead of one encoder pass per seed on graphs too large for ``fit`` to keep it."""
    depths = {getattr(clf, "depth_", None) for clf in fitted}
    if len(fitted) > 1 and len(depths) == 1 and None not in depths and hasattr(fitted[0], "transform") \
            and data.x.numel() * 4 <= max_bytes:
        fitted[0].transform(data)


def evaluate(clf, data) -> dict:
    """Validation accuracy and test accuracy, balanced accuracy and macro-F1 (all in %), from one
    ``predict`` over the graph. Balanced accuracy and macro-F1 are over the classes present in
    the test labels (scikit-learn's definitions): a constant prediction scores 100 / C and
    about 100 / C x (majority F1) there, whatever the class balance."""
    from sklearn.metrics import balanced_accuracy_score, f1_score

    pred = clf.predict(data).cpu()
    y, val, test = data.y.cpu(), data.val_mask.cpu(), data.test_mask.cpu()
    y_test, p_test = y[test].numpy(), pred[test].numpy()
    labels = sorted(set(y_test.tolist()))
    return {"val_accuracy": 100 * float((pred[val] == y[val]).float().mean()),
            "test_accuracy": 100 * float((pred[test] == y[test]).float().mean()),
            "balanced_accuracy": 100 * float(balanced_accuracy_score(y_test, p_test)),
            "macro_f1": 100 * float(f1_score(y_test, p_test, labels=labels, average="macro", zero_division=0)),
            "n_test": int(test.sum())}


def run_benchmark(suite: str, models: list[str], out: Path, protocol: str = "fast", seeds: list[int] = (0,),
                  graphs: list[str] | None = None, include: tuple[str, ...] = (), resume: bool = False
                  ) -> list[dict]:
    """Run ``models`` with each head seed of ``seeds`` on every graph of ``suite``; rows (one per
    graph, model and seed) are appended to ``out/rows.jsonl`` as they finish, and
    ``resume=True`` keeps the rows already there (same suite and protocol) instead of
    recomputing them, so that a killed run can be continued or a model added."""
    from omnigraph.datasets.features import feature_type

    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct integers, got {seeds}")
    out.mkdir(parents=True, exist_ok=True)
    log = out / "rows.jsonl"
    settings = {"suite": suite, "protocol": protocol}
    done: dict[tuple[str, str, int], dict] = {}
    if resume and log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if all(row.get(k) == v for k, v in settings.items()) and row["status"] == "ok":
                done[(row["dataset"], row["model"], row["seed"])] = row
    elif log.exists():
        log.unlink()
    rows: list[dict] = []
    for base, data, problem in suite_graphs(suite, graphs, include):
        if problem is not None:
            rows.append(problem)
            continue
        base = {**base, "features": feature_type(data.x)}
        for model in models:
            label = _label(model)
            todo = [s for s in seeds if (base["dataset"], label, s) not in done]
            rows += [done[(base["dataset"], label, s)] for s in seeds if s not in todo]
            if not todo:
                continue
            start = time.perf_counter()
            fitted = fit_seeds(model, data, todo, protocol)
            _share_representation(fitted, data)
            seconds = (time.perf_counter() - start) / len(todo)   # a joint fit's time is shared evenly
            for s, clf in zip(todo, fitted):
                start = time.perf_counter()
                row = {**base, "model": label, "seed": s, "status": "ok", **evaluate(clf, data),
                       "depth": getattr(clf, "depth_", None)}
                row["seconds"] = seconds + time.perf_counter() - start
                rows.append(row)
                with open(log, "a") as f:
                    f.write(json.dumps({**settings, **row}) + "\n")
                print(f"{base['dataset']:>22} {label:>24} seed {s}  test {row['test_accuracy']:6.2f}  "
                      f"({row['seconds']:.1f} s)", flush=True)
    meta = {**settings, "seeds": seeds, "sources": pretraining_sources(models)}
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
