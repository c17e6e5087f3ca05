"""REFI-GAD scorer, episodic training and the detector API."""
import math

import pytest
import torch
import torch.nn.functional as F
from gad_helpers import hub_anomaly_graph

from omnigraph.estimators.fingerprint import FingerprintDetector
from omnigraph.estimators.refi_gad import REFIGAD
from omnigraph.models.fingerprint import clear_fingerprint_cache, graph_fingerprint
from omnigraph.models.refi_gad import REFIGADNet, pool_moments, snr_statistic, support_query_mask
from omnigraph.training.episodes import episode_generator
from omnigraph.training.refi_gad import EpisodeDataset, pretrain_refi_gad, sample_episode


def _tokens(k=8, b=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(k, 5, generator=g) * 100, torch.rand(k, 5, generator=g) * 100,
            torch.rand(b, 5, generator=g) * 100)


def _graph(n=200, n_anom=20, seed=0):
    return hub_anomaly_graph(n, n_anom, seed)


# -- architecture ------------------------------------------------------------------------------
def test_parameter_count_matches_spec():
    model = REFIGADNet()
    assert sum(p.numel() for p in model.parameters()) == 384 + 4 * 33472 + 4096 + 128 + 1
    assert torch.allclose(model.logit_scale.exp(), torch.tensor(1 / 0.07))
    assert torch.equal(model.snr_lambda, torch.ones(64)) and torch.equal(model.snr_beta, torch.zeros(64))


def test_mask_layout():
    m = support_query_mask(3, 2)
    assert m.shape == (5, 5)
    assert (m[:3, :3] == 0).all() and torch.isinf(m[:3, 3:]).all()          # supports: supports only
    assert (m[3:, :3] == 0).all() and m[3, 3] == 0 and m[4, 4] == 0          # queries: supports + self
    assert torch.isinf(m[3, 4]) and torch.isinf(m[4, 3])


