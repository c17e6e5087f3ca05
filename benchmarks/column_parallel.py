"""Column-parallel RGVT inference in several processes (issue #20 §4), run by ``perf.py``.

Run as a script, alone (one process) or under ``torchrun --nproc_per_node K`` (K processes, gloo):
every rank loads the products-scale graph (``benchmarks/products_scale.py``), builds the
inference operators and encodes its block of feature columns to depth ``--depth`` with the shipped
encoder (:func:`omnigraph.ops.column_parallel`), then all-gathers Z. Each rank writes one JSON
line to ``--out`` (``rank<r>.json``): seconds of the encoding and of the gather, its peak RSS
and a checksum of its block, so that the driver can check that the blocks add up to the
single-process result.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="JSON: {'graph': ..., 'cache': ...} of products_scale")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    import torch
    import torch.distributed as dist
    from perf import peak_mib, reset_peak, trim_heap
    from products_scale import products_graph

    from omnigraph.estimators.rgvt import RGVT
    from omnigraph.estimators.rgvt_adapt import inference_operators
    from omnigraph.ops import column_parallel, column_range

    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1
    data = products_graph(json.loads(args.spec))
    encoder = RGVT.from_pretrained("rgvt").encoder.eval()
    trim_heap()
    reset_peak()
    start = time.perf_counter()
    ops = inference_operators(encoder, data, None)
    x = data.x.float()
    del data
    with torch.no_grad():
        local = column_parallel(lambda xb: encoder(xb, depth=args.depth, operators=ops), x, gather=False)
    encode_s = time.perf_counter() - start
    t0 = time.perf_counter()
    if dist.is_initialized():
        from omnigraph.ops import gather_columns

        full = gather_columns(local, x.size(1))
    else:
        full = local
    gather_s = time.perf_counter() - t0
    lo, hi = column_range(x.size(1))
    row = {"rank": rank, "world": world, "threads": torch.get_num_threads(), "columns": [lo, hi],
           "encode_seconds": encode_s, "gather_seconds": gather_s, "peak_rss_mib": peak_mib(),
           "block_checksum": float(local.double().sum()), "full_checksum": float(full.double().sum()),
           "nodes": int(x.size(0)), "features": int(x.size(1))}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"rank{rank}.json").write_text(json.dumps(row))
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
