"""Every chapter's exercises, found by scanning the pages: each worked solution passes its
self-check, and each check rejects the unsolved starter, with a verdict line, without raising.

Nothing here lists chapters or exercises: a chapter page's ``## Practice`` section names
each exercise's starter (``exercises/chNN.py:exK-starter``) and the self-check called on
it (``check_x(function)``), and the check is looked up in ``attention/practice/chNN.py``.
"""

import importlib
import re

import pytest

from tests.support import ROOT, Exercises, run_check
from tools.source.chapters import chapters

CASES = [exercise for chapter in chapters(ROOT) for exercise in chapter.exercises()]
IDS = [f"{e.chapter}-{e.section}" for e in CASES]


def check_and_answer(exercise, kind):
    check = getattr(importlib.import_module(f"attention.practice.{exercise.chapter}"), exercise.check)
    answer = Exercises(f"{exercise.chapter}.py").load(f"{exercise.section}-{kind}", exercise.function)
    return check, answer


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
def test_worked_solution_passes_its_check(exercise, capsys):
    ok, line = run_check(*check_and_answer(exercise, "solution"), capsys)
    assert ok and line.startswith("✓ Correct: ")


@pytest.mark.parametrize("exercise", CASES, ids=IDS)
def test_check_rejects_the_unsolved_starter(exercise, capsys):
    ok, line = run_check(*check_and_answer(exercise, "starter"), capsys)
    assert not ok and line.startswith("✗ Not yet: ")


def test_every_exercise_in_the_exercise_files_is_on_its_page():
    for path in sorted((ROOT / "exercises").glob("ch*.py")):
        numbers = set(re.findall(r"\[start:(ex\d+)-solution\]", path.read_text("utf8")))
        on_pages = {e.section for e in CASES if e.chapter == path.stem}
        assert numbers == on_pages, (
            f"exercises/{path.name}: sections {sorted(numbers)}, but the chapter page's Practice "
            f"section shows {sorted(on_pages)}"
        )


def test_discovery_finds_the_existing_chapters():
    assert {"ch02", "ch05"} <= {e.chapter for e in CASES}
