"""Benchmark: GraphAny's entropy-normalised distance features, vectorised vs per-node loops.

Compares :class:`omnigraph.models.entropy_distance.EntropyDistance` (one bisection for all
nodes at once) with two per-node baselines on the same channel logits:

* ``python_loop``: the plain-Python per-node reference of ``tests/test_graphany_entropy.py``;
* ``sklearn_loop``: what the GraphAny reference code runs, i.e. per node ``scipy`` pairwise
  distances + scikit-learn's Cython ``_binary_search_perplexity`` (skipped if unavailable).

The loops are timed on the first ``--loop-nodes`` nodes and compared per node; values must
agree within ``--atol``. Everything runs on one thread by default, so the ratio measures the
algorithm rather than the core count (on an oversubscribed machine OpenMP threads also make
small tensor ops much slower). Writes ``graphany_entropy.json`` and ``graphany_entropy.md`` to ``--out``.

    python benchmarks/graphany_entropy.py --out docs/results [--nodes 20000] [--graph PATH.npz]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from omnigraph.models.entropy_distance import EntropyDistance

ROOT = Path(__file__).resolve().parent.parent


def load_python_loop():
    """The per-node reference loop lives with its test; import it from there."""
    path = ROOT / "tests" / "test_graphany_entropy.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # the test module imports its sibling helpers
    spec = importlib.util.spec_from_file_location("_graphany_entropy_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.slow_features


def sklearn_loop(y: np.ndarray, entropy: float) -> np.ndarray:
    """Per node: scipy distances, then scikit-learn's search (the reference implementation's path)."""
    from scipy.spatial.distance import pdist, squareform
    from sklearn.manifold._utils import _binary_search_perplexity

    n, t, _ = y.shape
    off = ~np.eye(t, dtype=bool)
    out = np.zeros((n, t * (t - 1)))
    for u in range(n):
        d = (squareform(pdist(y[u].astype(np.float64))) ** 2).astype(np.float32)
        out[u] = np.asarray(_binary_search_perplexity(d, 2.0 ** entropy, 0))[off]
    return out


def channel_logits(args) -> tuple[np.ndarray, str]:
    if args.graph:
        from omnigraph.datasets.yandex import load_yandex_npz
        from omnigraph.models.linear_gnn import LinearGNNChannels

        data = load_yandex_npz(args.graph, split=0)
        ch = LinearGNNChannels()
        feats = ch.propagate(data.x, data.edge_index)
        c = int(data.y.max()) + 1
        logits = ch.apply(feats, ch.solve(feats, data.y, data.train_mask.nonzero().flatten(), c))
        return logits.numpy(), f"GraphAny channel logits of {Path(args.graph).stem}"
    g = np.random.default_rng(args.seed)
    y = g.standard_normal((args.nodes, args.channels, args.classes)).astype(np.float32)
    # per-node scales over 6 orders of magnitude, like logits of very different graphs
    y *= (10.0 ** g.uniform(-3, 3, size=(args.nodes, 1, 1))).astype(np.float32)
    return y, f"random logits, N={args.nodes}, t={args.channels}, C={args.classes}, scales 1e-3..1e3"


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for graphany_entropy.json / .md")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--loop-nodes", type=int, default=1000, help="nodes timed with the per-node loops")
    ap.add_argument("--channels", type=int, default=5)
    ap.add_argument("--classes", type=int, default=7)
    ap.add_argument("--entropy", type=float, default=1.0)
    ap.add_argument("--graph", help="a Yandex .npz: use its real GraphAny channel logits instead")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: the loops are single-threaded too; 0 = torch's choice)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    y, source = channel_logits(args)
    n = y.shape[0]
    m = min(args.loop_nodes, n)
    yt = torch.from_numpy(y)
    dist = EntropyDistance(args.entropy)
    dist(yt[:64])                                          # warm-up
    fast = dist(yt).numpy()
    t_vec = best_of(lambda: dist(yt), args.repeat)

    result = {"source": source, "nodes": n, "loop_nodes": m, "entropy": args.entropy,
              "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
              "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
              "vectorised_s": t_vec, "vectorised_us_per_node": 1e6 * t_vec / n, "baselines": {}}
    python_loop = load_python_loop()                       # imported before timing
    baselines = {"python_loop": lambda yy: python_loop(yy, args.entropy)}
    try:
        from sklearn.manifold._utils import _binary_search_perplexity  # noqa: F401
        baselines["sklearn_loop"] = lambda yy: sklearn_loop(yy, args.entropy)
    except ImportError:
        pass
    ok = True
    for name, fn in baselines.items():
        t = time.perf_counter()
        ref = fn(y[:m])
        t_loop = time.perf_counter() - t
        err = float(np.abs(ref - fast[:m]).max())
        per_node = t_loop / m
        ratio = per_node / (t_vec / n)
        ok &= err <= args.atol
        result["baselines"][name] = {"seconds": t_loop, "us_per_node": 1e6 * per_node, "max_abs_diff": err,
                                     "speedup": ratio, "within_atol": err <= args.atol}
    result["atol"] = args.atol
    result["all_within_atol"] = ok

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "graphany_entropy.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# GraphAny entropy-normalised distances: vectorised vs per-node loops", "",
             f"- input: {source}",
             (f"- entropy: {args.entropy} bits; torch threads: {result['torch_threads']}; "
              f"torch {torch.__version__}, Python {result['python']}"),
             (f"- vectorised: {t_vec:.3f} s for {n} nodes ({result['vectorised_us_per_node']:.2f} us/node, "
              f"best of {args.repeat})"), "",
             "| baseline | nodes timed | us/node | speed-up of vectorised | max abs diff | within atol |",
             "|---|---:|---:|---:|---:|---|"]
    for name, r in result["baselines"].items():
        lines.append(f"| {name} | {m} | {r['us_per_node']:.1f} | {r['speedup']:.1f}x | {r['max_abs_diff']:.2e} | "
                     f"{'yes' if r['within_atol'] else 'NO'} |")
    (out / "graphany_entropy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
