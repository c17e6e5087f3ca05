"""Sparse graph operators shared by every model (no model imports here)."""
from omnigraph.ops.adjacency import (identity_minus, mean_adjacency, rw_adjacency, simple_undirected,
                                     sym_adjacency)
from omnigraph.ops.propagate import available_backends, propagate, spmm

__all__ = ["simple_undirected", "rw_adjacency", "sym_adjacency", "mean_adjacency", "identity_minus",
           "propagate", "spmm", "available_backends"]
