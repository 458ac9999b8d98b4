"""Chapter 5's practice: every check rejects plausible wrong answers with a one-line message
that says what is wrong, without raising. (Solutions and starters: test_practice_exercises.py.)"""

import math

import numpy as np
import pytest

from attention.practice import (check_merge, check_running_max_and_sum, check_tile_attention,
                                check_tile_kind)
from tests.support import run_check


# Plausible wrong answers, and the words each rejection must contain --------------------

def sum_with_inverted_rescale(blocks):
    m, l = -math.inf, 0.0
    for block in blocks:
        m_new = max(m, float(np.max(block)))
        l = l * math.exp(min(m_new - m, 50.0)) + float(np.sum(np.exp(block - m_new)))
        m = m_new
    return m, l


def sum_with_the_first_max_only(blocks):
    m = float(np.max(blocks[0]))
    return m, sum(float(np.sum(np.exp(b - m))) for b in blocks)


def sum_that_raises(blocks):
    raise NotImplementedError("todo")


def merge_weighted_by_l_only(o1, m1, l1, o2, m2, l2):
    return (l1[:, None] * o1 + l2[:, None] * o2) / (l1 + l2)[:, None]


def merge_returning_nothing(o1, m1, l1, o2, m2, l2):
    pass


def merge_with_transposed_weights(o1, m1, l1, o2, m2, l2):
    m = np.maximum(m1, m2)
    w1, w2 = l1 * np.exp(m1 - m), l2 * np.exp(m2 - m)
    return (w2[:, None] * o1 + w1[:, None] * o2) / (w1 + w2)[:, None]


def tile_kind_off_by_one(q0, q1, k0, k1, n_q, n_k):
    offset = n_k - n_q
    first, last = offset + q0, offset + q1 - 1
    if k0 >= last:
        return "skip"
    if k1 - 1 <= first:
        return "full"
    return "diagonal"


def tile_kind_always_diagonal(q0, q1, k0, k1, n_q, n_k):
    return "diagonal"


def _tile(q_tile, k, v, q0, block, *, stop=True, mask=True, offset=True, strict=False,
          rescale_acc=True, rescale_l=True, zero_after=False):
    """A reader's online-softmax loop for one causal tile, with one mistake switched on."""
    b_q = q_tile.shape[0]
    positions = (q0 if offset else 0) + np.arange(b_q)
    m, l, acc = np.full(b_q, -np.inf), np.zeros(b_q), np.zeros((b_q, v.shape[1]))
    end = q0 + b_q if stop else k.shape[0]
    for k0 in range(0, end, block):
        keys = np.arange(k0, min(k0 + block, k.shape[0]))
        s = q_tile @ k[keys].T / math.sqrt(q_tile.shape[1])
        visible = (keys[None, :] < positions[:, None]) if strict else (keys[None, :] <= positions[:, None])
        if mask and not zero_after:
            s = np.where(visible, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=1))
        alpha = np.exp(m - m_new)
        p = np.exp(s - m_new[:, None])
        if zero_after:
            p = np.where(visible, p, 0.0)
        l = (l * alpha if rescale_l else l) + p.sum(axis=1)
        acc = (acc * alpha[:, None] if rescale_acc else acc) + p @ v[keys]
        m = m_new
    return acc / l[:, None]


def tile_reading_every_block(*args):
    return _tile(*args, stop=False)


def tile_without_mask(*args):
    return _tile(*args, mask=False)


def tile_with_positions_inside_the_tile(*args):
    return _tile(*args, offset=False)


def tile_with_strict_mask(*args):
    with np.errstate(invalid="ignore"):
        return _tile(*args, strict=True)


def tile_without_rescaling_the_accumulator(*args):
    return _tile(*args, rescale_acc=False)


def tile_without_rescaling_the_sum(*args):
    return _tile(*args, rescale_l=False)


