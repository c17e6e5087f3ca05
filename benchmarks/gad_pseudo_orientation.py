"""REFI-GAD zero-shot: which pseudo-support rule, with the shipped checkpoint's source-learned orientation.

docs/results/anomaly_detection.md, "Regime zero-shot". Every rule takes ``clip(N/50, 20, 100)`` nodes per
pseudo-support from the target's ranked fingerprint and reads no label: (A) the least atypical as normal,
the highest under the orientation as anomalous (the shipped rule, ``pseudo_anomaly="oriented"``); (B) both
by the orientation (its lowest as normal); (C) both by atypicality (the rule until 2026-12-08); (D) the
orientation's score itself, without REFI-GAD. Prints AUROC and AUPRC (%) per reduced-v1 target, every node
evaluated, then the means. 1 torch thread.

    python benchmarks/gad_pseudo_orientation.py
"""
from __future__ import annotations

import numpy as np
import torch

from omnigraph import REFIGAD
from omnigraph.benchmark.gad import PROTOCOLS, load_gad
from omnigraph.benchmark.gad_metrics import metrics
from omnigraph.models.pseudo_support import (
    atypicality,
    highest,
    lowest,
    oriented_atypicality,
    pseudo_support_size,
)

RULES = ("least atypical + oriented (shipped)", "oriented both ways", "atypical both ways", "orientation alone")


def main() -> None:
    torch.set_num_threads(1)
    det = REFIGAD.from_pretrained("refi-gad")
    orientation = det.model.orientation
    rows = {}
    for target in PROTOCOLS["reduced-v1"]["targets"]:
        data = load_gad(target)
        p = det.fingerprint(data).cpu()
        k = pseudo_support_size(data.num_nodes)
        atyp, ori = atypicality(p), oriented_atypicality(p, orientation)
        row = []
        for key_n, key_a in ((atyp, ori), (ori, ori), (atyp, atyp)):
            pool = torch.ones(data.num_nodes, dtype=torch.bool)
            sn = lowest(key_n, p, pool, k)
            pool[sn] = False
            sa = highest(key_a, p, pool, k)
            row += [100 * v for v in metrics(data.y, det.decision_function(data, support_normal=sn, support_anomaly=sa))]
        row += [100 * v for v in metrics(data.y, ori)]
        rows[target] = row
        print(f"{target:20s} " + " ".join(f"{v:6.2f}" for v in row), flush=True)
    means = np.mean(list(rows.values()), axis=0)
    print("mean AUROC / AUPRC: " + ", ".join(f"{name} {means[2 * i]:.2f} / {means[2 * i + 1]:.2f}"
                                             for i, name in enumerate(RULES)))


if __name__ == "__main__":
    main()
