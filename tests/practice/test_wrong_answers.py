"""Every plausible wrong answer written in an exercise file is rejected by its check.

A section ``exK-wrong-<what>`` of ``exercises/chNN.py`` defines the reader's function of
exercise K wrongly; an optional first line ``# rejected with: <words>`` names words the
verdict must contain. Found by scanning; nothing to register.

No verdict may depend on the draw: each check is run RUNS times on each wrong answer,
and must reject it every time, with the words every time.
"""

import importlib
import re

import pytest

from tests.support import ROOT, Exercises, run_check
from tools.source.chapters import chapters

WRONG = re.compile(r"# --8<-- \[start:(?P<section>ex\d+)-wrong-(?P<what>[\w-]+)\]\n(?P<body>.*?)# --8<-- \[end:", re.S)
WORDS = re.compile(r"^# rejected with: (?P<words>.+)$", re.M)


def cases():
    exercises = {(e.chapter, e.section): e for c in chapters(ROOT) for e in c.exercises()}
    found = []
    for path in sorted((ROOT / "exercises").glob("ch*.py")):
        for match in WRONG.finditer(path.read_text("utf8")):
            words = WORDS.search(match["body"])
            found.append((exercises.get((path.stem, match["section"])),
                          f"{path.stem}:{match['section']}-wrong-{match['what']}",
                          words["words"].strip() if words else ""))
    return found


CASES = cases()
RUNS = 20


@pytest.mark.parametrize("exercise, section, words", CASES, ids=[c[1] for c in CASES])
def test_check_rejects_the_wrong_answer_and_says_what_is_wrong(exercise, section, words, capsys):
    assert exercise is not None, f"{section}: no exercise of that number on the chapter page"
    check = getattr(importlib.import_module(f"attention.practice.{exercise.chapter}"), exercise.check)
    for run in range(RUNS):  # a fresh answer each run: none may remember the last
        answer = Exercises(f"{exercise.chapter}.py").load(section.split(":")[1],
                                                          exercise.function)
        ok, line = run_check(check, answer, capsys)
        assert not ok and line.startswith("✗ Not yet: ") and words in line, (
            f"run {run + 1} of {RUNS}: {line}")


def test_no_section_name_is_used_twice():
    """A second section of the same name would never run (the first one is loaded)."""
    for path in sorted((ROOT / "exercises").glob("ch*.py")):
        names = re.findall(r"# --8<-- \[start:([\w-]+)\]", path.read_text("utf8"))
        twice = sorted({n for n in names if names.count(n) > 1})
        assert not twice, f"exercises/{path.name}: {twice}"
