"""Multi-head attention against torch.nn.MultiheadAttention; grouped-query against SDPA(enable_gqa=True)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention import attention, causal_mask, grouped_query_attention, multi_head_attention, padding_mask
from attention.multi_head import merge_heads, split_heads


def draw_weights(rng, d_model, d_kv=None, dtype=np.float64):
    d_kv = d_model if d_kv is None else d_kv
    scale = d_model ** -0.5
    shapes = [(d_model, d_model), (d_model, d_kv), (d_model, d_kv), (d_model, d_model)]
    return [(rng.normal(size=s) * scale).astype(dtype) for s in shapes]


def torch_mha(x, W_q, W_k, W_v, W_o, n_heads, kv=None, attn_mask=None, key_padding_mask=None):
    """nn.MultiheadAttention loaded with our weights. Its boolean masks mean True = BLOCKED."""
    d_model = x.shape[-1]
    dtype = torch.float64 if x.dtype == np.float64 else torch.float32
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_q.T, W_k.T, W_v.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(W_o.T))
    mha.eval()
    xt = torch.from_numpy(x)
    kvt = xt if kv is None else torch.from_numpy(kv)
    with torch.no_grad():
        out, w = mha(xt, kvt, kvt, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                     need_weights=True, average_attn_weights=False)
    return out.numpy(), w.numpy()


def test_split_then_merge_heads_is_the_identity():
    x = np.arange(2 * 5 * 12, dtype=float).reshape(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(heads[1, 2], x[1, :, 8:12])  # head 2 owns columns 8..11
    np.testing.assert_array_equal(merge_heads(heads), x)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_multi_head_matches_torch_multihead_attention(causal):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 7, 16))
    W = draw_weights(rng, 16)
    ours, ours_w = multi_head_attention(x, *W, 4, causal=causal, return_weights=True)
    blocked = torch.from_numpy(~causal_mask(7)) if causal else None
    theirs, theirs_w = torch_mha(x, *W, 4, attn_mask=blocked)
    assert ours.shape == x.shape and ours_w.shape == (3, 4, 7, 7)
    assert np.max(np.abs(ours - theirs)) <= 1e-12
    assert np.max(np.abs(ours_w - theirs_w)) <= 1e-12


def test_multi_head_float32_matches_torch_and_stays_float32():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 6, 8)).astype(np.float32)
    W = draw_weights(rng, 8, dtype=np.float32)
    ours = multi_head_attention(x, *W, 2, causal=True)
    assert ours.dtype == np.float32
    theirs, _ = torch_mha(x, *W, 2, attn_mask=torch.from_numpy(~causal_mask(6)))
    assert np.max(np.abs(ours - theirs)) <= 1e-5


def test_multi_head_cross_attention_matches_torch():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 12))    # decoder tokens: the queries
    enc = rng.normal(size=(2, 8, 12))  # encoder output: keys and values
    W = draw_weights(rng, 12)
    ours = multi_head_attention(x, *W, 3, kv=enc)
    theirs, _ = torch_mha(x, *W, 3, kv=enc)
    assert ours.shape == (2, 3, 12)
    assert np.max(np.abs(ours - theirs)) <= 1e-12


def test_multi_head_padding_mask_matches_torch_key_padding_mask():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 6, 8))
    W = draw_weights(rng, 8)
    lengths = [6, 4, 2]
    ours = multi_head_attention(x, *W, 2, mask=padding_mask(lengths, 6))
    theirs, _ = torch_mha(x, *W, 2, key_padding_mask=torch.from_numpy(~padding_mask(lengths, 6)[:, 0, 0]))
    assert np.max(np.abs(ours - theirs)) <= 1e-12


def test_multi_head_works_without_a_batch_axis():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 8))
    W = draw_weights(rng, 8)
    np.testing.assert_allclose(multi_head_attention(x, *W, 2), multi_head_attention(x[None], *W, 2)[0],
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("n_heads, n_kv_heads", [(8, 2), (8, 1), (4, 4), (6, 3)])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_grouped_query_matches_torch_sdpa_enable_gqa(n_heads, n_kv_heads, causal):
    rng = np.random.default_rng(5)
    d_model, d_head = 4 * n_heads, 4
    x = rng.normal(size=(2, 7, d_model))
    W_q, W_k, W_v, W_o = draw_weights(rng, d_model, n_kv_heads * d_head)
    ours = grouped_query_attention(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=causal)

    def heads(a, h):  # (B, n, h*d_head) -> (B, h, n, d_head), done in torch
        return torch.from_numpy(a).unflatten(-1, (h, d_head)).transpose(1, 2)

    q, k, v = heads(x @ W_q, n_heads), heads(x @ W_k, n_kv_heads), heads(x @ W_v, n_kv_heads)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    theirs = o.transpose(1, 2).flatten(-2).numpy() @ W_o
    assert np.max(np.abs(ours - theirs)) <= 1e-12


def test_grouped_query_with_all_kv_heads_is_multi_head():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 5, 12))
    W = draw_weights(rng, 12)
    np.testing.assert_allclose(grouped_query_attention(x, *W, 3, 3), multi_head_attention(x, *W, 3),
                               rtol=0, atol=1e-15)


def test_multi_query_heads_share_one_key_value_head():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 8))
    W_q, W_k, W_v, W_o = draw_weights(rng, 8, 2)  # one KV head of size d_head = 2
    _, w = grouped_query_attention(x, W_q, W_k, W_v, W_o, 4, 1, return_weights=True)
    q = (x @ W_q).reshape(6, 4, 2).transpose(1, 0, 2)  # (h, n, d_head)
    for h in range(4):
        _, expected = attention(q[h], x @ W_k, x @ W_v, return_weights=True)
        np.testing.assert_allclose(w[h], expected, rtol=0, atol=1e-15)


def test_grouped_query_cross_attention_has_query_length():
    rng = np.random.default_rng(8)
    x, enc = rng.normal(size=(3, 8)), rng.normal(size=(9, 8))
    W = draw_weights(rng, 8, 4)
    assert grouped_query_attention(x, *W, 4, 2, kv=enc).shape == (3, 8)
