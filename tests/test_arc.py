"""ARC: alignment, encoder, in-context scoring, loss, episodic training and the detector API."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data

from omnigraph.datasets.flags import graph_flag
from omnigraph.estimators.arc import ARC
from omnigraph.models.arc import ARCModel, arc_features, arc_loss
from omnigraph.models.arc_align import ARCAlign, smoothness
from omnigraph.ops import normalize_rows, simple_undirected
from omnigraph.training.arc import ARCSources, prepare_sources, pretrain_arc, sample_episode
from omnigraph.training.episodes import episode_generator

TINY = {"hidden_channels": 16, "num_layers": 2, "num_hops": 2}


def _graph(n=120, f=80, seed=0, n_anom=12, shift=3.0):
    """Two-community random graph; the last ``n_anom`` nodes have shifted features (anomalies)."""
    g = torch.Generator().manual_seed(seed)
    comm = torch.arange(n) % 2
    src = torch.randint(0, n, (6 * n,), generator=g)
    dst = torch.randint(0, n, (6 * n,), generator=g)
    keep = (comm[src] == comm[dst]) | (torch.rand(6 * n, generator=g) < 0.1)
    ei = torch.stack([src[keep], dst[keep]])
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    x = torch.randn(n, f, generator=g) + comm[:, None].float()
    y = torch.zeros(n, dtype=torch.long)
    y[-n_anom:] = 1
    x[-n_anom:] += shift * torch.randn(1, f, generator=g)
    return Data(x=x, edge_index=ei, y=y, num_nodes=n)


def _dense_sym(ei, n, self_loops=True):
    a = torch.zeros(n, n)
    a[ei[0], ei[1]] = 1.0
    a = ((a + a.t()) > 0).float()
    a.fill_diagonal_(1.0 if self_loops else 0.0)
    deg = a.sum(1)
    inv = torch.where(deg > 0, deg.rsqrt(), torch.zeros_like(deg))
    return inv[:, None] * a * inv[None, :]


# -- alignment ---------------------------------------------------------------------------------
def test_align_shape_deterministic_label_free_and_a_sorted_pca():
    from sklearn.decomposition import PCA

    data = _graph()
    out1 = ARCAlign(d=64).align(data.x, data.edge_index)
    data.y = 1 - data.y  # labels must not matter
    out2 = ARCAlign(d=64)(data).x
    assert out1.shape == (120, 64) and out1.dtype == torch.float32
    assert torch.equal(out1, out2)
    # the columns are exactly the PCA columns (computed in float64, as align does), permuted
    pca = torch.from_numpy(PCA(64, random_state=0).fit_transform(data.x.double().numpy())).float()  # in float64
    match = (out1[:, :, None] - pca[:, None, :]).abs().amax(0) < 1e-4   # [out col, pca col]
    assert match.sum(1).eq(1).all() and match.sum(0).eq(1).all()


def test_align_sorts_columns_by_ascending_smoothness():
    data = _graph(seed=3)
    align = ARCAlign(d=64)
    out = align.align(data.x, data.edge_index)
    s = smoothness(out, simple_undirected(data.edge_index, data.num_nodes, self_loops=False))
    assert (s[1:] >= s[:-1] - 1e-6).all()
    assert torch.allclose(s, align.smoothness_, atol=1e-6)
    assert s[0] < s[-1]


def test_smoothness_on_a_hand_example():
    # path 0-1-2-3: column 0 alternates (rough), column 1 increases (smooth), column 2 constant
    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    x = torch.tensor([[0.0, 0.0, 5.0], [1.0, 1.0, 5.0], [0.0, 2.0, 5.0], [1.0, 3.0, 5.0]])
    s = smoothness(x, ei)
    assert torch.allclose(s, torch.tensor([1.0, 1.0 / 9.0, 0.0]))


def test_align_low_dimensional_features_use_the_random_projection():
    data = _graph(f=10)
    out = ARCAlign(d=64).align(data.x, data.edge_index)
    assert out.shape == (120, 64) and torch.isfinite(out).all()
    assert torch.equal(out, ARCAlign(d=64).align(data.x, data.edge_index))


def test_align_small_graph_pads_zero_columns_last():
    data = _graph(n=40, f=80)
    out = ARCAlign(d=64).align(data.x, data.edge_index)
    assert out.shape == (40, 64)
    assert out[:, 40:].abs().sum() == 0 and (out[:, :40].abs().sum(0) > 0).all()


def test_row_normalisation_flag_and_metadata():
    data = _graph()
    data.x = data.x.abs()
    data.x[0] = 0.0  # a zero row stays zero
    xn = normalize_rows(data.x)
    assert torch.allclose(xn[1:].sum(1), torch.ones(119)) and xn[0].abs().sum() == 0
    ref = ARCAlign().align(xn, data.edge_index)
    data.row_normalize = True
    assert torch.equal(ARCAlign()(data).x, ref)
    assert graph_flag(data, "row_normalize", False, default=False) is False   # explicit value wins
    assert graph_flag(Data(), "self_loops", None, default=True) is True
    with pytest.raises(TypeError, match="row_normalize"):
        graph_flag(Data(row_normalize="yes"), "row_normalize", None, default=False)


def test_arc_features_cache_is_invalidated_by_in_place_changes():
    data = _graph()
    a = arc_features(data.x, data.edge_index, num_hops=2)
    assert arc_features(data.x, data.edge_index, num_hops=2) is a
    data.x.mul_(2.0).add_(torch.linspace(0, 1, 80))
    b = arc_features(data.x, data.edge_index, num_hops=2)
    assert b is not a and not torch.allclose(a, b)
    assert a.shape == (3, 120, 64)


# -- encoder and scoring ---------------------------------------------------------------------------
@pytest.mark.parametrize("self_loops", [True, False])
def test_residual_embeddings_match_a_dense_reference(self_loops):
    data = _graph(n=50)
    torch.manual_seed(0)
    model = ARCModel(in_channels=80, **TINY).eval()
    h = model(data.x, data.edge_index, self_loops=self_loops)
    a = _dense_sym(data.edge_index, 50, self_loops)
    xs = [data.x, a @ data.x, a @ a @ data.x]

    def mlp(x):
        return model.lins[1](F.elu(model.lins[0](x)))

    ref = torch.cat([mlp(xs[1]) - mlp(xs[0]), mlp(xs[2]) - mlp(xs[0])], dim=1)
    assert h.shape == (50, 2 * 16)
    assert torch.allclose(h, ref, atol=1e-5)
    # node-wise encoder: a row subset encodes to the same rows, chunking changes nothing
    xs = torch.stack(xs)
    idx = torch.tensor([3, 7, 11])
    assert torch.allclose(model.encode(xs[:, idx]), ref[idx], atol=1e-5)
    assert torch.allclose(model.encode(xs, chunk_size=7), ref, atol=1e-5)


def test_default_architecture_is_arc_10():
    model = ARCModel()
    assert [tuple(lin.weight.shape) for lin in model.lins] == [(1024, 64), (1024, 1024), (1024, 1024)]
    assert model.W_q.weight.shape == (2048, 2048)
    assert abs(sum(p.numel() for p in model.parameters()) / 1e6 - 10.56) < 0.01


def test_encoder_input_errors():
    model = ARCModel(in_channels=8, **TINY)
    with pytest.raises(ValueError, match="in_channels"):
        model.encode(torch.zeros(3, 5, 9))
    with pytest.raises(ValueError, match="3 propagated"):
        model.encode(torch.zeros(2, 5, 8))
    with pytest.raises(ValueError, match="context"):
        model.score(torch.zeros(4, 32), torch.zeros(0, 32))
    with pytest.raises(ValueError, match="num_layers"):
        ARCModel(num_layers=0)


def test_cross_attention_on_a_hand_example():
    model = ARCModel(in_channels=2, hidden_channels=1, num_layers=1, num_hops=2)
    with torch.no_grad():
        for lin in (model.W_q, model.W_k):
            lin.weight.copy_(torch.eye(2))
            lin.bias.zero_()
    q = torch.tensor([[1.0, 0.0]])
    ctx = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    w = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    rec = model.reconstruct(q, ctx)
    assert torch.allclose(rec, torch.tensor([[w, 1 - w]]))
    assert torch.allclose(model.score(q, ctx), torch.tensor([math.hypot(1 - w, 1 - w)]))


def test_reconstruction_equals_the_plain_attention_formula():
    torch.manual_seed(1)
    model = ARCModel(in_channels=4, hidden_channels=6, num_layers=2, num_hops=2)
    with torch.no_grad():
        model.W_q.bias.normal_()
        model.W_k.bias.normal_()
    hq, hc = torch.randn(9, 12), torch.randn(5, 12)
    attn = torch.softmax(model.W_q(hq) @ model.W_k(hc).t() / math.sqrt(12), dim=1)
    assert torch.allclose(model.reconstruct(hq, hc), attn @ hc, atol=1e-5)


def test_loss_on_a_hand_checked_example():
    hn = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    rn = torch.tensor([[2.0, 0.0], [1.0, 0.0]])        # cos 1 and 0 -> (0 + 1) / 2
    ha = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    ra = torch.tensor([[1.0, 1.0], [-1.0, 0.0]])       # cos 1/sqrt2 and -1 -> (0.7071 + 0) / 2
    expected = 0.5 + (1 / math.sqrt(2)) / 2
    assert arc_loss(hn, rn, ha, ra).item() == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="anomalous"):
        arc_loss(hn, rn, ha[:0], ra[:0])


# -- episodes and training ---------------------------------------------------------------------------
def test_episode_sampling():
    y = torch.zeros(100, dtype=torch.long)
    y[::10] = 1
    a, n, c = sample_episode(y, 10, episode_generator(0, 0, 0))
    assert torch.equal(a, (y == 1).nonzero().flatten())
    assert n.numel() == 10 and c.numel() == 10 and (y[n] == 0).all() and (y[c] == 0).all()
    assert not set(n.tolist()) & set(c.tolist())
    _, n2, c2 = sample_episode(y, 10, episode_generator(0, 0, 0))
    assert torch.equal(n, n2) and torch.equal(c, c2)
    _, n3, _ = sample_episode(y, 10, episode_generator(0, 1, 0))
    assert not torch.equal(n, n3)
    a4, n4, _ = sample_episode(y, 10, episode_generator(0, 0, 0), max_queries=4)
    assert a4.numel() == 4 and n4.numel() == 4 and (y[a4] == 1).all()
    with pytest.raises(ValueError, match="no anomalies"):
        sample_episode(torch.zeros(20, dtype=torch.long), 5, episode_generator(0, 0, 0))
    with pytest.raises(ValueError, match="context"):
        sample_episode(y, 81, episode_generator(0, 0, 0))


def _fixed_episode_loss(model, sources):
    a, n, c = sample_episode(sources.labels[0], 10, episode_generator(123, 0, 0))
    xs = sources.features[0]
    with torch.no_grad():
        return model.loss(model.encode(xs[:, n]), model.encode(xs[:, a]), model.encode(xs[:, c])).item()


def test_training_reduces_the_loss():
    graphs = [_graph(seed=1), _graph(seed=2, n=150)]
    sources = prepare_sources(graphs, d=16)
    assert isinstance(sources, ARCSources) and sources.features[1].shape == (3, 150, 16)
    torch.manual_seed(0)
    init = ARCModel(in_channels=16, **TINY)
    before = _fixed_episode_loss(init, sources)
    model = pretrain_arc(sources, epochs=10, seed=0, lr=1e-2, model=init, progress_bar=False)
    assert _fixed_episode_loss(model, sources) < before - 0.2
    assert not model.training and next(model.parameters()).device.type == "cpu"


def test_training_writes_logs_checkpoints_and_the_model(tmp_path):
    model = pretrain_arc([_graph(seed=1)], epochs=2, seed=0, d=16, out_dir=tmp_path, progress_bar=False, **TINY)
    metrics = list((tmp_path / "logs").rglob("metrics.csv"))
    assert metrics and "train_loss_epoch" in metrics[0].read_text()
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()
    assert torch.equal(ARCModel.from_pretrained(tmp_path / "model").lins[0].weight, model.lins[0].weight)


def test_pretraining_is_deterministic_for_a_seed():
    graphs = [_graph(seed=4)]
    kw = dict(epochs=2, d=16, lr=1e-3, progress_bar=False, **TINY)
    m1, m2 = pretrain_arc(graphs, seed=5, **kw), pretrain_arc(graphs, seed=5, **kw)
    m3 = pretrain_arc(graphs, seed=6, **kw)
    for (k, v1), v2, v3 in zip(m1.state_dict().items(), m2.state_dict().values(), m3.state_dict().values()):
        assert torch.equal(v1, v2), k
    assert not torch.equal(m1.lins[0].weight, m3.lins[0].weight)


def test_pretraining_input_errors():
    g = _graph()
    with pytest.raises(ValueError, match="no labels"):
        pretrain_arc([Data(x=g.x, edge_index=g.edge_index)], epochs=1, progress_bar=False, **TINY)
    with pytest.raises(ValueError, match="binary"):
        pretrain_arc([g], label=[g.y * 2], epochs=1, progress_bar=False, **TINY)
    with pytest.raises(ValueError, match="epochs"):
        pretrain_arc([g], epochs=0)
    with pytest.raises(ValueError, match="at least one"):
        pretrain_arc([], epochs=1)


# -- detector API ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    return ARC(seed=0, epochs=2, lr=1e-3, d=16, **TINY).fit([_graph(seed=7)])


def test_decision_function_shapes_and_support_handling(fitted):
    target = _graph(seed=8, n=90, f=30)
    support = torch.tensor([0, 2, 4, 6, 8])
    mask = torch.zeros(90, dtype=torch.bool)
    mask[support] = True
    s = fitted.decision_function(target, support_normal=support)
    assert s.shape == (90,) and torch.isfinite(s).all()
    assert torch.equal(s, fitted.decision_function(target, support_normal=mask))
    # anomalous support is ignored; every node is scored, the support included
    assert torch.equal(s, fitted.decision_function(target, support_normal=support, support_anomaly=[1, 3]))
    h = fitted.embed(target)
    assert torch.allclose(s, fitted.model_.score(h, h[support]))
    assert fitted.regime_ == "normal-k" and fitted.support_anomaly_.numel() == 0
    # zero-shot: no labelled node; random context from the target, averaged over zero_shot_draws draws
    z = fitted.decision_function(target)
    assert fitted.regime_ == "zero-shot" and z.shape == (90,) and torch.isfinite(z).all()
    assert torch.equal(z, fitted.decision_function(target))                      # seeded
    assert not torch.equal(z, fitted.set_params(seed=fitted.seed + 1).decision_function(target))


def test_benchmark_mode_draws_normal_support_from_labels(fitted):
    target = _graph(seed=9, n=90)
    s1 = fitted.decision_function(target, shots_normal=10, seed=3)
    sup = fitted.support_normal_
    assert sup.numel() == 10 and (target.y[sup] == 0).all()
    assert torch.equal(s1, fitted.decision_function(target, shots_normal=10, seed=3))
    fitted.decision_function(target, shots_normal=10, seed=4)
    assert not torch.equal(sup, fitted.support_normal_)


def test_predict_follows_pygod_return_order(fitted):
    target = _graph(seed=10, n=90)
    pred, score, prob, conf = fitted.predict(target, support_normal=[0, 1, 2], return_pred=True, return_score=True,
                                             return_prob=True, return_conf=True)
    assert pred.dtype == torch.long and set(pred.unique().tolist()) <= {0, 1}
    assert torch.equal(pred, fitted.label_) and torch.equal(score, fitted.decision_score_)
    assert torch.equal(pred, (score > fitted.threshold_).long())
    assert prob.min() >= 0 and prob.max() <= 1 and conf.shape == (90,)
    assert torch.equal(fitted.predict(target, support_normal=[0, 1, 2]), pred)
    s2, p2 = fitted.predict(target, support_normal=[0, 1, 2], return_pred=False, return_score=True,
                            return_prob=True)
    assert torch.equal(s2, score) and torch.equal(p2, prob)


def test_save_load_round_trip(fitted, tmp_path):
    target = _graph(seed=11, n=90)
    fitted.save_pretrained(tmp_path / "arc", card={"note": "test"})
    loaded = ARC.from_pretrained(tmp_path / "arc", contamination=0.05)
    assert loaded.contamination == 0.05 and loaded.card_["note"] == "test"
    assert torch.equal(loaded.decision_function(target, support_normal=[5, 6, 7]),
                       fitted.decision_function(target, support_normal=[5, 6, 7]))
    with pytest.raises(ValueError, match="architecture"):
        ARC.from_pretrained(tmp_path / "arc", hidden_channels=64)


def test_unfitted_detector_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="fit"):
        ARC().decision_function(_graph(), support_normal=[0])


# -- real graph ----------------------------------------------------------------------------------------
def test_alignment_on_gad_cora(data_root):
    from omnigraph import load_dataset

    data = load_dataset("gad/cora", data_root=data_root)
    align = ARCAlign()
    out = align(data).x
    assert out.shape == (2708, 64) and torch.isfinite(out).all()
    assert (align.smoothness_[1:] >= align.smoothness_[:-1]).all()
    assert align.smoothness_[0] < align.smoothness_[-1]
