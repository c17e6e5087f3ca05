"""Peak memory and time of the relational fingerprint on a large synthetic graph.

The released REFI-GAD code forms several N x N matrices (X X^T, cdist, a dense adjacency); at
N = 10^5 one float32 N x N matrix alone is 40 GB. omnigraph's fingerprint is O(|E| d). This
script builds a reproducible synthetic graph (random edges plus planted triangles, so local
clustering is non-trivial), computes ``RelationalFingerprint()`` on it and reports wall time,
the peak resident set size of the process (``resource.ru_maxrss``; covers torch's native
allocations) and the peak of Python-level allocations (``tracemalloc``).

    python benchmarks/fingerprint_memory.py --nodes 100000 --out docs/results

writes ``fingerprint_memory.json`` and ``fingerprint_memory.md``.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import torch


def synthetic_graph(num_nodes: int, avg_degree: float, num_features: int, seed: int):
    """Random edges (Erdos-Renyi-like) plus one planted triangle per 10 nodes; features uniform [0, 1)."""
    g = torch.Generator().manual_seed(seed)
    m = int(num_nodes * avg_degree / 2)
    ei = torch.randint(0, num_nodes, (2, m), generator=g)
    a = torch.randint(0, num_nodes, (num_nodes // 10,), generator=g)
    b = (a + 1) % num_nodes
    c = (a + 2) % num_nodes
    tri = torch.stack([torch.cat([a, b, c]), torch.cat([b, c, a])])
    ei = torch.cat([ei, tri], dim=1)
    x = torch.rand(num_nodes, num_features, generator=g)
    return x, ei


def _rss_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS
    scale = 1.0 if sys.platform == "darwin" else 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--avg-degree", type=float, default=10.0)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sim-scale", default="edges", choices=["edges", "global"])
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--out", default="docs/results")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    from omnigraph.models.fingerprint import RelationalFingerprint

    x, ei = synthetic_graph(args.nodes, args.avg_degree, args.features, args.seed)
    rss_before = _rss_mib()
    tracemalloc.start()
    start = time.perf_counter()
    fp = RelationalFingerprint(sim_scale=args.sim_scale).fingerprint(x, ei, args.nodes)
    seconds = time.perf_counter() - start
    _, py_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_peak = _rss_mib()
    assert fp.shape == (args.nodes, 5) and torch.isfinite(fp).all()

    dense_one = args.nodes**2 * 4 / 2**20
    result = {
        "nodes": args.nodes, "edge_draws": int(ei.size(1)), "features": args.features, "seed": args.seed,
        "sim_scale": args.sim_scale, "seconds": round(seconds, 2),
        "peak_rss_mib": round(rss_peak, 1), "rss_before_mib": round(rss_before, 1),
        "peak_rss_increase_mib": round(rss_peak - rss_before, 1),
        "tracemalloc_peak_mib": round(py_peak / 2**20, 2),
        "one_dense_NxN_float32_mib": round(dense_one, 1),
        "input_x_mib": round(x.numel() * 4 / 2**20, 1),
        "torch": torch.__version__, "python": platform.python_version(), "threads": torch.get_num_threads(),
        "command": "python benchmarks/fingerprint_memory.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fingerprint_memory.json").write_text(json.dumps(result, indent=2) + "\n")
    md = [
        "# Relational fingerprint: memory and time on a synthetic graph", "",
        f"Command: `{result['command']}`", "",
        "| quantity | value |", "|---|---|",
        f"| nodes | {args.nodes:,} |",
        f"| undirected edges drawn (before dedup; random + planted triangles) | {result['edge_draws']:,} |",
        f"| features | {args.features} |",
        f"| similarity scaling | `{args.sim_scale}` |",
        f"| wall time | {seconds:.1f} s ({result['threads']} torch threads) |",
        f"| peak RSS of the process | {rss_peak:,.0f} MiB (before: {rss_before:,.0f} MiB) |",
        f"| peak RSS increase during the fingerprint | {rss_peak - rss_before:,.0f} MiB |",
        f"| peak Python allocations (tracemalloc) | {py_peak / 2**20:.2f} MiB |",
        f"| one dense N x N float32 matrix would need | {dense_one:,.0f} MiB |", "",
        "The released dense path needs several N x N matrices; the O(|E| d) path never forms one.", "",
    ]
    (out / "fingerprint_memory.md").write_text("\n".join(md))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
