"""Node reordering on graphs in arbitrary node order (issue #20 §2): a worker of ``perf.py``.

One process per graph and model runs every order in ``spec["orders"]`` (``None``: the graph as
given; ``"rcm"``, ``"degree"``: :mod:`omnigraph.ops.reorder`), interleaved over the repeats, so
that the ratios come from one run. The graph's node ids are shuffled first (a seeded random
permutation): data often arrives that way, and it removes whatever locality the file's own
numbering had. End to end, the renumbering included: RGVT ``fit`` + ``decision_function``
(its predictions come back in the user's order), the relational fingerprint.
"""
from __future__ import annotations

import time


def shuffled(data, seed: int):
    """``data`` with its node ids permuted at random (``seed``): features, labels, masks, edges."""
    import torch
    from torch_geometric.data import Data

    from omnigraph.ops import invert_permutation

    n = data.num_nodes
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    inv = invert_permutation(perm)
    out = Data(x=data.x[perm], edge_index=inv[data.edge_index], num_nodes=n)
    for key in ("y", "train_mask", "val_mask", "test_mask"):
        if getattr(data, key, None) is not None:
            out[key] = data[key][perm]
    return out


def community_graph(num_nodes: int, num_edges: int, communities: int, homophily: float, seed: int = 0,
                    num_features: int = 64, num_classes: int = 10):
    """A power-law graph of ``communities`` planted communities (edges stay inside one with
    probability ``homophily``), labelled by community modulo ``num_classes``; ids are random."""
    from omnigraph.datasets.synthetic import synthetic_graph

    data = synthetic_graph(num_nodes, num_edges, num_features, communities, kind="power_law",
                           homophily=homophily, seed=seed)
    data.y = data.y % num_classes
    return data


def _load(spec: dict):
    from omnigraph.datasets import load_dataset
    from omnigraph.datasets.splits import random_split

    data = community_graph(**spec["communities"]) if "communities" in spec else load_dataset(spec["dataset"], seed=42)
    data = shuffled(data, spec.get("shuffle_seed", 0))
    if getattr(data, "train_mask", None) is None:
        for key, mask in random_split(data.y, seed=0).items():
            data[key] = mask
    return data


def work_reorder(spec: dict) -> dict:
    """Seconds of each order (median over ``repeats``), the renumbering's own seconds, and how
    far each reordered result lies from the unreordered one."""
    import statistics

    import torch

    from omnigraph.estimators.rgvt import RGVT
    from omnigraph.models.fingerprint import RelationalFingerprint
    from omnigraph.ops import locality_order

    data = _load(spec)
    n = data.num_nodes
    orders = spec.get("orders", [None, "rcm", "degree"])
    model = spec["model"]

    def run(order):
        if model == "rgvt":
            clf = RGVT.from_pretrained("rgvt", reorder=order)
            start = time.perf_counter()
            out = clf.fit(data).decision_function(data)
            return time.perf_counter() - start, out
        fp = RelationalFingerprint(reorder=order)
        start = time.perf_counter()
        out = fp.fingerprint(data.x, data.edge_index, n)
        return time.perf_counter() - start, out

    times: dict[str, list[float]] = {str(o): [] for o in orders}
    first: dict[str, torch.Tensor] = {}
    for rep in range(spec.get("repeats", 1)):
        for order in (orders if rep % 2 == 0 else orders[::-1]):
            seconds, out = run(order)
            times[str(order)].append(seconds)
            first.setdefault(str(order), out)
    base = first["None"]
    result = {"nodes": n, "edges": int(data.edge_index.size(1)), "features": int(data.x.size(1)), "model": model,
              "orders": {}}
    for order in orders:
        key = str(order)
        row = {"seconds": statistics.median(times[key]), "repeats": len(times[key]),
               "speedup": statistics.median(times["None"]) / statistics.median(times[key])}
        if order is not None:
            start = time.perf_counter()
            locality_order(data.edge_index, n, order)
            row["order_seconds"] = time.perf_counter() - start
            row["max_abs_diff"] = float((first[key] - base).abs().max())
            if model == "rgvt":
                row["same_prediction"] = float((first[key].argmax(1) == base.argmax(1)).float().mean())
        result["orders"][key] = row
    result["seconds"] = result["orders"]["None"]["seconds"]
    return result
