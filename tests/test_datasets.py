"""Catalogue, names, suites, split protocols, CLI and error handling of the dataset layer.

Most tests here need no data; those touching files build small mirrors in ``tmp_path`` or
use the real mirror through the ``data_root`` fixture.
"""
from __future__ import annotations

import json
import os
import shutil
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch

import omnigraph
from omnigraph.cli import main as cli_main
from omnigraph.datasets import (
    DatasetNotAvailableError,
    available,
    catalogue,
    dataset_info,
    get_entry,
    list_datasets,
    load_dataset,
    random_split,
    resolve,
    suite,
    suite_members,
)
from omnigraph.datasets.splits import parse_split

ENTRIES = catalogue()["datasets"]
PYG_ENTRIES = [n for n, e in ENTRIES.items() if e["loader"]["type"] == "pyg"]


# ------------------------------------------------------------------------------------- catalogue
def test_catalogue_counts_and_fields():
    assert len(list_datasets("nc")) >= 40
    assert len(list_datasets("gad")) >= 15
    loader_types = {"pyg", "ogb", "yandex_npz", "gad_file", "injected"}
    for name, entry in ENTRIES.items():
        assert entry["task"] in ("nc", "gad"), name
        assert entry["loader"]["type"] in loader_types, name
        assert (entry["task"] == "gad") == name.startswith("gad/"), name
        stats = entry["stats"]
        assert stats["num_nodes"] > 0 and stats["num_features"] > 0, name
        assert entry["title"] and entry["fidelity"] and "download" in entry, name
        for record in entry["files"]:
            if "sha256" in record:
                assert len(record["sha256"]) == 64, (name, record)
        if entry["task"] == "nc":
            assert stats["num_classes"] >= 2, name
            parse_split(None, entry["splits"], name)  # the default split is valid
            assert "random" in entry["splits"]["protocols"], name


def test_catalogue_covers_required_families():
    names = set(ENTRIES)
    for lang in ("de", "en", "es", "fr", "pt", "ru"):
        assert f"twitch_{lang}" in names
    for name in ("cora_full", "cora_ml", "citeseer_full", "dblp", "pubmed_full", "facebook_pagepage", "github",
                 "lastfm_asia", "deezer", "reddit", "ogbn-arxiv", "ogbn-products", "wikics"):
        assert name in names, name
    for name in ("gad/cora", "gad/citeseer", "gad/facebook", "gad/reddit", "gad/amazon", "gad/tolokers",
                 "gad/blogcatalog_inj", "gad/flickr_inj", "gad/cs_inj", "gad/photo_inj", "gad/acm", "gad/weibo",
                 "gad/pubmed", "gad/questions", "gad/yelpchi", "gad/tfinance", "gad/elliptic", "gad/amazon_all",
                 "gad/yelpchi_all"):
        assert name in names, name
    inj = {n: ENTRIES[n]["loader"] for n in names if n.endswith("_inj")}
    assert {n: (s["host"], s["num_cliques"], s["num_contextual"], s["k"], s["seed"]) for n, s in inj.items()} == {
        "gad/blogcatalog_inj": ("blogcatalog", 10, 150, 50, 0), "gad/flickr_inj": ("flickr", 15, 225, 50, 0),
        "gad/cs_inj": ("coauthor_cs", 20, 300, 50, 0), "gad/photo_inj": ("amazon_photo", 15, 225, 50, 0)}


