"""Node-classification commands: ``predict``, ``pretrain rgvt|graphany``, ``benchmark nc``."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from omnigraph.cli._common import add_trainer_args, is_global_zero, trainer_kwargs
from omnigraph.cli._io import add_graph_args


def _estimator_for(model: str, seed: int, protocol: str | None = None):
    """Map ``rgvt``/``graphany``/a checkpoint path to a fitted-ready estimator."""
    from omnigraph.estimators.registry import load_estimator, model_type_of

    kwargs = {"seed": seed}
    if protocol and model_type_of(model) == "rgvt":
        kwargs["protocol"] = protocol
    return load_estimator(model, task="nc", hint="`omnigraph predict` takes rgvt or graphany checkpoints (use "
                          "`omnigraph detect` for anomaly detectors)", **kwargs)


def _split_arg(spec: str | None):
    if spec is None:
        return None
    return int(spec) if spec.isdigit() else spec


def _labelled_split(data, seed: int):
    """Train/val masks from the labelled nodes (``y >= 0``) when the file brings none: 80/20, stratified
    where every class has two or more labelled nodes. No test mask: nothing is held out for a metric."""
    import torch
    from sklearn.model_selection import train_test_split

    y = getattr(data, "y", None)
    if y is None or not bool((y >= 0).any()):
        raise ValueError("the graph has no labelled node (y is missing, or -1 everywhere): zero-shot "
                         "classification adapts to the classes of a few labelled nodes per class; mark the others -1")
    idx = (y >= 0).nonzero().flatten().numpy()
    labels = y[idx].numpy()
    counts = torch.bincount(y[idx])
    stratify = labels if int(counts[counts > 0].min()) >= 2 else None
    train, val = train_test_split(idx, test_size=0.2, random_state=seed, stratify=stratify)
    for name, ids in (("train_mask", train), ("val_mask", val)):
        mask = torch.zeros(data.num_nodes, dtype=torch.bool)
        mask[torch.as_tensor(ids)] = True
        data[name] = mask
    return data


def cmd_predict(args) -> int:
    import torch

    from omnigraph.cli._io import emit, load_graph

    args.split_arg = _split_arg(args.split)
    data = load_graph(args, task="nc")
    own_split = getattr(data, "train_mask", None) is None
    if own_split:
        data = _labelled_split(data, args.split_seed)
    start = time.perf_counter()
    clf = _estimator_for(args.model, args.seed, args.protocol).fit(data)
    name = args.nodes if args.nodes else args.dataset
    result = {"model": args.model, "dataset": name,
              "split": "labelled nodes 80/20" if own_split else str(getattr(data, "split", args.split)),
              "depth": getattr(clf, "depth_", None)}
    for key in ("val", "test"):
        mask = getattr(data, f"{key}_mask", None)
        if mask is not None and bool(mask.any()) and bool((data.y[mask] >= 0).all()):
            result[f"{key}_accuracy"] = round(100 * clf.score(data, mask=mask), 2)
    result["seconds"] = round(time.perf_counter() - start, 2)
    metrics = "  ".join(f"{k.split('_')[0]} {result[k]:.2f}%" for k in ("val_accuracy", "test_accuracy") if k in result)
    print(f"{result['model']} on {name} (split {result['split']}): {metrics or 'no labelled evaluation nodes'}"
          + (f"  depth {result['depth']}" if result["depth"] is not None else "") + f"  ({result['seconds']:.1f} s)")
    columns = None
    if args.out:
        proba = clf.predict_proba(data)
        label = data.y if getattr(data, "y", None) is not None else torch.full((data.num_nodes,), -1)
        columns = {"label": label, "pred": proba.argmax(1),
                   **{f"prob_{c}": proba[:, c] for c in range(proba.size(1))}}
    return emit(args, result, data, columns, "label [-1 = unlabelled], pred, prob_0..prob_{C-1}")


def _load_sources(names: str, split_seed: int, svd_dim: int | None = None):
    from omnigraph.datasets import load_dataset
    from omnigraph.datasets.synthetic import synthetic_prior
    from omnigraph.datasets.transforms import TruncatedSVDFeatures

    graphs = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name.startswith("synthetic-prior"):   # a generated family, drawn with the split seed
            graphs += synthetic_prior(seed=split_seed, version=name.removeprefix("synthetic-prior").lstrip("-") or "v1")
        else:
            graphs.append(load_dataset(name, seed=split_seed))
    return [TruncatedSVDFeatures(svd_dim)(g) for g in graphs] if svd_dim else graphs


def cmd_pretrain(args) -> int:
    from omnigraph.hub import publish

    graphs = _load_sources(args.dataset, args.split_seed, args.svd_dim)
    trainer = trainer_kwargs(args)
    if args.epochs is not None:
        trainer["max_epochs" if args.model == "rgvt" else "steps"] = args.epochs
    start = time.perf_counter()
    if args.model == "rgvt":
        from omnigraph.training.rgvt import pretrain_rgvt

        model = pretrain_rgvt(graphs, seed=args.seed, out_dir=args.out, **trainer)
    else:
        from omnigraph.training.graphany import pretrain_graphany

        model = pretrain_graphany(graphs, seed=args.seed, out_dir=args.out, **trainer)
    seconds = time.perf_counter() - start
    if not is_global_zero():  # DDP: the other ranks trained the same model; rank 0 writes it
        return 0
    card = {"training_data": args.dataset, "feature_transform": f"TruncatedSVD({args.svd_dim})" if args.svd_dim
            else "raw", "seed": args.seed, "seconds": round(seconds, 1), **getattr(model, "card_", {}),
            "command": f"omnigraph pretrain {args.model} " + " ".join(
                sys.argv[3:] if sys.argv[1:3] == ["pretrain", args.model] else ["--dataset", args.dataset])}
    out = Path(args.out)
    model.save_pretrained(out / "model", card=card)
    if args.publish:
        publish(model, args.publish, card)
    print(f"saved {args.model} checkpoint to {out / 'model'} ({seconds:.1f} s)")
    return 0


def cmd_benchmark(args) -> int:
    from omnigraph.benchmark.nc import run_benchmark

    run_benchmark(suite=args.suite, models=args.models.split(","), out=Path(args.out), protocol=args.protocol,
                  seeds=[args.seed] if args.seed is not None else [int(s) for s in args.seeds.split(",")],
                  graphs=args.graphs.split(",") if args.graphs else None, resume=args.resume)
    return 0


def register(parsers) -> None:
    p = parsers["top"].add_parser("predict", help="zero-shot node classification with a pretrained model")
    p.add_argument("--model", default="rgvt", help="rgvt, graphany or a checkpoint path")
    add_graph_args(p, default="Cora")
    p.add_argument("--split", default=None, help="split protocol: public, random, an index (yandex/geom-gcn), ogb; "
                   "a file keeps its own masks, or trains on its labelled nodes (80/20 train/val)")
    p.add_argument("--split-seed", type=int, default=42, help="seed of random splits (42 = RGVT protocol)")
    p.add_argument("--seed", type=int, default=0, help="seed of the per-target head")
    p.add_argument("--protocol", default=None, choices=["fast", "reference"], help="RGVT adaptation mode")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")
    p.set_defaults(func=cmd_predict)

    for name in ("rgvt", "graphany"):
        q = parsers["pretrain"].add_parser(name, help=f"pretrain {name} with Lightning")
        q.add_argument("--dataset", required=True, help="source graph(s), comma separated; 'synthetic-prior' "
                       "(rgvt) is the generated family omnigraph.datasets.synthetic.synthetic_prior")
        q.add_argument("--epochs", type=int, default=None, help="epochs (rgvt) or steps (graphany)")
        q.add_argument("--seed", type=int, default=0)
        q.add_argument("--split-seed", type=int, default=42)
        q.add_argument("--svd-dim", type=int, default=None,
                       help="project source features to this many dense SVD dimensions first")
        add_trainer_args(q, name, devices="auto", accelerator="auto")
        q.set_defaults(func=cmd_pretrain, model=name)

    b = parsers["benchmark"].add_parser("nc", help="zero-shot node classification suite")
    b.add_argument("--suite", default="available", help="graphany31, rgvt28 or available")
    b.add_argument("--models", default="rgvt,graphany,gcn,mlp")
    b.add_argument("--graphs", default=None, help="restrict to these graphs (comma separated)")
    b.add_argument("--protocol", default="fast", choices=["fast", "reference"], help="RGVT adaptation mode")
    b.add_argument("--seeds", default="0,1,2,3,4", help="head seeds, comma separated (mean +- std over them)")
    b.add_argument("--seed", type=int, default=None, help="a single head seed (same as --seeds N)")
    b.add_argument("--out", default="runs/benchmark_nc")
    b.add_argument("--resume", action="store_true",
                   help="keep the finished rows of an interrupted run in OUT/rows.jsonl instead of recomputing them")
    b.set_defaults(func=cmd_benchmark)