def test_structured_attention_equals_masked_transformer():
    model = REFIGADNet().eval()
    p_n, p_a, p_q = _tokens()
    with torch.no_grad():
        fast = model.encode(p_n, p_a, p_q)
        model.attention = "masked"
        ref = model.encode(p_n, p_a, p_q)
    for a, b in zip(fast, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # gradients agree too (dropout off; float64 so that only the algebra is compared)
    model = REFIGADNet(dropout=0.0).double().train()
    grads = []
    for mode in ("structured", "masked"):
        model.attention = mode
        model.zero_grad()
        model(p_n.double(), p_a.double(), p_q.double()).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("attention", ["structured", "masked"])
def test_query_score_does_not_depend_on_other_queries(attention):
    model = REFIGADNet(attention=attention).eval()
    p_n, p_a, p_q = _tokens(b=12)
    other = p_q.clone()
    other[1:] = torch.rand(11, 5) * 100
    moments = (torch.zeros(64), torch.ones(64))  # a fixed SNR pool isolates the encoder
    with torch.no_grad():
        s1 = model(p_n, p_a, p_q, ref_moments=moments)
        s2 = model(p_n, p_a, other, ref_moments=moments)
        s3 = model(p_n, p_a, p_q[:1], ref_moments=moments)
    assert torch.allclose(s1[0], s2[0], atol=1e-6) and torch.allclose(s1[0], s3[0], atol=1e-6)
    assert not torch.allclose(s1[1:], s2[1:])


def test_snr_gate_and_vote_math():
    torch.manual_seed(0)
    model = REFIGADNet().eval()
    with torch.no_grad():
        model.snr_lambda.uniform_(-1, 2)
        model.snr_beta.uniform_(-1, 1)
    p_n, p_a, p_q = _tokens(k=6, b=9)
    with torch.no_grad():
        h_n, h_a, h_q = model.encode(p_n, p_a, p_q)
        ref = torch.cat([h_n, h_q])
        mu, var = ref.mean(0), ((ref - ref.mean(0)) ** 2).mean(0)   # population variance
        snr = (h_a.mean(0) - mu) ** 2 / (var + 1e-6)
        assert torch.allclose(snr_statistic(h_a, *pool_moments(ref)), snr)
        gate = 1 / (1 + torch.exp(-(model.snr_lambda * snr + model.snr_beta)))
        assert torch.allclose(model.gate(snr), gate)
        z = [F.normalize((h * gate) @ model.proj.weight.T, dim=1) for h in (h_n, h_a, h_q)]
        sims = z[2] @ torch.cat(z[:2]).T * model.logit_scale.exp()
        alpha = torch.softmax(sims, 1)
        want = 0.5 * (1 + alpha[:, 6:].sum(1) - alpha[:, :6].sum(1))
        got = model(p_n, p_a, p_q)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert ((got >= 0) & (got <= 1)).all()


def test_global_pool_is_chunk_and_order_free_batch_pool_is_not():
    model = REFIGADNet().eval()
    p_n, p_a, p_q = _tokens(b=300)
    a = model.score_nodes(p_n, p_a, p_q, chunk_size=300)
    b = model.score_nodes(p_n, p_a, p_q, chunk_size=37)
    perm = torch.randperm(300)
    c = model.score_nodes(p_n, p_a, p_q[perm], chunk_size=64)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a[perm], c, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        torch.testing.assert_close(a, model(p_n, p_a, p_q), rtol=1e-5, atol=1e-6)
        legacy = model.score_nodes(p_n, p_a, p_q, chunk_size=37, snr_pool="batch")
        torch.testing.assert_close(legacy[:37], model(p_n, p_a, p_q[:37]))
    assert not torch.allclose(legacy, a, atol=1e-6)


def test_loss_variants():
    score = torch.tensor([0.2, 0.9, 0.6])
    y = torch.tensor([0, 1, 0])
    want = -(math.log(0.8) + 4 * math.log(0.9) + math.log(0.4)) / 3
    assert math.isclose(REFIGADNet.loss(score, y).item(), want, rel_tol=1e-5)
    legacy = F.binary_cross_entropy_with_logits(score, y.float(), pos_weight=torch.tensor(4.0))
    assert torch.allclose(REFIGADNet.loss(score, y, legacy_logit_bce=True), legacy)


def test_bad_inputs():
    model = REFIGADNet()
    p_n, p_a, p_q = _tokens()
    with pytest.raises(ValueError, match="p_query"):
        model(p_n, p_a, p_q[:, :4])
    with pytest.raises(ValueError, match="anomalous support"):
        model(p_n, p_a[:0], p_q)
    with pytest.raises(ValueError, match="snr_pool"):
        model.score_nodes(p_n, p_a, p_q, snr_pool="chunk")
    with pytest.raises(ValueError, match="attention"):
        REFIGADNet(attention="sparse")


# -- training ----------------------------------------------------------------------------------
def test_sample_episode_sizes_and_replacement():
    y = torch.zeros(300, dtype=torch.long)
    y[:30] = 1
    s_n, s_a, q, y_q = sample_episode(y, 10, 100, 15, episode_generator(0, 0, 0))
    assert s_n.numel() == 10 and s_a.numel() == 10 and q.numel() == 115
    assert (y[s_n] == 0).all() and (y[s_a] == 1).all() and torch.equal(y[q], y_q)
    assert not set(q.tolist()) & set(s_n.tolist()) | set(s_a.tolist()) & set(q.tolist())
    assert s_a.unique().numel() == 10
    # fewer anomalies than shots: drawn with replacement, queries from the undrawn ones
    s_n, s_a, q, y_q = sample_episode(y, 50, 100, 50, episode_generator(0, 0, 1))
    assert s_a.numel() == 50 and s_a.unique().numel() < 30
    assert int(y_q.sum()) == 30 - s_a.unique().numel()
    again = sample_episode(y, 50, 100, 50, episode_generator(0, 0, 1))
    assert all(torch.equal(a, b) for a, b in zip((s_n, s_a, q, y_q), again))
    with pytest.raises(ValueError, match="no anomalies"):
        sample_episode(torch.zeros(10, dtype=torch.long), 2, 5, 5, episode_generator(0, 0, 0))


def test_a_few_episodes_reduce_the_loss():
    """Anomalies have high values in column 0: a short Adam run must lower the held-out loss."""
    g = torch.Generator().manual_seed(0)
    y = (torch.rand(2000, generator=g) < 0.1).long()
    p = torch.rand(2000, 5, generator=g) * 100
    p[:, 0] = torch.where(y == 1, 60 + 40 * torch.rand(2000, generator=g), 70 * torch.rand(2000, generator=g))
    data = EpisodeDataset([p], [y], episodes_per_graph=1, shots=20, num_query_normal=200, num_query_anomaly=20)
    torch.manual_seed(0)
    model = REFIGADNet(dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def held_out():
        data.set_epoch(10_000)
        with torch.no_grad():
            p_n, p_a, p_q, y_q = data[0]
            return REFIGADNet.loss(model(p_n, p_a, p_q), y_q).item()

    before = held_out()
    for step in range(20):
        data.set_epoch(step)
        p_n, p_a, p_q, y_q = data[0]
        loss = REFIGADNet.loss(model(p_n, p_a, p_q), y_q)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert held_out() < 0.6 * before


def test_pretrain_is_deterministic_and_writes_logs(tmp_path):
    graphs = [_graph(seed=1), _graph(seed=2)]
    kw = {"epochs": 2, "episodes_per_graph": 3, "shots": 5, "num_query_normal": 40, "num_query_anomaly": 8,
          "seed": 3, "progress_bar": False}
    m1 = pretrain_refi_gad(graphs, out_dir=tmp_path, **kw)
    m2 = pretrain_refi_gad(graphs, **kw)
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(a, b), k
    assert not torch.equal(m1.embed.weight, REFIGADNet().embed.weight)
    assert list((tmp_path / "logs").rglob("metrics.csv"))
    assert (tmp_path / "model" / "model.safetensors").is_file()
    assert list((tmp_path / "checkpoints").glob("*.ckpt"))


# -- detector API ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    return REFIGAD(epochs=3, episodes_per_graph=4, shots=5, num_query_normal=60, num_query_anomaly=10,
                   seed=0).fit([_graph(seed=1), _graph(seed=2)])


def test_detector_scores_predict_flags_and_roundtrip(fitted, tmp_path):
    target = _graph(seed=5)
    sn, sa = torch.arange(5), torch.arange(190, 195)
    score = fitted.decision_function(target, support_normal=sn, support_anomaly=sa)
    assert score.shape == (200,) and torch.isfinite(score).all()
    assert fitted.regime_ == "normal+anomaly-k"
    assert fitted.label_.sum() == (score > fitted.threshold_).sum()
    sup = {"support_normal": sn, "support_anomaly": sa}
    pred = fitted.predict(target, **sup)
    assert pred.dtype == torch.long and set(pred.unique().tolist()) <= {0, 1}
    pred, s, prob, conf = fitted.predict(target, return_score=True, return_prob=True, return_conf=True, **sup)
    assert torch.equal(s, score) and prob.min() >= 0 and prob.max() <= 1 and conf.shape == (200,)
    # pygod's positional order: (data, label, return_pred, return_score, return_prob, prob_method, return_conf)
    p2, s3, prob3 = fitted.predict(target, None, True, True, True, "linear", False, **sup)
    assert torch.equal(p2, pred) and torch.equal(s3, score) and torch.equal(prob3, prob)
    with pytest.raises(ValueError, match=r"label must have shape \[200\]"):
        fitted.predict(target, sn, sa)      # supports are keyword-only: here sn is pygod's label
    s2, prob2 = fitted.predict(target, return_pred=False, return_score=True, return_prob=True,
                               prob_method="unify", **sup)
    assert torch.equal(s2, score) and prob2.shape == (200,)
    mask_n = torch.zeros(200, dtype=torch.bool)
    mask_n[sn] = True
    assert torch.equal(fitted.decision_function(target, support_normal=mask_n, support_anomaly=sa), score)
    fitted.save_pretrained(tmp_path / "ckpt", card={"sources": ["synthetic"]})
    again = REFIGAD.from_pretrained(tmp_path / "ckpt")
    assert again.card_["sources"] == ["synthetic"]
    assert torch.allclose(again.decision_function(target, support_normal=sn, support_anomaly=sa), score)
    legacy = REFIGAD.from_pretrained(tmp_path / "ckpt", snr_pool="batch", chunk_size=64)
    assert not torch.equal(legacy.decision_function(target, support_normal=sn, support_anomaly=sa), score)
    with pytest.raises(ValueError, match="differ from the checkpoint"):
        REFIGAD.from_pretrained(tmp_path / "ckpt", d_model=32)


def test_detector_support_rules(fitted):
    target = _graph(seed=6)
    # one support set missing: filled with pseudo-supports from the target (normal-k), never from labels
    s = fitted.decision_function(target, support_normal=torch.arange(5))
    assert fitted.regime_ == "normal-k" and torch.isfinite(s).all()
    assert fitted.pseudo_support_anomaly_.numel() == 20 and not torch.isin(fitted.pseudo_support_anomaly_,
                                                                            torch.arange(5)).any()
    with pytest.raises(ValueError, match="both"):
        fitted.decision_function(target, support_normal=torch.arange(5), support_anomaly=torch.tensor([4, 190]))
    with pytest.raises(ValueError, match="only 20 anomalous"):
        fitted.decision_function(target, shots_normal=5, shots_anomaly=20)
    a = fitted.decision_function(target, shots_normal=10, shots_anomaly=5, seed=1)
    sa = fitted.support_anomaly_
    b = fitted.decision_function(target, shots_normal=10, shots_anomaly=5, seed=1)
    assert torch.equal(a, b) and torch.equal(sa, fitted.support_anomaly_) and (target.y[sa] == 1).all()
    # scores separate the planted anomalies
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(target.y.numpy(), a.numpy()) > 0.8


def test_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        REFIGAD().decision_function(_graph(), support_normal=torch.arange(3), support_anomaly=torch.tensor([199]))


def test_fingerprint_detectors():
    target = _graph(seed=7)
    sn, sa = torch.arange(10), torch.arange(190, 195)
    det = FingerprintDetector()
    both = det.decision_function(target, support_normal=sn, support_anomaly=sa)
    assert det.regime_ == "normal+anomaly-k"
    normal_only = det.decision_function(target, support_normal=sn)
    assert det.regime_ == "normal-k" and not torch.allclose(both, normal_only)
    p = det.fingerprint(target)
    unit = F.normalize(p, dim=1)
    want = (unit @ unit[sa].T).mean(1) - (unit @ unit[sn].T).mean(1)
    torch.testing.assert_close(both, want)
    col = FingerprintDetector(column="degree")
    s = col.decision_function(target, support_normal=sn, support_anomaly=sa)
    assert col.sign_ == 1 and torch.equal(s, p[:, 3])  # planted anomalies are hubs
    with pytest.raises(ValueError, match="anomalous support"):
        col.decision_function(target, support_normal=sn)
    zero = FingerprintDetector(column="lc", sign=-1)
    assert torch.equal(zero.decision_function(target), -p[:, 4]) and zero.regime_ == "zero-shot"
    with pytest.raises(ValueError, match="sign"):
        FingerprintDetector(sign=1).fit()


def test_fingerprint_cache_hits_invalidates_and_clears():
    g = _graph(seed=3)
    first = graph_fingerprint(g)
    assert graph_fingerprint(g) is first                           # same graph, same settings: cached
    assert graph_fingerprint(g, ties="ordinal") is not first       # other settings: recomputed
    clear_fingerprint_cache()
    again = graph_fingerprint(g)
    assert again is not first and torch.equal(again, first)        # cleared: recomputed, same values
    g.x.mul_(2.0)                                                  # in-place edit bumps the version
    assert graph_fingerprint(g) is not again


def test_shipped_checkpoint_on_facebook(data_root):
    import json

    from omnigraph.hub import pretrained_dir

    if "refi-gad" not in json.loads((pretrained_dir() / "registry.json").read_text()):
        pytest.skip("no shipped refi-gad checkpoint in this checkout")
    from omnigraph.benchmark.gad import PROTOCOLS, load_gad
    from omnigraph.benchmark.gad_metrics import metrics, support_mask

    det = REFIGAD.from_pretrained("refi-gad")
    assert det.card_.get("sources") and not set(det.card_["sources"]) & set(PROTOCOLS["reduced-v1"]["targets"])
    assert det.card_["seed"] == 0 and "command" in det.card_ and "metrics" in det.card_
    data = load_gad("gad/facebook")
    score = det.decision_function(data, shots_normal=10, shots_anomaly=10, seed=0)
    auroc, _ = metrics(data.y, score, support_mask(data.num_nodes, det.support_normal_, det.support_anomaly_))
    assert auroc > 0.8
