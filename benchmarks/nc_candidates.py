"""Compare RGVT pretraining candidates with the shipped checkpoint and the authors' seed_42 weights.

Merges the rows of several ``omnigraph benchmark nc`` runs (the reference run with ``rgvt`` and
``rgvt-ref:...seed_42.npz``, and one run per candidate checkpoint, ``--models rgvt:PATH``), all on the
same suite, protocol and head seeds, and writes ``docs/results/rgvt_candidates.md`` with each
candidate's card (sources, seed, epochs, command, wall time), its mean ± std over the transfer graphs
(the reference run's pretraining sources excluded) and issue #18's ship rule against ``seed_42``,
plus the merged tables in ``docs/results/rgvt_candidates/``.

    python benchmarks/nc_candidates.py --reference runs/nc_seeds --candidates runs/cand_a=runs/nc_cand_a,... \
        --command "..."
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from nc_page import AUTHORS, ship_check, ships

from omnigraph.benchmark.nc_report import write_reports
from omnigraph.hub import pretrained_dir


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines() if line.strip()]


def _label(checkpoint: Path) -> str:
    return f"rgvt ({checkpoint.name})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, help="run with rgvt and the authors' weights")
    parser.add_argument("--candidates", required=True,
                        help="comma separated PRETRAIN_OUT=BENCHMARK_RUN pairs (the checkpoint is PRETRAIN_OUT/model)")
    parser.add_argument("--command", required=True, help="the exact commands, as one string")
    parser.add_argument("--docs", default="docs/results")
    args = parser.parse_args(argv)

    ref = Path(args.reference)
    meta = json.loads((ref / "summary.json").read_text())
    rows = _rows(ref)
    models = [m for m in ("rgvt", AUTHORS, "graphany") if any(r["model"] == m for r in rows)]
    cards = {"rgvt": json.loads((pretrained_dir() / "rgvt.json").read_text())["card"]}
    for pair in args.candidates.split(","):
        pretrain, run = (Path(p) for p in pair.split("="))
        label = _label(pretrain)
        cand_rows = _rows(run)
        if {r["model"] for r in cand_rows} != {label}:
            raise ValueError(f"{run} holds {sorted({r['model'] for r in cand_rows})}, expected only {label!r}")
        rows += cand_rows
        models.append(label)
        cards[label] = json.loads((pretrain / "model" / "config.json").read_text())["card"]
    out = Path(args.docs) / "rgvt_candidates"
    out.mkdir(parents=True, exist_ok=True)
    summary = write_reports(rows, models, out, {k: meta[k] for k in ("suite", "protocol", "seeds", "sources")})
    cells, transfer = summary["per_graph"], summary["graphs"]

    lines = ["# RGVT pretraining candidates (issue #18)", "",
             f"Commands: `{args.command}`", "",
             (f"Suite `{meta['suite']}`, fast protocol, head seeds {', '.join(map(str, sorted({int(r['seed']) for r in rows})))}, same code and splits for every "
              f"column; transfer graphs: the {len(transfer)} graphs every model ran on, without the shipped "
              f"checkpoints' pretraining sources ({', '.join(meta['sources'])}). Tables per graph: "
              "[rgvt_candidates/results.md](rgvt_candidates/results.md)."), "",
             "| checkpoint | sources | seed | epochs run (best) | best val. acc. | wall s | mean ± std | − seed_42 | ships |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for m in models:
        if m == "graphany":
            continue
        card = cards.get(m, {})
        d = summary["mean"][m] - summary["mean"][AUTHORS]
        lines.append(f"| {m} | {card.get('training_data', '–')} | {card.get('seed', '–')} | "
                     f"{card.get('epochs_run', '–')} ({card.get('best_epoch', '–')}) | {card.get('best_val_acc', '–')} | "
                     f"{card.get('seconds', '–')} | {summary['mean'][m]:.2f} ± {summary['mean_std'][m]:.2f} | "
                     f"{d:+.2f} | {('yes' if ships(cells, transfer, summary, m) else 'no') if m != AUTHORS else '–'} |")
    for m in models:
        if m in ("graphany", AUTHORS):
            continue
        card = cards.get(m)
        lines += ["", f"## {m}", ""]
        if card:
            lines += [f"- {k}: {v}" for k, v in card.items()] + [""]
        lines += ship_check(cells, transfer, summary, m)
    (Path(args.docs) / "rgvt_candidates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
