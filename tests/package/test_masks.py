"""causal_mask and padding_mask: alignment, shapes, and agreement with PyTorch's conventions."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention import attention, causal_mask, padding_mask


def test_causal_mask_is_lower_triangle_when_square():
    expected = torch.ones(5, 5, dtype=torch.bool).tril().numpy()
    np.testing.assert_array_equal(causal_mask(5), expected)
    np.testing.assert_array_equal(causal_mask(5, 5), expected)


@pytest.mark.parametrize("n_q, n_k", [(1, 6), (3, 7), (4, 4), (2, 3)])
def test_causal_mask_query_i_sees_keys_up_to_its_absolute_position(n_q, n_k):
    mask = causal_mask(n_q, n_k)
    assert mask.shape == (n_q, n_k) and mask.dtype == np.bool_
    for i in range(n_q):
        position = n_k - n_q + i
        np.testing.assert_array_equal(mask[i], np.arange(n_k) <= position)


def test_causal_mask_single_new_token_sees_the_whole_cache():
    assert causal_mask(1, 9).all()


def test_causal_mask_with_more_queries_than_keys_blocks_the_first_rows():
    mask = causal_mask(4, 2)  # queries at positions -2, -1, 0, 1
    np.testing.assert_array_equal(mask.sum(axis=1), [0, 0, 1, 2])


def test_torch_is_causal_uses_top_left_mask_when_fewer_queries():
    rng = np.random.default_rng(0)
    q, k, v = (torch.from_numpy(rng.normal(size=s)) for s in ((2, 4), (5, 4), (5, 4)))
    torch_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    top_left = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(2, 5, dtype=torch.bool).tril())
    bottom_right = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(causal_mask(2, 5)))
    assert torch.equal(torch_causal, top_left)
    assert not torch.allclose(torch_causal, bottom_right)


def test_padding_mask_marks_real_tokens_true_with_broadcastable_shape():
    mask = padding_mask([3, 5, 1], 5)
    assert mask.shape == (3, 1, 1, 5) and mask.dtype == np.bool_
    np.testing.assert_array_equal(
        mask[:, 0, 0],
        [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]],
    )
    assert np.broadcast_shapes(mask.shape, (3, 4, 5, 5)) == (3, 4, 5, 5)


def test_padding_mask_keeps_every_query_off_the_pad_tokens():
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(2, 3, 6, 4)) for _ in range(3))  # (B, h, n, d)
    lengths = np.array([4, 6])
    _, w = attention(q, k, v, mask=padding_mask(lengths, 6), return_weights=True)
    assert np.all(w[0, :, :, 4:] == 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, atol=1e-15)


def test_padding_mask_changing_pad_tokens_changes_nothing_real():
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(1, 5, 4)) for _ in range(3))
    mask = padding_mask([3], 5)[:, 0]  # (B, 1, n_k) for scores without a head axis
    before = attention(q, k, v, mask=mask)
    k2, v2 = k.copy(), v.copy()
    k2[:, 3:] = rng.normal(size=(1, 2, 4)) * 100
    v2[:, 3:] = rng.normal(size=(1, 2, 4)) * 100
    np.testing.assert_array_equal(attention(q, k2, v2, mask=mask), before)


def test_padding_and_causal_combine():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(2, 1, 4, 3)) for _ in range(3))
    _, w = attention(q, k, v, mask=padding_mask([2, 4], 4), causal=True, return_weights=True)
    allowed = padding_mask([2, 4], 4) & causal_mask(4)  # (2, 1, 4, 4)
    assert np.all(w[~allowed] == 0)


@pytest.mark.parametrize("n_q, n_k", [(2, 5), (1, 4), (4, 4)])
def test_causal_mask_matches_torch_causal_lower_right(n_q, n_k):
    from torch.nn.attention.bias import causal_lower_right

    rng = np.random.default_rng(4)
    q, k, v = (torch.from_numpy(rng.normal(size=(1, 1, n, 4))) for n in (n_q, n_k, n_k))
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(n_q, n_k))
    ours = attention(q.numpy(), k.numpy(), v.numpy(), mask=causal_mask(n_q, n_k))
    assert np.max(np.abs(ours - theirs.numpy())) <= 1e-12
