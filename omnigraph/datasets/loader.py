"""``load_dataset``: one entry point for every catalogued graph and for graph files."""
from __future__ import annotations

import numbers
import os
from collections.abc import Iterable
from pathlib import Path

import torch
from torch_geometric.data import Data

from omnigraph._npz import npz_keys
from omnigraph.datasets import _store
from omnigraph.datasets._store import DatasetNotAvailableError
from omnigraph.datasets.files import read_graph_file
from omnigraph.datasets.flags import attach_preprocess_flags
from omnigraph.datasets.gad import GRAPH_SUFFIXES, YANDEX_KEYS, read_gad_npz, save_gad_npz
from omnigraph.datasets.pyg_sources import download_verified, ogb_masks, open_pyg_dataset
from omnigraph.datasets.registry import get_entry, list_datasets
from omnigraph.datasets.splits import cached_random_split, parse_split, random_split, select_masks
from omnigraph.validation import check_graph

_OFFLINE_ENV = "OMNIGRAPH_OFFLINE"


def _offline(offline: bool | None) -> bool:
    if offline is not None:
        return bool(offline)
    return os.environ.get(_OFFLINE_ENV, "").lower() in ("1", "true", "yes")


def _is_path(name) -> bool:
    """Paths are ``os.PathLike`` objects or strings ending in ``.npz`` / ``.mat`` / ``.pt``."""
    return isinstance(name, os.PathLike) or (isinstance(name, str) and name.lower().endswith(GRAPH_SUFFIXES))


