r"""Column-parallel inference across ``torch.distributed`` ranks.

A map :math:`f: \mathbb{R}^{N \times F} \to \mathbb{R}^{N' \times F}` is *column-separable*
when column :math:`j` of :math:`f(X)` depends only on column :math:`j` of :math:`X`:
:math:`f(X)[:, B] = f(X[:, B])` for every block of columns :math:`B`. RGVT's encoder
:math:`\Psi^L` is one (its view MLP acts on each ``(node, feature)`` entry's view vector and the
propagation acts on each column), and so is any multi-hop propagation. Such a map can be
split across processes by feature columns: every rank holds the graph and only its block of
``X``, encodes it, and the blocks are concatenated, so a graph whose ``N x F`` features do not
fit one process is encoded by several::

    import torch.distributed as dist
    dist.init_process_group("gloo")             # torchrun / env:// variables
    ops = RGVTEncoder.build_operators(edge_index, num_nodes)
    z = column_parallel(lambda xb: encoder(xb, depth=8, operators=ops), x)   # [N, F] on every rank

The split is the contiguous, balanced :func:`column_range`; pass ``gather=False`` to keep only
the local block (e.g. to write it to disk) and :func:`gather_columns` to assemble blocks later.
Without an initialised process group everything runs in the one process.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable

import torch
from torch import Tensor


def _world(group=None) -> tuple[int, int]:
    """``(world size, rank)`` of ``group``; ``(1, 0)`` without an initialised process group."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(group), dist.get_rank(group)
    return 1, 0


def column_blocks(num_columns: int, world_size: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` column ranges, one per rank, widths differing by at most one."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if num_columns < world_size:
        raise ValueError(f"{num_columns} feature columns cannot be split across {world_size} ranks: "
                         "use at most as many ranks as columns")
    base, extra = divmod(num_columns, world_size)
    bounds = [0]
    for r in range(world_size):
        bounds.append(bounds[-1] + base + (r < extra))
    return list(itertools.pairwise(bounds))


def column_range(num_columns: int, group=None) -> tuple[int, int]:
    """This rank's ``[start, stop)`` block of ``num_columns`` columns (all of them without DDP)."""
    world, rank = _world(group)
    return column_blocks(num_columns, world)[rank]


def gather_columns(block: Tensor, num_columns: int, group=None) -> Tensor:
    """All-gather every rank's column block (``[N', stop - start]``) into ``[N', num_columns]``
    on every rank. Blocks are padded to equal width for the collective, then trimmed."""
    import torch.distributed as dist

    world, rank = _world(group)
    blocks = column_blocks(num_columns, world)
    start, stop = blocks[rank]
    if block.dim() != 2 or block.size(1) != stop - start:
        raise ValueError(f"rank {rank} holds columns [{start}, {stop}) of {num_columns}: expected a 2-D block "
                         f"with {stop - start} columns, got shape {list(block.shape)}")
    if world == 1:
        return block
    width = max(b - a for a, b in blocks)
    padded = block.new_zeros(block.size(0), width)
    padded[:, :block.size(1)] = block
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded.contiguous(), group=group)
    return torch.cat([p[:, :b - a] for p, (a, b) in zip(parts, blocks)], dim=1)


def column_parallel(fn: Callable[[Tensor], Tensor], x: Tensor, group=None, gather: bool = True) -> Tensor:
    """Apply a column-separable ``fn`` to this rank's columns of ``x`` and (by default) gather.

    Args:
        fn: maps ``[N, c]`` features to ``[N', c]`` outputs, column by column (e.g. an RGVT
            encoder with fixed ``depth`` and prebuilt ``operators``).
        x: ``[N, F]`` features (only this rank's block of columns is read).
        group: ``torch.distributed`` process group (default: the world).
        gather: return the full ``[N', F]`` output on every rank (``True``) or only this
            rank's block ``[N', stop - start]`` (``False``; see :func:`column_range`).

    Returns:
        ``fn(x)`` (equal to the single-process result: every column is computed by exactly
        one rank, with the same operations), or this rank's block of it.
    """
    if x.dim() != 2:
        raise ValueError(f"x must have shape [N, F], got {list(x.shape)}")
    start, stop = column_range(x.size(1), group)
    local = fn(x[:, start:stop])
    if not isinstance(local, Tensor) or local.dim() != 2 or local.size(1) != stop - start:
        shape = list(local.shape) if isinstance(local, Tensor) else type(local).__name__
        raise ValueError(f"fn must be column-separable and return one column per input column: it mapped "
                         f"{stop - start} columns to {shape}")
    return gather_columns(local, x.size(1), group) if gather else local


__all__ = ["column_blocks", "column_parallel", "column_range", "gather_columns"]
