"""Wrong answers made from every exercise's own worked solution, which every check must
reject: the solution's first result hard-coded (an answer fitted to the example numbers),
the input returned unchanged, the solution that also writes over its array inputs (an
answer that works in place), the solution that caches its results by the shapes of its
inputs (the check must call it again on new values of shapes it has seen), and the
solution's arrays returned as lists or float32 results returned as float64 (the kind of
the result is part of the contract). And every exercise has at least three plausible
wrong answers of its own (sections ``exK-wrong-<what>`` of exercises/chNN.py).

Exercises are found by scanning the pages, as in test_exercises.py.
"""

import functools
import inspect
import importlib
import re

import numpy as np
import pytest
from numpy import ndarray

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


def _key(value):
    """What a cache by shape looks at: an array's shape and dtype, any other value.
    (``ndarray`` by its own name: a check that forbids the numpy module refuses np.)"""
    if isinstance(value, ndarray):
        return ("array", value.shape, value.dtype.str)
    if isinstance(value, dict):
        return tuple((k, _key(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return ("array", type(value).__name__)  # a stream, a config: by its kind only


def cached_by_shape(solution):
    """The solution, remembered by the shapes of its inputs: a second call with arrays
    of the same shapes (and the same other arguments) gets the first call's result.
    (Inputs without arrays are remembered by value: the answer is then right.)"""
    cache = {}

    @functools.wraps(solution)
    def answer(*args, **kwargs):
        key = _key((args, kwargs))
        if key not in cache:
            cache[key] = solution(*args, **kwargs)
        elif "array" in repr(key):  # new values under old shapes: a stale result
            answer.reused = True
        return cache[key]
    answer.reused = False
    return answer


def _arrays(result, convert):
    """``result`` with every array in it (nested in tuples, lists, dicts) converted."""
    if isinstance(result, np.ndarray):
        return convert(result)
    if isinstance(result, (tuple, list)):
        return type(result)(_arrays(r, convert) for r in result)
    if isinstance(result, dict):
        return {k: _arrays(v, convert) for k, v in result.items()}
    return result


def as_lists(solution):
    """The solution, its arrays (of one axis or more) returned as nested lists."""
    @functools.wraps(solution)
    def answer(*args, **kwargs):
        def to_list(a):
            if a.ndim and a.size:
                answer.changed = True
                return a.tolist()
            return a
        return _arrays(solution(*args, **kwargs), to_list)
    answer.changed = False
    return answer


def widened(solution):
    """The solution, its float32 results returned as float64."""
    @functools.wraps(solution)
    def answer(*args, **kwargs):
        def wide(a):
            if a.dtype == np.float32:
                answer.changed = True
                return a.astype(np.float64)
            return a
        return _arrays(solution(*args, **kwargs), wide)
    answer.changed = False
    return answer


# Exercises whose page says a list (or another sequence) is as good as an array.
LISTS_ALLOWED = set()


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
def test_check_rejects_an_answer_that_caches_by_shape(exercise, capsys):
    check, solution = check_and_solution(exercise)
    answer = cached_by_shape(solution)
    ok, line = run_check(check, answer, capsys)
    if not answer.reused:
        assert ok, line  # never called twice on the same shapes: it is the solution
        pytest.skip(f"{exercise.check} never calls twice with arrays of the same shapes")
    assert not ok and line.startswith("✗ Not yet: "), line


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
@pytest.mark.parametrize("make", [as_lists, widened])
def test_check_judges_the_kind_of_the_result(exercise, make, capsys):
    check, solution = check_and_solution(exercise)
    answer = make(solution)
    ok, line = run_check(check, answer, capsys)
    if not answer.changed or (make is as_lists
                              and f"{exercise.chapter}-{exercise.section}" in LISTS_ALLOWED):
        pytest.skip(f"{exercise.check}: no result of that kind to change")
    assert not ok and line.startswith("✗ Not yet: "), line


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


# Parameters that take one value only, and why that is the whole contract.
ONE_VALUE = {("ch05", "ex1", "blocks"): "a stream of random blocks; its repr is its size"}


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
def test_every_argument_takes_more_than_one_value(exercise, capsys):
    """Every parameter of the answer's signature is given two values or more over the
    check's calls (a default left out counts as one): a hard-coded eps, base, h or
    betas cannot pass. Arrays are drawn afresh, so they always vary."""
    check, solution = check_and_solution(exercise)
    signature = inspect.signature(solution)
    seen = {name: set() for name in signature.parameters}

    @functools.wraps(solution)
    def answer(*args, **kwargs):
        bound = signature.bind(*args, **kwargs).arguments
        for name in signature.parameters:
            value = bound.get(name, "<default>")
            seen[name].add("<array>" if isinstance(value, ndarray) else repr(value))
        return solution(*args, **kwargs)

    run_check(check, answer, capsys)
    fixed = [name for name, values in seen.items() if len(values) < 2
             and values != {"<array>"} and (exercise.chapter, exercise.section, name)
             not in ONE_VALUE]
    assert not fixed, f"{exercise.check} always passes {fixed} the same value: {seen}"
