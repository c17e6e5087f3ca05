"""RGVT estimator: adaptation protocols, label hygiene, determinism, input checks, persistence."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from rgvt_helpers import planted_graph
from sklearn.exceptions import NotFittedError
from tolerance import assert_all_same_up_to_kernel

from omnigraph import RGVT
from omnigraph.estimators.rgvt_adapt import adapt, ridge_depth_scores
from omnigraph.hub import publish
from omnigraph.models.rgvt import RGVTEncoder
from omnigraph.models.rgvt_head import RGVTHead, train_heads

# small budgets keep every fit well under a second
FAST = {"depths": (1, 2, 3), "max_epochs": 60, "patience": 15}


def _encoder(seed: int = 0) -> RGVTEncoder:
    enc = RGVTEncoder()
    enc.reset_parameters(torch.Generator().manual_seed(seed))
    return enc


def _head_params(clf: RGVT) -> list[torch.Tensor]:
    return [p.detach().clone() for p in clf.head_.parameters()]


@pytest.fixture(scope="module")
def graph():
    return planted_graph(n=90, num_classes=3, f=16, seed=0)


@pytest.mark.parametrize("protocol", ["fast", "reference"])
def test_fit_predict_score_transform(graph, protocol):
    clf = RGVT(_encoder(), protocol=protocol, seed=0, **FAST).fit(graph)
    assert clf.depth_ in (1, 2, 3) and clf.n_classes_ == 3 and clf.n_features_in_ == 16
    assert set(clf.depth_scores_) == {1, 2, 3} and len(clf.depth_results_) == 3
    assert 0.0 <= clf.val_accuracy_ <= 1.0 and clf.epochs_ > 0
    pred, proba = clf.predict(graph), clf.predict_proba(graph)
    assert pred.shape == (90,) and proba.shape == (90, 3)
    torch.testing.assert_close(proba.sum(1), torch.ones(90))
    assert torch.equal(proba.argmax(1), pred)
    # the stored validation accuracy is the head's accuracy on the validation nodes
    assert abs(clf.score(graph, mask=graph.val_mask) - clf.val_accuracy_) < 1e-6
    assert clf.score(graph) > 0.6   # planted classes are easy: well above chance (1/3)
    z = clf.transform(graph)
    assert z.shape == graph.x.shape
    with torch.no_grad():
        assert torch.equal(z, clf.encoder(graph.x, graph.edge_index, depth=clf.depth_))
    assert torch.equal(clf.transform(graph, depth=0), graph.x)


def test_reference_chooses_the_best_validation_depth(graph):
    clf = RGVT(_encoder(), protocol="reference", **FAST).fit(graph)
    scores = [clf.depth_scores_[d] for d in (1, 2, 3)]
    assert clf.depth_scores_[clf.depth_] == max(scores)
    assert clf.depth_ == (1, 2, 3)[scores.index(max(scores))]   # ties: smallest depth
    assert clf.val_accuracy_ == max(scores)


@pytest.mark.parametrize("protocol", ["fast", "reference"])
def test_fit_never_reads_test_labels(graph, protocol):
    scrambled = copy.copy(graph)
    y = graph.y.clone()
    test = graph.test_mask
    y[test] = (y[test] + 1 + torch.arange(int(test.sum())) % 2) % 3   # every test label changed
    scrambled.y = y
    scrambled.y[test.nonzero()[:3].flatten()] = -1                     # even invalid ones
    a = RGVT(_encoder(), protocol=protocol, seed=3, **FAST).fit(graph)
    b = RGVT(_encoder(), protocol=protocol, seed=3, **FAST).fit(scrambled)
    assert a.depth_ == b.depth_ and a.depth_scores_ == b.depth_scores_ and a.best_epoch_ == b.best_epoch_
    assert all(torch.equal(p, q) for p, q in zip(_head_params(a), _head_params(b)))
    assert torch.equal(a.predict(graph), b.predict(scrambled))


def test_same_seed_same_numbers_other_seed_other_head(graph):
    runs = [RGVT(_encoder(), seed=s, **FAST).fit(graph) for s in (5, 5, 6)]
    assert all(torch.equal(p, q) for p, q in zip(_head_params(runs[0]), _head_params(runs[1])))
    assert torch.equal(runs[0].predict_proba(graph), runs[1].predict_proba(graph))
    assert not torch.equal(_head_params(runs[0])[0], _head_params(runs[2])[0])


def test_fast_trains_the_reference_head_of_its_depth(graph):
    """Fast mode draws the head the reference protocol draws for the chosen depth: with the same
    patience the two runs of that head coincide (same best epoch and validation accuracy)."""
    kw = {"depths": (1, 2, 3), "max_epochs": 40, "patience": 40, "seed": 1}
    fast = RGVT(_encoder(), protocol="fast", **kw).fit(graph)
    ref = RGVT(_encoder(), protocol="reference", **kw).fit(graph)
    same_depth = ref.depth_results_[fast.depth_ - 1]
    assert (same_depth["best_epoch"], same_depth["val_accuracy"]) == (fast.best_epoch_, fast.val_accuracy_)
    assert fast.epochs_ < ref.epochs_


def test_default_protocols_share_the_head_recipe(graph):
    """With the defaults (patience 200 for both protocols) the two protocols train the same head
    for a depth they agree on: identical predicted probabilities."""
    kw = {"depths": (1,), "max_epochs": 400, "seed": 2}
    fast = RGVT(_encoder(), protocol="fast", **kw).fit(graph)
    ref = RGVT(_encoder(), protocol="reference", **kw).fit(graph)
    assert fast.epochs_ == ref.epochs_ > 200   # patience 200 (or the budget), not a shorter one
    assert torch.equal(fast.predict_proba(graph), ref.predict_proba(graph))


def test_fast_early_stopping_on_a_validation_subset(graph, monkeypatch):
    """Above FAST_STOP_ROWS validation nodes, fast mode stops on a fixed subset of that size:
    reproducible, and val_accuracy_ is the accuracy on that subset (the depth used every node)."""
    import omnigraph.estimators.rgvt_adapt as rgvt_module

    kw = {"depths": (1,), "max_epochs": 60, "patience": 10, "seed": 0}
    n_val = int(graph.val_mask.sum())
    watched = []

    def spy(heads, z_train, y_train, z_val, y_val, **settings):
        watched.append(y_val.numel())
        return train_heads(heads, z_train, y_train, z_val, y_val, **settings)

    monkeypatch.setattr(rgvt_module, "train_heads", spy)
    RGVT(_encoder(), **kw).fit(graph)
    monkeypatch.setattr(rgvt_module, "FAST_STOP_ROWS", n_val // 3)
    runs = [RGVT(_encoder(), **kw).fit(graph) for _ in range(2)]
    assert watched == [n_val, n_val // 3, n_val // 3]
    assert torch.equal(runs[0].predict_proba(graph), runs[1].predict_proba(graph))
    watched_rows = torch.randperm(n_val, generator=torch.Generator().manual_seed(0))[:n_val // 3].sort().values
    hits = runs[0].predict(graph)[graph.val_mask][watched_rows] == graph.y[graph.val_mask][watched_rows]
    assert runs[0].val_accuracy_ == pytest.approx(float(hits.float().mean()))


def test_fast_fit_scores_the_iterate_in_row_blocks(graph, monkeypatch):
    """When fit iterates depth-major in one reused buffer, the fast protocol reads the labelled rows
    in place (LabelledRows, ridge scores in row blocks) instead of copying them all: the same depth
    scores, head and predictions as from copied rows."""
    import omnigraph.estimators.rgvt_adapt as adapt_module
    from omnigraph.estimators.rgvt_adapt import (
        adapt_representations,
        inference_operators,
        labelled_representations,
        labelled_rows,
    )

    enc = _encoder().eval()
    rows, y_train, y_val = labelled_rows(graph, "cpu")
    ops = inference_operators(enc, graph, None)
    copied = labelled_representations(enc, graph.x, ops, rows, FAST["depths"])
    (want,) = adapt_representations(copied, y_train.numel(), y_train, y_val, 3, max_epochs=60, patience=15)
    reads = []
    getitem = adapt_module.LabelledRows.__getitem__
    monkeypatch.setattr(adapt_module.LabelledRows, "__getitem__", lambda self, item: reads.append(1) or getitem(self, item))
    monkeypatch.setattr(adapt_module, "RIDGE_BLOCK_ROWS", 4)
    clf = RGVT(enc, seed=0, **FAST)
    clf.keep_full_bytes = 0      # no full matrices kept: the reused depth-major buffer
    clf.fit(graph)
    assert len(reads) > 3 * 7   # row blocks of every depth were gathered from the iterate
    assert clf.depth_ == want.depth and clf.depth_scores_ == want.depth_scores
    assert all(torch.equal(p, q) for p, q in zip(clf.head_.parameters(), want.head.parameters()))
    assert torch.equal(clf.predict(graph), RGVT(enc, seed=0, **FAST).fit(graph).predict(graph))


def test_batched_head_training_equals_one_head_at_a_time():
    g = torch.Generator().manual_seed(0)
    zt, zv = torch.randn(3, 40, 12, generator=g), torch.randn(3, 30, 12, generator=g)
    yt, yv = torch.randint(0, 4, (40,), generator=g), torch.randint(0, 4, (30,), generator=g)
    heads = [RGVTHead(12, 4, hidden_channels=16, generator=g) for _ in range(3)]
    alone = copy.deepcopy(heads)
    fits = train_heads(heads, zt, yt, zv, yv, max_epochs=80, patience=10)
    assert len({f.epochs for f in fits}) > 1, "heads should stop at different epochs in this test"
    for b, head in enumerate(alone):
        opt = torch.optim.Adam(head.parameters(), lr=5e-3)
        best, wait, state = -1, 0, None
        for epoch in range(1, 81):
            opt.zero_grad()
            F.cross_entropy(head(zt[b]), yt).backward()
            opt.step()
            with torch.no_grad():
                hits = int((head(zv[b]).argmax(-1) == yv).sum())
            if hits > best:
                best, best_epoch, wait = hits, epoch, 0
                state = copy.deepcopy(head.state_dict())
            else:
                wait += 1
            if wait >= 10:
                break
        assert (fits[b].val_correct, fits[b].best_epoch, fits[b].epochs) == (best, best_epoch, epoch)
        head.load_state_dict(state)
        for p, q in zip(head.parameters(), heads[b].parameters()):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n_train", [50, 8])   # primal (n > F) and dual (n <= F) forms
def test_ridge_depth_scores_match_sklearn(n_train):
    from sklearn.linear_model import RidgeClassifier

    from omnigraph.estimators.rgvt_adapt import RIDGE_ALPHAS

    g = torch.Generator().manual_seed(1)
    y = torch.arange(80) % 3
    noise = torch.randn(80, 10, generator=g, dtype=torch.float64) + 2.0
    informative = noise * 0.3 + F.one_hot(y, 3).double() @ torch.randn(3, 10, generator=g, dtype=torch.float64)
    z = torch.stack([noise, informative])
    scores = ridge_depth_scores(z[:, :n_train], y[:n_train], z[:, n_train:], y[n_train:], 3)
    for depth in range(2):
        zt = z[depth, :n_train].numpy()
        scale = ((zt - zt.mean(0)) ** 2).sum() / n_train
        hits = [int((RidgeClassifier(alpha=a * scale).fit(zt, y[:n_train].numpy()).predict(z[depth, n_train:].numpy())
                     == y[n_train:].numpy()).sum()) for a in RIDGE_ALPHAS]
        assert scores[depth] == max(hits)
    if n_train == 50:
        assert scores[1] > scores[0]


@pytest.mark.parametrize("protocol", ["fast", "reference"])
def test_adapt_several_seeds_in_one_batch(graph, protocol):
    kw = {"protocol": protocol, "depths": (1, 2), "max_epochs": 30, "patience": 10}
    many = adapt(_encoder(), graph, seeds=(0, 1), **kw)
    one = adapt(_encoder(), graph, seeds=(1,), **kw)
    assert [r.seed for r in many] == [0, 1]
    assert many[1].depth == one[0].depth and many[1].depth_scores == one[0].depth_scores
    for p, q in zip(many[1].head.parameters(), one[0].head.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("protocol", ["fast", "reference"])
def test_fit_seeds_fits_each_seed_as_fit_would(graph, protocol):
    base = RGVT(_encoder(), protocol=protocol, seed=7, **FAST)
    fitted = base.fit_seeds(graph, [0, 3])
    assert [c.seed for c in fitted] == [0, 3] and base.seed == 7 and not hasattr(base, "head_")
    assert fitted[0].encoder_ is fitted[1].encoder_       # one encoder pass, shared by the copies
    for clf in fitted:
        alone = RGVT(_encoder(), protocol=protocol, seed=clf.seed, **FAST).fit(graph)
        assert clf.depth_ == alone.depth_ and clf.depth_scores_ == alone.depth_scores_
        assert (clf.best_epoch_, clf.epochs_) == (alone.best_epoch_, alone.epochs_)
        # batched against single heads: the same trajectory up to rounding (tests/tolerance.py)
        torch.testing.assert_close(clf.decision_function(graph), alone.decision_function(graph), rtol=1e-4,
                                   atol=1e-5)
    assert not torch.equal(fitted[0].head_.lins[0].weight, fitted[1].head_.lins[0].weight)
    with pytest.raises(ValueError, match="distinct"):
        base.fit_seeds(graph, [1, 1])
    with pytest.raises(ValueError, match="distinct"):
        base.fit_seeds(graph, [])


def test_linear_head_and_explicit_num_classes(graph):
    clf = RGVT(_encoder(), head="linear", num_classes=5, **FAST).fit(graph)
    assert len(clf.head_.lins) == 1 and clf.predict_proba(graph).shape == (90, 5)
    with pytest.raises(ValueError, match="num_classes=2"):
        RGVT(_encoder(), num_classes=2, **FAST).fit(graph)


def test_input_errors(graph):
    clf = RGVT(_encoder(), **FAST)
    with pytest.raises(NotFittedError, match="not fitted"):
        clf.predict(graph)
    for field in ("train_mask", "val_mask", "y"):
        bad = copy.copy(graph)
        delattr(bad, field)
        with pytest.raises(ValueError, match=field.split("_")[0]):
            clf.fit(bad)
    empty = copy.copy(graph)
    empty.train_mask = torch.zeros(90, dtype=torch.bool)
    with pytest.raises(ValueError, match="train_mask selects no nodes"):
        clf.fit(empty)
    two_d = copy.copy(graph)
    two_d.val_mask = graph.val_mask[:, None].repeat(1, 2)
    with pytest.raises(ValueError, match="val_mask"):
        clf.fit(two_d)
    no_x = copy.copy(graph)
    no_x.x = None
    with pytest.raises(ValueError, match="data.x"):
        clf.fit(no_x)
    with pytest.raises(TypeError, match="data.y"):
        clf.fit(graph, graph.y)
    clf.fit(graph)
    other = planted_graph(n=30, f=7, seed=2)
    with pytest.raises(ValueError, match="7 features"):
        clf.predict(other)
    with pytest.raises(ValueError, match="mask"):
        clf.score(graph, mask=torch.zeros(90, dtype=torch.bool))
    for kwargs, match in (({"protocol": "slow"}, "protocol"), ({"head": "gat"}, "head"),
                          ({"depths": (0, 1)}, "depths"), ({"patience": 0}, "patience")):
        with pytest.raises(ValueError, match=match):
            RGVT(_encoder(), **kwargs).fit(graph)         # scikit-learn style: checked by fit
    with pytest.raises(TypeError, match="RGVTEncoder"):
        RGVT(torch.nn.Linear(5, 1)).fit(graph)


def test_cache_follows_in_place_edits(graph):
    data = copy.copy(graph)
    data.x = graph.x.clone()
    clf = RGVT(_encoder(), **FAST).fit(data)
    before = clf.transform(data)
    data.x.mul_(2.0)
    after = clf.transform(data)
    assert not torch.equal(before, after)


def test_persistence_round_trips(graph, tmp_path):
    enc = _encoder(7)
    RGVT(enc).save_pretrained(tmp_path / "rgvt")
    weights = publish(enc, "rgvt-tiny", {"note": "test"}, directory=tmp_path / "shipped")
    preds = []
    for source in (tmp_path / "rgvt", weights):
        clf = RGVT.from_pretrained(source, seed=2, **FAST)
        assert all(torch.equal(a, b) for a, b in zip(clf.encoder.state_dict().values(), enc.state_dict().values()))
        preds.append(clf.fit(graph).predict(graph))
    assert torch.equal(preds[0], preds[1])
    assert "protocol='fast'" in repr(clf) and clf.get_params()["seed"] == 2


def test_from_reference_npz(graph, reference_root):
    clf = RGVT.from_reference_npz(reference_root / "rgvt" / "seed_42.npz", **FAST).fit(graph)
    assert clf.encoder.mlp.lins[0].weight.shape == (5, 5) and clf.score(graph) > 0.5


def test_reference_depth_grouping_does_not_change_results(graph):
    kw = {"protocol": "reference", "depths": (1, 2, 3), "max_epochs": 30, "patience": 10, "seeds": (4,)}
    together = adapt(_encoder(), graph, **kw)[0]
    one_by_one = adapt(_encoder(), graph, group_bytes=1, **kw)[0]
    assert together.depth_results == one_by_one.depth_results


def test_fit_works_under_no_grad(graph):
    with torch.no_grad():
        clf = RGVT(_encoder(), seed=1, **FAST).fit(graph)
    ref = RGVT(_encoder(), seed=1, **FAST).fit(graph)
    assert all(torch.equal(p, q) for p, q in zip(_head_params(clf), _head_params(ref)))


def test_labelled_rows_chunk_major_equals_depth_major(graph):
    """Few labelled rows: one chunk-major pass; many: the depth-major buffer. Same numbers up to rounding."""
    from omnigraph.estimators.rgvt_adapt import labelled_representations

    enc = _encoder(2)
    ops = enc.build_operators(graph.edge_index, graph.num_nodes, transposes=False)
    few, many = torch.tensor([5, 1, 40]), torch.arange(80)
    for rows in (few, many):
        got = dict(labelled_representations(enc, graph.x, ops, rows, (1, 3, 4), chunk_size=5))
        with torch.no_grad():
            full = enc(graph.x, depth=4, operators=ops, return_all=True)
        assert sorted(got) == [1, 3, 4]
        assert_all_same_up_to_kernel([got[d] for d in got], [full[d - 1][rows] for d in got])


def test_large_graphs_predict_without_holding_the_representation(graph, monkeypatch):
    """Past keep_full_bytes, decision_function never holds Z_L: the head's first layer is
    accumulated over column chunks (head narrower than F) or Z_L rows are assembled block by
    block (head at least as wide), with one encoder pass per block of predict_block_bytes.
    Same predictions, logits equal up to float summation order, nothing cached."""
    for hidden in (8, 32):     # F = 16: streamed accumulator, then assembled rows
        clf = RGVT(_encoder(), seed=0, chunk_size=3, hidden_channels=hidden, **FAST).fit(graph)
        dense = clf.decision_function(graph)
        assert clf.predict_block_rows(graph) is None
        monkeypatch.setattr(RGVT, "keep_full_bytes", 0)
        for block_bytes, blocks in ((1 << 20, 1), (4 * min(16, hidden) * 25, 4)):   # 90 rows: 1 block or 25 each
            monkeypatch.setattr(RGVT, "predict_block_bytes", block_bytes)
            clf._graph(graph)["z"] = {}
            assert -(-90 // clf.predict_block_rows(graph)) == blocks
            out = clf.decision_function(graph)
            assert clf._graph(graph)["z"] == {}
            torch.testing.assert_close(out, dense, rtol=1e-5, atol=1e-5)
            assert torch.equal(out.argmax(1), dense.argmax(1))
        monkeypatch.undo()
