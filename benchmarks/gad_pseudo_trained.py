"""REFI-GAD pretrained for the regimes without labelled anomalies, against the shipped checkpoint.

The shipped scorer was pretrained on episodes with *labelled* anomalous supports, then is used in
``normal-k`` and ``zero-shot`` with pseudo-anomalies (the ``clip(N/50, 20, 100)`` most atypical nodes,
docs/results/anomaly_detection.md, "Regime zero-shot"). This script pretrains a second scorer on the
same three sources (``--seed`` 0 and ``--epochs`` 50: the shipped seed and schedule) with
``pretrain_refi_gad(..., support_episodes=E)``, whose episodes give the scorer the supports those regimes
give it: ``normal-k``: 10 labelled normals and the pseudo-anomalies; ``zero-shot``: pseudo-normals too;
``mixed`` (default): the two and a labelled episode in turn; ``labelled``: the release's episodes (the
control: today's fingerprints, the shipped schedule). Queries keep their true labels. Then both
scorers are evaluated on the reduced-v1 targets with the estimator's own rule: ``normal-10`` (benchmark
supports, seeds 0-4, supports excluded), ``zero-shot`` (every node) and ``normal+anomaly-k`` (the
benchmark's k, seeds 0-4, supports excluded). Prints AUROC and AUPRC (%) per target and the means.
1 torch thread.

    python benchmarks/gad_pseudo_trained.py --episodes mixed --epochs 50 --seed 0
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from omnigraph import REFIGAD
from omnigraph.benchmark.gad import PROTOCOLS, load_gad, regime_shots
from omnigraph.benchmark.gad_metrics import metrics, support_mask
from omnigraph.estimators.detector import sample_support
from omnigraph.models.refi_gad import REFIGADNet
from omnigraph.training.config import SUPPORT_EPISODES
from omnigraph.training.refi_gad import pretrain_refi_gad

REGIMES = ("normal-10", "zero-shot", "normal+anomaly-k")
SOURCES = ("gad/flickr_inj", "gad/cs_inj", "gad/tolokers")


def pretrain(support_episodes: str, epochs: int, seed: int = 0) -> REFIGADNet:
    return pretrain_refi_gad([load_gad(name) for name in SOURCES], seed=seed, progress_bar=False, epochs=epochs,
                             support_episodes=support_episodes)


def regime_metrics(det: REFIGAD, data, regime: str) -> tuple[float, float]:
    """(AUROC, AUPRC) in percent in ``regime``: the benchmark's supports, mean over seeds 0-4, supports
    excluded; ``zero-shot``: one deterministic call, every node evaluated."""
    if regime == "zero-shot":
        return tuple(100 * v for v in metrics(data.y, det.decision_function(data)))
    values = []
    for seed in range(5):
        sn, sa = sample_support(data.y, *regime_shots(regime, data.y), seed)
        s = det.decision_function(data, support_normal=sn, support_anomaly=sa if sa.numel() else None)
        values.append(metrics(data.y, s, support_mask(data.num_nodes, sn, sa)))
    return tuple(100 * v for v in np.mean(values, axis=0))


def evaluate(detectors: dict[str, REFIGAD]) -> None:
    rows = {}
    for target in PROTOCOLS["reduced-v1"]["targets"]:
        data = load_gad(target)
        rows[target] = [v for det in detectors.values() for regime in REGIMES for v in regime_metrics(det, data, regime)]
        print(f"{target:18s} " + " ".join(f"{v:6.2f}" for v in rows[target]), flush=True)
    means = np.mean(list(rows.values()), axis=0)
    cols = [f"{name} {regime} {m}" for name in detectors for regime in REGIMES for m in ("AUROC", "AUPRC")]
    print("mean: " + ", ".join(f"{c} {v:.2f}" for c, v in zip(cols, means)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", choices=sorted(SUPPORT_EPISODES), default="mixed")
    parser.add_argument("--epochs", type=int, default=50, help="50: the shipped checkpoint's schedule")
    parser.add_argument("--seed", type=int, default=0, help="pretraining seed (the shipped checkpoint's: 0)")
    parser.add_argument("--pseudo-anomaly", choices=("atypical", "oriented"), default="atypical",
                        help="the estimator's pseudo-anomaly rule (atypical: the page's table)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    net = pretrain(args.episodes, args.epochs, args.seed)
    print(f"pretrained ({args.episodes} episodes, {args.epochs} epochs, seed {args.seed}) in {time.perf_counter() - start:.0f} s",
          flush=True)
    rule = {"pseudo_anomaly": args.pseudo_anomaly}
    evaluate({"shipped": REFIGAD.from_pretrained("refi-gad", **rule), args.episodes: REFIGAD(model=net, **rule)})


if __name__ == "__main__":
    main()
