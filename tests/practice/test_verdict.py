"""The harness every self-check calls the reader's function through (verdict.call, the
trials and the measurements): whatever the answer does, the check gets a reason, never an
exception, and the reason is true."""

import signal
import sys
import time

import numpy as np
import pytest

from attention.practice.measure import BlockStream, peak_memory
from attention.practice.trials import (Trial, array_trial, difference, first_failure,
                                       kind_problem)
from attention.practice.verdict import call, num, verdict


def exits(x):
    sys.exit(3)


def interrupted(x):
    raise KeyboardInterrupt


def spins(x):
    while True:
        pass


def spins_and_swallows(x):
    while True:
        try:
            time.sleep(0.01)
        except Exception:
            pass


@pytest.mark.parametrize("answer, words", [
    (exits, "called sys.exit(3) (SystemExit)"),
    (interrupted, "interrupted (KeyboardInterrupt)"),
    (lambda x: 1 / 0, "raised ZeroDivisionError"),
    (42, "not a function"),
])
def test_anything_the_answer_raises_is_a_reason(answer, words):
    result, problem = call(answer, np.zeros(3))
    assert result is None and words in problem, problem


@pytest.mark.parametrize("answer", [spins, spins_and_swallows])
def test_a_slow_answer_is_stopped_at_the_limit(answer):
    start = time.perf_counter()
    result, problem = call(answer, np.zeros(3), limit=0.3)
    assert time.perf_counter() - start < 2
    assert "more than 0.3 s" in problem


def test_an_outer_timer_keeps_counting_after_a_call():
    fired = []
    before = signal.signal(signal.SIGALRM, lambda *a: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        call(lambda x: x, np.zeros(3), limit=5)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < left <= 0.5
        time.sleep(0.7)
        assert fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def in_place(x, weight):
    x /= np.sqrt(np.mean(x * x, axis=-1, keepdims=True))
    x *= weight
    return x


def test_an_answer_that_changes_its_input_is_told_so_and_the_check_keeps_its_own():
    x, w = np.arange(1.0, 7.0).reshape(2, 3), np.ones(3)
    original = x.copy()
    result, problem = call(in_place, x, w)
    assert result is None
    assert "changed its input x in place (entry [0, 0]" in problem, problem
    assert np.array_equal(x, original)  # what the check compares afterwards is unchanged


def test_an_in_place_update_the_exercise_asks_for_is_allowed():
    x = np.ones(3)
    result, problem = call(in_place, x, np.ones(3), may_change=("x",))
    assert problem is None and np.allclose(result, 1)


def test_differences_name_the_shape_or_the_first_wrong_entry():
    assert "shape (2, 3), got (3, 2)" in difference(np.zeros((3, 2)), np.zeros((2, 3)))
    why = difference(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([[0.0, 1.0], [2.0, 4.0]]))
    assert why.startswith("entry [1, 1] is +3.000e+00, expected +4.000e+00"), why
    assert difference(np.float32([1, 2]), np.float32([1, 2 + 1e-6]), np.float32) is None
    assert "float64 for float32" in difference(np.float64([1, 2]), np.float32([1, 2]))
    assert "boolean" in difference(np.float64([1, 0]), np.array([True, False]))
    assert difference(np.float64([1, 2]), np.float64([1, 2 + 1e-6])) is not None


def test_numbers_in_verdicts_keep_one_width():
    assert {len(num(x)) for x in (0.0, -1234.5, 3e-9, 0.5)} == {10}


def test_first_failure_names_the_trial_and_a_known_mistake():
    rng = np.random.default_rng(0)
    trials = [Trial("a (3, 4) input", (rng.normal(size=(3, 4)),))]
    why = first_failure(lambda x: x.sum(0), trials, lambda x: x.sum(-1), what="f")
    assert why == "on a (3, 4) input: the result should have shape (3,), got (4,)"
    trials = [Trial("a (4, 4) input", (rng.normal(size=(4, 4)),))]
    why = first_failure(lambda x: x.sum(0), trials, lambda x: x.sum(-1), what="f",
                        hints=[(lambda x: x.sum(0), "wrong axis")])
    assert why == "on a (4, 4) input: wrong axis"


def keeps_every_block(blocks):
    kept = list(blocks)
    return max(float(b.max()) for b in kept)


def copies_every_block(blocks):
    kept = [b.copy() for b in blocks]
    return max(float(b.max()) for b in kept)


def streams(blocks):
    return max(float(b.max()) for b in blocks)


def test_a_stream_shows_kept_blocks_as_nan_and_copies_in_memory():
    data = [np.random.default_rng(i).normal(size=4096) for i in range(32)]
    result, problem, peak_one = peak_memory(streams, BlockStream(data))
    assert problem is None and result == max(b.max() for b in data)
    assert np.isnan(peak_memory(keeps_every_block, BlockStream(data))[0])
    result, problem, peak_all = peak_memory(copies_every_block, BlockStream(data))
    assert result == max(b.max() for b in data)
    assert peak_all > 16 * 4096 * 8 > 4 * peak_one


def test_a_verdict_is_one_wrapped_paragraph(capsys):
    assert verdict(False, "word " * 40) is False
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])


def test_a_forbidden_function_or_module_is_the_reason_and_is_put_back():
    def uses_matmul(a, b):
        return np.matmul(a, b)

    def uses_numpy(shape):
        return np.zeros(shape).shape

    _, why = call(uses_matmul, np.ones((2, 2)), np.ones((2, 2)), forbidden=(np.matmul,))
    assert "called numpy.matmul" in why and "not to use" in why, why
    _, why = call(uses_numpy, (2, 3), forbidden=(np,))
    assert "numpy.zeros" in why, why
    assert np.matmul(np.ones((1, 1)), np.ones((1, 1)))[0, 0] == 1.0  # put back
    assert uses_numpy((2, 3)) == (2, 3)
    assert call(lambda s: tuple(s), (2, 3), forbidden=(np,)) == ((2, 3), None)


def test_uninitialised_memory_never_holds_the_reference():
    """A reference that copies its result frees a small buffer holding the answer,
    which NumPy's cache of small blocks hands to the next np.empty of that size;
    computed after the reader's call, it cannot. (Before: all three passed.)"""
    rng = np.random.default_rng(0)
    for shape in ((3, 5), (4, 6), (2, 3, 4)):
        trials = [Trial(f"a {shape} input", (rng.normal(size=shape),))]
        why = first_failure(lambda x: np.empty(x.shape[:-1]), trials,
                            lambda x: (x.sum(-1) * 2.0).copy(), what="f")
        assert why is not None and "expected" in why, why


def test_a_redrawable_trial_is_tried_again_on_new_values():
    calls = []

    def remembers(x, axis=-1):
        calls.append(x.shape)
        if not hasattr(remembers, "first"):
            remembers.first = np.exp(x)
        return remembers.first

    rng = np.random.default_rng(0)
    why = first_failure(remembers, [array_trial(rng, (3, 4))], np.exp, what="f")
    assert calls == [(3, 4), (3, 4)] and "drawn again with new values" in why, why


def test_the_kind_of_a_result_is_judged():
    assert "not a NumPy array" in kind_problem([1.0, 2.0], np.zeros(2), "f")
    assert kind_problem([1.0, 2.0], np.zeros(2), "f", list_ok=True) is None
    assert kind_problem(1.5, np.float64(1.0), "f") is None
    assert "integers" in kind_problem(np.zeros(2), np.zeros(2, np.int64), "f")
    assert "float64 for float32" in kind_problem(
        (np.zeros(2), np.zeros(2)), (np.zeros(2), np.float32([0, 0])), "f")
