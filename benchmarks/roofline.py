"""The roofline of a sparse product on this machine (issue #20 §1), measured in the run that uses it.

Three rates, each the median of repeats in one process:

* **stream**: bytes read plus bytes written per second by a copy of a 256 MiB float32 array;
* **in-cache gather**: nanoseconds per gathered entry and column when rows of ``k`` float32 are
  fetched (:func:`gather_ns`) from a table of one column block (``RGVTEncoder.block_bytes``,
  16 MiB, or all of X when smaller): uniformly random rows (the machine's rate, reported), and
  the rows the product itself gathers, block by block (:func:`block_index`: the graph's own
  locality, which is what the roofline uses, so that it stays a lower bound);
* **DRAM gather**: the same from a table of 512 MiB, far larger than the last-level cache.

The roofline of ``A @ X`` (``A`` sparse ``[N, N]`` with ``nnz`` entries, ``X`` ``[N, k]``) is the
lowest time these rates allow: stream the operator's index and value arrays and write the
``[N, k]`` output at the streaming rate, and gather ``nnz`` rows of ``k`` floats at the
in-cache rate. The DRAM ceiling is the same with the DRAM gather rate: what a kernel that
does not block its gathers can reach on a graph whose features do not fit the caches.
``fraction = roofline / measured``: 1 is the machine's limit.
"""
from __future__ import annotations

import statistics
import time

STREAM_BYTES = 256 << 20
DRAM_TABLE_BYTES = 512 << 20
GATHERS = 1 << 22


