"""ogbn-products scale on one machine (issue #20 §3): a worker of ``perf.py``.

The graph has ogbn-products' shape: 2,449,029 nodes, about 62 M undirected edges drawn
(power-law degrees, 47 planted communities that are the classes, homophily 0.8), 100 dense
features. It is generated once into ``--cache`` (a ``.pt`` file of tensors, seconds to reload)
and each model then runs in its own process, so that its peak resident set size is its own:
RGVT zero-shot ``fit`` + ``predict``; REFI-GAD scoring with 10 + 10 supports, fingerprint
included; GraphAny ``fit`` + ``predict``.
"""
from __future__ import annotations

import time
from pathlib import Path

PRODUCTS = {"num_nodes": 2_449_029, "num_edges": 61_859_140, "num_features": 100, "num_classes": 47,
            "kind": "power_law", "homophily": 0.8, "seed": 0}


def products_graph(spec: dict):
    """The graph of ``spec`` from its cache file, generated (and written) on the first call."""
    import torch
    from torch_geometric.data import Data

    from omnigraph.datasets.splits import random_split
    from omnigraph.datasets.synthetic import synthetic_graph

    path = Path(spec["cache"])
    if path.exists():
        return Data(**torch.load(path, weights_only=True))
    data = synthetic_graph(**spec["graph"])
    for key, mask in random_split(data.y, seed=0).items():
        data[key] = mask
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({k: v for k, v in data.items()}, tmp)
    tmp.replace(path)
    return data


def work_products(spec: dict) -> dict:
    """One model on the products-scale graph: seconds and peak RSS of each phase."""
    import gc

    import torch
    from perf import peak_mib, reset_peak, rss_mib, tensor_mib, trim_heap

    start = time.perf_counter()
    data = products_graph(spec)
    load_s = time.perf_counter() - start
    gc.collect()
    trim_heap()
    loaded = rss_mib()
    phases: dict[str, dict] = {}

    def phase(name: str, fn):
        reset_peak()
        t0 = time.perf_counter()
        out = fn()
        phases[name] = {"seconds": time.perf_counter() - t0, "peak_rss_mib": peak_mib()}
        return out

    model = spec["model"]
    if model == "rgvt":
        from omnigraph.estimators.rgvt import RGVT

        clf = RGVT.from_pretrained("rgvt")
        phase("fit", lambda: clf.fit(data))
        pred = phase("predict", lambda: clf.predict(data))
        extra = {"test_accuracy": float((pred[data.test_mask] == data.y[data.test_mask]).float().mean()),
                 "depth": clf.depth_}
    elif model == "graphany":
        from omnigraph.estimators.graphany import GraphAny

        clf = GraphAny.from_pretrained("graphany")
        phase("fit", lambda: clf.fit(data))
        pred = phase("predict", lambda: clf.predict(data))
        extra = {"test_accuracy": float((pred[data.test_mask] == data.y[data.test_mask]).float().mean())}
    else:
        from omnigraph.estimators.refi_gad import REFIGAD

        detector = REFIGAD.from_pretrained("refi-gad")
        score = phase("score", lambda: detector.decision_function(
            data, support_normal=torch.arange(10), support_anomaly=torch.arange(10, 20)))
        extra = {"finite": bool(torch.isfinite(score).all())}
    inputs = tensor_mib(data.x) + tensor_mib(data.edge_index)
    return {"model": model, "nodes": data.num_nodes, "edges": int(data.edge_index.size(1)),
            "features": int(data.x.size(1)), "classes": int(data.y.max()) + 1, "load_seconds": load_s, "loaded_mib": loaded, "inputs_mib": inputs,
            "phases": phases, "seconds": sum(p["seconds"] for p in phases.values()),
            "peak_rss_mib": max(p["peak_rss_mib"] for p in phases.values()), **extra}
