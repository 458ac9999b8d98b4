"""Bad input raises ValueError or TypeError with a message that names the offending shapes or values."""

import re

import numpy as np
import pytest

from attention import (attention, causal_mask, grouped_query_attention, multi_head_attention,
                       padding_mask, self_attention)

rng = np.random.default_rng(0)
A = {s: rng.normal(size=s) for s in [(4, 8), (4, 6), (5, 8), (5, 3), (8,), (2, 4, 8), (3, 4, 8),
                                       (4, 12), (12, 12), (12, 6), (12, 4), (12, 8), (8, 8), (8, 4),
                                       (6, 4), (6, 8)]}


def shape(s):
    """A regex matching a shape as NumPy prints it, e.g. (4, 8)."""
    return re.escape(str(s))


CASES = {
    "q_and_k_feature_sizes_differ": (
        lambda: attention(A[4, 8], A[4, 6], A[4, 6]), ValueError, rf"d_k.*{shape((4, 8))}.*{shape((4, 6))}"),
    "k_and_v_lengths_differ": (
        lambda: attention(A[4, 8], A[4, 8], A[5, 3]), ValueError, rf"n_k.*{shape((4, 8))}.*{shape((5, 3))}"),
    "query_without_token_axis": (
        lambda: attention(A[8,], A[4, 8], A[4, 8]), ValueError, rf"q .*at least 2 dims.*{shape((8,))}"),
    "batch_dims_do_not_broadcast": (
        lambda: attention(A[2, 4, 8], A[3, 4, 8], A[3, 4, 8]), ValueError,
        rf"do not broadcast.*{shape((2, 4, 8))}.*{shape((3, 4, 8))}"),
    "mask_is_integer_zeros_and_ones": (
        lambda: attention(A[4, 8], A[5, 8], A[5, 3], mask=np.ones((4, 5), dtype=int)), TypeError,
        r"boolean.*or floating.*int64"),
    "mask_is_strings": (
        lambda: attention(A[4, 8], A[5, 8], A[5, 3], mask=np.full((4, 5), "yes")), TypeError,
        r"mask must hold real numbers.*string"),
    "complex_query": (
        lambda: attention(A[4, 8] + 1j, A[5, 8], A[5, 3]), TypeError, r"q must hold real numbers.*complex128"),
    "string_values": (
        lambda: attention(A[4, 8], A[5, 8], [["a"] * 3] * 5), TypeError, r"v must hold real numbers.*string"),
    "object_keys": (
        lambda: attention(A[4, 8], A[5, 8].astype(object), A[5, 3]), TypeError, r"k must hold real numbers.*object"),
    "ragged_query": (
        lambda: attention([[1.0, 2.0], [3.0]], A[5, 8], A[5, 3]), ValueError, r"q is not an array"),
    "scale_is_a_string": (
        lambda: attention(A[4, 8], A[5, 8], A[5, 3], scale="0.5"), TypeError, r"scale must be a real number.*'0.5'"),
    "scale_is_infinite": (
        lambda: attention(A[4, 8], A[5, 8], A[5, 3], scale=float("inf")), ValueError, r"scale must be finite.*inf"),
    "padding_mask_n_k_negative": (
        lambda: padding_mask([0], -1), ValueError, r"n_k must be a non-negative integer, got -1"),
    "padding_mask_n_k_not_an_integer": (
        lambda: padding_mask([2], 5.0), ValueError, r"n_k must be a non-negative integer, got 5\.0"),
    "mask_does_not_broadcast": (
        lambda: attention(A[4, 8], A[5, 8], A[5, 3], mask=np.ones((5, 4), dtype=bool)), ValueError,
        rf"mask of shape {shape((5, 4))} does not broadcast.*{shape((4, 5))}"),
    "mask_would_grow_the_output": (
        lambda: attention(A[4, 8], A[5, 8], A[5, 3], mask=np.ones((2, 4, 5), dtype=bool)), ValueError,
        rf"mask of shape {shape((2, 4, 5))}.*{shape((4, 5))}"),
    "self_attention_weight_rows_differ_from_d_model": (
        lambda: self_attention(A[4, 8], A[6, 4], A[8, 4], A[8, 4]), ValueError,
        rf"W_q.*{shape((4, 8))}.*{shape((6, 4))}"),
    "d_model_not_divisible_by_n_heads": (
        lambda: multi_head_attention(A[4, 8], A[8, 8], A[8, 8], A[8, 8], A[8, 8], 3), ValueError,
        r"d_model = 8 is not divisible by n_heads = 3"),
    "multi_head_weight_of_wrong_shape": (
        lambda: multi_head_attention(A[4, 8], A[8, 8], A[8, 4], A[8, 8], A[8, 8], 2), ValueError,
        rf"W_k must have shape {shape((8, 8))}, got {shape((8, 4))}"),
    "cross_attention_source_of_other_width": (
        lambda: multi_head_attention(A[4, 8], A[8, 8], A[8, 8], A[8, 8], A[8, 8], 2, kv=A[4, 6]), ValueError,
        rf"share d_model.*{shape((4, 8))}.*{shape((4, 6))}"),
    "n_heads_not_divisible_by_n_kv_heads": (
        lambda: grouped_query_attention(A[4, 12], A[12, 12], A[12, 8], A[12, 8], A[12, 12], 6, 4), ValueError,
        r"n_heads = 6 is not divisible by n_kv_heads = 4"),
    "gqa_key_weight_sized_for_wrong_kv_heads": (
        lambda: grouped_query_attention(A[4, 12], A[12, 12], A[12, 6], A[12, 4], A[12, 12], 6, 2), ValueError,
        rf"W_k must have shape {shape((12, 4))}, got {shape((12, 6))}"),
    "n_heads_zero": (
        lambda: multi_head_attention(A[4, 8], A[8, 8], A[8, 8], A[8, 8], A[8, 8], 0), ValueError,
        r"n_heads must be a positive integer, got 0"),
    "causal_mask_negative_length": (
        lambda: causal_mask(-1), ValueError, r"n_q must be a non-negative integer, got -1"),
    "padding_length_longer_than_sequence": (
        lambda: padding_mask([3, 7], 5), ValueError, r"0\.\.n_k=5, got \[3 7\]"),
    "padding_lengths_not_integers": (
        lambda: padding_mask([2.5], 5), ValueError, r"integers.*float64"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_raises_a_message_naming_it(case):
    call, error, message = case
    with pytest.raises(error, match=message):
        call()