def test_suites():
    rgvt, graphany = suite("rgvt28"), suite("GraphAny31")
    assert len(rgvt) == len(set(rgvt)) == 28
    assert len(graphany) == len(set(graphany)) == 31
    # the versions each method loads (node-classification.md 4.3)
    for name in ("cornell", "wisconsin", "chameleon_filtered", "squirrel_filtered", "actor"):
        assert name in rgvt and name not in graphany
    assert "texas_4_classes" in rgvt and "texas_4_classes" in graphany  # both use the Yandex npz
    for name in ("cornell_geomgcn", "wisconsin_geomgcn", "chameleon", "squirrel", "actor_geomgcn",
                 "ogbn-products", "lastfm_asia", "reddit"):
        assert name in graphany and name not in rgvt
    assert set(rgvt) - set(graphany) == {"cornell", "wisconsin", "chameleon_filtered", "squirrel_filtered", "actor"}
    for suite_name, seed in (("rgvt28", 42), ("graphany31", 0)):
        for item in suite_members(suite_name):
            assert item["seed"] == seed
            entry = get_entry(item["name"])
            _proto, index = parse_split(item["split"], entry["splits"], entry["name"])
            assert index in (None, 0)
    with pytest.raises(ValueError, match="unknown suite"):
        suite("rgvt29")


@pytest.mark.parametrize("alias, canonical", [
    ("Cora", "cora"), ("CORA", "cora"), ("Roman-empire", "roman_empire"), ("roman empire", "roman_empire"),
    ("CoraFull", "cora_full"), ("FullCora", "cora_full"), ("ogbn_arxiv", "ogbn-arxiv"), ("arxiv", "ogbn-arxiv"),
    ("Facebook", "gad/facebook"), ("FacebookPagePage", "facebook_pagepage"), ("GAD/Reddit", "gad/reddit"),
    ("Reddit", "reddit"), ("chameleon_geomgcn", "chameleon"), ("Chameleon-Filtered", "chameleon_filtered"),
    ("webkb_cornell", "cornell_geomgcn"), ("yandex_cornell", "cornell"), ("Texas4Classes", "texas_4_classes"),
    ("AmazonPhoto", "amazon_photo"), ("Photo", "amazon_photo"), ("CS", "coauthor_cs"),
    ("blogcatalog-inj", "gad/blogcatalog_inj"), ("ACM", "gad/acm"), ("DeezerEurope", "deezer"),
])
def test_resolve_aliases(alias, canonical):
    assert resolve(alias) == canonical


def test_resolve_errors():
    with pytest.raises(ValueError, match="did you mean: .*cora"):
        resolve("coraa")
    with pytest.raises(ValueError, match="ambiguous.*amazon_photo"):
        resolve("amazon")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("no-such-graph")
    with pytest.raises(TypeError):
        resolve(3)


def test_lazy_public_names():
    assert omnigraph.load_dataset is load_dataset
    assert omnigraph.InjectAnomalies.__name__ == "InjectAnomalies"
    assert omnigraph.list_datasets("gad") == list_datasets("gad")
    assert omnigraph.dataset_info is dataset_info


@pytest.mark.parametrize("name", [n for n in PYG_ENTRIES if ENTRIES[n]["loader"]["class"] != "Planetoid"]
                         + ["cora", "pubmed"])
def test_catalogue_raw_paths_match_pyg(name, tmp_path, monkeypatch):
    """The catalogue's file list is exactly what the PyG class looks for (checked offline by
    intercepting the download PyG starts when the files are absent)."""
    import torch_geometric.datasets as pyg_datasets

    entry = ENTRIES[name]
    cls = getattr(pyg_datasets, entry["loader"]["class"])
    seen = {}

    def fake_download(self):
        seen["paths"] = list(self.raw_paths)
        raise RuntimeError("download intercepted")

    monkeypatch.setattr(cls, "download", fake_download)
    for protocol in (None, *entry["loader"].get("protocol_kwargs", {})):
        kwargs = dict(entry["loader"]["kwargs"], **entry["loader"].get("protocol_kwargs", {}).get(protocol, {}))
        with pytest.raises(RuntimeError, match="intercepted"):
            cls(str(tmp_path / entry["loader"]["root"]), **kwargs)
        listed = {str(tmp_path / f["path"]) for f in entry["files"] if f.get("protocol") == protocol}
        # Planetoid's geom-gcn split files are fetched and read next to its raw files
        extra = {p for p in listed if protocol == "geom-gcn" and "_split_0.6_0.2_" in p}
        assert sorted(seen["paths"]) == sorted(listed - extra), protocol
        assert len(extra) == (10 if protocol == "geom-gcn" else 0)


