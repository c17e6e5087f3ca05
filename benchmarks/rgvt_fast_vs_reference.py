"""Benchmark: RGVT's fast adaptation against the paper's reference protocol, side by side.

Both protocols adapt the same frozen encoder (the shipped ``rgvt`` checkpoint unless
``--encoder``) to each graph of the suite: choose the recurrence depth L in 1..8 on validation
accuracy and fit the F->128->C head on the training labels (spec 2.7, issue #7).

* ``reference``: one head per depth, Adam 5e-3, up to 2500 epochs, patience 200, the depth
  of the best validation accuracy.
* ``fast``: depths ranked by a closed-form ridge classifier, one head trained (same recipe,
  patience 200) at the winning depth only, early stopping on at most 2048 validation nodes.

Per graph, the encoder runs once and its representations (training + validation rows, and
the test rows when they fit in ``--keep-bytes``; otherwise a second pass fetches the test
rows at the chosen depths) feed both protocols, so the adaptation times are measured on
identical inputs in the same run. Reported: encoder seconds, adaptation seconds per
protocol, their ratio, the end-to-end ratio (encoder + adaptation), chosen depths and test
accuracies. Results stream to ``rgvt_fast_vs_reference.jsonl`` (``--resume`` continues a
killed run) and are summarised in ``rgvt_fast_vs_reference.json`` / ``.md`` in ``--out``.

    OMP_NUM_THREADS=1 python benchmarks/rgvt_fast_vs_reference.py --suite rgvt28 --out docs/results
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from omnigraph.benchmark.nc import suite_graphs
from omnigraph.estimators.rgvt import RGVT
from omnigraph.estimators.rgvt_adapt import adapt_representations, labelled_representations

NAME = "rgvt_fast_vs_reference"
PROTOCOLS = ("fast", "reference")


def _test_rows_at(encoder, x, ops, test: torch.Tensor, depths: set[int]) -> dict[int, torch.Tensor]:
    """Second encoder pass: the test rows at ``depths`` only."""
    return dict(labelled_representations(encoder, x, ops, test, sorted(depths)))


def run_graph(encoder, data, seeds: list[int], keep_bytes: int, protocols: tuple[str, ...] = PROTOCOLS) -> dict:
    """Encoder once, then each protocol on the same representations; returns one result row."""
    train, val, test = (m.nonzero().flatten() for m in (data.train_mask, data.val_mask, data.test_mask))
    y_train, y_val, y_test = data.y[train], data.y[val], data.y[test]
    num_classes = int(torch.cat([y_train, y_val]).max()) + 1
    x = data.x.float()
    n_lab = train.numel() + val.numel()
    keep_test = 8 * (n_lab + test.numel()) * x.size(1) * 4 <= keep_bytes
    rows = torch.cat([train, val, test]) if keep_test else torch.cat([train, val])

    start = time.perf_counter()
    ops = encoder.build_operators(data.edge_index, data.num_nodes)
    reps = list(labelled_representations(encoder, x, ops, rows, range(1, 9)))
    encoder_seconds = time.perf_counter() - start

    labelled = [(d, z[:n_lab]) for d, z in reps]
    fitted, row = {}, {"encoder_seconds": encoder_seconds, "test_rows_kept": keep_test}
    for protocol in protocols:
        start = time.perf_counter()
        fitted[protocol] = adapt_representations(iter(labelled), train.numel(), y_train, y_val, num_classes,
                                                 protocol=protocol, seeds=seeds)
        row[f"{protocol}_adapt_seconds"] = time.perf_counter() - start
    chosen = {a.depth for results in fitted.values() for a in results}
    test_z = ({d: z[n_lab:] for d, z in reps if d in chosen} if keep_test
              else _test_rows_at(encoder, x, ops, test, chosen))
    for protocol, results in fitted.items():
        with torch.no_grad():
            accs = [100 * float((a.head.eval()(test_z[a.depth]).argmax(-1) == y_test).float().mean())
                    for a in results]
        row[f"{protocol}_test_accuracy"] = sum(accs) / len(accs)
        row[f"{protocol}_depths"] = [a.depth for a in results]
        row[f"{protocol}_epochs"] = sum(a.epochs for a in results)
    return row


#: report marks of rows whose protocol columns were re-measured (``--refresh``)
MARKS = {"fast": "†", "reference": "‡"}


def _refreshed(row: dict) -> list[str]:
    """The protocols re-measured in a row (older rows store one name, newer ones a list)."""
    kinds = row.get("refreshed") or []
    return [kinds] if isinstance(kinds, str) else list(kinds)


def summarise(rows: list[dict], meta: dict) -> tuple[dict, str]:
    ok = [r for r in rows if r["status"] == "ok"]
    total = {k: sum(r[k] for r in ok) for k in ("encoder_seconds", "fast_adapt_seconds",
                                                  "reference_adapt_seconds")}
    mean = {p: sum(r[f"{p}_test_accuracy"] for r in ok) / max(len(ok), 1) for p in PROTOCOLS}
    summary = {
        **meta, "graphs": [r["dataset"] for r in ok], "seconds": total,
        "mean_test_accuracy": mean, "mean_loss_points": mean["reference"] - mean["fast"],
        "adaptation_speedup": total["reference_adapt_seconds"] / max(total["fast_adapt_seconds"], 1e-9),
        "end_to_end_speedup": (total["encoder_seconds"] + total["reference_adapt_seconds"])
        / max(total["encoder_seconds"] + total["fast_adapt_seconds"], 1e-9),
        "not_run": [{"dataset": r["dataset"], "status": r["status"], "note": r["note"]} for r in rows
                    if r["status"] != "ok"],
    }
    lines = [
        f"# RGVT adaptation: fast vs reference protocol (suite `{meta['suite']}`)", "",
        f"Encoder `{meta['encoder']}`, head seeds {meta['seeds']}; {meta['machine']}.",
        f"Command: `{meta['command']}`" + (f" ({meta['note']})" if meta.get("note") else ""), "",
        ("Same encoder pass feeds both protocols; seconds are adaptation only (depth choice + head), "
        "the encoder column is shared."), "",
        "| graph | encoder s | fast s | reference s | ratio | L fast | L ref | fast acc | ref acc |",
        "|---|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for r in ok:
        mark = "".join(MARKS[p] for p in _refreshed(r))
        mark = f" {mark}" if mark else ""
        lines.append(f"| {r['dataset']}{mark} | {r['encoder_seconds']:.1f} | {r['fast_adapt_seconds']:.1f} | "
                     f"{r['reference_adapt_seconds']:.1f} | "
                     f"{r['reference_adapt_seconds'] / max(r['fast_adapt_seconds'], 1e-9):.1f}x | "
                     f"{','.join(map(str, r['fast_depths']))} | {','.join(map(str, r['reference_depths']))} | "
                     f"{r['fast_test_accuracy']:.2f} | {r['reference_test_accuracy']:.2f} |")
    lines.append(f"| **total / mean over {len(ok)} graphs** | {total['encoder_seconds']:.0f} | "
                 f"{total['fast_adapt_seconds']:.0f} | {total['reference_adapt_seconds']:.0f} | "
                 f"**{summary['adaptation_speedup']:.1f}x** | | | **{mean['fast']:.2f}** | "
                 f"**{mean['reference']:.2f}** |")
    lines += ["", f"- adaptation speed-up (sum of reference / sum of fast): **{summary['adaptation_speedup']:.1f}x**",
              f"- end-to-end speed-up (encoder + adaptation): **{summary['end_to_end_speedup']:.1f}x**",
              f"- mean test accuracy, reference minus fast: **{summary['mean_loss_points']:+.2f} points**"]
    for protocol in PROTOCOLS:
        if any(protocol in _refreshed(r) for r in ok):
            other = next(p for p in PROTOCOLS if p != protocol)
            lines += ["", (f"{MARKS[protocol]} the {protocol} columns of these rows were re-measured in a later run "
                      f"(`--refresh {protocol}`; the command line says why); unless also marked "
                      f"{MARKS[other]}, the {other} columns come from the original run.")]
    if summary["not_run"]:
        lines += ["", "Not run:"] + [f"- {r['dataset']}: {r['status']} — {r['note']}" for r in summary["not_run"]]
    return summary, "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="rgvt28")
    parser.add_argument("--graphs", default=None, help="comma-separated subset of the suite")
    parser.add_argument("--encoder", default="rgvt", help="checkpoint name or path")
    parser.add_argument("--seeds", default="0", help="head seeds, comma separated")
    parser.add_argument("--keep-bytes", type=float, default=3e9,
                        help="hold the test rows of all depths when they fit; else a second encoder pass")
    parser.add_argument("--out", default="docs/results")
    parser.add_argument("--resume", action="store_true", help="keep graphs already in the .jsonl")
    parser.add_argument("--note", default="", help="a line added under the command in the report")
    parser.add_argument("--refresh", choices=PROTOCOLS, default=None,
                        help="with --resume: re-measure this protocol on the --graphs given, keep the other "
                             "protocol's columns from the .jsonl (the rows are marked in the report)")
    args = parser.parse_args(argv)
    if args.refresh and not args.resume:
        parser.error("--refresh re-measures rows of an earlier run: pass --resume too")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    encoder = RGVT.from_pretrained(args.encoder).encoder.eval()
    log = out / f"{NAME}.jsonl"
    done = {}
    if args.resume and log.exists():
        done = {r["dataset"]: r for r in map(json.loads, log.read_text().splitlines()) if r["seeds"] == seeds}
    elif log.exists():
        log.unlink()
    rows = []
    for base, data, problem in suite_graphs(args.suite, args.graphs.split(",") if args.graphs else None):
        if problem is not None:
            rows.append(problem)
        elif base["dataset"] in done and not args.refresh:
            rows.append(done[base["dataset"]])
        else:
            if args.refresh:
                if base["dataset"] not in done:
                    raise SystemExit(f"--refresh needs a finished row for {base['dataset']} in {log}")
                part = run_graph(encoder, data, seeds, int(args.keep_bytes), (args.refresh,))
                old = done[base["dataset"]]
                row = {**old, **part, "refreshed": sorted(set(_refreshed(old)) | {args.refresh})}
            else:
                row = {**base, "status": "ok", "seeds": seeds, **run_graph(encoder, data, seeds, int(args.keep_bytes))}
            rows.append(row)
            with open(log, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{base['dataset']:>20}  encoder {row['encoder_seconds']:7.1f} s  fast {row['fast_adapt_seconds']:6.1f} s"
                  f"  reference {row['reference_adapt_seconds']:7.1f} s  acc {row['fast_test_accuracy']:.2f} / "
                  f"{row['reference_test_accuracy']:.2f}", flush=True)
    meta = {"suite": args.suite, "encoder": args.encoder, "seeds": seeds, "note": args.note,
            "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch thread(s), "
                       f"torch {torch.__version__}",
            "command": "OMP_NUM_THREADS=1 python benchmarks/rgvt_fast_vs_reference.py --suite "
                       f"{args.suite} --out {args.out}" + (f" --graphs {args.graphs}" if args.graphs else "")}
    summary, text = summarise(rows, meta)
    (out / f"{NAME}.json").write_text(json.dumps({**summary, "rows": rows}, indent=2) + "\n")
    (out / f"{NAME}.md").write_text(text)
    print(text)
    return summary


if __name__ == "__main__":
    main()
