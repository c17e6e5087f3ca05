"""Anomaly-detection graph files: the uniform npz, ARC-style ``.mat`` and pygod-style ``.pt``.

Every reader returns a :class:`~torch_geometric.data.Data` with dense float32 ``x`` ``[N, F]``,
an ``edge_index`` ``[2, E]`` that is symmetric, deduplicated and free of self-loops, and
``y`` ``[N]`` in {0, 1} (1 = anomaly); ``y_struct`` / ``y_attr`` are added when the file says
which kind of injected anomaly a node is (``y = y_struct | y_attr``).

Uniform npz (``datasets.md`` section 5): ``x`` (dense) or ``x_data/x_indices/x_indptr/x_shape``
(CSR), ``edge_index`` int64 ``[2, E]``, ``y`` int8, optional ``y_struct`` / ``y_attr``.
"""
from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor
from torch_geometric.data import Data

from omnigraph._npz import load_npz
from omnigraph.ops import simple_undirected

CSR_KEYS = ("x_data", "x_indices", "x_indptr", "x_shape")
YANDEX_KEYS = ("node_features", "node_labels", "edges")
GRAPH_SUFFIXES = (".npz", ".mat", ".pt")


def binary_labels(labels, field: str, path) -> Tensor:
    """``labels`` as a flat long tensor of 0 (normal) / 1 (anomaly); a clear error naming ``path``
    and ``field`` otherwise."""
    y = torch.as_tensor(np.asarray(labels)).reshape(-1)
    if y.is_floating_point() and not torch.isfinite(y).all():
        raise ValueError(f"{path}: {field} contains NaN or Inf")
    values = torch.unique(y)
    if not bool(((values == 0) | (values == 1)).all()):
        raise ValueError(f"{path}: {field} must be binary (0 = normal, 1 = anomaly), found values "
                         f"{values[:10].tolist()}")
    return y.to(torch.long)


def clean_edges(edge_index: Tensor, num_nodes: int, path) -> Tensor:
    """A ``[2, E]`` edge index checked against ``num_nodes``, made simple and undirected."""
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"{path}: edge_index must have shape [2, E], got {list(edge_index.shape)}")
    if edge_index.numel():
        lo, hi = int(edge_index.min()), int(edge_index.max())
        if lo < 0 or hi >= num_nodes:
            raise ValueError(f"{path}: edge_index refers to node {hi if hi >= num_nodes else lo} but the graph has "
                             f"{num_nodes} nodes")
    return simple_undirected(edge_index.to(torch.long), num_nodes, self_loops=False)


def gad_data(x, edge_index, y, path, y_struct=None, y_attr=None) -> Data:
    """A checked ``Data`` (finite float32 features, clean edges, binary labels) from raw arrays read
    from ``path``."""
    try:
        x = torch.as_tensor(np.asarray(x, dtype=np.float32))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: features are not numeric ({err})") from None
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{path}: features contain NaN or Inf; impute them first")
    edge_index = np.asarray(edge_index)
    whole = np.issubdtype(edge_index.dtype, np.integer) or (
        np.issubdtype(edge_index.dtype, np.floating) and np.isfinite(edge_index).all()
        and (edge_index == np.round(edge_index)).all())
    if not whole:
        raise ValueError(f"{path}: edge_index must hold integer node ids, got {edge_index.dtype}")
    if x.dim() != 2:
        raise ValueError(f"{path}: features must be a matrix [N, F], got shape {list(x.shape)}")
    n = x.size(0)
    data = Data(x=x, edge_index=clean_edges(torch.as_tensor(np.asarray(edge_index)).long(), n, path), num_nodes=n)
    if y is not None:                 # an unlabelled graph is what a detector is for: y is optional
        data.y = binary_labels(y, "y", path)
        if data.y.numel() != n:
            raise ValueError(f"{path}: y has {data.y.numel()} entries but x has {n} rows")
    for key, value in (("y_struct", y_struct), ("y_attr", y_attr)):
        if value is not None:
            data[key] = binary_labels(value, key, path)
            if data[key].numel() != n:
                raise ValueError(f"{path}: {key} has {data[key].numel()} entries but x has {n} rows")
    return data


