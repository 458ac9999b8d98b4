"""Wrong answers made from every exercise's own worked solution, which every check must
reject: the solution's first result hard-coded (an answer fitted to the example numbers),
the input returned unchanged, and the solution that also writes over its array inputs (an
answer that works in place). And every exercise has at least three plausible wrong
answers of its own (sections ``exK-wrong-<what>`` of exercises/chNN.py).

Exercises are found by scanning the pages, as in test_exercises.py.
"""

import functools
import importlib
import re

import numpy as np
import pytest

from tests.support import ROOT, Exercises, run_check
from tools.source.chapters import chapters

CASES = [exercise for chapter in chapters(ROOT) for exercise in chapter.exercises()]
IDS = [f"{e.chapter}-{e.section}" for e in CASES]


def check_and_solution(exercise):
    check = getattr(importlib.import_module(f"attention.practice.{exercise.chapter}"),
                    exercise.check)
    solution = Exercises(f"{exercise.chapter}.py").load(f"{exercise.section}-solution",
                                                        exercise.function)
    return check, solution


def hard_coded(solution):
    """Answers every call with what the solution gave on the first one."""
    first = []

    @functools.wraps(solution)
    def answer(*args, **kwargs):
        if not first:
            first.append(solution(*args, **kwargs))
        return first[0]
    return answer


def in_place(solution):
    """The solution, then every float array it was given overwritten with its result's
    first value (or zeros): an answer that reuses its inputs as scratch space."""
    @functools.wraps(solution)
    def answer(*args, **kwargs):
        result = solution(*args, **kwargs)
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size and a.flags.writeable:
                a[...] = a * 0.5 + 1.0
                answer.wrote = True
        return result
    answer.wrote = False
    return answer


def first_argument(solution):
    @functools.wraps(solution)
    def answer(*args, **kwargs):
        return args[0] if args else None
    return answer


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
@pytest.mark.parametrize("make", [hard_coded, first_argument])
def test_check_rejects_answers_made_from_the_solution(exercise, make, capsys):
    check, solution = check_and_solution(exercise)
    ok, line = run_check(check, make(solution), capsys)
    assert not ok and line.startswith("✗ Not yet: "), line


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
def test_check_says_when_an_answer_writes_over_its_inputs(exercise, capsys):
    check, solution = check_and_solution(exercise)
    answer = in_place(solution)
    ok, line = run_check(check, answer, capsys)
    if not answer.wrote:
        pytest.skip(f"{exercise.check} gives no float array to write over")
    assert not ok and "in place" in line, line


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
def test_every_exercise_has_three_plausible_wrong_answers(exercise):
    source = Exercises(f"{exercise.chapter}.py").source
    wrong = re.findall(rf"\[start:{exercise.section}-wrong-[\w-]+\]\n# rejected with: ", source)
    assert len(wrong) >= 3, f"{exercise.chapter} {exercise.section}: {len(wrong)} wrong answers"