def tile_returning_the_unnormalised_sum(q_tile, k, v, q0, block):
    return _tile(q_tile, k, v, q0, block) * 2.0


def tile_that_raises(q_tile, k, v, q0, block):
    raise ValueError("shapes (4,3) and (2,3) not aligned")


def tile_masking_after_the_exponential(*args):
    """Zeroing exp(s - m) after the fact is also exact here: not a mistake."""
    return _tile(*args, zero_after=True)


def test_tile_check_accepts_masking_after_the_exponential(capsys):
    ok, line = run_check(check_tile_attention, tile_masking_after_the_exponential, capsys)
    assert ok, line


WRONG = [
    (check_running_max_and_sum, sum_with_inverted_rescale, "l should be"),
    (check_running_max_and_sum, sum_with_the_first_max_only, "loop over it once"),
    (check_running_max_and_sum, sum_that_raises, "raised NotImplementedError"),
    (check_merge, merge_weighted_by_l_only, "different maxima"),
    (check_merge, merge_returning_nothing, "returned None"),
    (check_merge, merge_with_transposed_weights, "on queries (5, 8) over 6 + 6 keys: entry"),
    (check_tile_kind, tile_kind_off_by_one, "sits at position"),
    (check_tile_kind, tile_kind_always_diagonal, "you said 'diagonal'"),
    (check_tile_attention, tile_reading_every_block, "Stop the loop"),
    (check_tile_attention, tile_without_mask, "give them a score of -inf"),
    (check_tile_attention, tile_with_positions_inside_the_tile, "not at i"),
    (check_tile_attention, tile_with_strict_mask, "<=, not <"),
    (check_tile_attention, tile_without_rescaling_the_accumulator, "accumulator must be multiplied"),
    (check_tile_attention, tile_without_rescaling_the_sum, "differs from causal attention"),
    (check_tile_attention, tile_returning_the_unnormalised_sum, "differs from causal attention"),
    (check_tile_attention, tile_that_raises, "raised ValueError"),
]


@pytest.mark.parametrize("check, answer, words", WRONG, ids=[w[1].__name__ for w in WRONG])
def test_check_rejects_a_plausible_wrong_answer_and_says_why(check, answer, words, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok and line.startswith("✗ Not yet: ") and words in line, line


# The instrument behind exercise 7's check ------------------------------------------------

def test_counted_arrays_count_every_matrix_product_and_nothing_else():
    from attention.practice.measure import Counted

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 5)).view(Counted), rng.normal(size=(5, 7))
    Counted.flops = 0
    out = np.exp(a) @ b + 1.0  # (2, 3, 7): 2 * 3 * 7 dot products of length 5
    assert Counted.flops == 2 * (2 * 3 * 7) * 5
    assert isinstance(out, Counted)
    assert np.array_equal(out.view(np.ndarray), np.exp(a.view(np.ndarray)) @ b + 1.0)


def test_measured_forward_flops_equal_the_weights_count_plus_attention():
    """What the check measures on forward: 2 FLOPs per weight and token for every matrix
    the tokens meet (the parameter count without embeddings and norms, plus the LM head),
    and 4 n² d_head per head and layer for q kᵀ and weights @ v."""
    from attention.model import ModelConfig
    from attention.parameters import count_parameters
    from attention.practice.ch05 import measured_flops

    config = ModelConfig(arch="llama", vocab_size=37, d_model=24, n_layers=3, n_heads=6,
                         n_kv_heads=2, d_ff=40, max_positions=64, tie_embeddings=True)
    n = 9
    counts = count_parameters(config)
    matrices = counts["attention"] + counts["mlp"]
    head = config.vocab_size * config.d_model  # tied: the embedding, multiplied
    assert counts["lm_head"] == 0
    attention = config.n_layers * 4 * n * n * config.n_heads * config.d_head
    assert measured_flops(config, n, np.random.default_rng(1)) == (
        2 * n * (matrices + head) + attention)
