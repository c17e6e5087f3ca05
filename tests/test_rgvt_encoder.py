"""RGVT encoder: views, phi and the recurrence against an independent dense reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from rgvt_helpers import dense_operators, dense_phi, dense_rgvt, dense_views, messy_graph
from tolerance import assert_all_same_up_to_kernel, assert_same_up_to_kernel

from omnigraph.hub import publish
from omnigraph.models.rgvt import RGVTEncoder


def _random_encoder(seed: int = 0, **kwargs) -> RGVTEncoder:
    enc = RGVTEncoder(**kwargs)
    enc.reset_parameters(torch.Generator().manual_seed(seed))
    with torch.no_grad():  # non-zero biases so that they are exercised
        for p in enc.parameters():
            if p.dim() == 1:
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + 1)) * 0.3)
    return enc


def _numpy_weights(enc: RGVTEncoder) -> dict[str, np.ndarray]:
    return {k: v.detach().double().numpy() for k, v in enc.state_dict().items()}


def test_parameters_match_the_released_layout():
    enc = RGVTEncoder()
    shapes = {k: tuple(v.shape) for k, v in enc.state_dict().items()}
    assert shapes == {"mlp.lins.0.weight": (5, 5), "mlp.lins.0.bias": (5,),
                      "mlp.lins.1.weight": (1, 5), "mlp.lins.1.bias": (1,)}
    assert sum(p.numel() for p in enc.parameters()) == 36
    w0 = enc.mlp.lins[0].weight.detach()
    torch.testing.assert_close(w0 @ w0.T, torch.eye(5), atol=1e-5, rtol=0)   # orthogonal init
    assert all(float(p.detach().abs().sum()) == 0 for n, p in enc.named_parameters() if n.endswith("bias"))
    assert [tuple(lin.weight.shape) for lin in RGVTEncoder(vt_depth=1).mlp.lins] == [(1, 5)]
    assert [tuple(lin.weight.shape) for lin in RGVTEncoder(adj_max_hop=3, vt_depth=3).mlp.lins] == \
        [(7, 7), (7, 7), (1, 7)]


def test_seeded_init_is_reproducible():
    a, b = (RGVTEncoder() for _ in range(2))
    a.reset_parameters(torch.Generator().manual_seed(3))
    b.reset_parameters(torch.Generator().manual_seed(3))
    c = RGVTEncoder()
    c.reset_parameters(torch.Generator().manual_seed(4))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.mlp.lins[0].weight, c.mlp.lins[0].weight)


def test_operators_dedupe_symmetrise_and_add_one_self_loop():
    data = messy_graph()
    ops = RGVTEncoder.build_operators(data.edge_index, data.num_nodes)
    rw, sym = dense_operators(data.edge_index, data.num_nodes)
    np.testing.assert_allclose(ops.rw.to_dense().double().numpy(), rw, atol=1e-7)
    np.testing.assert_allclose(ops.sym.to_dense().double().numpy(), sym, atol=1e-7)
    assert ops.rw.to_dense()[-1, -1] == 1.0  # isolated node: only its self-loop


def test_views_and_step_match_dense_reference():
    data = messy_graph()
    enc = _random_encoder()
    ops = enc.build_operators(data.edge_index, data.num_nodes)
    rw, sym = dense_operators(data.edge_index, data.num_nodes)
    x = data.x.double().numpy()
    ref_views = dense_views(x, rw, sym)                              # [N, F, 5]
    views = enc.views(data.x, ops)                                   # [5, N, F]
    np.testing.assert_allclose(views.permute(1, 2, 0).double().numpy(), ref_views, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        out = enc.step(data.x, ops)
    np.testing.assert_allclose(out.double().numpy(), dense_phi(ref_views, _numpy_weights(enc)), rtol=1e-5, atol=1e-6)


def test_recurrence_shapes_depth_zero_and_return_all():
    data = messy_graph(f=7)
    enc = _random_encoder()
    with torch.no_grad():
        zs = enc(data.x, data.edge_index, depth=4, return_all=True)
        assert len(zs) == 4 and all(z.shape == data.x.shape for z in zs)
        assert torch.equal(enc(data.x, data.edge_index, depth=0), data.x)
        for d in range(1, 5):
            assert torch.equal(enc(data.x, data.edge_index, depth=d), zs[d - 1])
        ref = dense_rgvt(data.x.double().numpy(), data.edge_index, _numpy_weights(enc), 4)
        for z, r in zip(zs, ref):
            np.testing.assert_allclose(z.double().numpy(), r, rtol=1e-5, atol=1e-6)
        # iterate() gives the same matrices depth by depth
        for (layer, z), expected in zip(enc.iterate(data.x, data.edge_index, depth=4), zs):
            assert torch.equal(z, expected)
        assert layer == 4
        # reuse=True: one buffer overwritten in place, chunk by chunk; same values, x untouched
        x0 = data.x.clone()
        buffers = set()
        for (layer, z), expected in zip(enc.iterate(data.x, data.edge_index, depth=4, chunk_size=3, reuse=True), zs):
            assert_same_up_to_kernel(z, expected)           # 3-column chunks: other kernel shapes
            buffers.add(z.data_ptr())
        assert len(buffers) == 1 and torch.equal(data.x, x0)


def test_chunked_equals_unchunked_and_rows_select():
    data = messy_graph(n=50, f=23)
    enc = _random_encoder(1)
    ops = enc.build_operators(data.edge_index, data.num_nodes)
    rows = torch.tensor([3, 0, 17, 49])
    with torch.no_grad():
        full = enc(data.x, depth=3, operators=ops, return_all=True)
        for chunk in (1, 5, 22, 23, 100):
            chunked = enc(data.x, depth=3, operators=ops, return_all=True, chunk_size=chunk)
            assert_all_same_up_to_kernel(chunked, full)
        sub = enc(data.x, depth=3, operators=ops, return_all=True, rows=rows, chunk_size=4)
        assert_all_same_up_to_kernel(sub, [a[rows] for a in full])
        mask = torch.zeros(50, dtype=torch.bool)
        mask[rows] = True
        assert_same_up_to_kernel(enc(data.x, depth=3, operators=ops, rows=mask), full[-1][mask])
    # automatic chunking follows chunk_floats
    small = RGVTEncoder()
    small.chunk_floats = 5 * 50 * 4
    assert small.chunk_columns(50, 23, None) == 8                 # the floor: min_chunk_columns
    small.min_chunk_columns = 1
    assert small.chunk_columns(50, 23, None) == 4
    with pytest.raises(ValueError, match="chunk_size"):
        enc(data.x, data.edge_index, depth=1, chunk_size=0)


def test_operator_layout_follows_chunk_width_and_only_rounds():
    """With the ``torch`` back-end narrow chunks run on CSR operators, wide ones on COO; both give
    the same numbers up to rounding."""
    data = messy_graph(n=60, f=80)
    enc = _random_encoder(2)
    enc.spmm_backend = "torch"
    assert enc.layout_for(enc.csr_below_columns - 1) == "csr" and enc.layout_for(enc.csr_below_columns) == "coo"
    enc.csr_below_columns = 64      # so that this small graph's 80-column chunks run on COO
    coo = enc.build_operators(data.edge_index, data.num_nodes)
    csr = enc.build_operators(data.edge_index, data.num_nodes, layout="csr")
    assert coo.rw.layout == torch.sparse_coo and csr.rw.layout == csr.rw_t.layout == torch.sparse_csr
    assert coo.with_layout("coo") is coo and csr.with_layout("coo").sym.layout == torch.sparse_coo
    with torch.no_grad():
        wide = enc(data.x, depth=3, operators=csr)                  # 80 columns: converted to COO
        narrow = enc(data.x, depth=3, operators=coo, chunk_size=8)  # 8 columns: converted to CSR
        assert torch.allclose(wide, narrow, atol=1e-5)
        assert torch.equal(wide, enc(data.x, depth=3, operators=coo))
        assert torch.equal(list(enc.iterate(data.x, depth=3, operators=coo, chunk_size=8))[-1][1], narrow)
    with pytest.raises(ValueError, match="layout"):
        coo.with_layout("dense")


def test_node_and_feature_permutation_equivariance():
    data = messy_graph(n=45, f=9, seed=2)
    enc = _random_encoder(2)
    g = torch.Generator().manual_seed(0)
    node_perm = torch.randperm(data.num_nodes, generator=g)
    feat_perm = torch.randperm(data.x.size(1), generator=g)
    inv = torch.empty_like(node_perm)
    inv[node_perm] = torch.arange(data.num_nodes)
    with torch.no_grad():
        z = enc(data.x, data.edge_index, depth=3)
        z_nodes = enc(data.x[node_perm], inv[data.edge_index], depth=3)
        z_feats = enc(data.x[:, feat_perm], data.edge_index, depth=3)
    torch.testing.assert_close(z_nodes, z[node_perm], rtol=1e-5, atol=1e-6)
    assert_same_up_to_kernel(z_feats, z[:, feat_perm])  # columns never interact, but land in other kernel tails


def test_gradients_flow_through_all_steps_and_match_plain_autograd():
    data = messy_graph(n=30, f=5)
    enc = _random_encoder(3)
    ops = enc.build_operators(data.edge_index, data.num_nodes)
    x = data.x.clone().requires_grad_()
    z = enc(x, depth=3, chunk_size=2, operators=ops)
    z.square().sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0
               for p in enc.parameters())
    grads = [p.grad.clone() for p in enc.parameters()] + [x.grad.clone()]
    # the same through torch's generic sparse autograd (no stored transposes)
    enc.zero_grad()
    x.grad = None
    plain = ops._replace(rw_t=None, sym_t=None)
    enc(x, depth=3, chunk_size=2, operators=plain).square().sum().backward()
    for g, p in zip(grads, [*enc.parameters(), x]):
        torch.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-6)
    # inference path (phi applied block by block, no graph) gives the same numbers
    with torch.no_grad():
        assert_same_up_to_kernel(enc(data.x, depth=3, operators=ops, chunk_size=2), z.detach())
        enc.phi_block = 7   # tiny blocks may round differently in the BLAS kernel, by an ulp at most
        torch.testing.assert_close(enc(data.x, depth=3, operators=ops), z.detach(), rtol=1e-6, atol=1e-7)


def test_released_weights_match_dense_reference_for_every_depth(reference_root):
    """Spec 6.1 deterministic check: Psi^L(X) with seed_42 equals a dense float64 reference to 1e-5."""
    path = reference_root / "rgvt" / "seed_42.npz"
    enc = RGVTEncoder.from_reference_npz(path)
    with np.load(path, allow_pickle=False) as f:
        weights = {k: f[k].astype(np.float64) for k in f.files}
    data = messy_graph(n=120, f=30, seed=5)
    x = (data.x > 0).float()  # binary bag-of-words-like features, as on the WebKB graphs
    ref = dense_rgvt(x.double().numpy(), data.edge_index, weights, 8)
    with torch.no_grad():
        ours = enc(x, data.edge_index, depth=8, return_all=True, chunk_size=7)
    for depth, (z, r) in enumerate(zip(ours, ref), start=1):
        np.testing.assert_allclose(z.double().numpy(), r, atol=1e-5, rtol=1e-5, err_msg=f"depth {depth}")


def test_reference_loader_errors(tmp_path, reference_root):
    with pytest.raises(FileNotFoundError):
        RGVTEncoder.from_reference_npz(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    np.savez(bad, other=np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="no RGVT weights"):
        RGVTEncoder.from_reference_npz(bad)
    enc = RGVTEncoder.from_reference_npz(reference_root / "rgvt" / "seed_0.npz")
    assert enc.get_config() == {"adj_max_hop": 2, "vt_depth": 2}


def test_save_load_round_trip(tmp_path):
    enc = _random_encoder(4)
    enc.save_pretrained(tmp_path / "enc")
    again = RGVTEncoder.from_pretrained(tmp_path / "enc")
    assert all(torch.equal(a, b) for a, b in zip(enc.state_dict().values(), again.state_dict().values()))
    weights = publish(enc, "rgvt-test", {"note": "test"}, directory=tmp_path / "shipped")
    from_file = RGVTEncoder.from_pretrained(weights)          # a .safetensors path
    assert torch.equal(from_file.mlp.lins[1].weight, enc.mlp.lins[1].weight)
    deep = _random_encoder(5, vt_depth=3)
    deep.save_pretrained(tmp_path / "deep")
    assert RGVTEncoder.from_pretrained(tmp_path / "deep").vt_depth == 3


def test_input_errors():
    enc = RGVTEncoder()
    x = torch.rand(4, 3)
    with pytest.raises(ValueError, match="edge_index or prebuilt operators"):
        enc(x, depth=1)
    with pytest.raises(ValueError, match="depth"):
        enc(x, torch.tensor([[0], [1]]), depth=-1)
    ops = enc.build_operators(torch.tensor([[0], [1]]), 5)
    with pytest.raises(ValueError, match="5 nodes"):
        enc(x, depth=1, operators=ops)


def test_column_chunks_stream_the_representation_and_operators_keep_sharing():
    """column_chunks yields Z_L's column blocks exactly; converted operators still share their pattern."""
    from omnigraph.models.rgvt_head import RGVTHead

    data = messy_graph(n=50, f=23)
    enc = _random_encoder(3)
    csr = enc.build_operators(data.edge_index, data.num_nodes, transposes=False, layout="csr")
    coo = csr.with_layout("coo")
    assert coo.rw._indices().data_ptr() == coo.sym._indices().data_ptr()
    assert csr.rw.col_indices().data_ptr() == csr.sym.col_indices().data_ptr()
    head = RGVTHead(23, 4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        z = enc(data.x, depth=3, operators=csr, chunk_size=5)
        # each chunk is valid until the next one is yielded (the buffers are reused): copy to keep
        chunks = [(c, part.clone()) for c, part in enc.column_chunks(data.x, depth=3, operators=csr, chunk_size=5)]
        assert [c.start for c, _ in chunks] == [0, 5, 10, 15, 20] and chunks[-1][0].stop == 23
        assert all(torch.equal(z[:, c], part) for c, part in chunks)
        streamed = head.forward_chunks(enc.column_chunks(data.x, depth=3, operators=csr, chunk_size=5))
        torch.testing.assert_close(streamed, head(z), rtol=1e-5, atol=1e-5)
        with pytest.raises(ValueError, match="cover 20 columns"):
            head.forward_chunks(chunks[:-1])
    with pytest.raises(ValueError, match="depth"):
        next(enc.column_chunks(data.x, data.edge_index, depth=-1))


def test_column_blocked_operators_only_round_and_are_for_inference():
    """Large graphs get column-blocked CSR operators: same encoder output up to rounding."""
    data = messy_graph(n=60, f=20)
    enc = _random_encoder(4)
    assert enc.blocks_for(enc.block_min_nodes - 1, 8) == 1                        # small graph: off
    assert enc.blocks_for(enc.block_min_nodes, enc.csr_below_columns) == 1        # COO-width chunks: off
    n = enc.block_min_nodes
    assert enc.blocks_for(n, 384) == -(-4 * n * 384 // enc.block_bytes) == 6
    assert enc.blocks_for(n, 384, device="cuda") == 1                             # a CPU-cache measure
    assert enc.kernel_for(8, blocked=True) == ("csr", "embedding_bag")            # blocks run as bags
    assert enc.kernel_for(8) == ("csr", "torch")
    plain = enc.build_operators(data.edge_index, data.num_nodes, transposes=False, layout="csr")
    blocked = enc.build_operators(data.edge_index, data.num_nodes, transposes=False, layout="csr", blocks=3)
    assert blocked.blocked and not plain.blocked and len(blocked.rw.parts) == 3 and blocked.num_nodes == 60
    assert blocked.with_layout("coo") is blocked and blocked.to(torch.float32).blocked
    with torch.no_grad():
        ref = enc(data.x, depth=4, operators=plain, return_all=True)
        out = enc(data.x, depth=4, operators=blocked, return_all=True, chunk_size=7)
        for a, b in zip(ref, out):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(dict(enc.iterate(data.x, depth=4, operators=blocked))[4], ref[-1],
                                   rtol=1e-5, atol=1e-5)
        enc.spmm_backend = "torch"                                     # blocks through torch.sparse.mm
        torch.testing.assert_close(enc(data.x, depth=4, operators=blocked, chunk_size=7), ref[-1], rtol=1e-5, atol=1e-5)
        enc.spmm_backend = "auto"
        enc.block_min_nodes, enc.block_bytes = 0, 4 * 60 * 7 // 5      # the encoder's own choice: 5 blocks
        assert enc.blocks_for(60, 7) == 5
        torch.testing.assert_close(enc(data.x, data.edge_index, depth=4, chunk_size=7), ref[-1], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="transposes=False"):
        enc.build_operators(data.edge_index, data.num_nodes, blocks=2)
    with pytest.raises(ValueError, match="column blocks are CSR operators"):
        plain.with_layout("coo", blocks=2)
    # a training graph's operators (with transposes) serve its no-grad validation pass blocked
    training = enc.build_operators(data.edge_index, data.num_nodes, layout="csr")
    assert training.rw_t is not None
    val = training.with_layout("csr", blocks=3)
    assert val.blocked and val.rw_t is None and val.sym_t is None
    with torch.no_grad():
        for a, b in zip(ref, enc(data.x, depth=4, operators=val, return_all=True, chunk_size=7)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="gradients"):
        enc(data.x, depth=1, operators=blocked)                  # grad enabled, trainable phi


def test_kernel_choice():
    enc = RGVTEncoder()
    wide, narrow = enc.csr_below_columns, enc.csr_below_columns - 1
    assert enc.spmm_backend == "auto"
    assert enc.kernel_for(narrow) == ("csr", "torch") and enc.kernel_for(wide) == ("csr", "embedding_bag")
    assert enc.kernel_for(wide, "cuda") == ("coo", "torch")                   # auto: bags on CPU only
    enc.spmm_backend = "torch"
    assert enc.kernel_for(narrow) == ("csr", "torch") and enc.kernel_for(wide) == ("coo", "torch")
    enc.spmm_backend = "embedding_bag"
    assert enc.kernel_for(narrow, "cuda") == enc.kernel_for(wide) == ("csr", "embedding_bag")
    enc.spmm_backend = "fast"
    with pytest.raises(ValueError, match="spmm_backend"):
        enc.kernel_for(8)


def test_auto_backend_sums_wide_chunks_as_the_coo_kernel_does():
    """Default ``auto``: wide chunks run as embedding bags on CSR operators, summing each row in
    the COO kernel's order. On x86 CPUs (FBGEMM) that is bit for bit the ``torch`` back-end, which
    is what keeps the published tables (made with COO) reproducible; elsewhere, up to rounding."""
    data = messy_graph(n=70, f=30)
    enc = _random_encoder(6)
    enc.csr_below_columns = 16                                   # 30-column chunks count as wide
    with torch.no_grad():
        auto = enc(data.x, data.edge_index, depth=6, return_all=True)
        auto_iter = [z.clone() for _, z in enc.iterate(data.x, data.edge_index, depth=6, chunk_size=20)]
        enc.spmm_backend = "torch"
        ref = enc(data.x, data.edge_index, depth=6, return_all=True)
    assert enc.layout_for(20) == "coo"
    same = torch.equal if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") else torch.allclose
    for a, b, c in zip(auto, auto_iter, ref):
        assert same(a, c) and same(b, c)


def test_embedding_bag_backend_only_rounds():
    """``spmm_backend="embedding_bag"``: CSR at every chunk width, same outputs up to rounding,
    through forward, iterate and column_chunks; gradients still flow through torch.sparse."""
    data = messy_graph(n=60, f=20)
    enc = _random_encoder(5)
    with torch.no_grad():
        ref = enc(data.x, data.edge_index, depth=5, return_all=True)
        ref_iter = [z.clone() for _, z in enc.iterate(data.x, data.edge_index, depth=5)]
    enc.spmm_backend = "embedding_bag"
    assert enc.blocks_for(enc.block_min_nodes, enc.csr_below_columns) == 1   # wide chunks: still unblocked
    with torch.no_grad():
        out = enc(data.x, data.edge_index, depth=5, return_all=True, chunk_size=6)
        for a, b in zip(ref, out):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        for a, (_, b) in zip(ref_iter, enc.iterate(data.x, data.edge_index, depth=5)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        _, chunk = next(enc.column_chunks(data.x, data.edge_index, depth=5, chunk_size=20))
        torch.testing.assert_close(chunk, ref[-1], rtol=1e-5, atol=1e-5)
    z = enc(data.x, data.edge_index, depth=2)                    # autograd branch: torch.sparse
    z.sum().backward()
    assert all(p.grad is not None for p in enc.parameters())
    enc.spmm_backend = "dense"
    with torch.no_grad(), pytest.raises(ValueError, match="spmm_backend"):
        enc(data.x, data.edge_index, depth=1)
