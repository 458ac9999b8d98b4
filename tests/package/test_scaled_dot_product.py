"""attention() against torch.nn.functional.scaled_dot_product_attention (PyTorch 2.13, CPU)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attention.scaled_dot_product as sdp_module
from attention import attention, causal_mask

TOL = {np.float64: 1e-12, np.float32: 1e-5}


def torch_sdpa(q, k, v, mask=None, is_causal=False):
    """Run PyTorch's SDPA on NumPy arrays; returns a NumPy array of the same dtype."""
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    return F.scaled_dot_product_attention(*t, attn_mask=m, is_causal=is_causal).numpy()


def draw(rng, dtype, *shapes):
    return [rng.normal(size=s).astype(dtype) for s in shapes]


@pytest.fixture(params=[np.float64, np.float32], ids=["float64", "float32"])
def dtype(request):
    return request.param


def test_matches_torch_without_mask(dtype):
    q, k, v = draw(np.random.default_rng(0), dtype, (6, 8), (6, 8), (6, 5))
    ours = attention(q, k, v)
    assert ours.dtype == dtype
    assert np.max(np.abs(ours - torch_sdpa(q, k, v))) <= TOL[dtype]


def test_matches_torch_with_boolean_mask(dtype):
    rng = np.random.default_rng(1)
    q, k, v = draw(rng, dtype, (5, 4), (7, 4), (7, 3))
    mask = rng.random((5, 7)) < 0.6
    mask[:, 0] = True  # every row keeps at least one key here
    assert np.max(np.abs(attention(q, k, v, mask=mask) - torch_sdpa(q, k, v, mask))) <= TOL[dtype]


def test_causal_matches_torch_is_causal_when_lengths_are_equal(dtype):
    q, k, v = draw(np.random.default_rng(2), dtype, (2, 3, 6, 8), (2, 3, 6, 8), (2, 3, 6, 8))
    ours = attention(q, k, v, causal=True)
    assert np.max(np.abs(ours - torch_sdpa(q, k, v, is_causal=True))) <= TOL[dtype]


def test_batched_heads_match_torch(dtype):
    q, k, v = draw(np.random.default_rng(3), dtype, (3, 4, 9, 16), (3, 4, 9, 16), (3, 4, 9, 16))
    assert np.max(np.abs(attention(q, k, v) - torch_sdpa(q, k, v))) <= TOL[dtype]


def test_cross_attention_with_different_lengths_matches_torch(dtype):
    q, k, v = draw(np.random.default_rng(4), dtype, (2, 2, 3, 8), (2, 2, 11, 8), (2, 2, 11, 6))
    ours = attention(q, k, v)
    assert ours.shape == (2, 2, 3, 6)
    assert np.max(np.abs(ours - torch_sdpa(q, k, v))) <= TOL[dtype]


def test_causal_with_fewer_queries_is_bottom_right_aligned(dtype):
    q, k, v = draw(np.random.default_rng(5), dtype, (1, 2, 3, 8), (1, 2, 7, 8), (1, 2, 7, 8))
    bottom_right = np.tril(np.ones((3, 7), dtype=bool), k=7 - 3)
    ours = attention(q, k, v, causal=True)
    assert np.max(np.abs(ours - torch_sdpa(q, k, v, bottom_right))) <= TOL[dtype]


def test_torch_is_causal_aligns_top_left_when_fewer_queries():
    """PyTorch's is_causal with n_q < n_k lets query 0 see key 0 only: not our mask."""
    q, k, v = draw(np.random.default_rng(6), np.float64, (3, 8), (7, 8), (7, 8))
    top_left = np.tril(np.ones((3, 7), dtype=bool))
    torch_causal = torch_sdpa(q, k, v, is_causal=True)
    assert np.max(np.abs(torch_causal - attention(q, k, v, mask=top_left))) <= 1e-12
    assert np.max(np.abs(torch_causal - attention(q, k, v, causal=True))) > 1e-3


