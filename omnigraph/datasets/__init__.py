"""Datasets: the catalogue, ``load_dataset``, benchmark suites, graph files and anomaly injection.

>>> import omnigraph
>>> data = omnigraph.load_dataset("cora")                 # Planetoid public split
>>> data = omnigraph.load_dataset("amazon_photo", seed=42)  # stratified random split (RGVT)
>>> gad = omnigraph.load_dataset("gad/cora")              # ARC's injected Cora, y in {0, 1}
>>> omnigraph.datasets.suite("rgvt28")[:3]
['ogbn-arxiv', 'cora', 'citeseer']
"""
from omnigraph.datasets._store import DatasetNotAvailableError
from omnigraph.datasets.features import FEATURE_TYPES, feature_type
from omnigraph.datasets.files import read_graph_file, save_nc_file
from omnigraph.datasets.gad import read_gad_npz, read_mat, read_pt, save_gad_npz
from omnigraph.datasets.inject import InjectAnomalies, inject_contextual, inject_structural
from omnigraph.datasets.loader import available, dataset_info, is_available, load_dataset
from omnigraph.datasets.registry import (
    catalogue,
    get_entry,
    list_datasets,
    resolve,
    suite,
    suite_members,
    suites,
)
from omnigraph.datasets.splits import random_split
from omnigraph.datasets.synthetic import synthetic_graph
from omnigraph.datasets.yandex import load_yandex_npz

__all__ = [
    "FEATURE_TYPES",
    "DatasetNotAvailableError",
    "InjectAnomalies",
    "available",
    "catalogue",
    "dataset_info",
    "feature_type",
    "get_entry",
    "inject_contextual",
    "inject_structural",
    "is_available",
    "list_datasets",
    "load_dataset",
    "load_yandex_npz",
    "random_split",
    "read_gad_npz",
    "read_graph_file",
    "read_mat",
    "read_pt",
    "resolve",
    "save_gad_npz",
    "save_nc_file",
    "suite",
    "suite_members",
    "suites",
    "synthetic_graph",
]
