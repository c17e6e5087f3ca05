"""Sparse graph operators shared by every model (no model imports here)."""
from omnigraph.ops.adjacency import (
                                     identity_minus,
                                     mean_adjacency,
                                     rw_adjacency,
                                     rw_sym_adjacency,
                                     simple_undirected,
                                     sym_adjacency,
                                     undirected_pattern,
)
from omnigraph.ops.bag_spmm import bag_mm
from omnigraph.ops.blocked_spmm import ColumnBlockedCSR, split_columns, spmm_into
from omnigraph.ops.distributed import column_parallel, column_range, gather_columns
from omnigraph.ops.features import normalize_rows
from omnigraph.ops.operator_pair import (
                                     LARGE_GRAPH_NODES,
                                     SPMM_BACKENDS,
                                     RGVTOperators,
                                     column_blocks,
                                     spmm_kernel,
)
from omnigraph.ops.propagate import available_backends, propagate, spmm
from omnigraph.ops.reorder import (
                                     PermutedRows,
                                     invert_permutation,
                                     locality_order,
                                     permute_graph,
                                     resolve_reorder,
)
from omnigraph.ops.triangles import triangle_counts

__all__ = [
                                     "LARGE_GRAPH_NODES",
                                     "SPMM_BACKENDS",
                                     "ColumnBlockedCSR",
                                     "PermutedRows",
                                     "RGVTOperators",
                                     "available_backends",
                                     "bag_mm",
                                     "column_blocks",
                                     "column_parallel",
                                     "column_range",
                                     "gather_columns",
                                     "identity_minus",
                                     "invert_permutation",
                                     "locality_order",
                                     "mean_adjacency",
                                     "normalize_rows",
                                     "permute_graph",
                                     "propagate",
                                     "resolve_reorder",
                                     "rw_adjacency",
                                     "rw_sym_adjacency",
                                     "simple_undirected",
                                     "split_columns",
                                     "spmm",
                                     "spmm_into",
                                     "spmm_kernel",
                                     "sym_adjacency",
                                     "triangle_counts",
                                     "undirected_pattern",
]