def test_fully_masked_rows_give_zero_output_and_weights_like_torch(dtype):
    rng = np.random.default_rng(7)
    q, k, v = draw(rng, dtype, (2, 4, 5), (2, 6, 5), (2, 6, 3))
    mask = rng.random((2, 4, 6)) < 0.5
    mask[0, 1] = False
    mask[1, 3] = False
    with np.errstate(all="raise"):  # no 0/0 on the way
        out, weights = attention(q, k, v, mask=mask, return_weights=True)
    assert np.all(out[0, 1] == 0) and np.all(out[1, 3] == 0)
    assert np.all(weights[0, 1] == 0) and np.all(weights[1, 3] == 0)
    expected = torch_sdpa(q, k, v, mask)
    assert np.all(expected[0, 1] == 0) and np.all(expected[1, 3] == 0)
    assert np.max(np.abs(out - expected)) <= TOL[dtype]


def test_weights_are_softmax_of_scaled_scores():
    q, k, v = draw(np.random.default_rng(8), np.float64, (4, 3), (4, 3), (4, 2))
    _, weights = attention(q, k, v, return_weights=True)
    scores = q @ k.T / np.sqrt(3)
    expected = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(weights, expected, rtol=0, atol=1e-15)


def test_mask_is_combined_with_causal_by_and():
    q, k, v = draw(np.random.default_rng(9), np.float64, (5, 4), (5, 4), (5, 4))
    mask = np.ones((5, 5), dtype=bool)
    mask[:, 0] = False
    _, w = attention(q, k, v, mask=mask, causal=True, return_weights=True)
    allowed = mask & causal_mask(5)
    assert np.all(w[~allowed] == 0)
    assert np.all(w[0] == 0)  # query 0 may see only key 0, which the mask blocks
    np.testing.assert_allclose(w[1:].sum(axis=-1), 1.0, atol=1e-15)


def test_float32_inputs_are_never_promoted_to_float64(monkeypatch):
    seen = []
    real_softmax = sdp_module.softmax

    def spy(x, axis=-1):
        seen.append(x.dtype)
        return real_softmax(x, axis=axis)

    monkeypatch.setattr(sdp_module, "softmax", spy)
    q, k, v = draw(np.random.default_rng(10), np.float32, (2, 5, 64), (2, 5, 64), (2, 5, 64))
    for kwargs in ({}, {"causal": True}, {"mask": np.ones((5, 5), dtype=bool)}):
        out, w = attention(q, k, v, return_weights=True, **kwargs)
        assert out.dtype == np.float32 and w.dtype == np.float32
    assert seen == [np.float32] * 3


def test_float64_inputs_stay_float64():
    q, k, v = draw(np.random.default_rng(11), np.float64, (3, 4), (3, 4), (3, 4))
    out, w = attention(q, k, v, causal=True, return_weights=True)
    assert out.dtype == np.float64 and w.dtype == np.float64


# ---------------------------------------------------------------------------------------
# The contract, on grids in the spirit of PyTorch's own SDPA tests
# (test/test_transformers.py): every case runs through `attention`, `blocked_attention`
# with its default tiles and `blocked_attention` with tiny tiles, against
# torch.nn.functional.scaled_dot_product_attention.
# ---------------------------------------------------------------------------------------

from torch.nn.attention.bias import causal_lower_right  # noqa: E402

from attention import blocked_attention  # noqa: E402

IMPLS = {
    "attention": attention,
    "blocked": blocked_attention,
    "blocked-tiny-tiles": lambda *a, **kw: blocked_attention(*a, block_q=2, block_k=3, **kw),
}


def max_abs_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    same = (np.isnan(a) & np.isnan(b)) | (a == b)  # equal infinities too
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: masked out
        return float(np.max(np.where(same, 0.0, np.abs(a - b)), initial=0.0))


def sdpa_reference(q, k, v, mask=None, causal=False, scale=None):
    """PyTorch's SDPA, with our bottom-right causal mask combined into attn_mask."""
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    t = [torch.from_numpy(np.broadcast_to(a, lead + a.shape[-2:]).copy()) for a in (q, k, v)]
    n_q, n_k = q.shape[-2], k.shape[-2]
    if mask is not None and mask.ndim < 2:  # SDPA wants a mask of at least 2 dims
        mask = np.broadcast_to(mask, (n_q, n_k))
    m = None if mask is None else torch.from_numpy(np.array(mask))  # a writable copy
    if causal:
        allowed = torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q)  # bottom-right
        if m is None:
            m = allowed
        elif m.dtype == torch.bool:
            m = m & allowed
        else:
            m = m + torch.zeros(n_q, n_k, dtype=m.dtype).masked_fill(~allowed, -torch.inf)
    if m is not None and m.dtype != torch.bool:
        m = m.to(t[0].dtype)
    return F.scaled_dot_product_attention(*t, attn_mask=m, scale=scale).numpy()


