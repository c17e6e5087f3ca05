"""Anomaly injection: the procedure itself, and its statistics against ARC's injected Cora/CiteSeer.

ARC's ``gad/cora.npz`` and ``gad/citeseer.npz`` were built on exactly PyG's Planetoid Cora and
CiteSeer (same node order and features, checked below), so our injection with the same
counts (5 cliques of 15, 75 contextual, k = 50) can be compared with them number by number.
"""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

import omnigraph
from omnigraph.datasets import InjectAnomalies, inject_contextual, inject_structural, load_dataset
from omnigraph.ops import simple_undirected


def _toy(n=200, f=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, f, generator=g)
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    return Data(x=x, edge_index=simple_undirected(ring, n, self_loops=False), y=torch.arange(n) % 3, num_nodes=n)


def _cliques_complete(data, nodes) -> int:
    """Number of ``nodes`` whose within-set degree is at least m - 1 (every member of a clique)."""
    inside = torch.zeros(data.num_nodes, dtype=torch.bool)
    inside[nodes] = True
    ei = data.edge_index
    keep = inside[ei[0]] & inside[ei[1]]
    return torch.bincount(ei[0, keep], minlength=data.num_nodes)[nodes]


def test_injection_procedure():
    data = _toy()
    out = InjectAnomalies(num_cliques=3, clique_size=5, num_contextual=10, k=20, seed=7)(data)
    assert int(out.y_struct.sum()) == 15 and int(out.y_attr.sum()) == 10 and int(out.y.sum()) == 25
    assert not bool((out.y_struct & out.y_attr).any())
    assert torch.equal(out.y, out.y_struct | out.y_attr)
    assert torch.equal(out.y_class, data.y)  # host labels kept aside
    # original input untouched
    assert torch.equal(data.x, _toy().x) and torch.equal(data.edge_index, _toy().edge_index)
    # structural: the 15 nodes form 3 complete 5-cliques (each node sees >= 4 clique mates), no self-loops
    struct = out.y_struct.nonzero().view(-1)
    assert bool((_cliques_complete(out, struct) >= 4).all())
    assert not bool((out.edge_index[0] == out.edge_index[1]).any())
    assert out.edge_index.size(1) <= data.edge_index.size(1) + 3 * 5 * 4
    # contextual: features replaced by the farthest of k candidates -> equal to another node's features
    attr = out.y_attr.nonzero().view(-1)
    for node in attr.tolist():
        matches = (data.x == out.x[node]).all(dim=1).nonzero().view(-1)
        assert matches.numel() >= 1 and node not in matches.tolist()
    untouched = out.y_attr == 0
    assert torch.equal(out.x[untouched], data.x[untouched])
    # the copied vector is the farthest among its candidates, so it is far on average
    displacement = (out.x[attr] - data.x[attr]).norm(dim=1).mean()
    typical = torch.cdist(data.x[attr], data.x).mean()
    assert displacement > typical
    # every new edge lies inside the clique node set
    assert out.edge_index.size(1) - data.edge_index.size(1) == (
        _cliques_complete(out, struct).sum() - _cliques_complete(data, struct).sum())


def test_injection_is_seeded():
    data = _toy()
    a = InjectAnomalies(2, 5, 10, seed=3)(data)
    b = InjectAnomalies(2, 5, 10, seed=3)(data)
    c = InjectAnomalies(2, 5, 10, seed=4)(data)
    assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index) and torch.equal(a.y, b.y)
    assert not torch.equal(a.y, c.y)
    s = inject_structural(data, n=2, m=5, seed=1)
    assert torch.equal(s.y_attr, torch.zeros(200, dtype=torch.long)) and int(s.y.sum()) == 10
    sc = inject_contextual(s, n_nodes=10, k=50, seed=2)
    assert int(sc.y.sum()) == 20 and not bool((sc.y_struct & sc.y_attr).any())
    assert omnigraph.InjectAnomalies is InjectAnomalies
    assert "num_cliques=2" in repr(InjectAnomalies(2, 5, 10))


def test_injection_errors():
    data = _toy(n=30)
    with pytest.raises(ValueError, match="cannot pick 40 structural"):
        inject_structural(data, n=4, m=10)
    with pytest.raises(ValueError, match="cannot pick 25 contextual"):
        inject_contextual(inject_structural(data, n=1, m=10), n_nodes=25)
    with pytest.raises(ValueError, match="num_cliques"):
        InjectAnomalies(num_cliques=-1)
    with pytest.raises(ValueError, match="clique size"):
        inject_structural(data, n=2, m=1)
    with pytest.raises(TypeError, match="seed"):
        InjectAnomalies(1, seed=0.5)
    with pytest.raises(ValueError, match="edge attributes"):
        inject_structural(Data(x=data.x, edge_index=data.edge_index, edge_attr=torch.ones(data.edge_index.size(1))),
                          n=1, m=3)


def _stats(host_x, base_edges, data):
    attr = data.y_attr.bool()
    return {
        "anomalies": int(data.y.sum()), "struct": int(data.y_struct.sum()), "attr": int(attr.sum()),
        "added": data.edge_index.size(1) // 2 - base_edges // 2,
        "rowsum_after": data.x[attr].sum(1).mean().item(),
        "displacement": (data.x[attr] - host_x[attr]).norm(dim=1).mean().item(),
        "norm_after": data.x[attr].norm(dim=1).mean().item(),
    }


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_matches_arc_injected_files(name, data_root):
    host = load_dataset(name, data_root=data_root)
    arc = load_dataset(f"gad/{name}", data_root=data_root)
    base = simple_undirected(host.edge_index, host.num_nodes, self_loops=False)
    # ARC's file is PyG's graph plus the injection: same features outside the contextual
    # nodes, and every original edge kept
    assert torch.equal(arc.x[arc.y_attr == 0], host.x[arc.y_attr == 0])
    key = lambda ei: ei[0] * host.num_nodes + ei[1]
    assert bool(torch.isin(key(base), key(arc.edge_index)).all())

    ours = InjectAnomalies(num_cliques=5, clique_size=15, num_contextual=75, k=50, seed=0)(
        Data(x=host.x, edge_index=base, num_nodes=host.num_nodes))
    theirs_stats, our_stats = _stats(host.x, base.size(1), arc), _stats(host.x, base.size(1), ours)
    assert (our_stats["anomalies"], our_stats["struct"], our_stats["attr"]) == (150, 75, 75)
    assert (theirs_stats["anomalies"], theirs_stats["struct"], theirs_stats["attr"]) == (150, 75, 75)
    # at most 5 * C(15, 2) = 525 new edges; pairs that already existed are not added twice
    assert 515 <= our_stats["added"] <= 525 and abs(our_stats["added"] - theirs_stats["added"]) <= 5
    # both: each structural node sees its 14 clique mates
    for data in (arc, ours):
        struct = data.y_struct.nonzero().view(-1)
        assert bool((_cliques_complete(data, struct) >= 14).all())
        attr = data.y_attr.nonzero().view(-1)
        rows = {tuple(r.nonzero().view(-1).tolist()) for r in host.x}
        assert all(tuple(data.x[i].nonzero().view(-1).tolist()) in rows for i in attr.tolist())
    # feature statistics of the contextual anomalies (farthest-of-50 selection bias)
    for stat in ("rowsum_after", "displacement", "norm_after"):
        assert our_stats[stat] == pytest.approx(theirs_stats[stat], rel=0.05), stat
    normal_rowsum = host.x.sum(1).mean().item()
    assert our_stats["rowsum_after"] > 1.2 * normal_rowsum and theirs_stats["rowsum_after"] > 1.2 * normal_rowsum
