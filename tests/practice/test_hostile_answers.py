"""No self-check raises, whatever the answer: wrong types, ragged lists, strings, None, NaN,
or an exception inside the reader's function all give a ✗ verdict with a reason.

Every check of every chapter is found by scanning the pages' Practice sections.
"""

import importlib

import numpy as np
import pytest

from tests.support import ROOT, run_check
from tools.source.chapters import chapters


def raises(*args, **kwargs):
    raise RuntimeError("a bug in the reader's function")


def returns(value):
    def answer(*args, **kwargs):
        return value
    answer.__name__ = f"returns_{type(value).__name__}"
    return answer


HOSTILE = [
    raises,
    returns(None),
    returns("a string"),
    returns([[1.0, 2.0], [3.0]]),  # ragged
    returns([]),
    returns(3.5),
    returns(np.full((2, 2), np.nan)),
    returns(object()),
    returns((None, None)),
    returns({"a": 1}),
]
CHECKS = sorted({(e.chapter, e.check) for c in chapters(ROOT) for e in c.exercises()})


@pytest.mark.parametrize("chapter, check", CHECKS, ids=[c for _, c in CHECKS])
def test_no_check_raises_on_a_hostile_answer(chapter, check, capsys):
    function = getattr(importlib.import_module(f"attention.practice.{chapter}"), check)
    for answer in HOSTILE:
        ok, line = run_check(function, answer, capsys)
        assert not ok, f"{check} accepted {answer.__name__}"
        assert len(line.split()) >= 5, f"{check} on {answer.__name__}: no reason given: {line!r}"