def _median_seconds(fn, repeats: int, budget: float = 0.3) -> float:
    """Median of at least ``repeats`` timed calls, more (up to 50) while they total under ``budget`` s."""
    fn()                                                        # warm-up: page faults, first touch
    times: list[float] = []
    while len(times) < repeats or (sum(times) < budget and len(times) < 50):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def stream_gbps(nbytes: int = STREAM_BYTES, repeats: int = 7) -> float:
    """Read + write bandwidth of a float32 copy of ``nbytes``, GB/s."""
    import torch

    src = torch.rand(nbytes // 4)
    dst = torch.empty_like(src)
    return 2 * nbytes / _median_seconds(lambda: dst.copy_(src), repeats) / 1e9


def gather_ns(columns: int, table_bytes: int, index=None, gathers: int = GATHERS, repeats: int = 5,
              seed: int = 0) -> float:
    """ns per entry and column of gathering rows of ``columns`` float32 from a table of
    ``table_bytes``: the rows ``index`` (int32) when given, else ``gathers`` uniformly random
    rows. The faster of ``torch.index_select`` into one output buffer of about 1 MiB, reused
    chunk after chunk (so that writing the rows costs no memory traffic), and ``F.embedding_bag``
    summing bags of 16 rows (the gather-and-add of a sparse product, with 1/16 of the output)."""
    import torch
    import torch.nn.functional as F

    rows = max(table_bytes // (4 * columns), 1)
    gen = torch.Generator().manual_seed(seed)
    table = torch.rand(rows, columns, generator=gen)
    if index is None:
        index = torch.randint(rows, (gathers,), generator=gen, dtype=torch.int32)
    gathers = index.numel()
    chunk = max(4096, (1 << 20) // (4 * columns))
    pieces = [index[s:s + chunk] for s in range(0, gathers, chunk)]
    out = torch.empty(chunk, columns)
    offsets = torch.arange(0, gathers, 16, dtype=index.dtype)

    def copy():
        for piece in pieces:
            torch.index_select(table, 0, piece, out=out[:piece.numel()])

    def bag():
        F.embedding_bag(index, table, offsets, mode="sum")

    return min(_median_seconds(copy, repeats), _median_seconds(bag, repeats)) / (gathers * columns) * 1e9


def block_index(op, columns: int, block_bytes: int):
    """The rows a product with ``op`` gathers, as one column-blocked kernel gathers them: each
    entry's column within its block of ``block_bytes`` of rows (the whole of X when it fits one
    block), in the order of the blocks. ``(index, table_bytes)``."""
    import torch

    n = op.size(1)
    blocks = max(1, -(-4 * n * columns // block_bytes))
    width = -(-n // blocks)                                   # rows per block (split_columns' rule)
    col = op.col_indices().long()
    order = torch.argsort(col // width, stable=True)
    return (col[order] % width).to(torch.int32), 4 * width * columns


def machine_rates(widths, in_cache_bytes: int, dram_bytes: int = DRAM_TABLE_BYTES,
                  copy_bytes: int = STREAM_BYTES) -> dict:
    """The stream rate and, for each chunk width in ``widths``, the gather rates from one full
    column block and from DRAM (each product measures its own in-cache rate again, on its table)."""
    widths = sorted({int(w) for w in widths})
    return {"stream_gbps": stream_gbps(copy_bytes), "stream_copy_bytes": copy_bytes,
            "in_cache_table_bytes": in_cache_bytes, "dram_table_bytes": dram_bytes,
            "block_gather_ns": {str(k): gather_ns(k, in_cache_bytes) for k in widths},
            "dram_gather_ns": {str(k): gather_ns(k, dram_bytes) for k in widths}}


def stream_bytes(op, columns: int) -> int:
    """Bytes a product with the CSR matrix ``op`` must stream: its index and value arrays, and
    the ``[N, columns]`` float32 output it writes."""
    arrays = (op.crow_indices(), op.col_indices(), op.values())
    return sum(t.numel() * t.element_size() for t in arrays) + op.size(0) * columns * 4


def roofline(op, columns: int, rates: dict, in_cache_ns: float) -> dict:
    """Lowest seconds of ``op @ X[:, :columns]`` the rates allow, split into its two costs, and
    the DRAM-gather ceiling; ``in_cache_ns`` is the in-cache gather rate for this product."""
    stream_s = stream_bytes(op, columns) / (rates["stream_gbps"] * 1e9)
    entries = op._nnz() * columns
    gather_s, dram_s = entries * in_cache_ns * 1e-9, entries * rates["dram_gather_ns"][str(columns)] * 1e-9
    return {"roofline_s": stream_s + gather_s, "stream_s": stream_s, "gather_s": gather_s,
            "dram_ceiling_s": stream_s + dram_s}


def work_rates(spec: dict) -> dict:
    """Worker of ``perf.py``: :func:`machine_rates` for ``spec["widths"]``."""
    return machine_rates(spec["widths"], spec["in_cache_bytes"], spec.get("dram_bytes", DRAM_TABLE_BYTES),
                         spec.get("copy_bytes", STREAM_BYTES))


def _products(data, cols: int) -> dict:
    """The sparse products of one graph: RGVT's ``A_rw`` (``A_sym`` shares its pattern and costs
    the same) on its chunk width, and the fingerprint's ``Â`` (self loops, two hops) and ``W``
    (the same pattern without them) on all the features, as CSR matrices."""
    from omnigraph.models.rgvt import RGVTEncoder
    from omnigraph.ops import simple_undirected, sym_adjacency

    n = data.num_nodes
    rw = RGVTEncoder.build_operators(data.edge_index, n, transposes=False, layout="csr").rw
    ei = simple_undirected(data.edge_index, n, self_loops=False)
    a_hat = sym_adjacency(ei, n, self_loops=True, simple=True).to_sparse_csr()
    w = sym_adjacency(ei, n, self_loops=False, simple=True).to_sparse_csr()
    features = int(data.x.size(1))
    return {"rgvt A_rw": (rw, cols), "fingerprint Â": (a_hat, features), "fingerprint W": (w, features)}


def _kernels(op, x, y, blocked) -> dict:
    """The kernels of :func:`work_roofline` on the CSR ``op`` (and its column blocks ``blocked``)."""
    import torch

    from omnigraph.ops import bag_mm, spmm_into
    from omnigraph.ops.propagate import HAVE_TORCH_SPARSE

    kernels = {"csr": lambda: torch.mm(op, x, out=y), "blocked_csr": lambda: spmm_into(blocked, x, y),
               "embedding_bag": lambda: bag_mm(op, x, y),
               "blocked_embedding_bag": lambda: spmm_into(blocked, x, y, "embedding_bag")}
    if HAVE_TORCH_SPARSE:
        from torch_sparse import SparseTensor

        long = torch.sparse_csr_tensor(op.crow_indices().long(), op.col_indices().long(), op.values(), op.shape)
        st = SparseTensor.from_torch_sparse_csr_tensor(long)            # it takes int64 indices only
        kernels["torch_sparse"] = lambda: st @ x
    return kernels


def work_roofline(spec: dict) -> dict:
    """Worker of ``perf.py``: every kernel on each product of one graph, against the roofline.

    Kernels: ``torch.sparse.mm`` on CSR; ``F.embedding_bag``; each of them in column blocks of
    ``block_bytes`` of gathered rows (RGVT's blocking, at every size); torch-sparse's SpMM where
    it is installed. ``default`` is the kernel the library runs for that product."""
    import torch
    from perf import spec_graph, timed

    from omnigraph.models.fingerprint import product_backend
    from omnigraph.models.rgvt import RGVTEncoder
    from omnigraph.ops import split_columns

    data = spec_graph(spec)
    rates = spec["rates"]
    n = data.num_nodes
    enc = RGVTEncoder()
    cols = enc.chunk_columns(n, int(data.x.size(1)), None)
    x_all = data.x.float().contiguous()
    out = {"nodes": n, "edges": int(data.edge_index.size(1)), "products": {}}
    for name, (op, k) in _products(data, cols).items():
        x, y = x_all[:, :k].contiguous(), torch.empty(n, k)
        blocks = max(1, -(-4 * n * k // enc.block_bytes))
        kernels = _kernels(op, x, y, split_columns([op], blocks)[0])
        ref = torch.mm(op, x)
        for fn in kernels.values():
            result = fn()
            torch.testing.assert_close(result, ref, rtol=1e-4, atol=1e-5)
        seconds = {kname: timed(fn, budget=2.0)[0] for kname, fn in kernels.items()}
        if name.startswith("rgvt"):
            blocked_default = enc.blocks_for(n, k) > 1
            bag = enc.kernel_for(k, blocked=blocked_default)[1] == "embedding_bag"
            default = ("blocked_" if blocked_default else "") + ("embedding_bag" if bag else "csr")
        else:       # "auto" is torch's CSR kernel; these are float32 products, the fingerprint's are float64
            default = "embedding_bag" if product_backend(n, torch.float32) == "embedding_bag" else "csr"
        index, table = block_index(op, k, enc.block_bytes)
        roof = roofline(op, k, rates, gather_ns(k, table, index))
        # what the blocked schedule itself streams: every block walks all N row pointers and
        # reads and writes the output again (the first block only writes it)
        crow = op.crow_indices()
        extra = (blocks - 1) * (crow.numel() * crow.element_size() + 2 * n * k * 4)
        roof["blocked_stream_s"] = roof["stream_s"] + extra / (rates["stream_gbps"] * 1e9)
        entries = op._nnz() * k
        out["products"][name] = {
            "entries": op._nnz(), "columns": k, "blocks": blocks, "default": default, "table_bytes": table, **roof,
            "seconds": seconds, "ns_per_entry_column": {kn: s / entries * 1e9 for kn, s in seconds.items()},
            "fraction_of_roofline": {kn: roof["roofline_s"] / s for kn, s in seconds.items()}}
    return out
