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
    assert np.max(np.abs(attention(q, k, v, mask) - torch_sdpa(q, k, v, mask))) <= TOL[dtype]


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
    assert np.max(np.abs(torch_causal - attention(q, k, v, top_left))) <= 1e-12
    assert np.max(np.abs(torch_causal - attention(q, k, v, causal=True))) > 1e-3


def test_fully_masked_rows_give_zero_output_and_weights_like_torch(dtype):
    rng = np.random.default_rng(7)
    q, k, v = draw(rng, dtype, (2, 4, 5), (2, 6, 5), (2, 6, 3))
    mask = rng.random((2, 4, 6)) < 0.5
    mask[0, 1] = False
    mask[1, 3] = False
    with np.errstate(all="raise"):  # no 0/0 on the way
        out, weights = attention(q, k, v, mask, return_weights=True)
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
    _, w = attention(q, k, v, mask, causal=True, return_weights=True)
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
