"""The dataset catalogue (``datasets/catalogue.json``): names, aliases, loaders, splits, statistics.

Lookup is case-insensitive and ignores ``-``, ``_``, ``.`` and spaces. Node-classification
datasets have bare names (``cora``, ``reddit``, ``tolokers``); anomaly-detection datasets live
under ``gad/`` (``gad/cora`` is ARC's injected Cora, ``gad/reddit`` the 10,984-node PyGOD
graph). See the catalogue's ``naming`` section for the full scheme.
"""
from __future__ import annotations

import copy
import difflib
import functools
import json
import re
from importlib import resources
from pathlib import Path

_REPO_FILE = Path(__file__).resolve().parents[2] / "datasets" / "catalogue.json"


def normalize(name: str) -> str:
    """Lookup key: lower case, without ``-``, ``_``, ``.`` and whitespace (``/`` is kept)."""
    return re.sub(r"[\s_\-.]", "", str(name).lower())


@functools.lru_cache(maxsize=1)
def catalogue() -> dict:
    """The parsed catalogue (cached; treat as read-only)."""
    if _REPO_FILE.is_file():  # source checkout / editable install
        text = _REPO_FILE.read_text()
    else:  # installed wheel: shipped as package data
        text = resources.files("omnigraph._catalogue").joinpath("catalogue.json").read_text()
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for name, entry in catalogue()["datasets"].items():
        for key in {normalize(name), *(normalize(a) for a in entry.get("aliases", []))}:
            if index.get(key, name) != name:
                raise RuntimeError(f"catalogue: alias {key!r} of {name!r} already names {index[key]!r}")
            index[key] = name
    return index


def resolve(name: str) -> str:
    """Canonical catalogue name for ``name`` (an alias, any case).

    Raises:
        ValueError: unknown or ambiguous name; the message suggests close matches.
    """
    if not isinstance(name, str):
        raise TypeError(f"dataset name must be a str, got {type(name).__name__}")
    key = normalize(name)
    index = _index()
    if key in index:
        return index[key]
    ambiguous = {normalize(k): v for k, v in catalogue().get("ambiguous", {}).items()}
    if key in ambiguous:
        raise ValueError(f"dataset name {name!r} is ambiguous; use one of: {', '.join(ambiguous[key])}")
    names = list(catalogue()["datasets"])
    close = difflib.get_close_matches(key, list(index), n=5, cutoff=0.6)
    hints = list(dict.fromkeys(index[c] for c in close))
    if not hints:
        hints = [n for n in names if key and (key in normalize(n) or normalize(n) in key)][:5]
    msg = f"unknown dataset {name!r}"
    if hints:
        msg += f"; did you mean: {', '.join(hints)}?"
    msg += " (omnigraph.list_datasets() or `omnigraph datasets list` shows all names)"
    raise ValueError(msg)


def get_entry(name: str) -> dict:
    """The catalogue entry of ``name`` (a deep copy) with its canonical ``name`` added."""
    canonical = resolve(name)
    entry = copy.deepcopy(catalogue()["datasets"][canonical])
    entry["name"] = canonical
    return entry


def list_datasets(task: str | None = None) -> list[str]:
    """Canonical names of every catalogued dataset, optionally only ``task`` ``"nc"`` or ``"gad"``."""
    if task not in (None, "nc", "gad"):
        raise ValueError(f"task must be 'nc', 'gad' or None, got {task!r}")
    return [n for n, e in catalogue()["datasets"].items() if task is None or e["task"] == task]


def suites() -> list[str]:
    return list(catalogue()["suites"])


def _suite(name: str) -> dict:
    table = catalogue()["suites"]
    key = normalize(name)
    for suite_name, spec in table.items():
        if normalize(suite_name) == key:
            return spec
    raise ValueError(f"unknown suite {name!r}; known suites: {', '.join(table)}")


def suite(name: str) -> list[str]:
    """Dataset names (canonical) of a benchmark suite: ``"rgvt28"`` or ``"graphany31"``.

    Each method loads its own version of some graphs (e.g. RGVT's ``chameleon_filtered`` vs
    GraphAny's ``chameleon``), so the two lists differ beyond the three extra GraphAny graphs.
    """
    return [g["dataset"] for g in _suite(name)["graphs"]]


def suite_members(name: str) -> list[dict]:
    """The suite's graphs as ``{"name", "graph", "split", "seed"}`` dicts (``name`` = catalogue
    name, ``graph`` = the paper's label), ready for
    ``load_dataset(m["name"], split=m["split"], seed=m["seed"])``."""
    spec = _suite(name)
    return [{"name": g["dataset"], "graph": g["graph"], "split": g["split"], "seed": spec["seed"]}
            for g in spec["graphs"]]
