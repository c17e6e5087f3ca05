"""Graph files: uniform GAD npz, ARC-style .mat, pygod-style .pt and Yandex npz, read by path.

The .mat and .pt files are written by the tests from the real ``gad/cora.npz``.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from omnigraph.datasets import load_dataset, read_gad_npz, save_gad_npz


@pytest.fixture(scope="module")
def cora_npz(data_root):
    return data_root / "gad" / "cora.npz"


@pytest.fixture(scope="module")
def cora(cora_npz):
    return load_dataset(cora_npz, task="gad")   # the mirror's uniform npz carries no task entry


def _same_graph(a: Data, b: Data) -> None:
    assert torch.equal(a.x, b.x)
    assert torch.equal(a.y, b.y)
    assert torch.equal(a.edge_index, b.edge_index)


def test_npz_by_path(cora, cora_npz, data_root):
    assert cora.task == "gad" and cora.name == "cora" and cora.fidelity == "file"
    assert cora.x.shape == (2708, 1433) and cora.x.dtype == torch.float32
    assert int(cora.y.sum()) == 150 and torch.equal(cora.y, cora.y_struct | cora.y_attr)
    _same_graph(cora, load_dataset("gad/cora", data_root=data_root))
    _same_graph(cora, load_dataset(str(cora_npz), task="gad"))
    with pytest.raises(ValueError, match="does not say which task"):
        load_dataset(cora_npz)                      # never guessed


def test_save_gad_npz_roundtrip(cora, tmp_path):
    for sparse in (True, False, None):
        path = save_gad_npz(cora, tmp_path / f"g-{sparse}.npz", sparse=sparse)
        with np.load(path) as f:
            assert ("x" in f.files) == (sparse is False) and f["y"].dtype == np.int8
        back = read_gad_npz(path)
        _same_graph(cora, back)
        assert torch.equal(back.y_struct, cora.y_struct) and torch.equal(back.y_attr, cora.y_attr)
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_mat_arc_layout(cora, tmp_path):
    path = tmp_path / "cora.mat"
    adj = sp.csr_matrix((np.ones(cora.edge_index.size(1)), cora.edge_index.numpy()), shape=(2708, 2708))
    scipy.io.savemat(path, {"Network": adj, "Attributes": sp.csr_matrix(cora.x.numpy()),
                            "Label": cora.y.numpy()[None, :].astype(np.float64),  # MATLAB row vector
                            "str_anomaly_label": cora.y_struct.numpy()[None, :],
                            "attr_anomaly_label": cora.y_attr.numpy()[:, None]})
    data = load_dataset(path)
    _same_graph(cora, data)
    assert torch.equal(data.y_struct, cora.y_struct) and torch.equal(data.y_attr, cora.y_attr)


def test_mat_fallback_keys_symmetrised(cora, tmp_path):
    """A/X/gnd layout with one direction per edge and self-loops: loaded symmetric, loop-free."""
    ei = cora.edge_index.numpy()
    upper = ei[:, ei[0] < ei[1]]
    loops = np.arange(0, 2708, 7)
    rows = np.concatenate([upper[0], loops])
    cols = np.concatenate([upper[1], loops])
    path = tmp_path / "old.mat"
    scipy.io.savemat(path, {"A": sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(2708, 2708)),
                            "X": cora.x.numpy(), "gnd": cora.y.numpy()[:, None]})
    data = load_dataset(path)
    _same_graph(cora, data)
    assert getattr(data, "y_struct", None) is None


def test_mat_errors(cora, tmp_path):
    path = tmp_path / "bad.mat"
    scipy.io.savemat(path, {"Network": sp.eye(4).tocsr(), "Attributes": np.ones((4, 2))})
    with pytest.raises(ValueError, match=r"missing \['Label \(or gnd\)'\]"):
        load_dataset(path)
    scipy.io.savemat(path, {"Network": sp.eye(4).tocsr(), "Attributes": np.ones((4, 2)), "Label": [[0, 2, 0, 1]]})
    with pytest.raises(ValueError, match="must be binary"):
        load_dataset(path)
    path.write_bytes(b"not a mat file at all")
    with pytest.raises(ValueError, match="cannot read"):
        load_dataset(path)


def test_pt_bitcoded(cora, tmp_path):
    path = tmp_path / "inj_cora.pt"
    code = cora.y_attr + 2 * cora.y_struct  # pygod: 1 contextual, 2 structural, 3 both
    torch.save({"x": cora.x, "edge_index": cora.edge_index, "y": code}, path)
    data = load_dataset(path, task="gad")
    _same_graph(cora, data)
    assert torch.equal(data.y_struct, cora.y_struct) and torch.equal(data.y_attr, cora.y_attr)
    real = tmp_path / "real.pt"  # float 0/1 labels (pygod's real-anomaly sets)
    torch.save({"x": cora.x, "edge_index": cora.edge_index, "y": cora.y.float()}, real)
    data = load_dataset(real, task="gad")
    assert torch.equal(data.y, cora.y) and getattr(data, "y_struct", None) is None


def test_pt_pickled_data_is_refused(cora, tmp_path):
    path = tmp_path / "pickled.pt"
    torch.save(Data(x=cora.x, edge_index=cora.edge_index, y=cora.y), path)
    with pytest.raises(ValueError, match="pickled .* not unpickle"):
        load_dataset(path, task="gad")
    torch.save({"x": cora.x, "y": cora.y}, path)
    with pytest.raises(ValueError, match=r"missing tensor\(s\) \['edge_index'\]"):
        load_dataset(path, task="gad")


def test_npz_errors(cora, tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, x=cora.x.numpy(), y=cora.y.numpy())
    with pytest.raises(ValueError, match=r"missing key 'edge_index'"):
        load_dataset(path, task="gad")
    np.savez(path, features=cora.x.numpy(), labels=cora.y.numpy())
    with pytest.raises(ValueError, match="unrecognised npz keys"):
        load_dataset(path, task="gad")
    np.savez(path, x=cora.x.numpy(), edge_index=cora.edge_index.numpy(), y=cora.y.numpy()[:-1])
    with pytest.raises(ValueError, match="y has 2707 entries"):
        load_dataset(path, task="gad")
    np.savez(path, x=cora.x.numpy()[:10], edge_index=cora.edge_index.numpy(), y=cora.y.numpy()[:10])
    with pytest.raises(ValueError, match="edge_index refers to node"):
        load_dataset(path, task="gad")
    with pytest.raises(ValueError, match="no split"):
        load_dataset(path, split=0, task="gad")
    (tmp_path / "graph.csv").write_text("0,1\n")
    with pytest.raises(ValueError, match="unsupported graph file type"):
        load_dataset(tmp_path / "graph.csv")
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "missing.mat")


def test_yandex_npz_by_path(data_root):
    path = data_root / "yandex" / "chameleon_filtered.npz"
    data = load_dataset(path)
    assert data.task == "nc" and data.split == "yandex:0" and int(data.train_mask.sum()) == 409
    assert torch.equal(data.edge_index, load_dataset("chameleon_filtered", data_root=data_root).edge_index)
    s2 = load_dataset(path, split=2)
    with np.load(path) as f:
        assert np.array_equal(s2.test_mask.numpy(), f["test_masks"][2])
    rnd = load_dataset(path, split="random", seed=0)
    assert rnd.split == "random:seed=0" and abs(int(rnd.train_mask.sum()) - 100) <= 1
    directed = load_dataset("chameleon_filtered_directed", data_root=data_root)
    assert directed.edge_index.size(1) == 13584  # stored as is, not symmetrised
    gad = load_dataset("gad/tolokers", data_root=data_root)
    from omnigraph.datasets import read_graph_file

    het = read_graph_file(data_root / "pyg/HeterophilousGraphDataset/tolokers/raw/tolokers.npz", task="gad")
    assert torch.equal(het.y, gad.y) and torch.equal(het.edge_index, gad.edge_index)


def test_corrupt_cached_copy_gives_a_clear_error(data_root, tmp_path):
    """A cached file damaged after the (atomic, verified) copy is reported with its path, not a zipfile error."""
    first = load_dataset("gad/facebook", root=tmp_path, data_root=data_root)
    cached = next(tmp_path.rglob("facebook.npz"))
    assert not [p for p in cached.parent.iterdir() if p.name.startswith(".")]  # no temporary files left
    cached.write_bytes(cached.read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"facebook\.npz as an npz archive: it is truncated.*deleted"):
        load_dataset("gad/facebook", root=tmp_path, data_root=data_root)
    cached.unlink()  # deleting it makes the next load copy it again from the mirror
    assert torch.equal(load_dataset("gad/facebook", root=tmp_path, data_root=data_root).x, first.x)


class _Payload:
    """Unpickling this would run code (it records that it did)."""

    ran = False

    def __reduce__(self):
        return (_Payload._run, ())

    @staticmethod
    def _run():
        _Payload.ran = True
        return "pwned"


def test_processed_pyg_file_with_foreign_objects_is_not_unpickled(data_root, tmp_path):
    """PyG would retry a refused weights-only load with full unpickling; omnigraph refuses instead."""
    first = load_dataset("airports_brazil", root=tmp_path, data_root=data_root)
    (processed,) = [p for p in tmp_path.rglob("*.pt") if p.parent.name == "processed" and "data" in p.name]
    original = processed.read_bytes()
    torch.save({"payload": _Payload()}, processed)
    with pytest.raises(ValueError, match="not unpickled.*delete"):
        load_dataset("airports_brazil", root=tmp_path, data_root=data_root)
    assert not _Payload.ran
    processed.write_bytes(original)
    assert torch.equal(load_dataset("airports_brazil", root=tmp_path, data_root=data_root).x, first.x)
