"""Performance and scale benchmarks (issue #5): every figure of ``docs/results/performance.md``.

(Over 400 lines because each section's worker must run in a fresh process from this one script; the
report writer is ``benchmarks/perf_report.py``.)

Sections (``--only`` picks some; all by default):

* ``rgvt_memory``: peak memory and time of the RGVT estimator's ``fit`` and ``predict``
  (column-chunked encoder, streamed head) on CoauthorPhysics and on a synthetic 10^6-node /
  10^7-edge / 128-feature graph, against the size of X plus ``edge_index``.
* ``rgvt_backends``: RGVT's encoder pass with ``torch.sparse.mm`` and with ``embedding_bag``
  products, on six suite graphs.
* ``fingerprint``: REFI-GAD's relational fingerprint on the same synthetic graph (2 threads).
* ``propagation``: ``omnigraph.ops.propagate`` against a bare ``torch.sparse.mm`` loop doing
  the same hops, interleaved in the same process.
* ``scaling``: RGVT inference and REFI-GAD scoring on synthetic graphs from 10^4 to 10^7 edges,
  with the fitted exponent of time and of peak memory in the edge count, and a plot.
* ``graphany_entropy``: runs ``benchmarks/graphany_entropy.py`` (vectorised vs per-node loop).

RGVT's fast-vs-reference adaptation comparison takes an hour on one thread and has its own
script (``benchmarks/rgvt_fast_vs_reference.py``); this report quotes its committed output.

Every measurement runs in a fresh Python process, so that its peak resident set size
(``VmHWM``, reset with ``/proc/self/clear_refs`` once the inputs exist) belongs to that
measurement only. Results go to ``perf.json`` and ``performance.md`` in ``--out``.

    python benchmarks/perf.py --out docs/results
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from locality import work_reorder
from perf_report import plot_scaling, write_report
from products_scale import PRODUCTS, work_products
from roofline import work_rates, work_roofline

HERE = Path(__file__).resolve().parent
SECTIONS = ("rgvt_memory", "rgvt_backends", "fingerprint", "propagation", "scaling", "roofline", "reorder",
            "products", "distributed",
            "graphany_entropy")
BIG = {"num_nodes": 1_000_000, "num_edges": 10_000_000, "num_features": 128, "num_classes": 5, "seed": 0}
SMOKE = {**BIG, "num_nodes": 2_000, "num_edges": 20_000, "num_features": 16}  # --smoke: seconds, for the tests


# ----------------------------------------------------------------------------- memory probes
def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter of this process (Linux >= 4.0); False where unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def trim_heap() -> None:
    """Give the C heap's free pages back to the kernel (glibc ``malloc_trim``), so that a phase's
    peak RSS does not start from pages an earlier phase freed but the allocator kept."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def rss_mib() -> float:
    kib = _status_kib("VmRSS")
    return float("nan") if kib is None else kib / 1024


def peak_mib() -> float:
    kib = _status_kib("VmHWM")
    if kib is None:
        import resource

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024


# ----------------------------------------------------------------------------- worker side
def spec_graph(spec: dict):
    from omnigraph.datasets import load_dataset
    from omnigraph.datasets.synthetic import synthetic_graph

    if "dataset" in spec:
        return load_dataset(spec["dataset"], seed=42)
    return synthetic_graph(**spec["synthetic"])


