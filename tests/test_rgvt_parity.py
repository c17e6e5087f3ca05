"""Parity with the authors' released RGVT encoder (node-classification spec 6.1).

``seed_42`` weights (CC BY-NC-SA 4.0, read in place from ``OMNIGRAPH_REFERENCE/rgvt``), Yandex
npz graphs split 0, MLP head, reference adaptation protocol (L = 1..8 chosen on validation).
Expected values come from one head seed of an independent re-implementation, hence the
tolerances: +-2 test nodes on the WebKB graphs, +-3 points on the filtered Wikipedia graphs. As
the spec prescribes, a graph outside its tolerance is rerun with three head seeds and the mean
is compared instead.
"""
from __future__ import annotations

import time

import pytest
import torch

from omnigraph.datasets.yandex import load_yandex_npz
from omnigraph.estimators.rgvt_adapt import adapt
from omnigraph.models.rgvt import RGVTEncoder

# graph: (expected test hits, test size, expected L*, tolerance in test nodes)
EXPECTED = {
    "cornell": (29, 37, 1, 2),
    "wisconsin": (38, 51, 1, 2),
    "texas_4_classes": (29, 37, 1, 2),
    "chameleon_filtered": (91, 194, 5, 0.03 * 194),
    "squirrel_filtered": (189, 452, 5, 0.03 * 452),
}


def _test_hits(encoder, data, results) -> list[int]:
    hits = []
    for r in results:
        with torch.no_grad():
            z = encoder(data.x, data.edge_index, depth=r.depth, rows=data.test_mask)
            hits.append(int((r.head(z).argmax(-1) == data.y[data.test_mask]).sum()))
    return hits


@pytest.fixture(scope="module")
def encoder(reference_root):
    return RGVTEncoder.from_reference_npz(reference_root / "rgvt" / "seed_42.npz")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECTED))
def test_reference_protocol_matches_published_accuracy(name, encoder, data_root):
    expected, n_test, expected_depth, tol = EXPECTED[name]
    data = load_yandex_npz(data_root / "yandex" / f"{name}.npz", split=0)
    assert int(data.test_mask.sum()) == n_test
    start = time.perf_counter()
    results = adapt(encoder, data, protocol="reference", seeds=(0,))
    hits = _test_hits(encoder, data, results)
    if abs(hits[0] - expected) > tol:   # spec 6.1: rerun with three head seeds, compare the mean
        results = adapt(encoder, data, protocol="reference", seeds=(0, 1, 2))
        hits = _test_hits(encoder, data, results)
    seconds = time.perf_counter() - start
    mean = sum(hits) / len(hits)
    depths = [r.depth for r in results]
    print(f"{name}: test hits {hits} (expected {expected}/{n_test}), L* {depths} (expected {expected_depth}), "
          f"{seconds:.1f} s")
    assert abs(mean - expected) <= tol, f"{name}: mean test hits {mean} vs {expected} +- {tol}"
    # depth profile: WebKB peaks at the first steps, the filtered Wikipedia graphs at middle depths
    if expected_depth == 1:
        assert all(d <= 2 for d in depths)
    else:
        assert all(3 <= d <= 7 for d in depths)