# ---------------------------------------------------------------------------------------- splits
def test_parse_split():
    splits = get_entry("cora")["splits"]
    assert parse_split(None, splits, "cora") == ("public", None)
    assert parse_split("geom-gcn:3", splits, "cora") == ("geom-gcn", 3)
    assert parse_split("geom_gcn", splits, "cora") == ("geom-gcn", 0)
    assert parse_split("random", splits, "cora") == ("random", None)
    assert parse_split(2, get_entry("cornell")["splits"], "cornell") == ("yandex", 2)
    assert parse_split(None, get_entry("wikics")["splits"], "wikics") == ("public", 0)
    with pytest.raises(ValueError, match="has no indexed splits"):
        parse_split(3, splits, "cora")
    with pytest.raises(ValueError, match="out of range"):
        parse_split("geom-gcn:10", splits, "cora")
    with pytest.raises(ValueError, match="unknown split"):
        parse_split("yandex:0", splits, "cora")
    with pytest.raises(ValueError, match="no index"):
        parse_split("public:1", splits, "cora")
    with pytest.raises(TypeError):
        parse_split(1.5, splits, "cora")


def test_random_split_protocol():
    gen = torch.Generator().manual_seed(0)
    y = torch.multinomial(torch.tensor([0.5, 0.3, 0.15, 0.05]), 3000, replacement=True, generator=gen)
    a, b, c = random_split(y, seed=42), random_split(y, seed=42), random_split(y, seed=0)
    for key in a:
        assert torch.equal(a[key], b[key])
    assert not torch.equal(a["train_mask"], c["train_mask"])
    train, val, test = a["train_mask"], a["val_mask"], a["test_mask"]
    assert abs(int(train.sum()) - 80) <= 1  # 20 * C, possibly off by one
    assert abs(int(val.sum()) - int(test.sum())) <= 1
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    assert bool((train | val | test).all())
    counts = torch.bincount(y[train], minlength=4)
    expected = 80 * torch.bincount(y, minlength=4) / y.numel()
    assert (counts - expected).abs().max() <= 1  # stratified: proportional, not 20 per class
    with pytest.raises(ValueError, match="random split needs"):
        random_split(torch.tensor([0, 1, 0, 1]), seed=0)


