"""Chapter 2's practice: every check rejects plausible wrong answers with a one-line message
that says what is wrong, without raising. (Solutions and starters: test_practice_exercises.py.)"""

import math

import numpy as np
import pytest

from attention import self_attention, softmax
from attention.practice import (check_attention_weights, check_multi_head_scale,
                                check_padding_mask, check_permutation_test)
from tests.support import run_check


# Plausible wrong answers, and the words each rejection must contain --------------------

def weights_divided_by_d_k(Q, K, scaled=True):
    scores = Q @ np.swapaxes(K, -1, -2)
    return softmax(scores / Q.shape[-1] if scaled else scores, axis=-1)


def weights_softmax_over_columns(Q, K, scaled=True):
    scores = Q @ np.swapaxes(K, -1, -2) / (math.sqrt(Q.shape[-1]) if scaled else 1.0)
    return softmax(scores, axis=0)


def weights_always_scaled(Q, K, scaled=True):
    return softmax(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]), axis=-1)


def weights_not_implemented(Q, K, scaled=True):
    raise NotImplementedError("todo")


def mask_without_broadcast_axes(batch):
    return np.array([[t != "<pad>" for t in seq] for seq in batch])  # (B, n): misaligned


def mask_on_the_query_axis(batch):
    return np.array([[t != "<pad>" for t in seq] for seq in batch])[:, None, :, None]


def mask_with_keys_first(batch):
    return np.array([[t != "<pad>" for t in seq] for seq in batch]).T[:, None, None]


def mask_inverted(batch):
    return np.array([[t == "<pad>" for t in seq] for seq in batch])[:, None, None, :]


def mask_of_zeros_and_ones(batch):
    return np.array([[int(t != "<pad>") for t in seq] for seq in batch])[:, None, None, :]


def mask_blocks_the_pad_queries(batch):
    real = np.array([[t != "<pad>" for t in seq] for seq in batch])
    return real[:, None, :, None]  # (B, 1, n_q, 1): masks queries, not keys


def equivariance_with_inverse_permutation(X, W_q, W_k, W_v, perm, causal=False):
    out = self_attention(X, W_q, W_k, W_v, causal=causal)
    out_perm = self_attention(X[perm], W_q, W_k, W_v, causal=causal)
    return bool(np.allclose(out_perm, out[np.argsort(perm)]))


def equivariance_always_true(X, W_q, W_k, W_v, perm, causal=False):
    return True


def equivariance_returns_an_array(X, W_q, W_k, W_v, perm, causal=False):
    out = self_attention(X, W_q, W_k, W_v, causal=causal)
    out_perm = self_attention(X[perm], W_q, W_k, W_v, causal=causal)
    return np.isclose(out_perm, out[perm])


def multi_head_without_scaling(x, W_q, W_k, W_v, W_o, n_heads):
    n, d_model = x.shape
    d_head = d_model // n_heads
    q, k, v = ((x @ W).reshape(n, n_heads, d_head).transpose(1, 0, 2) for W in (W_q, W_k, W_v))
    out = softmax(q @ k.transpose(0, 2, 1), axis=-1) @ v
    return out.transpose(1, 0, 2).reshape(n, d_model) @ W_o


def multi_head_wrong_merge(x, W_q, W_k, W_v, W_o, n_heads):
    n, d_model = x.shape
    d_head = d_model // n_heads
    q, k, v = ((x @ W).reshape(n, n_heads, d_head).transpose(1, 0, 2) for W in (W_q, W_k, W_v))
    out = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d_head), axis=-1) @ v  # (h, n, d_head)
    return out.reshape(n, d_model) @ W_o  # merges without moving the head axis back


WRONG_ANSWERS = [
    (check_attention_weights, weights_divided_by_d_k, "divided the scores by d_k = 16"),
    (check_attention_weights, weights_softmax_over_columns, "sums to"),
    (check_attention_weights, weights_always_scaled, "scaled=False your weights are still scaled"),
    (check_attention_weights, weights_not_implemented, "raised NotImplementedError: todo"),
    (check_padding_mask, mask_without_broadcast_axes, "lines up the LAST axes"),
    (check_padding_mask, mask_on_the_query_axis, "attends to <pad>"),
    (check_padding_mask, mask_with_keys_first, "attends to <pad>"),
    (check_padding_mask, mask_inverted, "attends to <pad>"),
    (check_padding_mask, mask_of_zeros_and_ones, "dtype int64"),
    (check_padding_mask, mask_blocks_the_pad_queries, "attends to <pad>"),
    (check_permutation_test, equivariance_with_inverse_permutation, "without a mask your test says False"),
    (check_permutation_test, equivariance_always_true, "with the causal mask your test says True"),
    (check_permutation_test, equivariance_returns_an_array, "return True or False"),
    (check_multi_head_scale, multi_head_without_scaling, "even with one head"),
    (check_multi_head_scale, multi_head_wrong_merge, "one head matches"),
]


@pytest.mark.parametrize("check, answer, words", WRONG_ANSWERS, ids=[a.__name__ for _, a, _ in WRONG_ANSWERS])
def test_check_rejects_a_plausible_wrong_answer_and_says_what_is_wrong(check, answer, words, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok
    assert line.startswith("✗ Not yet: ") and words in line, line
