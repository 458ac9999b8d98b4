"""Chapter 1's self-checks reject plausible wrong answers, say what is wrong, and never raise."""

import numpy as np
import pytest

from attention.practice.ch01 import (check_logsumexp, check_product_shape,
                                     check_softmax_along)
from tests.practice_support import run_check

# Exercise 1: log-sum-exp ---------------------------------------------------------------


def lse_naive(x, axis=-1):  # the starter's formula
    return np.log(np.sum(np.exp(x), axis=axis))


def lse_forgets_to_add_max_back(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis))


def lse_one_max_for_the_whole_array(x, axis=-1):
    m = np.max(x)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + m


def lse_max_without_keepdims(x, axis=-1):
    m = np.max(x, axis=axis)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + m


def lse_always_last_axis(x, axis=-1):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + np.squeeze(m, -1)


def lse_keeps_the_axis(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m


def lse_nan_on_a_row_of_minus_inf(x, axis=-1):  # the shift without the -inf guard
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + np.squeeze(m, axis)


def lse_hard_max(x, axis=-1):  # "log-sum-exp is about the max"
    return np.max(x, axis=axis)


def lse_returns_a_string(x, axis=-1):
    return "about 1000"


def lse_raises(x, axis=-1):
    raise NotImplementedError("todo")


# Exercise 2: softmax along an axis ------------------------------------------------------


def softmax_whole_array(x, axis=-1):  # the starter's formula
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def softmax_always_last_axis(x, axis=-1):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def softmax_without_the_shift(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_one_max_for_the_whole_array(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_max_without_keepdims(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_sum_without_keepdims(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)


def softmax_trailing_none(x, axis=-1):  # right for axis -1 only
    e = np.exp(x - np.max(x, axis=axis)[..., None])
    return e / np.sum(e, axis=axis)[..., None]


def softmax_returns_a_list(x, axis=-1):
    return [[0.5, 0.5]]


# Exercise 3: the shape of a product ------------------------------------------------------


def shape_never_refuses(a, b):
    return (*a[:-1], b[-1])


def shape_takes_a_batch_only(a, b):
    return (*a[:-1], b[-1]) if a[-1] == b[-2] else None


def shape_batch_by_max(a, b):  # broadcasts without checking that sizes fit
    if a[-1] != b[-2]:
        return None
    width = max(len(a), len(b)) - 2
    pa = (1,) * (width - len(a) + 2) + tuple(a[:-2])
    pb = (1,) * (width - len(b) + 2) + tuple(b[:-2])
    return (*(max(p, q) for p, q in zip(pa, pb)), a[-2], b[-1])


def shape_zips_from_the_left(a, b):  # zip() without padding drops axes
    if a[-1] != b[-2]:
        return None
    batch = []
    for p, q in zip(a[:-2], b[:-2]):
        if p != q and 1 not in (p, q):
            return None
        batch.append(max(p, q))
    return (*batch, a[-2], b[-1])


def shape_second_to_last_of_b(a, b):  # reads b's rows as the output's columns
    return (*a[:-1], b[-2]) if a[-1] == b[-2] else None


def shape_returns_a_string(a, b):
    return "(3, 5)"


WRONG_ANSWERS = [
    (check_logsumexp, lse_naive, "exp overflows"),
    (check_logsumexp, lse_forgets_to_add_max_back, "did not add it back"),
    (check_logsumexp, lse_one_max_for_the_whole_array, "its own maximum"),
    (check_logsumexp, lse_max_without_keepdims, "keepdims=True"),
    (check_logsumexp, lse_always_last_axis, "use the axis you are given (0)"),
    (check_logsumexp, lse_keeps_the_axis, "should have shape ()"),
    (check_logsumexp, lse_nan_on_a_row_of_minus_inf, "shift by 0"),
    (check_logsumexp, lse_hard_max, "the answer is 3.408"),
    (check_logsumexp, lse_returns_a_string, "returned str, not numbers"),
    (check_logsumexp, lse_raises, "raised NotImplementedError: todo"),
    (check_softmax_along, softmax_whole_array, "over the whole array"),
    (check_softmax_along, softmax_always_last_axis, "use the axis you are given (1)"),
    (check_softmax_along, softmax_without_the_shift, "subtract each row's own maximum"),
    (check_softmax_along, softmax_one_max_for_the_whole_array, "(not the maximum of the whole array)"),
    (check_softmax_along, softmax_max_without_keepdims, "keepdims=True"),
    (check_softmax_along, softmax_sum_without_keepdims, "keepdims=True"),
    (check_softmax_along, softmax_trailing_none, "keepdims=True"),
    (check_softmax_along, softmax_returns_a_list, "should have the input's shape"),
    (check_product_shape, shape_never_refuses, "NumPy refuses this product"),
    (check_product_shape, shape_takes_a_batch_only, "should be (2, 4, 3)"),
    (check_product_shape, shape_batch_by_max, "the batch sizes 2 and 3 differ"),
    (check_product_shape, shape_zips_from_the_left, "should be (2, 3, 5)"),
    (check_product_shape, shape_second_to_last_of_b, "should be (3, 5)"),
    (check_product_shape, shape_returns_a_string, "return a tuple of ints"),
]


@pytest.mark.parametrize("check, answer, words", WRONG_ANSWERS,
                         ids=[a.__name__ for _, a, _ in WRONG_ANSWERS])
def test_check_rejects_a_plausible_wrong_answer_and_says_what_is_wrong(
        check, answer, words, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok
    assert line.startswith("✗ Not yet: ") and words in line, line


@pytest.mark.parametrize("check", [check_logsumexp, check_softmax_along,
                                   check_product_shape])
@pytest.mark.parametrize("answer", [None, 42, "a string", print, lambda *a: 1 / 0,
                                    lambda *a, **k: None, lambda *a, **k: [[1, 2], [3]]])
def test_check_never_raises_on_nonsense(check, answer, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok and line.startswith("✗ Not yet: ")


def test_check_prints_no_numpy_warning_for_a_naive_answer(recwarn, capsys):
    ok, _ = run_check(check_logsumexp, lse_naive, capsys)
    assert not ok
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
