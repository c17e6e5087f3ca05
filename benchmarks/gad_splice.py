"""Replace some detectors' rows of a committed GAD results page by those of a newer run.

The pygod side-by-side pages took hours of pygod training; when only omnigraph's detectors change,
they are rerun alone and their rows replace the old ones, restricted to the page's targets and seeds
(a seed-0 page gets the newer run's seed-0 numbers; seconds are then the first, cold call). The other
rows are kept as they were; rows without a first-call time get ``seconds / seeds`` (pygod trains
afresh for every seed, so each of its calls is a first call). The page records what was spliced.

    python benchmarks/gad_splice.py --page docs/results/gad_pygod_reduced --run runs/gad_ours \
        --models refi-gad,arc,fingerprint --command "omnigraph benchmark gad ... --out runs/gad_ours"
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from omnigraph.benchmark.gad_metrics import summarize
from omnigraph.benchmark.gad_report import write_outputs


def _restricted(row: dict, seeds: list[int], protocol: str) -> dict:
    per_seed = [s for s in row["per_seed"] if s["seed"] in seeds]
    if [s["seed"] for s in per_seed] != seeds:
        raise ValueError(f"the run has seeds {[s['seed'] for s in row['per_seed']]} for {row['model']} on "
                         f"{row['target']}; the page needs {seeds}")
    out = {**row, "protocol": protocol, "per_seed": per_seed}
    for variant, suffix in (("excluded", ""), ("included", "_incl")):
        for metric in ("auroc", "auprc"):
            mean, std = summarize([s[f"{metric}_{variant}"] for s in per_seed])
            out[f"{metric}{suffix}"], out[f"{metric}_std{suffix}"] = mean, std
    if len(seeds) < len(row["per_seed"]):     # only the first seed's time is known on its own
        if seeds != [row["per_seed"][0]["seed"]]:
            raise ValueError("a subset of seeds other than the first has no time of its own")
        out["seconds"] = row["cold_seconds"]
    return out


def splice(page: dict, run: dict, models: list[str], command: str) -> dict:
    meta = page["meta"]
    seeds = list(meta["seeds"])
    new = {(r["target"], r["regime"], r["model"]): r for r in run["rows"] if r["model"] in models}
    rows = []
    for row in page["rows"]:
        key = (row["target"], row["regime"], row["model"])
        if row["model"] in models:
            if key not in new:
                raise ValueError(f"the run has no row for {key}")
            row = _restricted(new[key], seeds, meta["protocol"])
        elif row.get("status") == "ok" and "cold_seconds" not in row:
            row = {**row, "cold_seconds": round(row["seconds"] / len(seeds), 3)}
        rows.append(row)
    meta = {**meta, "spliced": {"models": models, "command": command, "date": run["meta"]["date"],
                                "torch_threads": run["meta"].get("torch_threads")}}
    for model in models:
        if model in run["meta"].get("checkpoints", {}):
            meta.setdefault("checkpoints", {})[model] = run["meta"]["checkpoints"][model]
    return {"rows": rows, "meta": meta}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page", required=True, help="folder with the committed gad_results.json")
    p.add_argument("--run", required=True, help="folder of the newer run (gad_results.json)")
    p.add_argument("--models", required=True, help="comma separated detectors whose rows are replaced")
    p.add_argument("--command", required=True, help="the newer run's exact command")
    args = p.parse_args(argv)
    page = json.loads((Path(args.page) / "gad_results.json").read_text())
    run = json.loads((Path(args.run) / "gad_results.json").read_text())
    command = page.pop("command")
    result = splice(page, run, args.models.split(","), args.command)
    write_outputs(result, args.page, command)
    print(f"replaced the rows of {args.models} in {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
