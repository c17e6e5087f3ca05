"""REFI-GAD zero-shot with pseudo-supports from ARC's zero-shot scores, and the rank average of the two.

A measured alternative to the fingerprint-atypicality rule (docs/results/anomaly_detection.md, "Regime
zero-shot"): prints AUROC (%) per reduced-v1 target for ARC, REFI-GAD fed ARC's ``clip(N/50, 20, 100)``
lowest and highest nodes as normal and anomalous supports, and the rank average of the two, then the
means. 1 torch thread, seed 0 (ARC's default draw).

    python benchmarks/gad_pseudo_from_arc.py
"""
from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from omnigraph import ARC, REFIGAD
from omnigraph.benchmark.gad import PROTOCOLS, load_gad


def main() -> None:
    torch.set_num_threads(1)
    arc, refi = ARC.from_pretrained("arc"), REFIGAD.from_pretrained("refi-gad")
    results = {}
    for target in PROTOCOLS["reduced-v1"]["targets"]:
        data = load_gad(target)
        y = data.y.numpy()
        s_arc = arc.decision_function(data)
        k = int(min(max(data.num_nodes // 50, 20), 100))
        order = torch.argsort(s_arc.double(), stable=True)
        s_refi = refi.decision_function(data, support_normal=order[:k], support_anomaly=order[-k:])
        ranks = [torch.argsort(torch.argsort(s.double())).double() for s in (s_arc, s_refi)]
        results[target] = [100 * roc_auc_score(y, s.numpy()) for s in (s_arc, s_refi, ranks[0] + ranks[1])]
        print(target, " ".join(f"{v:.2f}" for v in results[target]), flush=True)
    means = np.mean(list(results.values()), axis=0)
    print("mean: ARC {:.2f}, REFI-GAD with ARC's pseudo-supports {:.2f}, rank average {:.2f}".format(*means))


if __name__ == "__main__":
    main()
