"""Node-classification commands: ``predict``, ``pretrain rgvt|graphany``, ``benchmark nc``."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from omnigraph.cli._common import add_trainer_args, is_global_zero, trainer_kwargs


def _estimator_for(model: str, seed: int, protocol: str | None = None):
    """Map ``rgvt``/``graphany``/a checkpoint path to a fitted-ready estimator."""
    from omnigraph.estimators.graphany import GraphAny
    from omnigraph.estimators.rgvt import RGVT
    from omnigraph.hub import read_checkpoint

    kwargs = {"seed": seed}
    if model in ("rgvt", "graphany"):
        cls, name = (RGVT, "rgvt") if model == "rgvt" else (GraphAny, "graphany")
    else:
        meta, _ = read_checkpoint(model)
        if meta["model_type"] not in ("rgvt", "graphany"):
            raise ValueError(f"{model} holds a {meta['model_type']!r} checkpoint; `omnigraph predict` takes "
                             "rgvt or graphany checkpoints (use `omnigraph detect` for anomaly detectors)")
        cls, name = (RGVT, model) if meta["model_type"] == "rgvt" else (GraphAny, model)
    if cls is RGVT and protocol:
        kwargs["protocol"] = protocol
    return cls.from_pretrained(name, **kwargs)


def _split_arg(spec: str | None):
    if spec is None:
        return None
    return int(spec) if spec.isdigit() else spec


def cmd_predict(args) -> int:
    from omnigraph.datasets import load_dataset

    data = load_dataset(args.dataset, split=_split_arg(args.split), seed=args.split_seed)
    start = time.perf_counter()
    clf = _estimator_for(args.model, args.seed, args.protocol).fit(data)
    result = {
        "model": args.model,
        "dataset": args.dataset,
        "split": str(getattr(data, "split", args.split)),
        "val_accuracy": round(100 * clf.score(data, mask=data.val_mask), 2),
        "test_accuracy": round(100 * clf.score(data, mask=data.test_mask), 2),
        "depth": getattr(clf, "depth_", None),
        "seconds": round(time.perf_counter() - start, 2),
    }
    print(f"{result['model']} on {result['dataset']} (split {result['split']}): "
          f"val {result['val_accuracy']:.2f}%  test {result['test_accuracy']:.2f}%"
          + (f"  depth {result['depth']}" if result["depth"] is not None else "")
          + f"  ({result['seconds']:.1f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _load_sources(names: str, split_seed: int, svd_dim: int | None = None):
    from omnigraph.datasets import load_dataset
    from omnigraph.datasets.transforms import TruncatedSVDFeatures

    graphs = [load_dataset(n.strip(), seed=split_seed) for n in names.split(",") if n.strip()]
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
                  seed=args.seed, graphs=args.graphs.split(",") if args.graphs else None, resume=args.resume)
    return 0


def register(parsers) -> None:
    p = parsers["top"].add_parser("predict", help="zero-shot node classification with a pretrained model")
    p.add_argument("--model", default="rgvt", help="rgvt, graphany or a checkpoint path")
    p.add_argument("--dataset", default="Cora", help="catalogue name (see `omnigraph datasets list`)")
    p.add_argument("--split", default=None, help="split protocol: public, random, an index (yandex/geom-gcn), ogb")
    p.add_argument("--split-seed", type=int, default=42, help="seed of random splits (42 = RGVT protocol)")
    p.add_argument("--seed", type=int, default=0, help="seed of the per-target head")
    p.add_argument("--protocol", default=None, choices=["fast", "reference"], help="RGVT adaptation mode")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")
    p.set_defaults(func=cmd_predict)

    for name in ("rgvt", "graphany"):
        q = parsers["pretrain"].add_parser(name, help=f"pretrain {name} with Lightning")
        q.add_argument("--dataset", required=True, help="source graph(s), comma separated")
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
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default="runs/benchmark_nc")
    b.add_argument("--resume", action="store_true",
                   help="keep the finished rows of an interrupted run in OUT/rows.jsonl instead of recomputing them")
    b.set_defaults(func=cmd_benchmark)
