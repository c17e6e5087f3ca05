"""Bad input through the public entry points: a clear error naming the field, or documented behaviour.

Every rule here is listed in ``docs/validation.md``. Graphs are tiny and synthetic, models
untrained and small, so the whole file runs in a few seconds.
"""
from __future__ import annotations

import json
import os
import pickle
import warnings

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import omnigraph
from omnigraph import memory
from omnigraph._files import sha256_file
from omnigraph.cli import main as cli
from omnigraph.estimators.arc import ARC
from omnigraph.estimators.fingerprint import FingerprintDetector
from omnigraph.estimators.graphany import GraphAny
from omnigraph.estimators.refi_gad import REFIGAD
from omnigraph.estimators.rgvt import RGVT
from omnigraph.models.arc import ARCModel
from omnigraph.models.fingerprint import RelationalFingerprint
from omnigraph.models.graphany import GraphAnyModel
from omnigraph.models.refi_gad import REFIGADNet
from omnigraph.models.rgvt import RGVTEncoder

N, F, C = 30, 6, 3


def nc_graph(seed: int = 0) -> Data:
    """30 nodes, 3 classes, disjoint 12/9/9 train/val/test masks, random (directed, duplicated) edges."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(N) % C
    x = torch.rand(N, F, generator=g) + 0.3 * torch.nn.functional.one_hot(y, F).float()
    edge_index = torch.randint(0, N, (2, 3 * N), generator=g)
    train = torch.zeros(N, dtype=torch.bool)
    train[:12] = True
    val = torch.zeros(N, dtype=torch.bool)
    val[12:21] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=train, val_mask=val, test_mask=~(train | val),
                num_nodes=N)


def gad_graph(seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    y = torch.zeros(N, dtype=torch.long)
    y[::6] = 1  # 5 anomalies
    return Data(x=torch.rand(N, F, generator=g), edge_index=torch.randint(0, N, (2, 3 * N), generator=g), y=y,
                num_nodes=N)


def rgvt() -> RGVT:
    torch.manual_seed(0)
    return RGVT(RGVTEncoder(), max_epochs=30, depths=(1, 2), seed=0)


def graphany() -> GraphAny:
    torch.manual_seed(0)
    return GraphAny(GraphAnyModel(n_hidden=8))


def refi_gad() -> REFIGAD:
    torch.manual_seed(0)
    det = REFIGAD(d_model=16, num_heads=2, num_layers=1, ff_dim=16)
    det.model_ = REFIGADNet(d_model=16, num_heads=2, num_layers=1, ff_dim=16).eval()
    return det


def arc() -> ARC:
    torch.manual_seed(0)
    det = ARC(d=8, hidden_channels=16, num_layers=2)
    det.model_ = ARCModel(in_channels=8, hidden_channels=16, num_layers=2).eval()
    return det


SUPPORT = {"support_normal": [1, 2, 3, 4], "support_anomaly": [0, 6]}

ENTRY_POINTS = {
    "rgvt.fit": lambda d: rgvt().fit(d),
    "graphany.fit": lambda d: graphany().fit(d),
    "refi_gad.decision_function": lambda d: refi_gad().decision_function(d, **SUPPORT),
    "arc.predict": lambda d: arc().predict(d, support_normal=SUPPORT["support_normal"]),
}


def _set(**fields):
    def mutate(d: Data) -> Data:
        for key, value in fields.items():
            value = value(d) if callable(value) else value
            if value is None:
                delattr(d, key) if key in d else None
                d[key] = None
            else:
                d[key] = value
        return d
    return mutate


def _nan(d):
    x = d.x.clone()
    x[3, 2] = float("nan")
    return x


def _inf(d):
    x = d.x.clone()
    x[5, 0] = float("inf")
    return x


# (id, mutation of a valid graph, exception, message fragment naming the field)
GRAPH_CASES = [
    ("x_missing", _set(x=None), ValueError, r"data\.x is missing"),
    ("x_integer", _set(x=lambda d: (d.x * 10).long()), TypeError, r"data\.x must be floating point"),
    ("x_sparse", _set(x=lambda d: d.x.to_sparse()), TypeError, r"data\.x is a sparse tensor"),
    ("x_nan", _set(x=_nan), ValueError, r"data\.x contains NaN or Inf .*node 3"),
    ("x_inf", _set(x=_inf), ValueError, r"data\.x contains NaN or Inf .*node 5"),
    ("x_1d", _set(x=lambda d: d.x[:, 0]), ValueError, r"data\.x must have shape \[N, F\]"),
    ("x_no_columns", _set(x=lambda d: d.x[:, :0]), ValueError, r"data\.x has 0 feature columns"),
    ("x_numpy", _set(x=lambda d: d.x.numpy()), TypeError, r"data\.x must be a torch\.Tensor"),
    ("edges_missing", _set(edge_index=None), ValueError, r"data\.edge_index is missing"),
    ("edges_deleted", lambda d: (delattr(d, "edge_index"), d)[1], ValueError, r"data\.edge_index is missing"),
    ("edges_float", _set(edge_index=lambda d: d.edge_index.float()), TypeError, r"data\.edge_index must be an integer"),
    ("edges_negative", _set(edge_index=lambda d: torch.cat([d.edge_index, torch.tensor([[0], [-1]])], 1)),
     ValueError, r"data\.edge_index contains the negative node id -1"),
    ("edges_out_of_range", _set(edge_index=lambda d: torch.cat([d.edge_index, torch.tensor([[0], [N]])], 1)),
     ValueError, rf"data\.edge_index refers to node {N} but the graph has {N} nodes"),
    ("edges_transposed", _set(edge_index=lambda d: d.edge_index.t().contiguous()), ValueError,
     r"data\.edge_index must have shape \[2, E\].*edge_index\.t\(\)"),
    ("num_nodes_mismatch", _set(num_nodes=N + 5), ValueError, r"data\.x has 30 rows but data\.num_nodes is 35"),
    ("no_nodes", lambda d: Data(x=torch.zeros(0, F), edge_index=torch.zeros(2, 0, dtype=torch.long), y=d.y[:0],
                                train_mask=torch.zeros(0, dtype=torch.bool), val_mask=torch.zeros(0, dtype=torch.bool)),
     ValueError, r"no nodes"),
]


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize(("mutate", "exc", "match"), [c[1:] for c in GRAPH_CASES], ids=[c[0] for c in GRAPH_CASES])
def test_bad_graph(entry, mutate, exc, match):
    data = mutate(nc_graph() if entry.split(".")[0] in ("rgvt", "graphany") else gad_graph())
    with pytest.raises(exc, match=match):
        ENTRY_POINTS[entry](data)


@pytest.mark.parametrize("entry", ["rgvt.fit", "graphany.fit", "refi_gad.decision_function"])
def test_data_must_be_a_graph(entry):
    with pytest.raises(TypeError, match="torch_geometric.data.Data"):
        ENTRY_POINTS[entry](torch.rand(N, F))


def _mask(idx):
    m = torch.zeros(N, dtype=torch.bool)
    m[idx] = True
    return m


# node-classification labels and masks, through RGVT.fit and GraphAny.fit
LABEL_CASES = [
    ("train_mask_wrong_length", ("rgvt", "graphany"), _set(train_mask=lambda d: d.train_mask[:-1]), ValueError,
     r"data\.train_mask must be a boolean mask of shape \[30\]"),
    ("train_mask_int01", ("rgvt", "graphany"), _set(train_mask=lambda d: d.train_mask.long()), TypeError,
     r"data\.train_mask must be a boolean mask, got torch\.int64 holding 0/1.*\.bool\(\)"),
    ("train_mask_float", ("rgvt", "graphany"), _set(train_mask=lambda d: d.train_mask.float()), TypeError,
     r"data\.train_mask must be a boolean mask"),
    ("val_mask_int01", ("rgvt",), _set(val_mask=lambda d: d.val_mask.int()), TypeError, r"data\.val_mask"),
    ("train_mask_two_columns", ("rgvt", "graphany"), _set(train_mask=lambda d: torch.stack([d.train_mask] * 2, 1)),
     ValueError, r"data\.train_mask has shape \[30, 2\].*pick one split"),
    ("train_mask_empty", ("rgvt", "graphany"), _set(train_mask=torch.zeros(N, dtype=torch.bool)), ValueError,
     r"data\.train_mask selects no nodes"),
    ("train_mask_missing", ("rgvt", "graphany"), _set(train_mask=None), ValueError, r"data\.train_mask is missing"),
    ("train_test_overlap", ("rgvt", "graphany"), _set(test_mask=lambda d: d.test_mask | _mask([0])), ValueError,
     r"data\.train_mask and data\.test_mask overlap in 1 nodes"),
    ("val_test_overlap", ("rgvt", "graphany"), _set(test_mask=lambda d: d.test_mask | _mask([15])), ValueError,
     r"data\.val_mask and data\.test_mask overlap"),
    ("train_val_overlap", ("rgvt", "graphany"), _set(val_mask=lambda d: d.val_mask | _mask([1])), ValueError,
     r"data\.train_mask and data\.val_mask overlap"),
    ("single_train_class", ("rgvt", "graphany"), _set(y=lambda d: torch.where(d.train_mask, 0, d.y)), ValueError,
     r"data\.y\[train_mask\] has a single class"),
    ("y_missing", ("rgvt", "graphany"), _set(y=None), ValueError, r"data\.y is missing"),
    ("y_wrong_length", ("rgvt", "graphany"), _set(y=lambda d: d.y[:-2]), ValueError, r"data\.y must (have shape|be a)"),
    ("y_float_fractional", ("rgvt", "graphany"), _set(y=lambda d: d.y.float() + 0.5), TypeError,
     r"data\.y must hold integer class ids"),
    ("y_unlabelled_in_train", ("rgvt",), _set(y=lambda d: torch.where(_mask([0]), -1, d.y)), ValueError,
     r"data\.train_mask contains unlabelled nodes \(y < 0\)"),
    ("y_unlabelled_in_train_graphany", ("graphany",), _set(y=lambda d: torch.where(_mask([0]), -1, d.y)),
     ValueError, r"data\.y has negative class ids on training nodes"),
    ("y_unlabelled_in_val", ("rgvt",), _set(y=lambda d: torch.where(_mask([13]), -1, d.y)), ValueError,
     r"data\.val_mask contains unlabelled nodes"),
    ("train_ids_out_of_range", ("graphany",), _set(train_mask=torch.tensor([0, 1, 2, N])), ValueError,
     r"data\.train_mask refers to nodes outside 0\.\.29"),
]


@pytest.mark.parametrize(("models", "mutate", "exc", "match"), [c[1:] for c in LABEL_CASES],
                         ids=[c[0] for c in LABEL_CASES])
def test_bad_node_labels(models, mutate, exc, match):
    for model in models:
        with pytest.raises(exc, match=match):
            ENTRY_POINTS[f"{model}.fit"](mutate(nc_graph()))


# ------------------------------------------------------------------------ documented, well-defined behaviour
def _unlabelled_outside_masks(d: Data) -> Data:
    d = d.clone()
    d.y = torch.where(d.train_mask | d.val_mask, d.y, -1)
    return d


def _no_edges(d: Data) -> Data:
    d = d.clone()
    d.edge_index = torch.zeros(2, 0, dtype=torch.long)
    return d


def _simple(d: Data) -> Data:
    """The graph every method actually uses: symmetric, deduplicated, without self-loops."""
    from omnigraph.ops import simple_undirected

    d = d.clone()
    d.edge_index = simple_undirected(d.edge_index, d.num_nodes, self_loops=False)
    return d


def _messy(d: Data) -> Data:
    """The same graph with every edge twice, in one direction only where possible, and self-loops."""
    s = _simple(d).edge_index
    one_way = s[:, s[0] < s[1]]
    loops = torch.arange(0, d.num_nodes, 4).repeat(2, 1)
    d = d.clone()
    d.edge_index = torch.cat([one_way, one_way, one_way.flip(0)[:, ::3], loops, loops], 1)
    return d


def _outputs(model: str, d: Data) -> torch.Tensor:
    if model == "rgvt":
        return rgvt().fit(d).decision_function(d)
    if model == "graphany":
        return graphany().fit(d).decision_function(d)
    if model == "refi_gad":
        return refi_gad().decision_function(d, **SUPPORT)
    return arc().decision_function(d, support_normal=SUPPORT["support_normal"])


def _graph_for(model: str) -> Data:
    return nc_graph() if model in ("rgvt", "graphany") else gad_graph()


@pytest.mark.parametrize("model", ["rgvt", "graphany", "refi_gad", "arc"])
def test_duplicate_edges_self_loops_and_directions_are_normalised(model):
    """Duplicates and self-loops are dropped and directed edges symmetrised: identical outputs."""
    d = _graph_for(model)
    torch.testing.assert_close(_outputs(model, _messy(d)), _outputs(model, _simple(d)), rtol=0, atol=0)
    torch.testing.assert_close(_outputs(model, d), _outputs(model, _simple(d)), rtol=0, atol=0)


@pytest.mark.parametrize("model", ["rgvt", "graphany", "refi_gad", "arc"])
def test_graph_without_edges_works_on_isolated_nodes(model):
    out = _outputs(model, _no_edges(_graph_for(model)))
    assert out.shape[0] == N and torch.isfinite(out).all()


@pytest.mark.parametrize("model", ["rgvt", "graphany"])
def test_unlabelled_nodes_outside_the_masks_are_never_read(model):
    d = nc_graph()
    torch.testing.assert_close(_outputs(model, _unlabelled_outside_masks(d)), _outputs(model, d), rtol=0, atol=0)


def test_int32_edge_index_is_accepted():
    d = nc_graph()
    d32 = d.clone()
    d32.edge_index = d.edge_index.int()
    assert torch.equal(graphany().fit(d32).predict(d32), graphany().fit(d).predict(d))


def test_val_class_absent_from_train_warns_but_fits():
    d = nc_graph()
    d.y = d.y.clone()
    d.y[d.val_mask.nonzero()[0]] = C  # a class no training node has
    with pytest.warns(UserWarning, match=r"data\.y\[val_mask\] contains classes \[3\]"):
        clf = rgvt().fit(d)
    assert clf.n_classes_ == C + 1


@pytest.mark.parametrize("make", ["graphany", "rgvt"])
def test_test_class_absent_from_train_warns_in_score(make):
    d = nc_graph()
    d.y = d.y.clone()
    d.y[d.test_mask.nonzero()[0]] = C
    clf = globals()[make]().fit(d)  # test labels are never read by fit: no warning there
    with pytest.warns(UserWarning, match=r"data\.y\[data\.test_mask\] contains classes \[3\]"):
        acc = clf.score(d)
    assert 0.0 <= acc <= 1.0


@pytest.mark.parametrize("make", ["graphany", "rgvt"])
def test_score_refuses_unlabelled_or_empty_masks(make):
    d = nc_graph()
    clf = globals()[make]().fit(d)
    d.y = d.y.clone()
    d.y[d.test_mask.nonzero()[0]] = -1
    with pytest.raises(ValueError, match="unlabelled nodes"):
        clf.score(d)
    with pytest.raises(ValueError, match="selects no nodes"):
        clf.score(d, mask=torch.zeros(d.num_nodes, dtype=torch.bool))
    with pytest.raises(ValueError, match="shape"):
        clf.score(d, mask=torch.ones(d.num_nodes + 1, dtype=torch.bool))


def test_graphany_accepts_node_ids_as_train_mask():
    d = nc_graph()
    ids = d.clone()
    ids.train_mask = d.train_mask.nonzero().flatten()
    assert torch.equal(graphany().fit(ids).predict(ids), graphany().fit(d).predict(d))


# ------------------------------------------------------------------------------------- anomaly support sets
SUPPORT_CASES = [
    ("normal_out_of_range", {"support_normal": [1, N], "support_anomaly": [0]}, ValueError,
     rf"support_normal refers to node {N} but the graph has {N} nodes"),
    ("anomaly_negative", {"support_normal": [1, 2], "support_anomaly": [-1]}, ValueError,
     r"support_anomaly refers to node -1"),
    ("normal_duplicated", {"support_normal": [1, 2, 2], "support_anomaly": [0]}, ValueError,
     r"support_normal contains duplicated node ids \(e\.g\. 2\)"),
    ("normal_float", {"support_normal": torch.tensor([1.0, 2.0]), "support_anomaly": [0]}, TypeError,
     r"support_normal must hold integer node ids"),
    ("mask_wrong_length", {"support_normal": torch.ones(N - 1, dtype=torch.bool), "support_anomaly": [0]},
     ValueError, r"support_normal is a boolean mask of shape \[29\]"),
    ("overlap", {"support_normal": [1, 2, 6], "support_anomaly": [0, 6]}, ValueError,
     r"node 6 is in both support_normal and support_anomaly"),
    ("shots_and_ids", {"support_normal": [1], "shots_normal": 2}, ValueError, r"not both"),
    ("shots_normal_too_many", {"shots_normal": N - 5, "shots_anomaly": 1}, ValueError,
     r"shots_normal=25 asks for 25 normal support nodes but the graph has only 25 normal"),
    ("shots_anomaly_too_many", {"shots_normal": 3, "shots_anomaly": 9}, ValueError,
     r"shots_anomaly=9 .* only 5 anomalous"),
    ("shots_negative", {"shots_normal": -1, "shots_anomaly": 2}, ValueError, r"shots_normal must be >= 0"),
    ("shots_float", {"shots_normal": 2.5, "shots_anomaly": 2}, TypeError, r"shots_normal must be a non-negative int"),
]


@pytest.mark.parametrize(("kwargs", "exc", "match"), [c[1:] for c in SUPPORT_CASES], ids=[c[0] for c in SUPPORT_CASES])
def test_bad_support(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        refi_gad().decision_function(gad_graph(), **kwargs)


def test_a_single_fingerprint_column_needs_supports_or_a_sign():
    with pytest.raises(ValueError, match="needs labelled normal support"):
        FingerprintDetector(column="degree").decision_function(gad_graph())
    assert FingerprintDetector(column="degree", sign=1).decision_function(gad_graph()).shape == (N,)


def test_shots_need_binary_labels():
    d = gad_graph()
    d.y = None
    with pytest.raises(ValueError, match=r"data\.y is missing"):
        refi_gad().decision_function(d, shots_normal=2, shots_anomaly=2)
    d = gad_graph()
    d.y = d.y * 2
    with pytest.raises(ValueError, match=r"data\.y must be binary"):
        arc().decision_function(d, shots_normal=2)


@pytest.mark.parametrize(("labels", "match"), [
    (torch.zeros(N, dtype=torch.long), r"source graph 0: data\.y has no anomalies"),
    (torch.ones(N, dtype=torch.long), r"source graph 0: data\.y marks every node as an anomaly"),
    (torch.arange(N) % 3, r"source graph 0: data\.y must be binary"),
    (torch.zeros(N - 1, dtype=torch.long), r"source graph 0: data\.y must have shape \[30\]"),
], ids=["no_anomalies", "all_anomalies", "not_binary", "wrong_length"])
@pytest.mark.parametrize("cls", [REFIGAD, ARC])
def test_detector_fit_rejects_bad_source_labels(cls, labels, match):
    d = gad_graph()
    d.y = labels
    with pytest.raises(ValueError, match=match):
        cls(epochs=1).fit([d])  # fails before any training starts


def test_detector_fit_label_override_is_checked_too():
    with pytest.raises(ValueError, match=r"label\[0\] has no anomalies"):
        REFIGAD(epochs=1).fit([gad_graph()], label=[torch.zeros(N, dtype=torch.long)])
    with pytest.raises(ValueError, match=r"label has 2 entries but 1 graphs"):
        ARC(epochs=1).fit([gad_graph()], label=[gad_graph().y, gad_graph().y])


# ------------------------------------------------------------------------------------------- dataset files
def _yandex_npz(path, n=N, **override):
    d = nc_graph()
    arrays = {"node_features": d.x.numpy(), "node_labels": d.y.numpy(),
              "edges": d.edge_index.t().numpy(),
              "train_masks": d.train_mask.numpy()[None], "val_masks": d.val_mask.numpy()[None],
              "test_masks": d.test_mask.numpy()[None]}
    arrays.update(override)
    np.savez(path, **arrays)
    return path


def _gad_npz(path, **override):
    d = gad_graph()
    arrays = {"x": d.x.numpy(), "edge_index": d.edge_index.numpy(), "y": d.y.numpy().astype(np.int8),
              "task": np.array("gad")}
    arrays.update(override)
    np.savez(path, **arrays)
    return path


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


FILE_CASES = [
    ("missing_path", lambda p: p / "nope.npz", FileNotFoundError, r"no such graph file: .*nope\.npz"),
    ("truncated_gad_npz", lambda p: _truncate(_gad_npz(p / "g.npz")), ValueError,
     r"cannot read .*g\.npz as an npz archive: it is truncated, corrupt"),
    ("truncated_yandex_npz", lambda p: _truncate(_yandex_npz(p / "y.npz")), ValueError, r"y\.npz .*truncated"),
    ("garbage_npz", lambda p: (p / "x.npz").write_bytes(b"\x00garbage" * 10) and p / "x.npz", ValueError,
     r"cannot read .*x\.npz as an npz archive"),
    ("wrong_keys", lambda p: _npz(p / "k.npz", feats=np.ones((3, 2)), labels=np.zeros(3)), ValueError,
     r"unrecognised npz keys \['feats', 'labels'\]"),
    ("gad_missing_edges", lambda p: _npz(p / "m.npz", x=np.ones((3, 2)), y=np.zeros(3, int), task=np.array("gad")),
     ValueError, r"missing key 'edge_index'"),
    ("no_task", lambda p: _npz(p / "t.npz", x=np.ones((3, 2)), edge_index=np.zeros((2, 0), int)), ValueError,
     r"t\.npz does not say which task it holds: pass task='nc'"),
    ("bad_task_entry", lambda p: _gad_npz(p / "b.npz", task=np.array("anomaly")), ValueError,
     r"its 'task' entry must be 'nc' or 'gad', got 'anomaly'"),
    ("object_array", lambda p: _gad_npz(p / "o.npz", y=np.array([None] * N, dtype=object)), ValueError,
     r"o\.npz as an npz archive: it holds pickled Python objects"),
    ("gad_nan_features", lambda p: _gad_npz(p / "n.npz", x=np.full((N, F), np.nan, np.float32)), ValueError,
     r"n\.npz: features contain NaN"),
    ("gad_float_edges", lambda p: _gad_npz(p / "f.npz", edge_index=np.full((2, 4), 0.5)), ValueError,
     r"f\.npz: edge_index must hold integer node ids"),
    ("gad_labels_not_binary", lambda p: _gad_npz(p / "b.npz", y=np.arange(N) % 3), ValueError,
     r"b\.npz: y must be binary"),
    ("yandex_labels_length", lambda p: _yandex_npz(p / "l.npz", node_labels=np.zeros(N - 1, int)), ValueError,
     r"l\.npz: node_labels must have shape \[30\]"),
    ("yandex_masks_shape", lambda p: _yandex_npz(p / "s.npz", val_masks=np.zeros((2, N), bool)), ValueError,
     r"s\.npz: val_masks must have shape \[S, 30\]"),
    ("yandex_edges_out_of_range", lambda p: _yandex_npz(p / "e.npz", edges=np.array([[0, N]])), ValueError,
     r"e\.npz: edges refer to node ids outside 0\.\.29"),
    ("pickled_pt", lambda p: (torch.save(Data(x=torch.ones(3, 2)), p / "d.pt"), p / "d.pt")[1], ValueError,
     r"d\.pt is a pickled Python object.*not unpickle"),
    ("truncated_pt", lambda p: _truncate((torch.save({"x": torch.ones(3, 2)}, p / "t.pt"), p / "t.pt")[1]),
     ValueError, r"cannot read .*t\.pt as a torch file"),
    ("unknown_suffix", lambda p: (p / "g.csv").write_text("0,1") and p / "g.csv", ValueError,
     r"unsupported graph file type '\.csv'"),
]


@pytest.mark.parametrize(("make", "exc", "match"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_bad_dataset_file(tmp_path, make, exc, match):
    with pytest.raises(exc, match=match):
        omnigraph.load_dataset(make(tmp_path))


def test_unknown_dataset_name():
    with pytest.raises(ValueError, match="cora"):
        omnigraph.load_dataset("coraa")


def test_good_files_load(tmp_path):
    """The writers above produce valid files when not corrupted (so the failures above are the corruption)."""
    g = omnigraph.load_dataset(_gad_npz(tmp_path / "g.npz"))
    assert g.task == "gad" and int(g.y.sum()) == 5
    y = omnigraph.load_dataset(_yandex_npz(tmp_path / "y.npz"))
    assert y.task == "nc" and int(y.train_mask.sum()) == 12


# ---------------------------------------------------------------------------------------------------- cache
def test_cache_copy_is_atomic_on_checksum_mismatch_and_interrupt(tmp_path):
    from omnigraph.datasets import _store

    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 << 20))  # several copy blocks
    dst = tmp_path / "cache" / "sub" / "dst.bin"
    with pytest.raises(ValueError, match=r"checksum mismatch for .*src\.bin.*verify=False"):
        _store.copy_verified(src, dst, "0" * 64)
    assert list((tmp_path / "cache" / "sub").iterdir()) == []   # neither dst nor a temporary file

    def interrupted(tmp):
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _store.atomic_write(dst, interrupted)
    assert list(dst.parent.iterdir()) == []
    _store.copy_verified(src, dst, sha256_file(src))
    assert dst.read_bytes() == src.read_bytes() and [p.name for p in dst.parent.iterdir()] == ["dst.bin"]
    assert oct(dst.stat().st_mode & 0o777) != oct(0o600)  # published with normal permissions


# ------------------------------------------------------------------------------------------------ checkpoints
def _saved(tmp_path):
    return GraphAnyModel(n_hidden=8).save_pretrained(tmp_path / "ck")


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    return path


def _edit_config(path, fn):
    meta = json.loads((path / "config.json").read_text())
    fn(meta)
    (path / "config.json").write_text(json.dumps(meta))


CHECKPOINT_CASES = [
    ("missing_path", lambda p: p / "nowhere", FileNotFoundError, r"no checkpoint named .*nowhere"),
    ("pickle_file", lambda p: (torch.save(GraphAnyModel(n_hidden=8).state_dict(), p / "m.pt"), p / "m.pt")[1],
     ValueError, r"m\.pt is a pickle-based checkpoint"),
    ("pickle_behind_safetensors_name",
     lambda p: ((p / "d").mkdir(), (p / "d" / "model.safetensors").write_bytes(pickle.dumps({"a": 1})),
                (p / "d" / "config.json").write_text('{"model_type": "graphany", "config": {}}'), p / "d")[-1],
     ValueError, r"model\.safetensors is a pickle-based checkpoint"),
    ("config_tensor_mismatch", lambda p: (_edit_config(_saved(p), lambda m: m["config"].update(n_hidden=16)),
                                          p / "ck")[1], ValueError, r"checkpoint config does not match its tensors"),
    ("config_unknown_key", lambda p: (_edit_config(_saved(p), lambda m: m["config"].update(bogus=1)), p / "ck")[1],
     ValueError, r"config of .*ck does not fit GraphAnyModel.*bogus"),
    ("config_not_json", lambda p: ((_saved(p) / "config.json").write_text("{oops"), p / "ck")[1], ValueError,
     r"config\.json is not valid JSON"),
    ("config_missing", lambda p: ((_saved(p) / "config.json").unlink(), p / "ck")[1], FileNotFoundError,
     r"checkpoint config not found"),
    ("truncated_weights", lambda p: (_truncate(_saved(p) / "model.safetensors"), p / "ck")[1], ValueError,
     r"sha256 of .*model\.safetensors does not match the digest recorded in config\.json"),
    # same size, one byte of tensor data changed: still a valid safetensors file, caught by the digest
    ("altered_weights", lambda p: (_flip_last_byte(_saved(p) / "model.safetensors"), p / "ck")[1], ValueError,
     r"weights were altered or truncated after saving"),
    ("truncated_weights_no_digest", lambda p: (_truncate(_saved(p) / "model.safetensors"),
                                               _edit_config(p / "ck", lambda m: m.pop("sha256")), p / "ck")[2],
     ValueError, r"model\.safetensors is not a valid safetensors file"),
    ("wrong_model_type", lambda p: (_edit_config(_saved(p), lambda m: m.update(model_type="rgvt")), p / "ck")[1],
     ValueError, r"holds a 'rgvt' checkpoint, not 'graphany'"),
]


@pytest.mark.parametrize(("make", "exc", "match"), [c[1:] for c in CHECKPOINT_CASES],
                         ids=[c[0] for c in CHECKPOINT_CASES])
def test_bad_checkpoint(tmp_path, make, exc, match):
    with pytest.raises(exc, match=match):
        GraphAny.from_pretrained(make(tmp_path))


def test_saved_checkpoint_round_trips_and_leaves_no_temporary_files(tmp_path):
    path = _saved(tmp_path)
    assert sorted(p.name for p in path.iterdir()) == ["README.md", "config.json", "model.safetensors"]
    assert isinstance(GraphAny.from_pretrained(path), GraphAny)


# ------------------------------------------------------------------------------------------------------- CLI
def test_cli_reports_bad_input_cleanly(tmp_path, capsys):
    assert cli(["predict", "--model", "graphany", "--dataset", str(tmp_path / "missing.npz")]) == 2
    assert "no such graph file" in capsys.readouterr().err
    assert cli(["predict", "--model", "graphany", "--dataset", str(_truncate(_yandex_npz(tmp_path / "y.npz")))]) == 2
    assert "truncated" in capsys.readouterr().err
    torch.save({}, tmp_path / "m.pt")
    assert cli(["predict", "--model", str(tmp_path / "m.pt"), "--dataset", str(_yandex_npz(tmp_path / "ok.npz"))]) == 2
    assert "pickle-based checkpoint" in capsys.readouterr().err
    bad = tmp_path / "overlap.npz"
    d = nc_graph()
    _yandex_npz(bad, test_masks=(d.test_mask | _mask([0])).numpy()[None])
    assert cli(["predict", "--model", "graphany", "--dataset", str(bad)]) == 2
    assert "data.train_mask and data.test_mask overlap" in capsys.readouterr().err
    assert cli(["detect", "--model", "fingerprint", "--dataset", str(_gad_npz(tmp_path / "g.npz")),
                "--shots-anomaly", "9", "--seeds", "0"]) == 2
    assert "shots_anomaly=9" in capsys.readouterr().err
    no_anomalies = _gad_npz(tmp_path / "none.npz", y=np.zeros(N, np.int8))
    assert cli(["detect", "--model", "fingerprint", "--dataset", str(no_anomalies), "--seeds", "0",
                "--shots-normal", "5", "--shots-anomaly", "5"]) == 2
    assert "only 0 anomalous nodes" in capsys.readouterr().err


def test_cli_predict_works_on_a_valid_file(tmp_path, capsys):
    assert cli(["predict", "--model", "graphany", "--dataset", str(_yandex_npz(tmp_path / "ok.npz"))]) == 0
    assert "test" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ memory guard
@pytest.fixture
def limit():
    saved = memory._max_bytes
    yield memory.set_max_bytes
    memory._max_bytes = saved


def test_check_memory_limit_sources(limit, monkeypatch):
    monkeypatch.delenv(memory.ENV_MAX_BYTES, raising=False)
    limit()  # back to the environment / physical memory
    assert memory.get_max_bytes() is None or memory.get_max_bytes() > 1 << 20
    monkeypatch.setenv(memory.ENV_MAX_BYTES, "2K")
    assert memory.get_max_bytes() == 2048
    with pytest.raises(memory.MemoryLimitError, match=r"dense thing needs about 4\.0 KiB.*2\.0 KiB; chunk it"):
        memory.check_memory(4096, "dense thing", "chunk it")
    memory.check_memory(2048, "dense thing")  # at the limit is fine
    monkeypatch.setenv(memory.ENV_MAX_BYTES, "lots")
    with pytest.raises(ValueError, match="OMNIGRAPH_MAX_BYTES='lots'"):
        memory.get_max_bytes()
    limit("1M")  # the setter wins over the environment
    assert memory.get_max_bytes() == 1 << 20
    limit(None)  # no limit at all
    memory.check_memory(1 << 60, "anything")
    with memory.max_bytes(100), pytest.raises(MemoryError):  # also a MemoryError
        memory.check_memory(101, "x")
    assert memory.get_max_bytes() is None
    for bad in ("-1", "0", "1X"):
        with pytest.raises(ValueError):
            memory.parse_bytes(bad)
    assert memory.parse_bytes("1.5G") == 3 << 29 and memory.parse_bytes("8GiB") == 8 << 30


def test_memory_guard_before_rgvt_views(limit):
    d = nc_graph()
    enc = RGVTEncoder()
    views = 4 * enc.num_views * N * F  # all columns in one chunk
    limit(views - 1)
    with pytest.raises(memory.MemoryLimitError, match=r"RGVT views \[5, 30, 6\].*smaller chunk_size"):
        enc(d.x, d.edge_index, depth=2, chunk_size=F)
    with pytest.raises(memory.MemoryLimitError, match="RGVT views"):
        RGVT(enc, max_epochs=2, depths=(1,), chunk_size=F).fit(d)
    limit(views // F)  # one column per chunk fits: same numbers
    z = enc(d.x, d.edge_index, depth=2, chunk_size=1)
    limit(None)
    assert torch.equal(z, enc(d.x, d.edge_index, depth=2))


def test_memory_guard_before_dense_fingerprint(limit):
    d = gad_graph()
    limit(6 * N * N * 4 - 1)
    with pytest.raises(memory.MemoryLimitError, match=r"dense reference fingerprint.*reference=False"):
        RelationalFingerprint(reference=True)(d)
    assert RelationalFingerprint()(d).fingerprint.shape == (N, 5)  # the sparse default path is not affected
    limit(None)
    assert RelationalFingerprint(reference=True)(d).fingerprint.shape == (N, 5)


def test_fingerprint_detector_validates_like_the_others():
    with pytest.raises(TypeError, match=r"data\.x must be floating point"):
        FingerprintDetector().decision_function(_set(x=lambda d: d.x.long())(gad_graph()), support_normal=[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a valid call raises no warning
        FingerprintDetector().decision_function(gad_graph(), support_normal=[1, 2], support_anomaly=[0])


# ------------------------------------------------------------------ magnitudes and integrity (user's path)
def _absurd_class(d: Data, value: int = 10**9) -> Data:
    d.y = d.y.clone()
    d.y[d.train_mask.nonzero()[0]] = value
    return d


@pytest.mark.parametrize("make", ["rgvt", "graphany", "baseline"])
def test_an_absurd_class_id_is_refused_before_any_allocation(make):
    """One label of 10**9 would make a 10**9-column head and one-hot target: refused, naming the id."""
    from omnigraph.estimators.baselines import SupervisedBaseline

    est = {"rgvt": rgvt, "graphany": graphany, "baseline": lambda: SupervisedBaseline(kind="mlp", max_epochs=2)}[make]()
    with memory.max_bytes("64MiB"), pytest.raises(ValueError, match=r"largest class id is 1000000000.*relabel"):
        est.fit(_absurd_class(nc_graph()))
    d = _absurd_class(nc_graph(), value=C + 5)       # a few absent classes: still fine (ids with small gaps)
    assert est.fit(d).n_classes_ == C + 6


@pytest.mark.parametrize("make", ["rgvt", "graphany"])
def test_an_absurd_num_classes_is_refused(make):
    est = {"rgvt": lambda: RGVT(RGVTEncoder(), num_classes=10**12, max_epochs=2),
           "graphany": lambda: GraphAny(GraphAnyModel(n_hidden=8), num_classes=10**12)}[make]()
    with pytest.raises(ValueError, match=r"num_classes=1000000000000"):
        est.fit(nc_graph())


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_huge_finite_features_are_refused_with_the_fix(entry):
    """Finite but huge features used to crash inside torch.linalg (RGVT) or give wrong scores (the
    fingerprint's dot products overflowed to inf): refused by check_graph, naming the node and feature."""
    data = nc_graph() if entry.split(".")[0] in ("rgvt", "graphany") else gad_graph()
    data.x = data.x.clone()
    data.x[3, 2] = 1e20
    with pytest.raises(ValueError, match=r"values up to 1e\+20 in magnitude \(node 3, feature 2\).*rescale"):
        ENTRY_POINTS[entry](data)


def test_large_but_safe_features_give_the_same_answers():
    d = gad_graph()
    scaled = d.clone()
    scaled.x = d.x * 1e15 / d.x.abs().max()          # the largest accepted magnitude
    base = d.clone()
    base.x = d.x / d.x.abs().max()
    torch.testing.assert_close(FingerprintDetector().decision_function(scaled, **SUPPORT),
                               FingerprintDetector().decision_function(base, **SUPPORT), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("field", ["support_normal", "support_anomaly"])
def test_a_0_1_indicator_vector_passed_as_ids_says_what_it_looks_like(field):
    d = gad_graph()
    indicator = torch.zeros(d.num_nodes, dtype=torch.long)
    indicator[[10, 11, 12]] = 1                       # nodes in neither of SUPPORT's sets
    kwargs = {**SUPPORT, field: indicator}
    with pytest.raises(TypeError, match=rf"{field} holds only 0/1 .* indicator vector.*\.bool\(\)"):
        refi_gad().decision_function(d, **kwargs)
    refi_gad().decision_function(d, **{**SUPPORT, field: indicator.bool()})   # the same as a mask: accepted