def load_dataset(name: str | os.PathLike, split: int | str | None = None, root: str | os.PathLike | None = None,
                 seed: int = 0, *, data_root: str | os.PathLike | Iterable | None = None,
                 offline: bool | None = None, verify: bool = True, injection_seed: int | None = None,
                 task: str | None = None) -> Data:
    r"""Load a catalogued dataset, or a graph file, as a :class:`~torch_geometric.data.Data`.

    **Names.** Lookup is case-insensitive and ignores ``-``, ``_``, ``.`` and spaces.
    Node-classification graphs have bare names (``"cora"``, ``"reddit"``, ``"tolokers"``,
    ``"chameleon_filtered"``); anomaly-detection graphs live under ``gad/`` (``"gad/cora"`` is
    ARC's injected Cora, ``"gad/reddit"`` the 10,984-node PyGOD Reddit, ``"gad/tolokers"`` the
    banned-worker labels; ``"facebook"`` is an alias of ``"gad/facebook"``). Locally injected
    graphs of the reduced protocol end in ``_inj`` (``"gad/blogcatalog_inj"``). Where versions
    differ the name says which: ``"cornell"`` is the Yandex npz (RGVT), ``"cornell_geomgcn"`` the
    PyG WebKB graph (GraphAny); ``"chameleon"`` is PyG's geom-gcn graph (GraphAny),
    ``"chameleon_filtered"`` the Yandex filtered one (RGVT). ``omnigraph.list_datasets()`` and
    ``omnigraph datasets list`` show every name. A path ending in ``.npz`` (uniform or Yandex
    format), ``.mat`` (ARC) or ``.pt`` (dict of tensors) is read directly; a uniform ``.npz`` or a
    ``.pt`` must say its task, in a ``"task"`` entry or through ``task=`` (never guessed; see
    ``omnigraph.datasets.files``). In a node-classification file ``y`` (``-1`` = unlabelled) and
    the masks are optional and kept; in an anomaly-detection file ``y`` is optional.

    **Data.** Files are looked up in the offline mirrors (``data_root``, else ``OMNIGRAPH_DATA``;
    first root that has them), checked against the catalogue's sha256 and copied into the
    writable cache (``root``, else ``OMNIGRAPH_CACHE`` / ``~/.cache/omnigraph``), where PyG's own
    dataset classes process them. Mirrors are never written to. Without a mirror copy, PyG / OGB
    download the dataset (unless ``offline``).

    **Splits** (node classification): ``None`` = the dataset's default; ``"public"`` (Cora
    140/500/1000; ``"public:i"`` for WikiCS column ``i``), ``"geom-gcn:i"``, ``"yandex:i"``,
    ``"random"`` (stratified :math:`20 \cdot C` train, rest 50/50, ``random_state=seed``; RGVT
    uses 42, GraphAny 0), ``"ogb"``; an int ``i`` is index ``i`` of the default protocol.

    Args:
        name: catalogue name or alias, or a graph file path.
        split: split protocol (node classification only).
        root: writable cache root (overrides ``OMNIGRAPH_CACHE``).
        seed: seed of the ``"random"`` split.
        data_root: mirror root(s) overriding ``OMNIGRAPH_DATA``.
        offline: never download; fail with a message naming the mirror path instead
            (default: ``OMNIGRAPH_OFFLINE``).
        verify: check mirror files against the catalogue's sha256 when copying them.
        injection_seed: seed of the anomaly injection for ``*_inj`` graphs (default: the
            catalogue's, 0). Kept apart from ``seed`` so trial seeds never change the graph.
        task: ``"nc"`` or ``"gad"``: the task a graph file holds (required for uniform ``.npz`` /
            ``.pt`` files without a ``"task"`` entry); for a catalogue name, checked against it.

    Returns:
        ``Data`` with float32 dense ``x`` ``[N, F]``, ``edge_index`` ``[2, E]``, ``y`` ``[N]``
        and, for node classification, 1-D bool ``train_mask`` / ``val_mask`` / ``test_mask``;
        for anomaly detection ``y`` is in {0, 1} (plus ``y_struct`` / ``y_attr`` for injected
        graphs). Metadata: ``data.name``, ``data.task``, ``data.fidelity``; for node
        classification ``data.split`` (e.g. ``"public"``, ``"geom-gcn:0"``, ``"random:seed=42"``);
        for anomaly detection the catalogue's preprocessing flags, e.g. ``data.row_normalize``
        (Amazon, Tolokers) or ``data.self_loops`` (Facebook), which the detectors read through
        :func:`omnigraph.datasets.flags.graph_flag` (an explicit argument overrides them).

    Raises:
        ValueError: unknown name (with suggestions), bad split, checksum mismatch, bad file.
        DatasetNotAvailableError: (a ``FileNotFoundError``) the files are absent and cannot be
            downloaded; the message says where to put them.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int (the random split's random_state), got {type(seed).__name__}")
    if task is not None and task not in ("nc", "gad"):
        raise ValueError(f"task must be 'nc' (node classification) or 'gad' (anomaly detection), got {task!r}")
    if _is_path(name):
        return _load_path(Path(name), split, int(seed), task)
    entry = get_entry(name)
    if task is not None and task != entry["task"]:
        raise ValueError(f"{entry['name']} is a {'node-classification' if entry['task'] == 'nc' else 'anomaly-detection'}"
                         f" dataset (task {entry['task']!r}), not {task!r}")
    cache = _store.resolve_cache(root)
    ctx = {"cache": cache, "roots": _store.mirror_roots(data_root), "offline": _offline(offline), "verify": verify}
    if entry["task"] == "gad":
        if split is not None:
            raise ValueError(f"{entry['name']} is an anomaly-detection dataset: it has no train/val/test split "
                             f"(got split={split!r})")
        if entry["loader"]["type"] == "injected":
            data = _load_injected(entry, ctx, injection_seed)
        else:
            data = _load_gad_file(entry, ctx)
    else:
        if injection_seed is not None:
            raise ValueError("injection_seed only applies to injected anomaly graphs (gad/*_inj)")
        protocol, index = parse_split(split, entry["splits"], entry["name"])
        graph, masks = _load_nc(entry, ctx, protocol, index)
        if protocol == "random":
            masks = cached_random_split(graph.y, int(seed), cache, entry["name"])
        data = Data(x=graph.x, edge_index=graph.edge_index, y=graph.y, num_nodes=graph.num_nodes, **masks)
        data.split = _split_label(protocol, index, seed)
    data.name, data.task, data.fidelity = entry["name"], entry["task"], entry["fidelity"]
    # per-graph preprocessing of the detectors (ARC / REFI-GAD), read back by graph_flag
    attach_preprocess_flags(data, entry.get("preprocess"))
    check_graph(data)
    return data


def _split_label(protocol: str, index: int | None, seed: int) -> str:
    if protocol == "random":
        return f"random:seed={seed}"
    return protocol if index is None else f"{protocol}:{index}"


# ------------------------------------------------------------------------------------------ files
def _load_path(path: Path, split, seed: int, task: str | None = None) -> Data:
    if not path.is_file():
        raise FileNotFoundError(f"no such graph file: {path}")
    if path.suffix.lower() == ".npz" and all(k in npz_keys(path) for k in YANDEX_KEYS) and task != "gad":
        import numpy as np

        with np.load(path, allow_pickle=False) as f:
            count = int(f["train_masks"].shape[0])
        protocol, index = parse_split(split, {"default": "yandex:0", "protocols": {"yandex": count, "random": None}},
                                      path.name)
        data = read_graph_file(path, split=index or 0)
        if protocol == "random":
            data.train_mask, data.val_mask, data.test_mask = random_split(data.y, seed=seed).values()
        data.name, data.task, data.split = path.stem, "nc", _split_label(protocol, index, seed)
    else:
        if task == "gad" and split is not None:
            raise ValueError(f"{path.name} is an anomaly-detection graph file: it has no split (got split={split!r})")
        data = read_graph_file(path, task=task)
        if data.task == "gad" and split is not None:
            raise ValueError(f"{path.name} is an anomaly-detection graph file: it has no split (got split={split!r})")
        if data.task == "nc" and split is not None:
            if split != "random":
                raise ValueError(f"{path.name}: a node-classification file keeps its own masks; the only split that "
                                 f"can be asked for is 'random' (got split={split!r})")
            labelled = data.y >= 0 if getattr(data, "y", None) is not None else None
            if labelled is None:
                raise ValueError(f"{path.name} has no labels (y): a random split needs them")
            data.train_mask, data.val_mask, data.test_mask = random_split(data.y, seed=seed).values()
            data.split = _split_label("random", None, seed)
        data.name = path.stem
    data.fidelity = "file"
    check_graph(data)
    return data


def _missing_error(entry: dict, records: list[dict], ctx: dict, cause: BaseException | None = None):
    where = _store.where_to_put(records, ctx["roots"])
    mirrors = ", ".join(str(r) for r in ctx["roots"]) or "none configured (set OMNIGRAPH_DATA)"
    what = ("one of these files (uniform npz, ARC .mat or a .pt dict of tensors)"
            if entry["loader"]["type"] == "gad_file" else "its files")
    msg = (f"dataset {entry['name']!r} is not available locally: put {what} at {where} "
           f"(mirrors: {mirrors}; OMNIGRAPH_DATA may list several roots)")
    download = entry.get("download", "")
    if entry["task"] == "gad" or entry["loader"]["type"] == "injected":
        msg += f"; {download}" if download else ""
    elif ctx["offline"]:
        msg += f"; online, {download}" if download else ""
        msg += " (offline mode: download not attempted)"
    else:
        msg += f"; downloading failed ({type(cause).__name__}: {cause})" if cause else ""
    return DatasetNotAvailableError(msg)


def _required(entry: dict, protocol: str | None) -> list[dict]:
    return [f for f in entry.get("files", []) if f.get("protocol") in (None, protocol)]


# ------------------------------------------------------------------------------ node classification
def _load_nc(entry: dict, ctx: dict, protocol: str, index: int | None) -> tuple[Data, dict]:
    """The graph (x dense float32, y 1-D long) and the masks of ``protocol`` (empty for random)."""
    kind = entry["loader"]["type"]
    with _store.file_lock(ctx["cache"], entry["name"]):
        records = _required(entry, protocol)
        missing = _store.stage(records, ctx["cache"], ctx["roots"], ctx["verify"])
        if kind == "yandex_npz":
            graph = _yandex(entry, ctx, missing, index)
            masks = {}
            if protocol == "yandex":
                masks = select_masks(graph, None, entry["name"])
        elif kind in ("pyg", "ogb"):
            if missing and ctx["offline"]:
                raise _missing_error(entry, missing, ctx)
            try:
                dataset = open_pyg_dataset(entry, ctx["cache"], protocol)
            except Exception as err:
                if missing and not all((ctx["cache"] / r["path"]).is_file() for r in missing):
                    raise _missing_error(entry, missing, ctx, err) from err
                raise
            graph = dataset[0]
            masks = {}
            if protocol == "ogb":
                masks = ogb_masks(dataset, graph.num_nodes)
            elif protocol != "random":
                masks = select_masks(graph, index, entry["name"])
        else:
            raise ValueError(f"catalogue: unknown loader type {kind!r} for {entry['name']}")
    x = graph.x
    if x.layout != torch.strided:  # AttributedGraphDataset Flickr comes as sparse CSR
        x = x.to_dense()
    y = graph.y.view(-1).to(torch.long)
    return Data(x=x.to(torch.float32), edge_index=graph.edge_index, y=y, num_nodes=graph.num_nodes), masks


def _yandex(entry: dict, ctx: dict, missing: list[dict], index: int | None) -> Data:
    from omnigraph.datasets.yandex import load_yandex_npz

    loader = entry["loader"]
    path = ctx["cache"] / loader["file"]
    if missing:
        if ctx["offline"]:
            raise _missing_error(entry, missing, ctx)
        try:  # the Yandex benchmark's own files on GitHub, fetched next to the cache and renamed on success
            download_verified(loader["url"], path, missing[0].get("sha256") if ctx["verify"] else None)
        except ValueError:
            raise
        except Exception as err:
            raise _missing_error(entry, missing, ctx, err) from err
    return load_yandex_npz(path, split=index or 0, to_undirected=loader.get("to_undirected", True))


# ------------------------------------------------------------------------------- anomaly detection
def _load_gad_file(entry: dict, ctx: dict) -> Data:
    cache, roots = ctx["cache"], ctx["roots"]
    known = {f["path"]: f for f in entry.get("files", [])}
    with _store.file_lock(cache, entry["name"]):
        for rel in entry["loader"]["candidates"]:
            local = cache / rel
            if not local.is_file():
                src = _store.find_file(rel, roots)
                if src is None:
                    continue
                sha = known.get(rel, {}).get("sha256") if ctx["verify"] else None
                _store.copy_verified(src, local, sha)
            return read_graph_file(local, task="gad")
    raise _missing_error(entry, [{"path": rel} for rel in entry["loader"]["candidates"]], ctx)


def injected_cache_path(entry: dict, cache: Path, seed: int) -> Path:
    spec = entry["loader"]
    stem = entry["name"].split("/")[-1]
    return cache / "injected" / (f"{stem}-{spec['version']}-m{spec['clique_size']}-n{spec['num_cliques']}-"
                                 f"c{spec['num_contextual']}-k{spec['k']}-seed{seed}.npz")


def _load_injected(entry: dict, ctx: dict, injection_seed: int | None) -> Data:
    from omnigraph.datasets.inject import InjectAnomalies
    from omnigraph.ops import simple_undirected

    spec = entry["loader"]
    seed = spec["seed"] if injection_seed is None else injection_seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"injection_seed must be an int, got {type(seed).__name__}")
    path = injected_cache_path(entry, ctx["cache"], seed)
    with _store.file_lock(ctx["cache"], f"{entry['name']}-seed{seed}"):
        if not path.is_file():
            host_entry = get_entry(spec["host"])
            try:
                host, _ = _load_nc(host_entry, ctx, "random", None)
            except DatasetNotAvailableError as err:
                raise DatasetNotAvailableError(f"{entry['name']} is built from {spec['host']!r}, which is not "
                                               f"available: {err}") from err
            graph = Data(x=host.x, edge_index=simple_undirected(host.edge_index, host.num_nodes, self_loops=False),
                         num_nodes=host.num_nodes)
            transform = InjectAnomalies(spec["num_cliques"], spec["clique_size"], spec["num_contextual"],
                                        k=spec["k"], seed=seed)
            save_gad_npz(transform(graph), path)
        data = read_gad_npz(path)
    data.injection_seed = seed
    return data


# ------------------------------------------------------------------------------------ availability
def is_available(name: str, root: str | os.PathLike | None = None,
                 data_root: str | os.PathLike | Iterable | None = None) -> bool:
    """Whether ``name`` loads without a download: its files are in a mirror or in the cache
    (injected graphs: cached, or their host is available)."""
    entry = get_entry(name)
    cache = Path(root).expanduser() if root is not None else _store.resolve_cache(None)
    roots = _store.mirror_roots(data_root)
    kind = entry["loader"]["type"]
    if kind == "gad_file":
        return any((cache / rel).is_file() or _store.find_file(rel, roots) is not None
                   for rel in entry["loader"]["candidates"])
    if kind == "injected":
        if injected_cache_path(entry, cache, entry["loader"]["seed"]).is_file():
            return True
        return is_available(entry["loader"]["host"], root, data_root)
    records = _required(entry, None)
    return bool(records) and all((cache / r["path"]).is_file() or _store.locate(r, roots) is not None
                                 for r in records)


def available(names: str | Iterable[str] | None = None, root: str | os.PathLike | None = None,
              data_root: str | os.PathLike | Iterable | None = None) -> list[str]:
    """The subset of ``names`` (default: every catalogued dataset) loadable locally, as
    canonical names in input order. ``available(suite("rgvt28"))`` tells which suite graphs
    can run offline."""
    if names is None:
        names = list_datasets()
    elif isinstance(names, str):
        names = [names]
    return [get_entry(n)["name"] for n in names if is_available(n, root, data_root)]


def dataset_info(name: str, root: str | os.PathLike | None = None,
                 data_root: str | os.PathLike | Iterable | None = None) -> dict:
    """The catalogue entry of ``name`` plus where it stands locally.

    Adds ``name`` (canonical), ``available`` (see :func:`is_available`), ``mirror`` (the first
    mirror root holding its files, or ``None``) and ``suites`` (the benchmark suites using it,
    with the split each one loads).
    """
    from omnigraph.datasets.registry import suite_members, suites

    entry = get_entry(name)
    roots = _store.mirror_roots(data_root)
    candidates = entry.get("files") or [{"path": p} for p in entry["loader"].get("candidates", [])]
    mirror = None
    for record in candidates:
        src = _store.locate(record, roots)
        if src is not None:
            mirror = str(next(r for r in roots if str(src).startswith(str(r))))
            break
    entry["available"] = is_available(entry["name"], root, data_root)
    entry["mirror"] = mirror
    entry["suites"] = {s: m["split"] for s in suites() for m in suite_members(s) if m["name"] == entry["name"]}
    return entry