def npz_features(f: dict, path) -> np.ndarray:
    """Dense node features of a uniform npz: key ``x``, or the CSR parts ``x_data/x_indices/x_indptr/x_shape``."""
    if "x" in f:
        return f["x"]
    if all(k in f for k in CSR_KEYS):
        try:
            return sp.csr_matrix((f["x_data"], f["x_indices"], f["x_indptr"]),
                                 shape=tuple(int(s) for s in f["x_shape"])).toarray()
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path}: the CSR feature arrays {list(CSR_KEYS)} are inconsistent: {err}") from None
    raise ValueError(f"{path} is not a uniform npz: no node features (needs key 'x' or the CSR keys "
                     f"{list(CSR_KEYS)}; the file has {sorted(f)})")


def read_gad_npz(path: str | Path, f: dict | None = None) -> Data:
    """Read a uniform anomaly-detection npz (see the module docstring); ``f``: its arrays, if already read."""
    path = Path(path)
    f = load_npz(path) if f is None else f
    x = npz_features(f, path)
    if "edge_index" not in f:
        raise ValueError(f"{path} is not a uniform GAD npz: missing key 'edge_index' (the file has {sorted(f)})")
    return gad_data(x, f["edge_index"], f.get("y"), path, f.get("y_struct"), f.get("y_attr"))


def save_gad_npz(data: Data, path: str | Path, sparse: bool | None = None) -> Path:
    """Write ``data`` in the uniform npz format (atomically: temporary file + rename).

    Args:
        data: graph with ``x`` ``[N, F]``, ``edge_index`` and optionally a binary ``y`` (and
            ``y_struct`` / ``y_attr``). The file records ``task = "gad"``.
        path: destination ``.npz``.
        sparse: store ``x`` as CSR parts; ``None`` chooses CSR when fewer than 25% of the
            entries are non-zero.
    """
    from omnigraph.datasets._store import atomic_write

    path = Path(path)
    x = data.x.detach().cpu().to(torch.float32).numpy()
    if sparse is None:
        sparse = np.count_nonzero(x) < 0.25 * x.size
    arrays = {"edge_index": data.edge_index.cpu().numpy().astype(np.int64), "task": np.array("gad")}
    if getattr(data, "y", None) is not None:
        arrays["y"] = binary_labels(data.y.cpu(), "y", path).numpy().astype(np.int8)
    if sparse:
        csr = sp.csr_matrix(x)
        arrays.update(x_data=csr.data.astype(np.float32), x_indices=csr.indices.astype(np.int32),
                      x_indptr=csr.indptr.astype(np.int64), x_shape=np.asarray(x.shape, dtype=np.int64))
    else:
        arrays["x"] = x
    for key in ("y_struct", "y_attr"):
        if getattr(data, key, None) is not None:
            arrays[key] = binary_labels(data[key].cpu(), key, path).numpy().astype(np.int8)
    return atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays))


