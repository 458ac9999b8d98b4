"""Chapter 3's practice: each check accepts the worked solution, rejects the starter and
the plausible wrong answers below with a verdict line that says what is wrong, and never
raises."""

import math

import numpy as np
import pytest

from attention.blocks import attention_layer
from attention.feed_forward import mlp
from attention.norms import layer_norm
from attention.practice.ch03 import (check_block, check_llama_count, check_rms_norm,
                                     check_rotate_pair)
from tests.support import Exercises, run_check

EXERCISES = Exercises("ch03.py")
CHECKS = {1: (check_rms_norm, "rms_norm_from_formula"), 2: (check_rotate_pair, "rotate_pair"),
          3: (check_llama_count, "count_llama"), 4: (check_block, "block")}


@pytest.mark.parametrize("number", CHECKS)
def test_solution_passes_and_starter_fails(number, capsys):
    check, name = CHECKS[number]
    ok, line = run_check(check, EXERCISES.load(f"ex{number}-solution", name), capsys)
    assert ok and line.startswith("✓ Correct: ")
    ok, line = run_check(check, EXERCISES.load(f"ex{number}-starter", name), capsys)
    assert not ok and line.startswith("✗ Not yet: ")


def raises(*args, **kwargs):
    raise NotImplementedError("todo")


def returns_none(*args, **kwargs):
    return None


# Exercise 1: RMSNorm ------------------------------------------------------------------------

def rms_without_eps(x, weight, eps=1e-6):
    return x / np.sqrt((x**2).mean(-1, keepdims=True)) * weight


def rms_eps_outside_sqrt(x, weight, eps=1e-6):
    return x / (np.sqrt((x**2).mean(-1, keepdims=True)) + eps) * weight


def rms_without_weight(x, weight, eps=1e-6):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)


def rms_centred(x, weight, eps=1e-6):
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c**2).mean(-1, keepdims=True) + eps) * weight


def rms_over_tokens(x, weight, eps=1e-6):
    return x / np.sqrt((x**2).mean(0, keepdims=True) + eps) * weight


def rms_with_std(x, weight, eps=1e-6):
    return x / (x.std(-1, keepdims=True) + eps) * weight


@pytest.mark.parametrize("answer,words", [
    (rms_without_eps, "eps is missing"),
    (rms_eps_outside_sqrt, "inside the square root"),
    (rms_without_weight, "gain is missing"),
    (rms_centred, "LayerNorm"),
    (rms_over_tokens, "last axis"),
    (rms_with_std, "row 0 should be"),
    (raises, "raised NotImplementedError"),
    (returns_none, "returned None"),
    (lambda x, weight, eps=1e-6: x[0], "should have shape (3, 8)"),
    (lambda x, weight, eps=1e-6: "x", "not an array of numbers"),
])
def test_rms_norm_check_rejects(answer, words, capsys):
    ok, line = run_check(check_rms_norm, answer, capsys)
    assert not ok and words in line, line


# Exercise 2: RoPE for one pair ---------------------------------------------------------------

def pair_wrong_direction(a, b, position, i, d_head, base=10000.0):
    t = position * base ** (-2 * i / d_head)
    return a * math.cos(t) + b * math.sin(t), -a * math.sin(t) + b * math.cos(t)


def pair_missing_two(a, b, position, i, d_head, base=10000.0):
    t = position * base ** (-i / d_head)
    return a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)


def pair_positive_exponent(a, b, position, i, d_head, base=10000.0):
    t = position * base ** (2 * i / d_head)
    return a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)


def pair_degrees(a, b, position, i, d_head, base=10000.0):
    t = math.radians(position * base ** (-2 * i / d_head))
    return a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)


@pytest.mark.parametrize("answer,words", [
    (pair_wrong_direction, "wrong way"),
    (pair_missing_two, "you used base^(-i/d_head)"),
    (pair_positive_exponent, "exponent is negative"),
    (pair_degrees, "should be ("),
    (lambda a, b, position, i, d_head, base=10000.0: a, "should return two numbers"),
    (raises, "raised NotImplementedError"),
])
def test_rotate_pair_check_rejects(answer, words, capsys):
    ok, line = run_check(check_rotate_pair, answer, capsys)
    assert not ok and words in line, line


# Exercise 3: parameter count -----------------------------------------------------------------

def count(c, gqa=True, tied_counts=False, norms=True, matrices=3):
    d, kv = c.d_model, (c.n_kv_heads if gqa else c.n_heads) * c.d_head
    block = 2 * d * d + 2 * d * kv + matrices * d * c.d_ff + (2 * d if norms else 0)
    head = 0 if c.tie_embeddings and not tied_counts else c.vocab_size * d
    return c.vocab_size * d + c.n_layers * block + (d if norms else 0) + head


@pytest.mark.parametrize("answer,words", [
    (lambda c: count(c, gqa=False), "n_kv_heads · d_head"),
    (lambda c: count(c, tied_counts=True), "count it once"),
    (lambda c: count(c, norms=False), "RMSNorm gains"),
    (lambda c: count(c, matrices=2), "three matrices"),
    (lambda c: count(c) - c.d_model, "off by"),
    (lambda c: float(count(c)), "return an int"),
    (raises, "raised NotImplementedError"),
])
def test_llama_count_check_rejects(answer, words, capsys):
    ok, line = run_check(check_llama_count, answer, capsys)
    assert not ok and words in line, line


# Exercise 4: find the bug in a block ---------------------------------------------------------

def ln(h, p, i):
    return layer_norm(h, p[f"norm{i}.weight"], p[f"norm{i}.bias"])


def ff(h, p):
    return mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
               activation="gelu_tanh")


def block_post_ln(x, p, n_heads):
    x = ln(x + attention_layer(x, p, n_heads=n_heads), p, 1)
    return ln(x + ff(x, p), p, 2)


def block_not_causal(x, p, n_heads):
    x = x + attention_layer(ln(x, p, 1), p, n_heads=n_heads, causal=False)
    return x + ff(ln(x, p, 2), p)


def block_both_from_norm(x, p, n_heads):
    h = ln(x, p, 1)
    h = ln(h + attention_layer(h, p, n_heads=n_heads), p, 2)
    return h + ff(h, p)


def block_no_mlp_residual(x, p, n_heads):
    x = x + attention_layer(ln(x, p, 1), p, n_heads=n_heads)
    return ff(ln(x, p, 2), p)


def block_exact_gelu(x, p, n_heads):
    x = x + attention_layer(ln(x, p, 1), p, n_heads=n_heads)
    h = ln(x, p, 2)
    return x + mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
                   activation="gelu")


@pytest.mark.parametrize("answer,words", [
    (block_post_ln, "post-LN"),
    (block_not_causal, "must be causal"),
    (block_both_from_norm, "both residuals"),
    (block_no_mlp_residual, "MLP's residual is missing"),
    (block_exact_gelu, "off by up to"),
    (lambda x, p, n_heads: x[0], "should have shape (2, 6, 16)"),
    (raises, "raised NotImplementedError"),
])
def test_block_check_rejects(answer, words, capsys):
    ok, line = run_check(check_block, answer, capsys)
    assert not ok and words in line, line
