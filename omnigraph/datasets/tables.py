"""A graph from two CSV tables, as most users hold one: a node table and an edge list.

The node table has a header row; its first column (or ``id_column``) holds the node ids, any
strings; the other columns are numeric features, except ``label_column`` (class ids for node
classification, 0/1 for anomaly detection; an empty cell marks an unlabelled node, stored as -1
for node classification). The edge list has a header row and two columns of node ids (source,
target); every id must appear in the node table. Node ``i`` of the result is row ``i`` of the node
table, and ``data.node_ids`` keeps the ids, so that per-node results can be written back under them.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    if not path.is_file():
        raise FileNotFoundError(f"no such table: {path}")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"{path}: a header row and at least one data row are needed")
    return [h.strip() for h in rows[0]], rows[1:]


def read_tables(nodes: str | Path, edges: str | Path, label_column: str | None = None,
                id_column: str | None = None, task: str = "nc") -> Data:
    """``Data(x, edge_index, y?, num_nodes)`` plus ``data.node_ids`` from a node table and an edge list.

    Args:
        nodes: CSV node table (header; id column, feature columns, optional label column).
        edges: CSV edge list (header; source id, target id).
        label_column: the label column's name (``None``: no labels).
        id_column: the id column's name (``None``: the first column).
        task: ``"nc"`` (labels are class ids, empty = -1) or ``"gad"`` (labels 0/1, empty = missing).
    """
    if task not in ("nc", "gad"):
        raise ValueError(f"task must be 'nc' or 'gad', got {task!r}")
    nodes, edges = Path(nodes), Path(edges)
    header, rows = _rows(nodes)
    id_col = 0 if id_column is None else _index(header, id_column, nodes)
    label_col = None if label_column is None else _index(header, label_column, nodes)
    feat_cols = [j for j in range(len(header)) if j not in (id_col, label_col)]
    if not feat_cols:
        raise ValueError(f"{nodes}: no feature columns besides the id{' and label' if label_col is not None else ''}")
    ids = [r[id_col].strip() if len(r) > id_col else "" for r in rows]
    index = {}
    for i, node in enumerate(ids):
        if node in index:
            raise ValueError(f"{nodes}: node id {node!r} appears twice (rows {index[node] + 2} and {i + 2})")
        index[node] = i
    bad = next((i for i, r in enumerate(rows) if len(r) != len(header)), None)
    if bad is not None:
        raise ValueError(f"{nodes}: row {bad + 2} has {len(rows[bad])} cells but the header has {len(header)}")
    try:
        x = np.array([[float(r[j]) for j in feat_cols] for r in rows], dtype=np.float32)
    except ValueError as err:
        raise ValueError(f"{nodes}: feature columns must be numeric ({err})") from None
    ehead, erows = _rows(edges)
    if len(ehead) < 2:
        raise ValueError(f"{edges}: an edge list needs two columns (source, target)")
    pairs = []
    for line, r in enumerate(erows, start=2):
        if len(r) < 2:
            raise ValueError(f"{edges}: line {line} has fewer than two cells")
        a, b = r[0].strip(), r[1].strip()
        if a not in index or b not in index:
            missing = a if a not in index else b
            raise ValueError(f"{edges}: line {line} mentions node {missing!r}, which is not in {nodes.name}")
        pairs.append((index[a], index[b]))
    edge_index = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    data = Data(x=torch.from_numpy(x), edge_index=edge_index, num_nodes=len(ids))
    if label_col is not None:
        cells = [r[label_col].strip() for r in rows]
        try:
            y = [int(float(c)) if c else -1 for c in cells]
        except ValueError as err:
            raise ValueError(f"{nodes}: column {header[label_col]!r} must hold integer labels ({err})") from None
        data.y = torch.tensor(y, dtype=torch.long)
        if task == "gad" and not bool(((data.y == 0) | (data.y == 1)).all()):
            raise ValueError(f"{nodes}: anomaly labels in {header[label_col]!r} must be 0 or 1 for every node")
    data.node_ids = ids
    data.task = task
    data.name = nodes.stem
    return data


def _index(header: list[str], name: str, path: Path) -> int:
    if name not in header:
        raise ValueError(f"{path}: no column {name!r} (columns: {header})")
    return header.index(name)


__all__ = ["read_tables"]
