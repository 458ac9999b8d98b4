"""Chapter 5's practice: every check rejects plausible wrong answers with a one-line message
that says what is wrong, without raising. (Solutions and starters: test_practice_exercises.py.)"""

import math

import numpy as np
import pytest

from attention.practice import check_merge, check_running_max_and_sum, check_tile_kind
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


WRONG = [
    (check_running_max_and_sum, sum_with_inverted_rescale, "l should be"),
    (check_running_max_and_sum, sum_with_the_first_max_only, "m should be"),
    (check_running_max_and_sum, sum_that_raises, "raised NotImplementedError"),
    (check_merge, merge_weighted_by_l_only, "different maxima"),
    (check_merge, merge_returning_nothing, "returned None"),
    (check_merge, merge_with_transposed_weights, "differs from attention"),
    (check_tile_kind, tile_kind_off_by_one, "sits at position"),
    (check_tile_kind, tile_kind_always_diagonal, "you said 'diagonal'"),
]


@pytest.mark.parametrize("check, answer, words", WRONG, ids=[w[1].__name__ for w in WRONG])
def test_check_rejects_a_plausible_wrong_answer_and_says_why(check, answer, words, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok and line.startswith("✗ Not yet: ") and words in line, line
