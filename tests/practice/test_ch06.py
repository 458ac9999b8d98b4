"""Chapter 6's practice: every plausible wrong answer written in exercises/ch06.py
(sections exK-wrong-<what>) is rejected, without raising, by a verdict that contains the
words its first line names. (Solutions and starters: the exercises test.)"""

import re

import pytest

from attention.practice import ch06
from tests.support import Exercises, run_check

CHECKS = {1: (ch06.check_softmax_vjp, "softmax_vjp"),
          2: (ch06.check_dv_and_dq, "dv_and_dq"),
          3: (ch06.check_numerical_gradient, "numerical_gradient"),
          4: (ch06.check_fixed_backward, "causal_attention_backward")}
EXERCISES = Exercises("ch06.py")
WRONG = re.findall(r"\[start:(ex(\d+)-wrong-[\w-]+)\]\n# rejected with: (.+)\n", EXERCISES.source)


def test_every_exercise_has_at_least_two_wrong_answers():
    numbers = [int(number) for _, number, _ in WRONG]
    assert all(numbers.count(n) >= 2 for n in CHECKS)


@pytest.mark.parametrize("section, number, words", WRONG, ids=[w[0] for w in WRONG])
def test_wrong_answer_is_rejected_with_a_reason(section, number, words, capsys):
    check, function = CHECKS[int(number)]
    ok, line = run_check(check, EXERCISES.load(section, function), capsys)
    assert not ok and line.startswith("✗ Not yet: ") and words in line, line


def test_checks_never_raise_on_answers_of_the_wrong_kind(capsys):
    for check, _ in CHECKS.values():
        for answer in (lambda *a: None, lambda *a: "text", lambda *a: 1 / 0):
            ok, line = run_check(check, answer, capsys)
            assert not ok and line.startswith("✗ Not yet: ")
