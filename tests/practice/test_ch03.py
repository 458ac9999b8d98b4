"""Chapter 3's checks on answers that are not plausible solutions but must still get a
verdict, never an exception: errors, None, wrong types and shapes, and near misses. (The
solutions, starters and the plausible wrong answers of exercises/ch03.py are run by
test_exercises.py and test_wrong_answers.py.)"""

import math

import numpy as np
import pytest

from attention.blocks import attention_layer
from attention.feed_forward import mlp
from attention.norms import layer_norm
from attention.practice.ch03 import (check_block, check_llama_count, check_rms_norm,
                                     check_rotate_pair)
from tests.support import run_check


def raises(*args, **kwargs):
    raise NotImplementedError("todo")


def returns_none(*args, **kwargs):
    return None


def rms_with_std(x, weight, eps=1e-6):  # the standard deviation, not the RMS
    return x / (x.std(-1, keepdims=True) + eps) * weight


def pair_in_degrees(a, b, position, i, d_head, base=10000.0):
    t = math.radians(position * base ** (-2 * i / d_head))
    return a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)


def count_one_norm_short(c):
    d, kv = c.d_model, c.n_kv_heads * c.d_head
    block = 2 * d * d + 2 * d * kv + 3 * d * c.d_ff + 2 * d
    head = 0 if c.tie_embeddings else c.vocab_size * d
    return c.vocab_size * d + c.n_layers * block + head  # no final norm


def block_exact_gelu(x, p, n_heads):  # GPT-2 uses the tanh GELU
    x = x + attention_layer(layer_norm(x, p["norm1.weight"], p["norm1.bias"]), p,
                            n_heads=n_heads)
    h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
    return x + mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
                   activation="gelu")


@pytest.mark.parametrize("check,answer,words", [
    (check_rms_norm, rms_with_std, "row 0 should be"),
    (check_rms_norm, raises, "raised NotImplementedError"),
    (check_rms_norm, returns_none, "returned None"),
    (check_rms_norm, lambda x, weight, eps=1e-6: x[0], "should have shape (3, 8)"),
    (check_rms_norm, lambda x, weight, eps=1e-6: "x", "not an array of numbers"),
    (check_rotate_pair, pair_in_degrees, "should be ("),
    (check_rotate_pair, lambda a, b, position, i, d_head, base=10000.0: a,
     "should return two numbers"),
    (check_rotate_pair, raises, "raised NotImplementedError"),
    (check_llama_count, count_one_norm_short, "off by -4,096"),
    (check_llama_count, lambda c: 8.0e9, "return an int"),
    (check_llama_count, raises, "raised NotImplementedError"),
    (check_block, block_exact_gelu, "off by up to"),
    (check_block, lambda x, p, n_heads: x[0], "should have shape (2, 6, 16)"),
    (check_block, raises, "raised NotImplementedError"),
    (check_block, returns_none, "returned None"),
])
def test_check_gives_a_verdict_and_says_what_is_wrong(check, answer, words, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok and words in line, line
