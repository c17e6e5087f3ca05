"""Anomaly-detection commands: ``detect``, ``pretrain refi-gad|arc``, ``benchmark gad``."""
from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from omnigraph.cli._common import add_trainer_args, is_global_zero, trainer_kwargs
from omnigraph.cli._io import add_graph_args, emit
from omnigraph.training.config import SUPPORT_EPISODES, ARCPretrainConfig, REFIGADPretrainConfig


def _ints(spec: str) -> list[int]:
    try:
        return [int(s) for s in spec.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {spec!r}") from None


def _names(spec: str) -> list[str]:
    return [s.strip() for s in spec.split(",") if s.strip()]


def _command(prefix: str, args, options: list[str]) -> str:
    """The canonical command line of a parsed invocation (recorded in model cards and results)."""
    parts = ["omnigraph", *prefix.split()]
    for opt in options:
        value = getattr(args, opt.replace("-", "_"), None)
        if value is None or value is False or value == "":
            continue
        parts.append(f"--{opt}")
        if value is not True:
            parts.append(shlex.quote(str(value)))
    return " ".join(parts)


SCORE_COLUMNS = "score [higher = more anomalous], flag, support [1 normal, 2 anomalous, 0 none]"


def _score_columns(det, score, sn, sa) -> dict:
    import torch

    role = torch.zeros(score.numel(), dtype=torch.long)
    role[sn], role[sa] = 1, 2
    return {"score": score, "flag": det.label_, "support": role}


def _detect_once(args, det, data, sn, sa) -> int:
    """The user's graph and the user's labelled nodes: one scoring, per-node results, metrics if labelled."""

    from omnigraph.benchmark.gad_metrics import metrics, support_mask

    name = args.nodes if args.nodes else args.dataset
    if sn is None and det.requires_normal:
        need = " and --support-anomaly IDS (labelled anomalies)" if det.requires_anomaly else ""
        raise ValueError(f"{args.model} scores a graph against labelled nodes of it: pass --support-normal IDS "
                         f"(labelled normal nodes, comma separated or a file with one id per line){need}"
                         + ("" if getattr(data, "y", None) is None else
                            ", or --shots-normal/--shots-anomaly to draw them from the graph's labels"))
    start = time.perf_counter()
    score = det.decision_function(data, support_normal=sn, support_anomaly=sa)
    sn, sa = det.support_normal_, det.support_anomaly_
    result = {"model": args.model, "dataset": name, "regime": det.regime_, "support_normal": int(sn.numel()),
              "support_anomaly": int(sa.numel()), "threshold": det.threshold_,
              "flagged": int(det.label_.sum()), "seconds": round(time.perf_counter() - start, 2)}
    line = (f"{args.model} on {name} [{det.regime_}, {sn.numel()} normal + {sa.numel()} anomalous support]: "
            f"{result['flagged']} of {data.num_nodes} nodes flagged (contamination {det.contamination})")
    y = getattr(data, "y", None)
    keep = support_mask(data.num_nodes, sn, sa)
    if y is not None and bool((y >= 0).all()) and 0 < int(y[keep].sum()) < int(keep.sum()):
        auroc, auprc = metrics(y, score, keep)
        result.update(auroc=round(100 * auroc, 2), auprc=round(100 * auprc, 2))
        line += f"; AUROC {result['auroc']:.2f}  AUPRC {result['auprc']:.2f} (support excluded)"
    print(line + f"  ({result['seconds']:.1f} s)")
    if det.regime_ == "zero-shot":
        print("regime zero-shot: no labelled node was read (pass --support-normal/--support-anomaly with your "
              "labelled nodes, or --shots-normal/--shots-anomaly to draw them from the graph's labels)")
    return emit(args, result, data, _score_columns(det, score, sn, sa), SCORE_COLUMNS)


# `--model auto`: the detector with the best measured mean AUROC in the user's regime
# (docs/results/anomaly_detection.md, reduced protocol v1)
AUTO_REASON = {
    "refi-gad": "labelled anomalies given: REFI-GAD leads in normal+anomaly-k, mean AUROC 79.88 vs ARC 73.74",
    "arc": "no labelled anomaly: ARC leads in zero-shot and normal-k, mean AUROC 73.88 / 73.62 vs REFI-GAD "
           "68.15 / 68.55 (REFI-GAD leads on mean AUPRC there, 25.65 / 25.45 vs 25.03 / 25.01)",
}


def auto_model(anomalies_given: bool, anomalies_drawn: bool) -> str:
    """``refi-gad`` when labelled anomalous nodes reach the detector, else ``arc``."""
    return "refi-gad" if anomalies_given or anomalies_drawn else "arc"


def cmd_detect(args) -> int:
    from omnigraph.benchmark.gad import default_shots, evaluate_detector, make_detector
    from omnigraph.cli._io import load_graph, parse_ids

    data = load_graph(args, task="gad")
    seeds = _ints(args.seeds)
    if not seeds:
        raise ValueError("--seeds is empty")
    start = time.perf_counter()
    sn = parse_ids(args.support_normal, data, "--support-normal")
    sa = parse_ids(args.support_anomaly, data, "--support-anomaly")
    shots = args.shots_normal is not None or args.shots_anomaly is not None
    if args.model == "auto":
        args.model = auto_model(sa is not None and sa.numel() > 0,
                                shots and getattr(data, "y", None) is not None and args.shots_anomaly != 0)
        print(f"model auto: {args.model} ({AUTO_REASON[args.model]})")
    det = make_detector(args.model, seeds[0])
    det.set_params(contamination=args.contamination)
    if sn is not None or sa is not None or getattr(data, "y", None) is None or not shots:
        # the user's labelled nodes, or none (zero-shot); drawing supports from the labels is a benchmark
        # choice made explicitly with --shots-*
        if shots and (sn is not None or sa is not None):
            raise ValueError("pass either --support-normal/--support-anomaly (your labelled nodes) or "
                             "--shots-normal/--shots-anomaly (drawn from the graph's labels), not both")
        if shots:
            raise ValueError(f"--shots-normal/--shots-anomaly draw supports from the graph's labels, but "
                             f"{args.dataset or args.nodes} has none (y)")
        return _detect_once(args, det, data, sn, sa)
    k = default_shots(data.y)
    # detectors that read anomalous support default to REFI-GAD's regime, the others to ARC's normal-10
    reads_anomaly = det.uses_anomaly or det.accepts_anomaly
    kn = args.shots_normal if args.shots_normal is not None else (k if reads_anomaly else 10)
    ka = args.shots_anomaly if args.shots_anomaly is not None else (k if reads_anomaly else 0)
    if ka and not reads_anomaly:
        print(f"note: {args.model} ignores anomalous support; the {ka} anomalous support nodes are still "
              "excluded from the evaluation", file=sys.stderr)
    res = evaluate_detector(det, data, kn, ka, seeds, include_support=args.include_support)
    regime = "normal+anomaly-k" if ka and reads_anomaly else (
        "normal-k" if kn else "zero-shot")
    result = {"model": args.model, "dataset": args.dataset, "regime": regime,
              "auroc": round(res["auroc"], 2), "auroc_std": round(res["auroc_std"], 2),
              "auprc": round(res["auprc"], 2), "auprc_std": round(res["auprc_std"], 2),
              "seconds": round(time.perf_counter() - start, 2), "seeds": seeds,
              "shots_normal": kn, "shots_anomaly": ka, "k": ka if ka else kn,
              "support_excluded": not args.include_support,
              "support_included_variant" if not args.include_support else "support_excluded_variant":
                  {k_: round(v, 2) for k_, v in
                   res["support_included" if not args.include_support else "support_excluded"].items()},
              "per_seed": res["per_seed"]}
    pop = "support included" if args.include_support else "support excluded"
    print(f"{args.model} on {args.dataset} [{regime}, {kn} normal + {ka} anomalous support, {pop}, seeds {seeds}]: "
          f"AUROC {result['auroc']:.2f} ± {result['auroc_std']:.2f}  AUPRC {result['auprc']:.2f} ± "
          f"{result['auprc_std']:.2f}  ({result['seconds']:.1f} s)")
    columns = None
    if args.out:   # per-node results of the first seed's support draw
        from omnigraph.estimators.detector import sample_support

        sn, sa = sample_support(data.y, kn, ka if reads_anomaly else 0, seeds[0])
        score = det.decision_function(data, support_normal=sn if kn else None, support_anomaly=sa if ka else None)
        columns = _score_columns(det, score, det.support_normal_, det.support_anomaly_)
    return emit(args, result, data, columns, SCORE_COLUMNS + f" (seed {seeds[0]}'s support)")


def cmd_pretrain(args) -> int:
    from omnigraph.benchmark.gad import load_gad

    sources = _names(args.sources)
    if not sources:
        raise ValueError("--sources is empty")
    graphs = [load_gad(s) for s in sources]
    trainer = trainer_kwargs(args)
    start = time.perf_counter()
    flags = ("epochs", "episodes_per_graph", "shots", "support_episodes")   # the config fields the command line sets
    overrides = {k: getattr(args, k) for k in flags if getattr(args, k, None) is not None}
    if args.model == "refi-gad":
        from omnigraph.training.refi_gad import pretrain_refi_gad

        config = REFIGADPretrainConfig().replace(**overrides)
        model = pretrain_refi_gad(graphs, config, seed=args.seed, out_dir=args.out, progress_bar=not args.quiet,
                                  **trainer)
    else:
        from omnigraph.training.arc import pretrain_arc  # lazy: ARC is an optional feature module

        config = ARCPretrainConfig().replace(**overrides)
        model = pretrain_arc(graphs, config, seed=args.seed, out_dir=args.out, progress_bar=not args.quiet,
                             **trainer)
    schedule = {k: getattr(config, k) for k in flags if hasattr(config, k)}
    seconds = time.perf_counter() - start
    if not is_global_zero():  # DDP: the other ranks trained the same model; rank 0 writes it
        return 0
    card = {"training_data": sources, "sources": sources, "seed": args.seed, "seconds": round(seconds, 1),
            "command": _command(f"pretrain {args.model}", args,
                                ["sources", "epochs", "episodes-per-graph", "shots", "support-episodes", "seed", "devices",
                                 "num-nodes", "strategy", "accelerator", "out", "publish"]), **schedule}
    out = Path(args.out)
    model.save_pretrained(out / "model", card=card)
    print(f"trained {args.model} on {', '.join(sources)} in {seconds:.1f} s; saved to {out / 'model'}")
    if args.publish:
        from omnigraph.hub import publish

        path = publish(model, args.publish, card)
        print(f"published as {args.publish!r}: {path}")
    return 0


def cmd_benchmark(args) -> int:
    from omnigraph.benchmark.gad import run_benchmark
    from omnigraph.benchmark.gad_report import write_outputs

    epochs = {}
    if args.epochs:
        for item in _names(args.epochs):
            model, _, n = item.partition("=")
            epochs[model] = int(n)
    regimes = _names(args.regimes)
    result = run_benchmark(protocol=args.protocol, models=_names(args.models), regimes=regimes,
                           seeds=_ints(args.seeds), targets=_names(args.targets) if args.targets else None,
                           train=_names(args.train), epochs=epochs,
                           allow_unknown_sources=args.allow_unknown_sources)
    command = _command("benchmark gad", args, ["protocol", "models", "regimes", "seeds", "targets", "train", "epochs",
                                               "out"])
    paths = write_outputs(result, args.out, command=command)
    print("\n".join(f"wrote {p}" for p in paths.values()))
    return 0


def register(parsers) -> None:
    p = parsers["top"].add_parser("detect", help="generalist anomaly detection: per-node scores and flags, "
                                  "AUROC/AUPRC when the graph has labels")
    p.add_argument("--model", default="auto",
                   help="auto (default: refi-gad when labelled anomalies are given, else arc), refi-gad, arc, "
                        "fingerprint, fingerprint:<column> or a checkpoint path")
    add_graph_args(p, default=None)
    p.add_argument("--support-normal", default=None,
                   help="your labelled normal nodes: comma-separated ids (node-table ids with --nodes) or a file")
    p.add_argument("--support-anomaly", default=None, help="your labelled anomalous nodes, as --support-normal")
    p.add_argument("--contamination", type=float, default=0.1,
                   help="share of nodes flagged (the threshold is this quantile of the scores; default 0.1)")
    p.add_argument("--shots-normal", type=int, default=None,
                   help="benchmark: draw this many labelled normal nodes from the graph's labels, --seeds times "
                        "(without --shots-* and --support-*: zero-shot, no label read)")
    p.add_argument("--shots-anomaly", type=int, default=None,
                   help="benchmark: draw this many labelled anomalous nodes (default with --shots-normal: k = 50, "
                        "or 10 below 100 anomalies, for detectors that read them)")
    p.add_argument("--seeds", default="0,1,2,3,4", help="support-draw seeds, comma separated")
    p.add_argument("--include-support", action="store_true",
                   help="evaluate on all nodes, support included (default: support excluded)")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")
    p.set_defaults(func=cmd_detect)

    for name in ("refi-gad", "arc"):
        q = parsers["pretrain"].add_parser(name, help=f"pretrain {name} on labelled source graphs")
        q.add_argument("--sources", required=True, help="source graphs, comma separated (names or files)")
        defaults = (REFIGADPretrainConfig if name == "refi-gad" else ARCPretrainConfig)()
        q.add_argument("--epochs", type=int, default=None, help=f"epochs (default: the release's, {defaults.epochs})")
        if name == "refi-gad":
            q.add_argument("--episodes-per-graph", type=int, default=None,
                           help=f"episodes per graph per epoch ({defaults.episodes_per_graph})")
            q.add_argument("--shots", type=int, default=None,
                           help=f"support size per class in episodes ({defaults.shots})")
            q.add_argument("--support-episodes", default=None, choices=sorted(SUPPORT_EPISODES),
                           help=f"episode supports ({defaults.support_episodes}: labelled; normal-k, zero-shot, "
                                "mixed: the pseudo-supports of the regimes without labelled anomalies)")
        q.add_argument("--seed", type=int, default=0)
        add_trainer_args(q, name, devices=1, accelerator="cpu")
        q.add_argument("--quiet", action="store_true", help="no progress bar")
        q.set_defaults(func=cmd_pretrain, model=name)

    b = parsers["benchmark"].add_parser("gad", help="anomaly detection: all targets, all models, both regimes")
    b.add_argument("--protocol", default="reduced-v1", help="reduced-v1, r-refi-a2b, r-refi-b2a or smoke")
    b.add_argument("--models", default="refi-gad,arc,fingerprint",
                   help="comma separated: refi-gad, arc, fingerprint, fingerprint:<column>, checkpoint paths")
    b.add_argument("--regimes", default="normal-10,normal+anomaly-k")
    b.add_argument("--seeds", default="0,1,2,3,4")
    b.add_argument("--targets", default=None, help="restrict to these targets of the protocol")
    b.add_argument("--train", nargs="?", const="refi-gad,arc", default="",
                   help="pretrain these models (default when given without a value: refi-gad,arc) on the "
                        "protocol's sources once per seed instead of loading their shipped checkpoints")
    b.add_argument("--epochs", default=None, help="with --train: per-model epochs, e.g. refi-gad=30,arc=40")
    b.add_argument("--allow-unknown-sources", action="store_true",
                   help="evaluate checkpoints whose cards do not name their source graphs (refused by default: "
                        "they may have been trained on a target)")
    b.add_argument("--out", default="runs/benchmark_gad")
    b.set_defaults(func=cmd_benchmark)
