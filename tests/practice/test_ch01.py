"""Chapter 1's self-checks never raise and let no NumPy warning through, and every
exercise has plausible wrong answers. (The wrong answers themselves are sections
``exK-wrong-<what>`` of exercises/ch01.py, run by test_wrong_answers.py; solutions and
starters by test_exercises.py.)"""

import re

import pytest

from attention.practice.ch01 import (check_logsumexp, check_product_shape,
                                     check_softmax_along)
from tests.support import Exercises, run_check

EXERCISES = Exercises("ch01.py")
CHECKS = [check_logsumexp, check_softmax_along, check_product_shape]


def test_every_exercise_has_plausible_wrong_answers():
    wrong = re.findall(r"\[start:ex(\d)-wrong-[\w-]+\]\n# rejected with: ", EXERCISES.source)
    counts = {k: wrong.count(k) for k in set(wrong)}
    assert counts.keys() == {"1", "2", "3"} and min(counts.values()) >= 5, counts


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("answer", [None, 42, "a string", print, lambda *a: 1 / 0,
                                    lambda *a, **k: None,
                                    lambda *a, **k: [[1, 2], [3]],
                                    lambda *a, **k: {"a": 1}])
def test_check_never_raises_on_nonsense(check, answer, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok and line.startswith("✗ Not yet: ")


def test_check_lets_no_numpy_warning_through_for_the_naive_starter(recwarn, capsys):
    ok, _ = run_check(check_logsumexp, EXERCISES.load("ex1-starter", "my_logsumexp"),
                      capsys)
    assert not ok
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
