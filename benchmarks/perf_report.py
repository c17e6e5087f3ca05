"""``performance.md`` and the scaling plot from the results of ``benchmarks/perf.py`` (``perf.json``).

(Over 400 lines: one writer per section of performance.md, in the page's order, so the page is read in one place.)
"""
from __future__ import annotations

import json
from pathlib import Path


def plot_scaling(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for model, label in (("rgvt", "RGVT inference (depths 1..8)"), ("refi", "REFI-GAD scoring")):
        ok = [r[model] for r in rows if "error" not in r[model]]
        e = [r["edges"] for r in ok]
        axes[0].loglog(e, [r["seconds"] for r in ok], "o-", label=label)
        axes[1].loglog(e, [max(r["peak_rss_mib"] - r["rss_before_mib"], 1.0) for r in ok], "o-", label=label)
    axes[0].set(xlabel="directed edges", ylabel="seconds", title="time")
    axes[1].set(xlabel="directed edges", ylabel="peak RSS increase (MiB)", title="memory")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt_mib(v: float) -> str:
    return f"{v / 1024:.2f} GiB" if v >= 1024 else f"{v:.0f} MiB"


KERNELS = {"csr": "CSR", "blocked_csr": "CSR in column blocks", "embedding_bag": "embedding_bag",
           "blocked_embedding_bag": "embedding_bag in column blocks", "torch_sparse": "torch-sparse"}


def roofline_lines(roof: dict) -> list[str]:
    """The roofline section: the machine's rates, then every product's kernels against them."""
    rates = roof["rates"]
    widths = ", ".join(f"{k} columns {rates['block_gather_ns'][k]:.2f} / {rates['dram_gather_ns'][k]:.2f} ns"
                       for k in rates["block_gather_ns"])
    lines = [(f"Measured in the same run, {rates.get('threads', 1)} thread: streaming copy {rates['stream_gbps']:.1f} "
             f"GB/s (read + write, {rates['stream_copy_bytes'] >> 20} MiB); random gathers per entry and column from "
             f"a {rates['in_cache_table_bytes'] >> 20} MiB table (one column block) / from a "
             f"{rates['dram_table_bytes'] >> 20} MiB table (the ceiling without blocking): {widths}."), "",
             ("Roofline of one product: its index and value arrays and its output streamed at that rate, plus its "
             "gathers at the in-cache rate measured on the product's own column indices, block by block (the "
             "graph's own locality; `benchmarks/roofline.py`). Each kernel cell: ns per stored entry and column, "
             "and in brackets the fraction of the roofline it reaches (1 = the machine's limit; above 1 where the "
             "kernel's gathers hit closer caches than the separate gather test did). **Bold**: the kernel the "
             "library runs for that product."), "",
             "| nodes | product | entries | columns | stream share | roofline ns | DRAM ceiling ns | "
             + " | ".join(KERNELS.values()) + " |", "|---:|---|---:|---:|---:|---:|---:|" + "---:|" * len(KERNELS)]
    last = None
    for row in roof["rows"]:
        if "error" in row:
            lines.append(f"| failed: {row['error']} |")
            continue
        for name, p in row["products"].items():
            per = p["entries"] * p["columns"]
            cells = []
            for kernel in KERNELS:
                if kernel not in p["seconds"]:
                    cells.append("–")
                    continue
                cell = f"{p['ns_per_entry_column'][kernel]:.2f} ({p['fraction_of_roofline'][kernel]:.2f})"
                if kernel.startswith("blocked"):
                    cell += f", {p['blocks']} blocks"
                cells.append(f"**{cell}**" if kernel == p["default"] else cell)
            lines.append(f"| {row['nodes']:,} | {name} | {p['entries']:,} | {p['columns']} | "
                         f"{p['stream_s'] / p['roofline_s']:.0%} | {p['roofline_s'] / per * 1e9:.2f} | "
                         f"{p['dram_ceiling_s'] / per * 1e9:.2f} | " + " | ".join(cells) + " |")
        last = row
    if last is not None:
        lines.append("")
        for name, p in last["products"].items():
            frac = p["fraction_of_roofline"][p["default"]]
            best = max(p["fraction_of_roofline"], key=p["fraction_of_roofline"].get)
            lines.append(f"- {last['nodes']:,} nodes, {name}: the default ({KERNELS[p['default']]}) reaches "
                         f"**{frac:.0%}** of the roofline (goal 70%: {'met' if frac >= 0.7 else 'not met'}); "
                         f"fastest here {KERNELS[best]} ({p['fraction_of_roofline'][best]:.0%}); the roofline is "
                         f"{p['stream_s'] / p['roofline_s']:.0%} streaming, {p['gather_s'] / p['roofline_s']:.0%} "
                         f"gathers; in {p['blocks']} column blocks the output and row pointers are streamed again "
                         f"per block, which alone raises the streaming time {p['blocked_stream_s'] / p['stream_s']:.1f}x "
                         f"(roofline of the blocked schedule: {(p['blocked_stream_s'] + p['gather_s']) / p['roofline_s']:.2f}x "
                         "the roofline)"
                         + ("; it runs at the DRAM-gather ceiling "
                            f"({p['ns_per_entry_column'][p['default']]:.2f} ns against "
                            f"{p['dram_ceiling_s'] / (p['entries'] * p['columns']) * 1e9:.2f}): its gathers miss the "
                            "caches, and blocking them costs more output streaming than it saves"
                            if frac < 0.7 and p["seconds"][p["default"]] <= 1.15 * p["dram_ceiling_s"] else "")
                         + ".")
        lines.append("")
    return lines


def reorder_lines(rows: dict) -> list[str]:
    """The reordering section: end-to-end seconds per order, the speed-up, the agreement."""
    lines = [("Each graph's node ids shuffled first (seed 0); end to end with the renumbering included: RGVT "
             "`fit` + `decision_function` (shipped checkpoint, fast protocol), the relational fingerprint. "
             "Orders interleaved in one process per graph and model (`benchmarks/locality.py`); speed-up = "
             "seconds in the given order / seconds reordered; agreement with the unreordered run: largest "
             "logit or rank difference, and for RGVT the share of identical predictions."), "",
             ("| graph | model | nodes | directed edges | F | given order s | RCM s (order s) | RCM speed-up "
             "| degree s (order s) | degree speed-up | max diff RCM / degree | same predictions |"),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, r in rows.items():
        graph = key.rsplit(" ", 1)[0]
        if "error" in r:
            lines.append(f"| {graph} | {key.rsplit(' ', 1)[1]} | failed: {r['error']} |" + " |" * 9)
            continue
        o = r["orders"]

        def cells(name: str, o: dict = o) -> list[str]:
            if name not in o:
                return ["–", "–"]
            return [f"{o[name]['seconds']:.2f} ({o[name]['order_seconds']:.2f})", f"**{o[name]['speedup']:.2f}x**"]
        diffs = " / ".join(f"{o[k]['max_abs_diff']:.1e}" for k in ("rcm", "degree") if k in o)
        same = " / ".join(f"{o[k]['same_prediction']:.2%}" for k in ("rcm", "degree") if "same_prediction" in o.get(k, {}))
        lines.append(f"| {graph} | {r['model']} | {r['nodes']:,} | {r['edges']:,} | {r['features']} | "
                     f"{o['None']['seconds']:.2f} | " + " | ".join(cells("rcm") + cells("degree"))
                     + f" | {diffs} | {same or '–'} |")
    big = {k: r for k, r in rows.items() if "error" not in r and r["nodes"] >= 100_000}
    lines.append("")
    for key, r in big.items():
        best = max((o for o in r["orders"] if o != "None"), key=lambda o: r["orders"][o]["speedup"])
        sp = r["orders"][best]["speedup"]
        lines.append(f"- {key} ({r['nodes']:,} nodes): best order {best}, **{sp:.2f}x** end to end (goal 1.3x: "
                     f"{'met' if sp >= 1.3 else 'not met'}).")
    lines += ["", ("The rule, from these rows: RGVT renumbers with RCM by default (`reorder=\"auto\"`) from 2^16 nodes "
              "on, the threshold of the other large-graph kernels, because it won there (on the one graph of that size measured); below 2^16 it keeps the "
              "given order even where RCM or the degree order won, so that the published tables keep their numbers "
              "(pass `reorder=\"rcm\"` to have it). The fingerprint does not renumber by default: on the 10^6-node "
              "graph the renumbering cost more than it saved, its gains came on graphs with thousands of feature "
              "columns (`reorder=\"degree\"` there). The column-blocked products already gather from the caches "
              "at 10^6 nodes, which leaves reordering less to win than on the unblocked kernels. RGVT's seconds "
              "include head training; its predictions are compared after the whole `fit`, whose early stopping "
              "can amplify float rounding into a different head (hence the share of identical predictions below "
              "100% at 10^6 nodes)."), ""]
    return lines


PRODUCT_MODELS = {"rgvt": "RGVT zero-shot", "refi": "REFI-GAD scoring (fingerprint included)",
                  "graphany": "GraphAny"}


def products_lines(rows: dict) -> list[str]:
    """The products-scale section: seconds and peak RSS per model and phase, against the goals."""
    first = next((r for r in rows.values() if "error" not in r), None)
    lines = []
    if first is not None:
        lines += [(f"Synthetic graph of ogbn-products' shape: {first['nodes']:,} nodes, {first['edges']:,} directed "
                  f"edges, {first['features']} dense features, power-law degrees, {first['classes']} communities that are the classes "
                  f"(`benchmarks/products_scale.py`); X + edge_index = {_fmt_mib(first['inputs_mib'])}. Each model in "
                  "its own process; peak RSS of the whole process during each phase. Goals: under 20 minutes and "
                  "20 GB each."), ""]
    lines += ["| model | phase | seconds | peak RSS | goal met | note |", "|---|---|---:|---:|---|---|"]
    for model, r in rows.items():
        if "error" in r:
            lines.append(f"| {PRODUCT_MODELS.get(model, model)} | – | – | – | no | failed: {r['error']} |")
            continue
        note = (f"test accuracy {100 * r['test_accuracy']:.2f}" if "test_accuracy" in r
                else f"scores finite: {r['finite']}")
        ok = r["seconds"] < 1200 and r["peak_rss_mib"] < 20 * 1000**3 / 2**20
        for i, (name, p) in enumerate(r["phases"].items()):
            lines.append(f"| {PRODUCT_MODELS.get(model, model) if i == 0 else ''} | {name} | {p['seconds']:.0f} | "
                         f"{_fmt_mib(p['peak_rss_mib'])} | {('yes' if ok else 'no') if i == 0 else ''} | "
                         f"{note if i == 0 else ''} |")
    rgvt = rows.get("rgvt", {})
    if "error" not in rgvt and rgvt:
        from omnigraph.models.rgvt import RGVTEncoder

        enc = RGVTEncoder()
        cols = enc.chunk_columns(rgvt["nodes"], rgvt["features"], None)
        lines += ["", (f"What bounds RGVT here: its encoder propagates {cols}-column chunks (the views [5, N, c] are "
                       f"capped at `RGVTEncoder.chunk_floats` = {enc.chunk_floats:,} floats, with at least "
                       f"`min_chunk_columns` = {enc.min_chunk_columns} columns), and narrow products cost the most per "
                       f"column (a {cols}-column row uses {4 * cols} of the 64 bytes of each cache line it gathers; the "
                       "roofline section's gather rates fall with the width). Before that floor the cap alone gave "
                       "2-column chunks here and `fit` + `predict` took 1,127 + 426 s; `fit` makes one pass over all "
                       "depths, `predict` one to the chosen depth per block of rows (its buffer [rows, min(F, "
                       "hidden)] within `RGVT.predict_block_bytes`). The products and the fingerprint never hold an "
                       "N x N or N x F x 5 tensor.")]
    return lines + [""]


def distributed_lines(runs: dict) -> list[str]:
    """The 2-process table: seconds, speed-up over each 1-process run, per-process peak RSS."""
    ok = {k: r for k, r in runs.items() if "error" not in r}
    depth = next((r.get("depth", 8) for r in ok.values()), 8)
    lines = [(f"RGVT's encoder to depth {depth} on the products-scale graph, its feature columns split across processes "
             "(`omnigraph.ops.column_parallel`, gloo; `benchmarks/column_parallel.py`), then Z all-gathered on "
             "every rank. Seconds: operators built, columns encoded, Z gathered (the slowest rank). Each process "
             "holds the graph and its operators: memory per process does not fall with the number of processes; "
             "X's columns do."), "",
             "| run | seconds | speed-up of 2 processes | peak RSS per process | identical Z |",
             "|---|---:|---:|---:|---|"]
    two = ok.get("2 processes, 1 thread each")
    ref = next((r for k, r in ok.items() if r["processes"] == 1), None)
    for name, r in runs.items():
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | |")
            continue
        speed = f"{r['seconds'] / two['seconds']:.2f}x" if two and r is not two else "–"
        same = "–" if ref is None else ("yes" if all(abs(k["full_checksum"] - ref["ranks"][0]["full_checksum"])
                                                     <= 1e-9 * abs(ref["ranks"][0]["full_checksum"]) for k in r["ranks"])
                                        else "no")
        peaks = ", ".join(_fmt_mib(k["peak_rss_mib"]) for k in r["ranks"])
        lines.append(f"| {name} | {r['seconds']:.1f} | {speed} | {peaks} | {same} |")
    if two:
        gather = max(k["gather_seconds"] for k in two["ranks"])
        encode = " and ".join(f"{k['encode_seconds']:.0f}" for k in two["ranks"])
        lines += ["", (f"In the 2-process run the ranks took {encode} s "
                  f"to build the operators and encode their columns and up to {gather:.0f} s to all-gather Z (gloo, "
                  "through memory): every process builds the same operators and the two share one memory bus, so on "
                  "one machine two threads in one process are the faster way to use two cores; the processes pay off "
                  "where one machine cannot hold the features, or across machines (`docs/gpu.md`).")]
    return lines + [""]


def write_report(results: dict, out: Path) -> None:
    """``performance.md`` from ``perf.json`` (and the fast-vs-reference output, when present)."""
    lines = ["# Performance and scale", "",
             f"Machine: {results.get('machine', 'unknown')}. Shared machine: compare ratios measured in the same "
             "run rather than absolute seconds across pages. Each measurement ran in its own process; peak memory "
             "is the process's peak resident set size (VmHWM), reset after the inputs were built."
             + (f" Conditions: {results['conditions']}" if results.get("conditions") else ""), ""]
    cmds = results.get("commands", {})
    from omnigraph.models.rgvt import RGVTEncoder

    n = RGVTEncoder.block_min_nodes
    blocked_from = f"2^{n.bit_length() - 1}" if n and not n & (n - 1) else f"{n:,}"

    def header(title: str, section: str) -> None:
        lines.extend([f"## {title}", "", f"Command: `{cmds.get(section, 'python benchmarks/perf.py')}`", ""])

    if "rgvt_memory" in results:
        header("RGVT memory: fit and inference (column-chunked, streamed head)", "rgvt_memory")
        lines += [("| graph | nodes | directed edges | F | X | edge_index | operators | interpreter | predict peak RSS "
                  "| **inference / (X + edge_index)** | whole process / (X + edge_index) | predict s | row blocks "
                  "| fit peak RSS | **fit / (X + edge_index)** | fit s | depth | test acc | propagation |"),
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for name, r in results["rgvt_memory"].items():
            if "error" in r:
                lines.append(f"| {name} | failed: {r['error']} " + "|" * 18)
                continue
            lines.append(f"| {name} | {r['nodes']:,} | {r['edges']:,} | {r['features']} | {_fmt_mib(r['x_mib'])} | "
                         f"{_fmt_mib(r['edge_index_mib'])} | {_fmt_mib(r['operators_mib'])} | "
                         f"{_fmt_mib(r['interpreter_mib'])} | {_fmt_mib(r['peak_rss_mib'])} | "
                         f"**{r['inference_over_inputs']:.2f}x** | {r['process_over_inputs']:.2f}x | "
                         f"{r['seconds']:.1f} | {r.get('row_blocks', '')} | {_fmt_mib(r['fit_peak_rss_mib'])} | "
                         f"**{r['fit_over_inputs']:.2f}x** | "
                         f"{r['fit_seconds']:.1f} | {r['depth']} | {100 * r['test_accuracy']:.2f} | "
                         f"{r.get('kernel', '')} |")
        lines.append("")
        for name, r in results["rgvt_memory"].items():
            if "error" not in r:
                verdicts = [f"{phase} {r[key]:.2f}x (target {goal}x: {'met' if r[key] <= goal else 'not met'})"
                            for phase, key, goal in (("inference", "inference_over_inputs", 2.0),
                                                     ("fit", "fit_over_inputs", 2.5))]
                lines.append(f"- {name}: " + ", ".join(verdicts) + ".")
        lines += ["", ("What runs: `RGVT.from_pretrained(\"rgvt\").fit(data)` (fast protocol, depths 1..8, "
                  "train/val labels only; the synthetic graph gets the library's random split, 20 training nodes "
                  "per class and the rest halved into validation and test), then `predict(data)` on every node. "
                  "Targets, against the input (X plus the graph's adjacency as given, `edge_index`): inference "
                  "memory at most 2x, fit memory at most 2.5x. Each is the phase's peak RSS minus the interpreter's "
                  "RSS (Python, torch and omnigraph imported, measured in the same process before any data "
                  "existed); everything else stays in: X, edge_index, labels, the operators and every buffer. The "
                  "whole-process ratio is shown next to it. Both phases start from a trimmed heap (`malloc_trim`), "
                  "so that pages freed while the synthetic graph was generated, or during `fit`, are not counted. "
                  "`fit`: with many labelled rows, as here (half the nodes), it iterates depth-major in one reused "
                  "[N, F] buffer and the fast protocol scores each depth's labelled rows in place "
                  "(`LabelledRows`, ridge hits in blocks of `RIDGE_BLOCK_ROWS` rows), keeping only the leading "
                  "depth's training rows and its early-stopping rows (at most `FAST_STOP_ROWS`); with few labelled "
                  "rows it keeps only those rows in one chunk-major pass. Graphs of 2^16 nodes or more are "
                  "renumbered (`reorder=\"auto\"`) and their features read through `PermutedRows`, one column "
                  "chunk at a time, never copied whole. `predict`: on graphs whose "
                  "Z_L exceeds `RGVT.keep_full_bytes` (256 MB), it never holds Z_L whole: the encoder yields "
                  "it column chunk by column chunk (`RGVTEncoder.column_chunks`) and the head accumulates its first "
                  "layer over them (`RGVTHead.forward_chunks`), or, when F is at most the head width (the "
                  "synthetic graph: F = 128 = hidden), the rows of Z_L are assembled. That buffer, [rows, "
                  "min(F, hidden)], is kept within `RGVT.predict_block_bytes` (1 GiB, scikit-learn's "
                  "`working_memory` default) by working on blocks of rows, one encoder pass per block (the "
                  "row-blocks column): memory for time (lower it to trade passes for memory: on the synthetic "
                  "graph one pass holds a buffer the size of X). The operators A_rw and A_sym share one int32 CSR "
                  "pattern; on graphs of at "
                  f"least `RGVTEncoder.block_min_nodes` ({blocked_from}) nodes it is split into column blocks of "
                  "16 MiB of gathered rows (`omnigraph.ops.split_columns`; the propagation column)."), ""]
    fvr = out / "rgvt_fast_vs_reference.json"
    if fvr.exists():
        f = json.loads(fvr.read_text())
        lines += ["## RGVT fast adaptation vs the reference protocol", "",
                  (f"Command: `{f['command']}` ({f['machine']}); per-graph table: "
                  "[rgvt_fast_vs_reference.md](rgvt_fast_vs_reference.md)."), "",
                  ("| graphs | adaptation speed-up | end-to-end speed-up | mean acc fast | mean acc reference | "
                  "reference - fast |"), "|---:|---:|---:|---:|---:|---:|",
                  (f"| {len(f['graphs'])} | **{f['adaptation_speedup']:.1f}x** | {f['end_to_end_speedup']:.1f}x | "
                  f"{f['mean_test_accuracy']['fast']:.2f} | {f['mean_test_accuracy']['reference']:.2f} | "
                  f"{f['mean_loss_points']:+.2f} |"), ""]
    if "fingerprint" in results:
        header("REFI relational fingerprint on 10^6 nodes / 10^7 edges (2 threads)", "fingerprint")
        r = results["fingerprint"]["synthetic_1e6_1e7_128"]
        if "error" in r:
            lines += [f"Failed: {r['error']}", ""]
        else:
            lines += ["| nodes | directed edges | F | seconds | peak RSS | target |", "|---:|---:|---:|---:|---:|---|",
                      (f"| {r['nodes']:,} | {r['edges']:,} | {r['features']} | **{r['seconds']:.1f}** | "
                      f"**{_fmt_mib(r['peak_rss_mib'])}** | < 60 s, < 8 GB |"), "",
                      ("Triangles are counted sparsely on the degree-ordered orientation of the graph "
                      "(`triangle_counts`: each wedge of two out-neighbours is looked up among the sorted edge keys, in "
                      "blocks); no N x N matrix is formed."), ""]
    if "rgvt_backends" in results:
        header("RGVT sparse back-ends: `torch.sparse.mm` vs `embedding_bag`", "rgvt_backends")
        lines += [("| graph | nodes | directed edges | F | chunk columns | `torch` s | `embedding_bag` s "
                  "| **speed-up** | Z_8 | default (`auto`) uses |"), "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for name, r in results["rgvt_backends"].items():
            if "error" in r:
                lines.append(f"| {name} | failed: {r['error'][:120]} | | | | | | | | |")
                continue
            same = "bit-identical" if r["identical"] else f"differs by {r['max_rel_diff']:.1e} (relative)"
            lines.append(f"| {name} | {r['nodes']:,} | {r['edges']:,} | {r['features']:,} | {r['columns']} | "
                         f"{r['torch_s']:.2f} | {r['embedding_bag_s']:.2f} | **{r['speedup']:.2f}x** | {same} | "
                         f"`{r['default']}` |")
        lines += ["", ("What runs: the shipped encoder's pass over depths 1..8 (what `fit` visits), operators "
                  "included, with `RGVTEncoder.spmm_backend` set to `\"torch\"` (`torch.sparse.mm`: CSR operators "
                  "for chunks narrower than 448 columns, COO for wider ones) and to `\"embedding_bag\"` "
                  "(`omnigraph.ops.bag_mm`: CSR products through `F.embedding_bag`, FBGEMM's gather-and-sum "
                  "kernel), interleaved, median of 3. On wide chunks the bags sum each row in the COO kernel's "
                  "order, so Z_8 comes out bit-identical, and the default, `\"auto\"`, uses them there; on "
                  "narrow chunks they are faster too but change results by rounding against the CSR kernel, so "
                  "`\"auto\"` keeps `torch.sparse.mm` there, the kernel the published tables were made with."), ""]
    if "propagation" in results:
        header("Propagation: `omnigraph.ops.propagate` vs bare `torch.sparse.mm`", "propagation")
        lines += ["| graph | nodes | directed edges | F | hops | library s | bare s | ratio |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        backends = []
        for name, r in results["propagation"].items():
            if "error" in r:
                lines.append(f"| {name} | failed: {r['error']} |||||||")
                continue
            backends = r["backends"]
            lines.append(f"| {name} | {r['nodes']:,} | {r['edges']:,} | {r['features']} | {r['hops']} | "
                         f"{r['library_s']:.3f} | {r['bare_s']:.3f} | **{r['ratio']:.2f}x** |")
        lines += ["", (f"Median of interleaved repeats, same CSR operator. Back-ends available here: {backends}. "
                  "`backend=\"auto\"` runs `torch.sparse.mm` on CSR whether or not torch-sparse is installed "
                  "(`backend=\"torch_sparse\"` asks for torch-sparse's `SparseTensor` matmul; pyg-lib speeds up "
                  "PyG's own sampling and segment operations, not these products); see the [GPU page](../gpu.md)."), ""]
    if "scaling" in results:
        header("Scaling with the edge count (synthetic power-law graphs, N = E/10, F = 64)", "scaling")
        lines += [("| edges drawn | directed edges | RGVT s | RGVT peak increase | REFI-GAD s | REFI-GAD peak increase "
                  "| RGVT propagation |"), "|---:|---:|---:|---:|---:|---:|---|"]
        for row in results["scaling"]["rows"]:
            g, d = row["rgvt"], row["refi"]

            def cell(r: dict) -> tuple[str, str]:
                if "error" in r:
                    return "failed", "–"
                return f"{r['seconds']:.2f}", _fmt_mib(max(r["peak_rss_mib"] - r["rss_before_mib"], 0.0))
            edges = g.get("edges", d.get("edges", 0))
            lines.append(f"| {row['edges_drawn']:,} | {edges:,} | " + " | ".join(cell(g)) + " | "
                         + " | ".join(cell(d)) + f" | {g.get('kernel', '')} |")
        lines += ["", "| model | time exponent | time exponent, decade by decade | memory exponent |",
                  "|---|---:|---:|---:|"]
        for model, fit in results["scaling"]["fits"].items():
            steps = fit["time_exponent_by_decade"]
            lines.append(f"| {model} | **{fit['time_exponent']:.2f}** | {', '.join(f'{v:.2f}' for v in steps)} | "
                         f"{fit['memory_exponent']:.2f} |")
        widest = results["scaling"]["rows"][-1].get("spmm", {}).get("columns", "?")   # chunk width at 10^6 nodes
        lines += ["", ("Exponents: least-squares slope of log(seconds) or log(peak RSS increase) against "
                  "log(directed edges), for reference: on a random graph the cost per entry must rise once the gathers leave the caches, so the yardstick is the roofline section below, not an exponent. Seconds are the median of repeats while they total under "
                  "1 s (at most 5), so that one-off costs do not dominate the smallest graphs; larger graphs run "
                  "once. Every repeat does the whole work: RGVT builds its operators and runs all depths 1..8 (what "
                  "`fit` visits) with the operators the estimator builds (the propagation column); REFI-GAD "
                  "computes the fingerprint and scores (its one-graph fingerprint cache is cleared before each "
                  "repeat). RGVT is steepest where the graph and its features stop fitting in the CPU caches "
                  "(here 1 MiB of L2 per core, 32 MiB of L3) and the random gathers of its sparse products start "
                  f"waiting on main memory. Column blocking keeps the gathers in cache from {blocked_from} nodes "
                  f"on, but at 10^6 nodes the chunks are only {widest} of the 64 columns wide (the views are capped "
                  "at `RGVTEncoder.chunk_floats`, 128 MB, the memory bound of the first section, with at least "
                  "`min_chunk_columns`), and narrow products cost more per column."), ""]
        costs = [r for r in results["scaling"]["rows"] if "ns_per_entry_column" in r.get("spmm", {})]
        if costs:
            lines += [("Where the exponent comes from: one of RGVT's sparse products (A_rw times the chunk) per stored "
                      "entry and feature column, in nanoseconds, on the chunk width RGVT uses for each graph (median "
                      "of repeats). `torch.sparse.mm` on the CSR operator; the same product in column blocks of "
                      f"{RGVTEncoder.block_bytes >> 20} MiB of gathered rows, at every size; `F.embedding_bag`, FBGEMM's gather-and-sum kernel, on "
                      "the same CSR arrays (results equal up to rounding)."), "",
                      "| directed edges | nodes | columns | CSR | CSR in column blocks | embedding_bag |",
                      "|---:|---:|---:|---:|---:|---:|"]
            for r in costs:
                c = r["spmm"]
                ns = c["ns_per_entry_column"]
                lines.append(f"| {r['rgvt'].get('edges', r['edges_drawn']):,} | {c['nodes']:,} | {c['columns']} | "
                             f"{ns['csr']:.2f} | {ns['blocked_csr']:.2f} ({c['blocks']}) | {ns['embedding_bag']:.2f} |")
            lo, hi = (min(r["spmm"]["ns_per_entry_column"].values()) for r in (costs[0], costs[-1]))
            lines += ["", (f"From the smallest to the largest graph the fastest kernel's cost per entry and column grows "
                      f"{hi / lo:.1f}x ({lo:.2f} to {hi:.2f} ns): sparse products are almost all of RGVT's work, "
                      "and no kernel here keeps that cost flat once the gathers leave the caches."), ""]
        lines += ["![scaling](perf_scaling.png)", ""]
    if "roofline" in results and "error" not in results["roofline"]:
        header("Sparse products against the machine's roofline", "roofline")
        lines += roofline_lines(results["roofline"])
    if "reorder" in results:
        header("Node reordering on graphs in arbitrary order", "reorder")
        lines += reorder_lines(results["reorder"])
    if "products" in results:
        header("ogbn-products scale on one machine", "products")
        lines += products_lines(results["products"])
    if "graphany_entropy" in results and "error" not in results["graphany_entropy"]:
        g = results["graphany_entropy"]
        header("GraphAny entropy-normalised distance features", "graphany_entropy")
        lines += ["| baseline | speed-up of the vectorised version | max abs diff |", "|---|---:|---:|"]
        for name, b in g["baselines"].items():
            lines.append(f"| {name} | **{b['speedup']:.0f}x** | {b['max_abs_diff']:.1e} |")
        lines += ["", (f"{g['nodes']:,} nodes, {g['torch_threads']} thread; details in "
                  "[graphany_entropy.md](graphany_entropy.md)."), ""]
    if "distributed" in results:
        header("Beyond one machine: column-parallel RGVT inference in 2 processes", "distributed")
        lines += distributed_lines(results["distributed"])
    lines += ["## Multi-process tests", "",
              ("Multi-process pretraining (`--devices/--num-nodes/--strategy ddp`) and column-parallel RGVT "
              "inference are checked by tests rather than timed: `tests/test_training_reliability.py` runs 2-process "
              "gloo DDP and compares both ranks with a single-process run bit for bit, and splits RGVT's feature "
              "columns across 2 processes."), ""]
    (out / "performance.md").write_text("\n".join(lines))
    print((out / "performance.md").read_text())
