"""Chapter 1's self-checks: they reject the plausible wrong answers written in
exercises/ch01.py (sections ``exK-wrong-<what>``, first line ``# rejected with: <words>``),
say what is wrong, never raise, and print no NumPy warning of their own."""

import re
from pathlib import Path

import pytest

from attention.practice.ch01 import (check_logsumexp, check_product_shape,
                                     check_softmax_along)

SOURCE = (Path(__file__).resolve().parents[2] / "exercises" / "ch01.py").read_text("utf8")
CHECKS = {1: (check_logsumexp, "my_logsumexp"),
          2: (check_softmax_along, "softmax_along"),
          3: (check_product_shape, "product_shape")}


def section(name):
    match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", SOURCE, re.S)
    assert match, name
    return match.group(1)


def load(name, function):
    namespace: dict = {}
    exec(section("imports"), namespace)
    exec(section(name), namespace)
    return namespace[function]


def verdict_line(check, answer, capsys):
    result = check(answer)
    printed = capsys.readouterr().out.strip().splitlines()
    assert result in (True, False) and printed
    return result, printed[-1]


WRONG = re.findall(r"\[start:(ex(\d)-wrong-[\w-]+)\]\n# rejected with: (.*)\n", SOURCE)


def test_there_are_plausible_wrong_answers_for_every_exercise():
    assert {int(k) for _, k, _ in WRONG} == set(CHECKS) and len(WRONG) >= 20


@pytest.mark.parametrize("name, number, words", WRONG, ids=[w[0] for w in WRONG])
def test_check_rejects_a_plausible_wrong_answer_and_says_what_is_wrong(
        name, number, words, capsys):
    check, function = CHECKS[int(number)]
    ok, line = verdict_line(check, load(name, function), capsys)
    assert not ok and line.startswith("✗ Not yet: ") and words in line, line


@pytest.mark.parametrize("number", sorted(CHECKS))
def test_starter_fails_and_solution_passes(number, capsys):
    check, function = CHECKS[number]
    ok, line = verdict_line(check, load(f"ex{number}-starter", function), capsys)
    assert not ok and line.startswith("✗ Not yet: ")
    ok, line = verdict_line(check, load(f"ex{number}-solution", function), capsys)
    assert ok and line.startswith("✓ Correct: ")


@pytest.mark.parametrize("check", [check_logsumexp, check_softmax_along,
                                   check_product_shape])
@pytest.mark.parametrize("answer", [None, 42, "a string", print, lambda *a: 1 / 0,
                                    lambda *a, **k: None,
                                    lambda *a, **k: [[1, 2], [3]],
                                    lambda *a, **k: {"a": 1}])
def test_check_never_raises_on_nonsense(check, answer, capsys):
    ok, line = verdict_line(check, answer, capsys)
    assert not ok and line.startswith("✗ Not yet: ")


def test_check_lets_no_numpy_warning_through_for_a_naive_answer(recwarn, capsys):
    ok, _ = verdict_line(check_logsumexp, load("ex1-starter", "my_logsumexp"), capsys)
    assert not ok
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
