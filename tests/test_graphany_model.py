"""GraphAny building blocks and estimator API (fast, synthetic graphs)."""
from __future__ import annotations

import pytest
import torch
from sklearn.exceptions import NotFittedError
from tolerance import assert_all_same_up_to_kernel
from torch_geometric.data import Data

from omnigraph.estimators.graphany import GraphAny
from omnigraph.models.graphany import GraphAnyAttention, GraphAnyModel
from omnigraph.models.linear_gnn import LinearGNNChannels, least_squares, sample_per_class


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread for these small problems (restored afterwards).

    GraphAny's work here is many small ops and MKL ``gelss`` solves; on an oversubscribed
    machine OpenMP threads make them 10-100x slower, and on an idle one they barely help.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def make_graph(n=90, f=12, c=3, seed=0, p_in=0.15, p_out=0.01):
    """Homophilous SBM with noisy class-mean features and random 40/20/40 masks."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, c, (n,), generator=g)
    same = y[:, None] == y[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    adj = torch.rand(n, n, generator=g) < prob
    adj = torch.triu(adj, 1)
    edge_index = adj.nonzero().t()
    means = torch.randn(c, f, generator=g)
    x = means[y] + 2.0 * torch.randn(n, f, generator=g)
    perm = torch.randperm(n, generator=g)
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    masks[0][perm[: int(0.4 * n)]] = True
    masks[1][perm[int(0.4 * n): int(0.6 * n)]] = True
    masks[2][perm[int(0.6 * n):]] = True
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=n, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2])


def dense_channels(x, edge_index, n):
    a = torch.zeros(n, n, dtype=torch.float64)
    a[edge_index[0], edge_index[1]] = 1.0
    a = ((a + a.t()) > 0).double()
    a.fill_diagonal_(0.0)
    deg = a.sum(1, keepdim=True)
    p = torch.where(deg > 0, a / deg.clamp_min(1), torch.zeros_like(a))
    h = torch.eye(n, dtype=torch.float64) - p
    x = x.double()
    return [x, p @ x, p @ p @ x, h @ x, h @ h @ x]


def test_channels_match_dense_reference():
    torch.manual_seed(0)
    n = 30
    ei = torch.randint(0, n - 2, (2, 80))            # last two nodes isolated
    ei = torch.cat([ei, torch.tensor([[3, 3, 5], [3, 4, 4]])], 1)  # self-loop, duplicate, reversed pair
    x = torch.randn(n, 7)
    fast = LinearGNNChannels().propagate(x, ei)
    for got, want in zip(fast, dense_channels(x, ei, n)):
        assert got.dtype == torch.float32 and got.shape == (n, 7)
        torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)
    # isolated nodes: P row is zero, so L channels vanish and H channels equal X
    assert fast[1][-1].abs().max() == 0 and torch.equal(fast[3][-2:], x[-2:])
    # chunked propagation: the same numbers up to the kernels' rounding
    chunked = LinearGNNChannels(chunk_size=3).propagate(x, ei)
    assert_all_same_up_to_kernel(chunked, fast)


def test_least_squares_is_min_norm_pinv():
    torch.manual_seed(0)
    for r, f in [(6, 20), (40, 5)]:                  # under- and over-determined
        a, b = torch.randn(r, f), torch.nn.functional.one_hot(torch.arange(r) % 3, 3).float()
        w = least_squares(a, b)
        assert w.shape == (f, 3) and w.dtype == torch.float32
        torch.testing.assert_close(w.double(), torch.linalg.pinv(a.double()) @ b.double(), atol=1e-4, rtol=1e-4)
    assert torch.equal(least_squares(torch.zeros(0, 4), torch.zeros(0, 3)), torch.zeros(4, 3))


def test_solve_shapes_and_per_class_sampling():
    data = make_graph()
    ch = LinearGNNChannels()
    feats = ch.propagate(data.x, data.edge_index)
    ref = data.train_mask.nonzero().flatten()
    weights = ch.solve(feats, data.y, ref, 4)         # C = 4 with an empty class column
    assert len(weights) == 5 and all(w.shape == (12, 4) for w in weights)
    assert all(w[:, 3].abs().max() == 0 for w in weights)
    logits = ch.apply(feats, weights)
    assert logits.shape == (90, 5, 4)
    rows = torch.tensor([5, 1, 7])
    torch.testing.assert_close(ch.apply(feats, weights, rows), logits[rows])
    g = torch.Generator().manual_seed(0)
    picked = sample_per_class(data.y, ref, 2, 3, g)
    assert set(picked.tolist()) <= set(ref.tolist())
    assert torch.bincount(data.y[picked], minlength=3).tolist() == [2, 2, 2]
    assert sample_per_class(data.y, ref, 1000, 3, g).sort().values.tolist() == ref.sort().values.tolist()
    again = sample_per_class(data.y, ref, 2, 3, torch.Generator().manual_seed(0))
    assert torch.equal(picked, again)


def test_attention_shapes_and_single_row_skips_batchnorm():
    torch.manual_seed(0)
    att = GraphAnyAttention(20, 16, 3, num_layers=2)
    dist, y_pred = torch.rand(8, 20), torch.randn(8, 3, 4)
    att.eval()
    z, alpha = att(dist, y_pred)
    assert z.shape == (8, 4) and alpha.shape == (8, 3)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(8))
    torch.testing.assert_close(z, (alpha.unsqueeze(-1) * y_pred).sum(1))
    # a single row in train mode does not touch BatchNorm (it would fail on one value per channel)
    att.train()
    att.dropout = 0.0
    _, a1 = att(dist[:1], y_pred[:1])
    s = att.lins[1](torch.relu(att.lins[0](dist[:1])))
    torch.testing.assert_close(a1, torch.softmax(s / 5.0, -1))
    assert int(att.bns[0].num_batches_tracked) == 0


def test_single_layer_attention_keeps_unused_batchnorm():
    att = GraphAnyAttention(20, 64, 3, num_layers=1)
    assert len(att.lins) == 1 and att.lins[0].weight.shape == (3, 20)
    assert att.bns[0].num_features == 3
    n_trainable = sum(p.numel() for p in att.parameters())
    assert n_trainable == 63 + 6
    dist = torch.rand(5, 20)
    torch.testing.assert_close(att.scores(dist), att.lins[0](dist))


@pytest.mark.parametrize("n_hidden,layers,expected", [(32, 2, 835), (128, 2, 3331), (64, 1, 69)])
def test_parameter_counts_match_released_checkpoints(n_hidden, layers, expected):
    model = GraphAnyModel(n_hidden=n_hidden, n_mlp_layer=layers)
    assert sum(p.numel() for p in model.parameters()) == expected


def test_model_forward_and_save_load_roundtrip(tmp_path):
    torch.manual_seed(0)
    data = make_graph()
    model = GraphAnyModel(n_hidden=8, entropy=2.0, n_per_label_examples=3).eval()
    ref = data.train_mask.nonzero().flatten()
    z, alpha = model(data.x, data.edge_index, data.y, ref)
    assert z.shape == (90, 3) and alpha.shape == (90, 3)
    model.save_pretrained(tmp_path / "ga")
    back = GraphAnyModel.from_pretrained(tmp_path / "ga").eval()
    assert back.get_config() == model.get_config() and back.entropy == 2.0
    z2, _ = back(data.x, data.edge_index, data.y, ref)
    assert torch.equal(z, z2)
    est = GraphAny.from_pretrained(tmp_path / "ga").fit(data)
    assert torch.equal(est.transform(data), z)
    other = GraphAny.from_pretrained(tmp_path / "ga", entropy=1.0).fit(data)
    assert other.model_.entropy == 1.0 and other.model.entropy == 2.0      # the loaded model is not modified


def test_estimator_api_shapes():
    data = make_graph()
    torch.manual_seed(0)
    est = GraphAny(GraphAnyModel(n_hidden=8))
    with pytest.raises(NotFittedError):
        est.predict(data)
    assert est.fit(data) is est
    assert est.n_classes_ == 3 and est.n_features_in_ == 12 and len(est.channel_weights_) == 5
    assert torch.equal(est.classes_, torch.arange(3))
    assert torch.equal(est.train_index_, data.train_mask.nonzero().flatten())
    pred, proba = est.predict(data), est.predict_proba(data)
    assert pred.shape == (90,) and pred.dtype == torch.long
    assert proba.shape == (90, 3)
    torch.testing.assert_close(proba.sum(-1), torch.ones(90))
    assert torch.equal(proba.argmax(-1), pred)
    assert est.transform(data, "attention").shape == (90, 3)
    assert est.transform(data, "channels").shape == (90, 5, 3)
    assert est.transform(data, "distance").shape == (90, 20)
    acc = est.score(data)
    assert 0.0 <= acc <= 1.0
    assert est.score(data, mask=data.val_mask) == float((pred[data.val_mask] == data.y[data.val_mask]).float().mean())
    assert est.score(data, mask=torch.tensor([0, 1])) in (0.0, 0.5, 1.0)
    est2 = GraphAny(GraphAnyModel(n_hidden=8), num_classes=5).fit(data)
    assert est2.predict_proba(data).shape == (90, 5)
    assert torch.equal(est.decision_function(data), est.transform(data))
    assert set(est.get_params()) == {"model", "entropy", "num_classes", "seed", "chunk_size"}
    with pytest.raises(ValueError, match="output"):
        est.transform(data, "nope")


def test_fit_never_reads_test_labels():
    data = make_graph(seed=1)
    torch.manual_seed(0)
    model = GraphAnyModel(n_hidden=8)
    before = GraphAny(model).fit(data).predict_proba(data)
    scrambled = data.clone()
    g = torch.Generator().manual_seed(5)
    hidden = ~data.train_mask
    scrambled.y = data.y.clone()
    scrambled.y[hidden] = data.y[hidden][torch.randperm(int(hidden.sum()), generator=g)]
    assert not torch.equal(scrambled.y, data.y)
    after = GraphAny(model).fit(scrambled).predict_proba(scrambled)
    assert torch.equal(before, after)
    garbage = data.clone()
    garbage.y = data.y.clone()
    garbage.y[hidden] = 10_000                       # would change C if it were read
    assert torch.equal(GraphAny(model).fit(garbage).predict_proba(garbage), before)


def test_cache_follows_in_place_changes_and_other_graphs():
    data = make_graph()
    torch.manual_seed(0)
    est = GraphAny(GraphAnyModel(n_hidden=8)).fit(data)
    first = est.transform(data)
    data.x.mul_(-1.0)                                # in-place edit bumps the tensor version
    assert not torch.equal(est.transform(data), first)
    other = make_graph(seed=3)
    assert est.predict(other).shape == (90,)         # same feature space: weights reused
    with pytest.raises(ValueError, match="features"):
        est.predict(make_graph(f=5))


def test_input_validation():
    data = make_graph()
    est = GraphAny(GraphAnyModel(n_hidden=8))
    no_mask = data.clone()
    del no_mask.train_mask
    with pytest.raises(ValueError, match="train_mask"):
        est.fit(no_mask)
    empty = data.clone()
    empty.train_mask = torch.zeros(90, dtype=torch.bool)
    with pytest.raises(ValueError, match="train_mask"):
        est.fit(empty)
    bad = data.clone()
    bad.x = bad.x.long()
    with pytest.raises(TypeError, match="data.x"):
        est.fit(bad)
    multi = data.clone()
    multi.train_mask = torch.stack([data.train_mask, data.val_mask], 1)
    with pytest.raises(ValueError, match=r"pick one split"):
        est.fit(multi)
    with pytest.raises(ValueError, match="num_classes"):
        GraphAny(GraphAnyModel(n_hidden=8), num_classes=2).fit(data)
    with pytest.raises(TypeError, match="data.y"):
        est.fit(data, data.y)
    with pytest.raises(TypeError, match="GraphAnyModel"):
        GraphAny(model="nope").fit(data)
    with pytest.raises(ValueError, match="channel"):
        GraphAnyModel(feat_channels=("X", "Q1"))