def tensor_mib(*tensors) -> float:
    """Size of the storages behind ``tensors``, each storage counted once (shared indices)."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values()) / 2**20


def _sparse_parts(op) -> tuple:
    import torch

    from omnigraph.ops import ColumnBlockedCSR

    if isinstance(op, ColumnBlockedCSR):
        return tuple(t for part in op.parts for t in _sparse_parts(part))
    if op.layout == torch.sparse_csr:
        return op.crow_indices(), op.col_indices(), op.values()
    return op._indices(), op._values()


def _kernel(ops, encoder, nodes: int, features: int) -> str:
    """How RGVT propagates on this graph: operator layout, column blocks, chunk width."""
    import torch

    from omnigraph.ops import ColumnBlockedCSR

    cols = encoder.chunk_columns(nodes, features, None)
    if isinstance(ops.rw, ColumnBlockedCSR):
        return f"CSR in {len(ops.rw.parts)} column blocks, {cols}-column chunks"
    bags = " as embedding bags" if encoder.kernel_for(cols, ops.rw.device)[1] == "embedding_bag" else ""
    return f"{'CSR' if ops.rw.layout == torch.sparse_csr else 'COO'}{bags}, {cols}-column chunks"


def _sparse_mib(*ops) -> float:
    return tensor_mib(*(t for op in ops if op is not None for t in _sparse_parts(op)))


def timed(fn, budget: float = 1.0, max_repeats: int = 5, setup=None) -> tuple[float, int, object]:
    """``(median seconds, repeats, last result)`` of ``fn()``: one run, repeated while the total
    stays under ``budget`` seconds (up to ``max_repeats``), so that sub-second timings of small
    graphs are not dominated by one-off costs; large graphs run once. ``setup()``, untimed, runs
    before every repeat (to drop caches, so that each repeat does the whole work)."""
    times, result = [], None
    while not times or (sum(times) < budget and len(times) < max_repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(times), result


def _encoder_pass(encoder, data, x):
    """RGVT inference as ``fit`` runs it: the operators the estimator builds (no transposes,
    layout and blocks for the chunk width), then all depths 1..8, column-chunked, each step
    overwriting one buffer. Returns ``(operators, Z_8)``; Z_8 is valid until the next pass."""
    import torch

    from omnigraph.estimators.rgvt_adapt import inference_operators

    ops = inference_operators(encoder, data, None)
    with torch.no_grad():
        for _depth, z in encoder.iterate(x, depth=8, operators=ops, reuse=True):
            pass
    return ops, z


def work_rgvt(spec: dict) -> dict:
    """RGVT encoder, all depths 1..8 (what ``fit`` visits): :func:`_encoder_pass`."""
    from omnigraph.estimators.rgvt import RGVT

    encoder = RGVT.from_pretrained("rgvt").encoder.eval()
    data = spec_graph(spec)
    x = data.x.float().contiguous()
    gc.collect()
    base = rss_mib()
    reset_peak()
    seconds, repeats, (ops, z) = timed(lambda: _encoder_pass(encoder, data, x))
    checksum = float(z[:1000].sum())
    x_mib, adj_mib = tensor_mib(x), _sparse_mib(*ops)
    peak = peak_mib()
    return {"seconds": seconds, "repeats": repeats, "nodes": data.num_nodes, "edges": int(data.edge_index.size(1)),
            "features": int(x.size(1)), "x_mib": x_mib, "adjacency_mib": adj_mib, "rss_before_mib": base,
            "kernel": _kernel(ops, encoder, data.num_nodes, int(x.size(1))),
            "peak_rss_mib": peak, "peak_over_x_plus_adj": peak / (x_mib + adj_mib),
            "checksum": checksum}


def work_rgvt_estimator(spec: dict) -> dict:
    """The RGVT estimator as a user runs it: ``fit`` (fast protocol, depths 1..8) on the
    train/val labels, then ``predict`` on every node, with the peak RSS of each phase.

    ``interpreter_mib`` is the RSS after the imports, before any data exists; the inference
    memory is the ``predict`` peak minus it (the data, the operators and everything the
    estimator holds stay in). Synthetic graphs get the library's random split (20 per class).
    """
    import torch

    from omnigraph.datasets.splits import random_split
    from omnigraph.estimators.rgvt import RGVT
    from omnigraph.estimators.rgvt_adapt import inference_operators

    clf = RGVT.from_pretrained("rgvt")
    gc.collect()
    interpreter = rss_mib()
    data = spec_graph(spec)
    if getattr(data, "train_mask", None) is None:
        for key, mask in random_split(data.y, seed=0).items():
            data[key] = mask
    gc.collect()
    trim_heap()     # building the synthetic graph leaves freed heap pages behind
    loaded = rss_mib()
    reset_peak()
    start = time.perf_counter()
    clf.fit(data)
    fit_s, fit_peak = time.perf_counter() - start, peak_mib()
    gc.collect()
    trim_heap()
    after_fit = rss_mib()
    reset_peak()
    start = time.perf_counter()
    pred = clf.predict(data)
    predict_s, predict_peak = time.perf_counter() - start, peak_mib()
    x_mib, edge_mib = tensor_mib(data.x), tensor_mib(data.edge_index)
    inputs = x_mib + edge_mib
    ops = inference_operators(clf.encoder, data, clf.chunk_size)   # the operators predict built, rebuilt on CPU
    return {"nodes": data.num_nodes, "edges": int(data.edge_index.size(1)), "features": int(data.x.size(1)),
            "n_train": int(data.train_mask.sum()), "n_val": int(data.val_mask.sum()), "depth": clf.depth_,
            "test_accuracy": float((pred[data.test_mask] == data.y[data.test_mask]).float().mean()),
            "x_mib": x_mib, "edge_index_mib": edge_mib, "operators_mib": _sparse_mib(*ops),
            "interpreter_mib": interpreter, "loaded_mib": loaded, "after_fit_mib": after_fit,
            "fit_seconds": fit_s, "fit_peak_rss_mib": fit_peak,
            "seconds": predict_s, "peak_rss_mib": predict_peak,
            "inference_over_inputs": (predict_peak - interpreter) / inputs,
            "process_over_inputs": predict_peak / inputs, "fit_over_inputs": (fit_peak - interpreter) / inputs,
            "row_blocks": _row_blocks(clf, data), "torch_threads": torch.get_num_threads(),
            "kernel": _kernel(ops, clf.encoder, data.num_nodes, int(data.x.size(1)))}


def _row_blocks(clf, data) -> int:
    """Encoder passes ``predict`` made: 0 when it built Z_L whole (small graphs), else the row blocks."""
    block = clf.predict_block_rows(data)
    return 0 if block is None else -(-data.num_nodes // block)


def work_fingerprint(spec: dict) -> dict:
    from omnigraph.models.fingerprint import RelationalFingerprint

    data = spec_graph(spec)
    gc.collect()
    base = rss_mib()
    reset_peak()
    start = time.perf_counter()
    fp = RelationalFingerprint().fingerprint(data.x, data.edge_index, data.num_nodes)
    seconds = time.perf_counter() - start
    assert fp.shape == (data.num_nodes, 5)
    return {"seconds": seconds, "nodes": data.num_nodes, "edges": int(data.edge_index.size(1)),
            "features": int(data.x.size(1)), "x_mib": tensor_mib(data.x), "rss_before_mib": base,
            "peak_rss_mib": peak_mib()}


def work_refi(spec: dict) -> dict:
    """REFI-GAD scoring with the shipped checkpoint and 10 + 10 support nodes, fingerprint
    included: the estimator caches the last graph's fingerprint, and every repeat starts
    without it, as a first call on a new graph does."""
    import torch

    from omnigraph.estimators.refi_gad import REFIGAD
    from omnigraph.models.fingerprint import clear_fingerprint_cache

    detector = REFIGAD.from_pretrained("refi-gad")
    data = spec_graph(spec)
    gc.collect()
    base = rss_mib()
    reset_peak()
    seconds, repeats, score = timed(lambda: detector.decision_function(
        data, support_normal=torch.arange(10), support_anomaly=torch.arange(10, 20)), setup=clear_fingerprint_cache)
    assert score.shape == (data.num_nodes,)
    return {"seconds": seconds, "repeats": repeats, "nodes": data.num_nodes, "edges": int(data.edge_index.size(1)),
            "rss_before_mib": base, "peak_rss_mib": peak_mib()}


def work_propagation(spec: dict) -> dict:
    """``propagate`` vs a bare ``torch.sparse.mm`` loop, same operator, interleaved repeats."""
    import torch

    from omnigraph.ops import propagate, sym_adjacency

    data = spec_graph(spec)
    hops, repeats = spec.get("hops", 2), spec.get("repeats", 7)
    op = sym_adjacency(data.edge_index, data.num_nodes, self_loops=True).to_sparse_csr()
    x = data.x.float().contiguous()

    def bare():
        out = x
        for _ in range(hops):
            out = torch.sparse.mm(op, out)
        return out

    def library():
        return propagate(op, x, hops)[-1]

    assert torch.allclose(bare(), library(), atol=1e-5)  # also a warm-up of both
    times = {"library": [], "bare": []}
    for rep in range(repeats):  # alternate which goes first, so neither always runs on a warm cache
        pair = (("library", library), ("bare", bare))
        for name, fn in (pair if rep % 2 == 0 else pair[::-1]):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    from omnigraph.ops import available_backends

    return {"nodes": data.num_nodes, "edges": int(data.edge_index.size(1)), "features": int(x.size(1)),
            "hops": hops, "repeats": repeats, "library_s": med["library"], "bare_s": med["bare"],
            "ratio": med["library"] / med["bare"], "backends": list(available_backends())}


def work_spmm_cost(spec: dict) -> dict:
    """Cost of one RGVT sparse product per stored entry and feature column (ns), on the chunk
    width RGVT uses for this graph: ``torch.sparse.mm`` on the CSR operator, the same product
    in column blocks of ``RGVTEncoder.block_bytes`` (whatever the graph size), and
    ``F.embedding_bag`` (FBGEMM's gather-and-sum kernel) on the same CSR arrays. Shows how the
    per-entry cost of random gathers grows once the features leave the caches."""
    import torch

    from omnigraph.models.rgvt import RGVTEncoder
    from omnigraph.ops import bag_mm, split_columns, spmm_into

    data = spec_graph(spec)
    n = data.num_nodes
    enc = RGVTEncoder()
    cols = enc.chunk_columns(n, int(data.x.size(1)), None)
    rw = enc.build_operators(data.edge_index, n, transposes=False, layout="csr").rw
    x, out = data.x[:, :cols].contiguous(), torch.empty(n, cols)
    enc.block_min_nodes = 0                                  # the encoder's blocking rule, at every size
    blocks = enc.blocks_for(n, cols)
    blocked = split_columns([rw], blocks)[0]
    kernels = {"csr": lambda: torch.mm(rw, x, out=out), "blocked_csr": lambda: spmm_into(blocked, x, out),
               "embedding_bag": lambda: bag_mm(rw, x)}
    torch.testing.assert_close(kernels["embedding_bag"](), torch.mm(rw, x), rtol=1e-4, atol=1e-5)
    entries = rw._nnz()
    per_entry = {name: timed(fn, budget=2.0)[0] / (entries * cols) * 1e9 for name, fn in kernels.items()}
    return {"nodes": n, "entries": entries, "columns": cols, "blocks": blocks, "ns_per_entry_column": per_entry}


def work_rgvt_backends(spec: dict) -> dict:
    """RGVT's encoder pass over all depths 1..8 (as ``fit`` runs it) with each sparse back-end,
    ``torch`` and ``embedding_bag``, interleaved in one process, on the operators each builds;
    whether Z_8 is bit-identical between them, and the back-end ``auto`` (the default) picks."""
    import torch

    from omnigraph.estimators.rgvt import RGVT

    encoder = RGVT.from_pretrained("rgvt").encoder.eval()
    data = spec_graph(spec)
    x = data.x.float().contiguous()
    times: dict[str, list[float]] = {"torch": [], "embedding_bag": []}
    last: dict[str, object] = {}
    for rep in range(spec.get("repeats", 3)):
        for backend in (("torch", "embedding_bag") if rep % 2 == 0 else ("embedding_bag", "torch")):
            encoder.spmm_backend = backend
            start = time.perf_counter()
            ops, z = _encoder_pass(encoder, data, x)
            times[backend].append(time.perf_counter() - start)
            last[backend] = z.clone()
            del ops, z
    med = {k: statistics.median(v) for k, v in times.items()}
    diff = float((last["torch"] - last["embedding_bag"]).abs().max() / last["torch"].abs().max())
    encoder.spmm_backend = "auto"
    columns = encoder.chunk_columns(data.num_nodes, int(x.size(1)), None)
    return {"nodes": data.num_nodes, "edges": int(data.edge_index.size(1)), "features": int(x.size(1)),
            "columns": columns, "default": encoder.kernel_for(columns)[1],
            "identical": bool(torch.equal(last["torch"], last["embedding_bag"])), "torch_s": med["torch"], "embedding_bag_s": med["embedding_bag"],
            "speedup": med["torch"] / med["embedding_bag"], "max_rel_diff": diff, "seconds": med["torch"]}


WORKERS = {"rgvt": work_rgvt, "rgvt_backends": work_rgvt_backends, "rgvt_estimator": work_rgvt_estimator,
           "fingerprint": work_fingerprint,
           "refi": work_refi, "propagation": work_propagation, "spmm_cost": work_spmm_cost,
           "rates": work_rates, "roofline": work_roofline, "reorder": work_reorder,
           "products": work_products}


# ----------------------------------------------------------------------------- driver side
def measure(work: str, spec: dict, threads: int, timeout: int = 1800) -> dict:
    """Run one worker in a fresh interpreter with ``threads`` torch threads; its JSON result."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps({"work": work, "spec": spec})]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"  [failed] {work} {spec}: {' | '.join(tail)}", flush=True)
        return {"error": " | ".join(tail), "returncode": proc.returncode}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"  {work:>12} {json.dumps(spec)[:90]:<90} {result.get('seconds', result.get('library_s', 0)):8.2f} s  "
          f"peak {result.get('peak_rss_mib', float('nan')):8.0f} MiB", flush=True)
    return {**result, "threads": threads}


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    lx, ly = [math.log(v) for v in xs], [math.log(v) for v in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def _big(args) -> dict:
    return SMOKE if args.smoke else BIG


def _real(args, name: str) -> dict:
    return {"dataset": "cora" if args.smoke else name}


def section_rgvt_memory(args) -> dict:
    return {"coauthor_physics": measure("rgvt_estimator", _real(args, "coauthor_physics"), args.threads),
            "synthetic_1e6_1e7_128": measure("rgvt_estimator", {"synthetic": _big(args)}, args.threads)}


def section_fingerprint(args) -> dict:
    return {"synthetic_1e6_1e7_128": measure("fingerprint", {"synthetic": _big(args)}, 2)}


def section_propagation(args) -> dict:
    mid = {**_big(args), "num_nodes": _big(args)["num_nodes"] // 10, "num_edges": _big(args)["num_edges"] // 10}
    return {"coauthor_cs": measure("propagation", _real(args, "coauthor_cs"), args.threads),
            "synthetic_1e5_1e6_128": measure("propagation", {"synthetic": mid}, args.threads)}


RGVT_BACKEND_GRAPHS = ("cora", "dblp", "coauthor_cs", "coauthor_physics", "amazon_computers", "amazon_photo")


def section_rgvt_backends(args) -> dict:
    names = ("cora",) if args.smoke else RGVT_BACKEND_GRAPHS
    return {name: measure("rgvt_backends", {"dataset": name}, args.threads) for name in names}


def section_scaling(args) -> dict:
    sizes = [10**k for k in range(4, 4 + args.scaling_decades)]
    rows = []
    for edges in sizes:
        spec = {"synthetic": {"num_nodes": max(edges // 10, 100), "num_edges": edges, "num_features": 64,
                              "num_classes": 5, "kind": "power_law", "seed": 0}}
        rows.append({"edges_drawn": edges, "rgvt": measure("rgvt", spec, args.threads),
                     "refi": measure("refi", spec, args.threads), "spmm": measure("spmm_cost", spec, args.threads)})
    fits = {}
    for model in ("rgvt", "refi"):
        ok = [r for r in rows if "error" not in r[model]]
        if len(ok) >= 2:
            e = [r[model]["edges"] for r in ok]
            fits[model] = {"time_exponent": fit_exponent(e, [r[model]["seconds"] for r in ok]),
                           "memory_exponent": fit_exponent(e, [max(r[model]["peak_rss_mib"] - r[model]["rss_before_mib"],
                                                                   1.0) for r in ok]),
                           "time_exponent_by_decade": [fit_exponent(e[i:i + 2], [r[model]["seconds"] for r in ok[i:i + 2]])
                                                       for i in range(len(ok) - 1)]}
    plot_scaling(rows, Path(args.out) / "perf_scaling.png")
    return {"rows": rows, "fits": fits}


def section_roofline(args) -> dict:
    """The machine's stream and gather rates (:mod:`roofline`), then every sparse product of
    RGVT and the fingerprint against them on synthetic power-law graphs of 10^3 .. nodes."""
    from omnigraph.models.rgvt import RGVTEncoder

    specs = [{"synthetic": {"num_nodes": 10**k, "num_edges": 10 ** (k + 1), "num_features": 64, "num_classes": 5,
                            "kind": "power_law", "seed": 0}} for k in range(3, 3 + args.scaling_decades)]
    widths = {RGVTEncoder().chunk_columns(s["synthetic"]["num_nodes"], 64, None) for s in specs} | {64}
    small = {"dram_bytes": 64 << 20, "copy_bytes": 32 << 20} if args.smoke else {}
    rates = measure("rates", {"widths": sorted(widths), "in_cache_bytes": RGVTEncoder.block_bytes, **small},
                    args.threads)
    if "error" in rates:
        return {"error": rates["error"]}
    return {"rates": rates, "rows": [measure("roofline", {**spec, "rates": rates}, args.threads) for spec in specs]}


REORDER_GRAPHS = ("gad/reddit", "amazon_computers", "dblp", "coauthor_physics")
#: the community-structured synthetic graph of the reordering section (ids random by construction)
COMMUNITIES = {"num_nodes": 1_000_000, "num_edges": 10_000_000, "communities": 1000, "homophily": 0.9}


def section_reorder(args) -> dict:
    """Both models on shuffled real graphs and on :data:`COMMUNITIES`, each order in one process.
    RGVT on Coauthor-Physics (8,415 features: minutes per run) compares the input order with
    RCM only, once; the graphs of 10^6 nodes run each order once; the others three times."""
    rows = {}
    graphs = [("cora", {"dataset": "cora"})] if args.smoke else [(g, {"dataset": g}) for g in REORDER_GRAPHS]
    graphs.append(("communities_1e6", {"communities": {**COMMUNITIES, "num_nodes": 2_000, "num_edges": 20_000,
                                                       "communities": 20} if args.smoke else COMMUNITIES}))
    for name, spec in graphs:
        for model in ("rgvt", "fingerprint"):
            heavy = name == "communities_1e6" and not args.smoke
            orders = [None, "rcm"] if (name, model) == ("coauthor_physics", "rgvt") else [None, "rcm", "degree"]
            repeats = 1 if heavy or name == "coauthor_physics" else 3
            rows[f"{name} {model}"] = measure("reorder", {**spec, "model": model, "orders": orders,
                                                          "repeats": repeats, "shuffle_seed": 0}, args.threads,
                                              timeout=7200)
    return rows


def section_products(args) -> dict:
    """Each model on the ogbn-products-shaped graph (:data:`products_scale.PRODUCTS`), one process each."""
    spec = _products_spec(args)
    return {model: measure("products", {**spec, "model": model}, args.threads, timeout=7200)
            for model in ("rgvt", "refi", "graphany")}


def _products_spec(args) -> dict:
    import tempfile

    graph = {**PRODUCTS, "num_nodes": 5_000, "num_edges": 50_000, "num_classes": 5} if args.smoke else PRODUCTS
    name = "omnigraph_products_smoke.pt" if args.smoke else "omnigraph_products.pt"
    return {"graph": graph, "cache": str(Path(args.cache or tempfile.gettempdir()) / name)}


#: depth of the 2-process run: every further depth adds the same work to every process
DISTRIBUTED_DEPTH = 2


def section_distributed(args) -> dict:
    """Column-parallel RGVT inference (``benchmarks/column_parallel.py``) on the products-scale
    graph: 1 process with 1 and with 2 threads, and 2 processes of 1 thread (gloo, ``torchrun``)."""
    import tempfile

    spec = json.dumps(_products_spec(args))
    runs = {}
    for name, procs, threads in (("1 process, 1 thread", 1, 1), ("1 process, 2 threads", 1, 2),
                                 ("2 processes, 1 thread each", 2, 1)):
        out = Path(tempfile.mkdtemp(prefix="omnigraph_cp_"))
        script = [str(HERE / "column_parallel.py"), "--spec", spec, "--out", str(out), "--depth", str(DISTRIBUTED_DEPTH)]
        cmd = ([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs}", *script]
               if procs > 1 else [sys.executable, *script])
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=7200, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            runs[name] = {"error": " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])}
            print(f"  [failed] {name}: {runs[name]['error']}", flush=True)
            continue
        ranks = [json.loads(p.read_text()) for p in sorted(out.glob("rank*.json"))]
        runs[name] = {"processes": procs, "threads": threads, "wall_seconds": wall, "ranks": ranks,
                      "depth": DISTRIBUTED_DEPTH,
                      "seconds": max(r["encode_seconds"] + r["gather_seconds"] for r in ranks)}
        print(f"  {name:>28} {runs[name]['seconds']:8.1f} s  peak {max(r['peak_rss_mib'] for r in ranks):8.0f} MiB",
              flush=True)
    return runs


def section_graphany_entropy(args) -> dict:
    cmd = [sys.executable, str(HERE / "graphany_entropy.py"), "--out", args.out]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads((Path(args.out) / "graphany_entropy.json").read_text())


SECTION_RUNNERS = {"rgvt_memory": section_rgvt_memory, "rgvt_backends": section_rgvt_backends,
                   "fingerprint": section_fingerprint, "propagation": section_propagation,
                   "scaling": section_scaling, "roofline": section_roofline, "reorder": section_reorder,
                   "products": section_products, "distributed": section_distributed,
                   "graphany_entropy": section_graphany_entropy}
assert tuple(SECTION_RUNNERS) == SECTIONS


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = _meminfo_gib()
    import torch

    return (f"{cpu}, {os.cpu_count()} logical CPUs, {mem:.0f} GiB RAM, Python {platform.python_version()}, "
            f"torch {torch.__version__}")


def _meminfo_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per measurement (default 2)")
    parser.add_argument("--scaling-decades", type=int, default=4, help="10^4 .. 10^(3+this) edges")
    parser.add_argument("--smoke", action="store_true", help="tiny graphs (cora, 2,000 nodes), for the tests")
    parser.add_argument("--conditions", default=None,
                        help="how the machine was loaded during the run (printed on the page)")
    parser.add_argument("--report-only", action="store_true", help="rewrite performance.md from perf.json")
    parser.add_argument("--out", default="docs/results")
    parser.add_argument("--cache", default=None, help="folder for the generated products-scale graph (default: tmp)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.scaling_decades = min(args.scaling_decades, 2)
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(WORKERS[job["work"]](job["spec"])))
        return 0

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "perf.json"

    def load() -> dict:
        results = json.loads(path.read_text()) if path.exists() else {}
        if args.conditions is not None:
            results["conditions"] = args.conditions
        return results

    results = load()
    for section in ([] if args.report_only else args.only.split(",")):
        if section not in SECTIONS:
            raise SystemExit(f"unknown section {section!r}; choose from {', '.join(SECTIONS)}")
        print(f"[{section}]", flush=True)
        value = SECTION_RUNNERS[section](args)
        results = load()   # re-read, so that sections another run wrote meanwhile are kept
        results[section] = value
        results["machine"] = machine()
        results.setdefault("commands", {})[section] = ("python benchmarks/perf.py --only " + section
                                                       + f" --threads {args.threads} --out {args.out}"
                                                       + (" --smoke" if args.smoke else ""))
        path.write_text(json.dumps(results, indent=2) + "\n")  # after each section: partial runs keep theirs
    path.write_text(json.dumps(results, indent=2) + "\n")
    write_report(results, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