def read_mat(path: str | Path) -> Data:
    """Read an ARC/CoLA-style MATLAB file.

    Keys ``Network`` (adjacency), ``Attributes`` (features), ``Label`` (anomaly label), with the
    older ``A`` / ``X`` / ``gnd`` as fallback; ``str_anomaly_label`` / ``attr_anomaly_label``
    become ``y_struct`` / ``y_attr``. The adjacency is symmetrised and self-loops are dropped.
    """
    import scipy.io
    from scipy.io.matlab import MatReadError

    path = Path(path)
    try:
        mat = scipy.io.loadmat(path)
    except NotImplementedError:  # MATLAB v7.3 = HDF5
        raise ValueError(f"{path} is a MATLAB v7.3 (HDF5) file, which scipy cannot read; re-save it with "
                         "save(..., '-v7') or convert it to the uniform npz") from None
    except (MatReadError, ValueError, TypeError, OSError, IndexError, KeyError) as err:  # corrupt or not a .mat
        raise ValueError(f"cannot read {path} as a MATLAB .mat file: {err}") from None

    def pick(*names):
        for name in names:
            if name in mat:
                return mat[name]
        return None

    adj, feat, label = pick("Network", "A"), pick("Attributes", "X"), pick("Label", "gnd")
    missing = [n for n, v in (("Network (or A)", adj), ("Attributes (or X)", feat), ("Label (or gnd)", label))
               if v is None]
    if missing:
        keys = sorted(k for k in mat if not k.startswith("__"))
        raise ValueError(f"{path} is not an anomaly-detection .mat: missing {missing} (the file has {keys})")
    feat = feat.toarray() if sp.issparse(feat) else np.asarray(feat)
    coo = sp.coo_matrix(adj)
    edge_index = np.vstack([coo.row, coo.col]).astype(np.int64)
    if coo.shape[0] != feat.shape[0]:
        raise ValueError(f"{path}: the adjacency is {coo.shape[0]} x {coo.shape[1]} but there are "
                         f"{feat.shape[0]} feature rows")
    return gad_data(feat, edge_index, np.asarray(label).reshape(-1), path,
                     pick("str_anomaly_label"), pick("attr_anomaly_label"))


def load_tensor_dict(path: str | Path) -> dict:
    """A torch file holding a dict of tensors, read with ``torch.load(weights_only=True)`` (never unpickled)."""
    path = Path(path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError(
            f"{path} is a pickled Python object (e.g. a torch_geometric Data saved by pygod), which omnigraph does "
            "not unpickle because that can execute arbitrary code. Convert it once, in an environment you trust: "
            "d = torch.load(path, weights_only=False); torch.save({'x': d.x, 'edge_index': d.edge_index, "
            "'y': d.y}, 'graph.pt') — or write the uniform npz with omnigraph.datasets.save_gad_npz(d, "
            "'graph.npz')") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(f"cannot read {path} as a torch file: {err}") from None
    if not isinstance(obj, dict):
        raise TypeError(f"{path} holds a {type(obj).__name__}; expected a dict with keys 'x', 'edge_index' "
                        "(and optionally 'y')")
    missing = [k for k in ("x", "edge_index") if not isinstance(obj.get(k), Tensor)]
    if missing:
        raise ValueError(f"{path}: missing tensor(s) {missing} (the file has keys {sorted(obj)})")
    if obj.get("y") is not None and not isinstance(obj["y"], Tensor):
        raise TypeError(f"{path}: 'y' must be a tensor, got {type(obj['y']).__name__}")
    return obj


def read_pt(path: str | Path, obj: dict | None = None) -> Data:
    """Read a torch file holding a dict of tensors ``{"x", "edge_index"}`` and optionally ``"y"``.

    ``y`` may be pygod's bit code (0 normal, 1 contextual, 2 structural, 3 both): then
    ``y_attr = y & 1``, ``y_struct = (y >> 1) & 1`` and ``y = y > 0``. The file is read with
    ``torch.load(weights_only=True)``; a pickled ``Data`` object (pygod's own ``.pt`` files) is
    refused rather than unpickled, because unpickling can run arbitrary code.
    """
    path = Path(path)
    obj = load_tensor_dict(path) if obj is None else obj
    x = obj["x"].to_dense() if obj["x"].layout != torch.strided else obj["x"]
    y = obj.get("y")
    y_struct = y_attr = None
    if y is not None:
        y = y.reshape(-1)
        if not y.is_floating_point() and y.numel() and int(y.max()) > 1:
            if int(y.min()) < 0 or int(y.max()) > 3:
                raise ValueError(f"{path}: y must be 0/1 or pygod's bit code 0..3, found "
                                 f"{int(y.min())}..{int(y.max())}")
            y = y.long()
            y_attr, y_struct = (y & 1), (y >> 1) & 1
        y = (y > 0).long().numpy()
    return gad_data(x.float().numpy(), obj["edge_index"].numpy(), y, path, y_struct, y_attr)
