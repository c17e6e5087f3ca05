"""REFI-GAD in regime normal-10: pseudo-support rules for the missing anomalous support, side by side.

(A) the rule shipped until 2026-12-08 (``pseudo_anomaly="atypical"``; docs/results/anomaly_detection.md,
"Regime zero-shot", normal-k) takes the 10 labelled normals as the normal support and the
``clip(N/50, 20, 100)`` most atypical unlabelled nodes as the anomalous one. Alternatives: (B) the same,
with the ``clip(N/50, 20, 100)`` least atypical unlabelled nodes added to the normal support (as in
zero-shot); (C) atypicality measured from the labelled normals' median fingerprint instead of the median
rank 50; (D) the anomalous support by the checkpoint's source-learned orientation (``"oriented"``, the
default since then). Prints AUROC (%) per reduced-v1 target, mean over the benchmark's support seeds 0-4
(support excluded), then the means. 1 torch thread.

    python benchmarks/gad_normal_k_rules.py
"""
from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from omnigraph import REFIGAD
from omnigraph.benchmark.gad import PROTOCOLS, load_gad
from omnigraph.estimators.detector import sample_support
from omnigraph.models.pseudo_support import ranked

RULES = ("atypical", "plus least atypical as normals", "atypical from the labelled normals", "oriented")


def rule_scores(refi: REFIGAD, oriented: REFIGAD, data, p: torch.Tensor, sn: torch.Tensor, k: int
                ) -> list[torch.Tensor]:
    free = torch.ones(data.num_nodes, dtype=torch.bool)
    free[sn] = False

    def by(key: torch.Tensor) -> torch.Tensor:
        order = ranked(key, p)
        return order[free[order]]

    from_median = by((p - 50.0).abs().sum(1))
    from_normals = by((p - p[sn].median(0).values).abs().sum(1))
    return [refi.decision_function(data, support_normal=sn),
            refi.decision_function(data, support_normal=torch.cat([sn, from_median[:k]]),
                                   support_anomaly=from_median[-k:]),
            refi.decision_function(data, support_normal=sn, support_anomaly=from_normals[-k:]),
            oriented.decision_function(data, support_normal=sn)]


def main() -> None:
    torch.set_num_threads(1)
    refi = REFIGAD.from_pretrained("refi-gad", pseudo_anomaly="atypical")
    oriented = REFIGAD.from_pretrained("refi-gad", pseudo_anomaly="oriented")
    results = {}
    for target in PROTOCOLS["reduced-v1"]["targets"]:
        data = load_gad(target)
        p = refi.fingerprint(data).cpu()
        k = int(min(100, max(20, round(data.num_nodes / 50))))
        per_seed = []
        for seed in range(5):
            sn, _ = sample_support(data.y, 10, 0, seed)
            keep = torch.ones(data.num_nodes, dtype=torch.bool)
            keep[sn] = False
            per_seed.append([100 * roc_auc_score(data.y[keep].numpy(), s[keep].numpy())
                             for s in rule_scores(refi, oriented, data, p, sn, k)])
        results[target] = np.mean(per_seed, axis=0)
        print(target, " ".join(f"{v:.2f}" for v in results[target]), flush=True)
    means = np.mean(list(results.values()), axis=0)
    print("mean: " + ", ".join(f"{name} {v:.2f}" for name, v in zip(RULES, means)))


if __name__ == "__main__":
    main()