# ------------------------------------------------------------------------------------------- CLI
def test_cli_list_json(capsys):
    assert cli_main(["datasets", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["task"] == "nc" for r in rows) >= 40
    assert sum(r["task"] == "gad" for r in rows) >= 15
    row = next(r for r in rows if r["name"] == "cora")
    assert (row["num_nodes"], row["num_edges"], row["num_features"], row["num_classes"]) == (2708, 10556, 1433, 7)
    assert isinstance(row["available"], bool)
    assert cli_main(["datasets", "list", "--task", "gad", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["task"] == "gad" and "num_anomalies" in r for r in rows)
    assert cli_main(["datasets", "list", "--suite", "rgvt28", "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == suite("rgvt28")


def test_cli_list_table_and_info(capsys):
    assert cli_main(["datasets", "list", "--task", "nc"]) == 0
    out = capsys.readouterr().out
    assert "cora" in out and "2,708" in out and "gad/cora" not in out
    assert cli_main(["datasets", "info", "Chameleon-Filtered"]) == 0
    out = capsys.readouterr().out
    assert "chameleon_filtered" in out and "rgvt28 (yandex:0)" in out and "890" in out
    assert cli_main(["datasets", "info", "gad/acm", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "gad/acm" and info["available"] is False
    assert cli_main(["datasets", "info", "coraa"]) == 2
    assert "did you mean" in capsys.readouterr().err


# ------------------------------------------------------------------------- mirror, cache, errors
@pytest.fixture
def tiny_mirror(tmp_path, data_root):
    """A private mirror holding two Yandex files (one of them also under a second root)."""
    mirror = tmp_path / "mirror"
    (mirror / "yandex").mkdir(parents=True)
    for stem in ("cornell", "texas"):
        shutil.copy(data_root / "yandex" / f"{stem}.npz", mirror / "yandex" / f"{stem}.npz")
    return mirror


def test_checksum_mismatch(tiny_mirror, tmp_path):
    bad = tmp_path / "bad"
    (bad / "yandex").mkdir(parents=True)
    shutil.copy(tiny_mirror / "yandex" / "texas.npz", bad / "yandex" / "cornell.npz")  # valid npz, wrong bytes
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="checksum mismatch.*cornell.npz"):
        load_dataset("cornell", data_root=bad, root=cache, offline=True)
    # nothing half-written or unverified is left in the cache
    assert not list((cache / "yandex").iterdir())
    data = load_dataset("cornell", data_root=bad, root=cache, offline=True, verify=False)
    assert data.num_nodes == 183 and int(data.train_mask.sum()) == 87  # texas's masks: accepted as asked


def test_mirror_priority_cache_and_read_only(tiny_mirror, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cache = tmp_path / "cache"
    before = sorted(p.relative_to(tiny_mirror) for p in tiny_mirror.rglob("*"))
    data = load_dataset("Cornell", data_root=os.pathsep.join([str(empty), str(tiny_mirror)]), root=cache)
    assert (data.name, data.split, data.fidelity) == ("cornell", "yandex:0", "exact")
    assert (cache / "yandex" / "cornell.npz").is_file()
    assert sorted(p.relative_to(tiny_mirror) for p in tiny_mirror.rglob("*")) == before  # mirror untouched
    # once cached, no mirror is needed
    again = load_dataset("cornell", data_root=[str(empty)], root=cache, offline=True)
    assert torch.equal(again.edge_index, data.edge_index)
    assert available(["cornell", "texas", "wisconsin"], root=cache, data_root=[str(tiny_mirror)]) == ["cornell",
                                                                                                       "texas"]


def test_missing_dataset_messages(tmp_path, data_root, monkeypatch):
    cache = tmp_path / "cache"
    with pytest.raises(DatasetNotAvailableError, match=r"pyg/PubMed/raw/ind\.pubmed\..*offline") as err:
        load_dataset("pubmed", data_root=data_root, root=cache, offline=True)
    assert str(data_root) in str(err.value)
    with pytest.raises(DatasetNotAvailableError, match=r"yandex/questions\.npz|HeterophilousGraphDataset/questions"):
        load_dataset("questions", data_root=data_root, root=cache, offline=True)
    with pytest.raises(DatasetNotAvailableError, match=r"gad/acm\.npz.*ACM\.mat"):
        load_dataset("ACM", data_root=data_root, root=cache)
    with pytest.raises(DatasetNotAvailableError, match=r"ogb/ogbn_arxiv/"):
        load_dataset("ogbn-arxiv", data_root=data_root, root=cache, offline=True)

    # online: PyG's download is attempted; its failure is reported with the mirror path
    import torch_geometric.datasets as pyg_datasets

    def no_network(self):
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(pyg_datasets.Planetoid, "download", no_network)
    with pytest.raises(DatasetNotAvailableError, match="PubMed/raw.*downloading failed.*network unreachable"):
        load_dataset("pubmed", data_root=data_root, root=cache, offline=False)
    assert isinstance(DatasetNotAvailableError("x"), FileNotFoundError)
    assert "pubmed" not in available(["pubmed", "cora"], root=cache, data_root=data_root)


def test_yandex_download_is_verified(data_root, tmp_path, monkeypatch):
    """Without a mirror the Yandex file is downloaded into the cache and checked against the
    catalogue (the mirror copies are verbatim, so the checksum applies to the download too)."""
    import torch_geometric.data

    served = {"file": "texas.npz"}

    def fake_download(url, folder, log=True):
        assert url.endswith("/data/cornell.npz")
        dst = Path(folder) / url.rsplit("/", 1)[1]
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(data_root / "yandex" / served["file"], dst)
        if served.get("cut"):  # the connection drops half-way through
            dst.write_bytes(dst.read_bytes()[: dst.stat().st_size // 2])
            raise ConnectionResetError("connection reset by peer")
        return str(dst)

    monkeypatch.setattr(torch_geometric.data, "download_url", fake_download)
    empty = tmp_path / "no-mirror"
    empty.mkdir()
    with pytest.raises(ValueError, match="checksum mismatch for the downloaded"):
        load_dataset("cornell", data_root=[str(empty)], root=tmp_path / "cache")
    assert not (tmp_path / "cache" / "yandex" / "cornell.npz").exists()
    served.update(file="cornell.npz", cut=True)
    with pytest.raises(DatasetNotAvailableError, match="downloading failed.*connection reset"):
        load_dataset("cornell", data_root=[str(empty)], root=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "yandex").iterdir())  # nothing half-written is left behind
    served["cut"] = False
    data = load_dataset("cornell", data_root=[str(empty)], root=tmp_path / "cache")
    assert data.num_nodes == 183 and int(data.val_mask.sum()) == 59


def test_bad_arguments(data_root, tmp_path):
    with pytest.raises(ValueError, match="anomaly-detection dataset.*no train/val/test split"):
        load_dataset("gad/cora", split=0, data_root=data_root)
    with pytest.raises(ValueError, match="injection_seed only applies"):
        load_dataset("cornell", injection_seed=1, data_root=data_root)
    with pytest.raises(ValueError, match="out of range"):
        load_dataset("cornell", split=10, data_root=data_root)
    with pytest.raises(FileNotFoundError, match="no such graph file"):
        load_dataset(tmp_path / "nothing.npz")
    with pytest.raises(TypeError, match="seed must be an int"):
        load_dataset("cornell", split="random", seed=None, data_root=data_root)


def test_ogb_loader_on_synthetic_mirror(tmp_path):
    """OGB's loader and official split, on a tiny graph in OGB's raw layout (the real ogbn-arxiv
    is not in the offline mirror)."""
    import pandas as pd

    base = tmp_path / "mirror" / "ogb" / "ogbn_arxiv"
    (base / "raw").mkdir(parents=True)
    (base / "split" / "time").mkdir(parents=True)
    (base / "RELEASE_v1.txt").write_text("v1\n")
    rng = np.random.default_rng(0)
    n, e = 60, 150
    edges = rng.integers(0, n, (e, 2))

    def write(rel, array):
        pd.DataFrame(array).to_csv(base / rel, header=False, index=False, compression="gzip")

    write("raw/edge.csv.gz", edges)
    write("raw/node-feat.csv.gz", rng.normal(size=(n, 128)).astype(np.float32))
    write("raw/node-label.csv.gz", rng.integers(0, 2, (n, 1)))
    write("raw/node_year.csv.gz", rng.integers(2000, 2020, (n, 1)))
    write("raw/num-node-list.csv.gz", np.array([[n]]))
    write("raw/num-edge-list.csv.gz", np.array([[e]]))
    perm = rng.permutation(n)
    for part, idx in (("train", perm[:30]), ("valid", perm[30:45]), ("test", perm[45:])):
        write(f"split/time/{part}.csv.gz", idx[:, None])
    data = load_dataset("ogbn-arxiv", data_root=tmp_path / "mirror", root=tmp_path / "cache", offline=True)
    assert data.split == "ogb" and data.x.shape == (n, 128) and data.y.shape == (n,)
    assert data.edge_index.size(1) == e
    assert int(data.train_mask.sum()) == 30 and bool(data.train_mask[torch.from_numpy(perm[:30])].all())
    assert int(data.val_mask.sum()) == 15 and int(data.test_mask.sum()) == 15
    rand = load_dataset("arxiv", split="random", seed=1, data_root=tmp_path / "mirror", root=tmp_path / "cache")
    assert rand.split == "random:seed=1" and torch.equal(rand.x, data.x)