# (leading dims of q, leading dims of k and v, n_q, n_k, d, d_v): one-token sequences,
# n_q != n_k both ways, odd head dims, d_v != d, leading dims that broadcast.
GRID_SHAPES = [
    ((), (), 1, 1, 1, 1),
    ((), (), 1, 9, 8, 8),
    ((), (), 9, 1, 8, 3),
    ((2,), (2,), 7, 7, 3, 5),
    ((2, 3), (2, 3), 13, 5, 17, 9),
    ((2, 3), (2, 3), 5, 13, 64, 64),
    ((1, 2), (1, 2), 33, 33, 64, 64),
    ((2, 1), (1, 3), 6, 6, 4, 4),
]
# Mask ranks: broadcast from (n_k,), (n_q, n_k), (1, n_q, n_k), and the full shape.
MASK_KINDS = ["none"] + [f"{kind}-{rank}" for kind in ("bool", "float")
                         for rank in ("keys", "2d", "3d", "full")]


def make_mask(rng, kind, lead, n_q, n_k, dtype):
    """A random mask of the given kind; some keys blocked, one query row blocked whole."""
    if kind == "none":
        return None
    form, rank = kind.split("-")
    shape = {"keys": (n_k,), "2d": (n_q, n_k), "3d": (1,) * bool(lead) + (n_q, n_k),
             "full": lead + (n_q, n_k)}[rank]
    allowed = rng.random(shape) < 0.7
    allowed[..., 0] = True  # every row keeps one key ...
    if rank != "keys" and n_q > 1:
        allowed[..., 1, :] = False  # ... except query 1, which may attend to nothing
    if form == "bool":
        return allowed
    bias = rng.normal(size=shape) * 2  # a position bias, e.g. ALiBi or relative positions
    return np.where(allowed, bias, -np.inf).astype(dtype)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("mask_kind", MASK_KINDS)
@pytest.mark.parametrize("shape", GRID_SHAPES, ids=lambda s: "{}x{}-{}x{}-d{}-dv{}".format(
    "".join(map(str, s[0])) or "0", "".join(map(str, s[1])) or "0", *s[2:]))
def test_grid_matches_torch_sdpa(shape, mask_kind, causal, dtype):
    lead_q, lead_kv, n_q, n_k, d, d_v = shape
    scale = 0.37 if GRID_SHAPES.index(shape) % 2 else None  # every other shape: scale=
    rng = np.random.default_rng(abs(hash((shape, mask_kind, causal, scale))) % 2**32)
    q, k, v = draw(rng, dtype, lead_q + (n_q, d), lead_kv + (n_k, d), lead_kv + (n_k, d_v))
    lead = np.broadcast_shapes(lead_q, lead_kv)
    mask = make_mask(rng, mask_kind, lead, n_q, n_k, dtype)
    expected = sdpa_reference(q, k, v, mask, causal, scale)
    for name, impl in IMPLS.items():
        ours = impl(q, k, v, mask=mask, causal=causal, scale=scale)
        assert ours.dtype == dtype, name
        assert max_abs_diff(ours, expected) <= TOL[dtype], name


@pytest.mark.parametrize("n_heads, n_kv_heads", [(4, 1), (4, 2), (6, 3), (4, 4)])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_grid_grouped_query_heads_by_broadcasting_match_torch_enable_gqa(
        n_heads, n_kv_heads, causal, dtype):
    """Query head i uses key/value head i // g: a (g) axis that broadcasts, no copies."""
    rng = np.random.default_rng(n_heads * 10 + n_kv_heads)
    g, n, d = n_heads // n_kv_heads, 11, 16
    q, k, v = draw(rng, dtype, (2, n_heads, n, d), (2, n_kv_heads, n, d), (2, n_kv_heads, n, d))
    t = [torch.from_numpy(a) for a in (q, k, v)]
    expected = F.scaled_dot_product_attention(*t, is_causal=causal, enable_gqa=True).numpy()
    grouped_q = q.reshape(2, n_kv_heads, g, n, d)  # (batch, h_kv, g, n, d)
    for name, impl in IMPLS.items():
        ours = impl(grouped_q, k[:, :, None], v[:, :, None], causal=causal)  # (2, h_kv, g, n, d)
        ours = ours.reshape(2, n_heads, n, d)  # (batch, h, n, d)
        assert max_abs_diff(ours, expected) <= TOL[dtype], name


# (batch, n_q, n_k, d, d_v) with a size 0 somewhere.
EMPTY_SHAPES = [(2, 3, 0, 4, 5), (2, 0, 3, 4, 5), (2, 3, 4, 0, 5), (0, 3, 4, 4, 5),
                (2, 0, 0, 4, 5), (2, 3, 4, 4, 0)]


@pytest.mark.parametrize("mask_kind", ["none", "bool-full", "float-full"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_grid_empty_sizes_match_torch(shape, causal, mask_kind, dtype):
    """No keys: zeros. No queries: an empty result. d = 0: every score is 0, so the
    output is the mean of the (allowed) values, as PyTorch gives."""
    b, n_q, n_k, d, d_v = shape
    rng = np.random.default_rng(sum(shape))
    q, k, v = draw(rng, dtype, (b, n_q, d), (b, n_k, d), (b, n_k, d_v))
    mask = make_mask(rng, mask_kind, (b,), n_q, n_k, dtype) if n_k else None
    expected = sdpa_reference(q, k, v, mask, causal)
    if n_k == 0:
        assert np.all(expected == 0)
    for name, impl in IMPLS.items():
        with np.errstate(all="raise"):  # no 0/0, no empty reduction on the way
            ours, weights = (impl(q, k, v, mask=mask, causal=causal, return_weights=True)
                             if impl is attention else (impl(q, k, v, mask=mask, causal=causal), None))
        assert ours.shape == (b, n_q, d_v) and ours.dtype == dtype, name
        assert max_abs_diff(ours, expected) <= TOL[dtype], name
        if weights is not None:
            assert weights.shape == (b, n_q, n_k)


def test_head_dim_zero_gives_the_mean_of_the_values(dtype):
    v = np.arange(12, dtype=dtype).reshape(4, 3)
    for name, impl in IMPLS.items():
        out = impl(np.zeros((2, 0), dtype), np.zeros((4, 0), dtype), v)
        np.testing.assert_allclose(out, np.broadcast_to(v.mean(axis=0), (2, 3)), err_msg=name)


def test_a_float_mask_is_added_to_the_scores_before_the_softmax():
    rng = np.random.default_rng(20)
    q, k, v = draw(rng, np.float64, (3, 4), (5, 4), (5, 2))
    bias = rng.normal(size=(3, 5))
    _, weights = attention(q, k, v, mask=bias, return_weights=True)
    scores = q @ k.T / 2 + bias
    expected = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    assert max_abs_diff(weights, expected) <= 1e-15


def test_a_float_mask_of_minus_inf_equals_the_boolean_mask(dtype):
    rng = np.random.default_rng(21)
    q, k, v = draw(rng, dtype, (2, 6, 8), (2, 9, 8), (2, 9, 8))
    allowed = rng.random((2, 6, 9)) < 0.5
    allowed[0, 2] = False
    as_float = np.where(allowed, 0.0, -np.inf).astype(dtype)
    for name, impl in IMPLS.items():
        assert max_abs_diff(impl(q, k, v, mask=as_float), impl(q, k, v, mask=allowed)) <= TOL[dtype], name
        assert np.all(impl(q, k, v, mask=as_float)[0, 2] == 0), name


def test_scale_replaces_one_over_sqrt_d():
    q, k, v = draw(np.random.default_rng(22), np.float64, (4, 16), (6, 16), (6, 3))
    for name, impl in IMPLS.items():
        assert max_abs_diff(impl(q, k, v, scale=0.25), impl(q, k, v)) <= 1e-15, name
        assert max_abs_diff(impl(q, k, v, scale=1.0), impl(q * 4, k, v)) <= 1e-12, name


def test_float16_keeps_float16_and_matches_torch_float16():
    rng = np.random.default_rng(23)
    q, k, v = draw(rng, np.float16, (2, 4, 19, 32), (2, 4, 23, 32), (2, 4, 23, 32))
    mask = rng.random((19, 23)) < 0.8
    expected = sdpa_reference(q, k, v, mask)
    for name, impl in IMPLS.items():
        ours = impl(q, k, v, mask=mask)
        assert ours.dtype == np.float16, name
        assert max_abs_diff(ours, expected) <= 2e-3, name  # a few float16 roundings


def test_float16_rows_over_65504_keys_sum_to_one_not_inf():
    """Accumulated in float16, a row of 70,000 equal weights would sum to inf."""
    rng = np.random.default_rng(24)
    n_k = 70_000
    q = rng.normal(size=(2, 8)).astype(np.float16)
    k = np.zeros((n_k, 8), np.float16)  # every score 0: every weight 1 / n_k
    v = rng.normal(size=(n_k, 4)).astype(np.float16)
    expected = v.astype(np.float64).mean(axis=0)
    torch_out = sdpa_reference(q, k, v)
    assert np.all(np.isfinite(torch_out))
    for name, impl in IMPLS.items():
        if name == "blocked-tiny-tiles":
            continue  # 23,334 tiles: slow, and the default tiles already cross 65,504 keys
        with np.errstate(over="raise"):
            ours = impl(q, k, v)
        assert ours.dtype == np.float16, name
        assert max_abs_diff(ours, np.broadcast_to(expected, (2, 4))) <= 1e-3, name
    _, weights = attention(q, k, v, return_weights=True)
    assert weights.dtype == np.float16


def test_integer_inputs_compute_in_float64():
    q = np.arange(12).reshape(3, 4)
    for name, impl in IMPLS.items():
        assert impl(q, q, q).dtype == np.float64, name


@pytest.mark.parametrize("bad", [
    np.ones((3, 4)) + 1j, np.full((3, 4), "a"), np.ones((3, 4)).astype(object)],
    ids=["complex", "string", "object"])
@pytest.mark.parametrize("which", [0, 1, 2], ids=["q", "k", "v"])
def test_complex_string_and_object_inputs_raise_type_error(bad, which):
    args = [np.ones((3, 4))] * 3
    args[which] = bad
    for name, impl in IMPLS.items():
        with pytest.raises(TypeError, match=f"{'qkv'[which]} must hold real numbers"):
            impl(*args)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("mask_kind", ["none", "bool-full", "float-full"])
def test_blocked_log_sum_exp_of_the_scaled_masked_scores(mask_kind, causal, dtype):
    rng = np.random.default_rng(25)
    q, k, v = draw(rng, dtype, (2, 3, 10, 8), (2, 3, 14, 8), (2, 3, 14, 5))
    mask = make_mask(rng, mask_kind, (2, 3), 10, 14, dtype)
    scores = torch.from_numpy(q.astype(np.float64) @ np.swapaxes(k, -1, -2) * 0.3)
    if mask is not None:
        m = torch.from_numpy(mask)
        scores = (scores.masked_fill(~m, -torch.inf) if m.dtype == torch.bool
                  else scores + m.double())
    if causal:
        scores = scores.masked_fill(~causal_lower_right(10, 14)._materialize(), -torch.inf)
    expected = torch.logsumexp(scores, dim=-1).numpy()  # -inf where nothing is allowed
    for block in ({}, {"block_q": 2, "block_k": 3}):
        out, lse = blocked_attention(q, k, v, mask=mask, causal=causal, scale=0.3,
                                     return_lse=True, **block)
        assert lse.shape == (2, 3, 10) and lse.dtype == dtype
        plain = attention(q, k, v, mask=mask, causal=causal, scale=0.3)
        assert max_abs_diff(out, plain) <= TOL[dtype]
        assert np.array_equal(np.isneginf(lse), np.isneginf(expected))
        assert max_abs_diff(lse, expected) <= 10 * TOL[dtype]


def test_blocked_log_sum_exp_is_minus_inf_without_keys_and_float32_for_float16():
    q = np.ones((3, 4), np.float16)
    _, lse = blocked_attention(q, np.zeros((0, 4), np.float16), np.zeros((0, 2), np.float16),
                               return_lse=True)
    assert lse.dtype == np.float32 and np.all(np.isneginf(lse))
