"""Chapter 6's checks give a verdict, never an exception, on answers of the wrong kind.
(Plausible wrong answers: sections exK-wrong-<what> of exercises/ch06.py, run by
test_wrong_answers.py.)"""

from attention.practice import ch06
from tests.support import run_check

CHECKS = [getattr(ch06, name) for name in dir(ch06) if name.startswith("check_")]


def test_checks_never_raise_on_answers_of_the_wrong_kind(capsys):
    assert len(CHECKS) >= 7
    for check in CHECKS:
        for answer in (lambda *a: None, lambda *a: "text", lambda *a: 1 / 0):
            ok, line = run_check(check, answer, capsys)
            assert not ok and line.startswith("✗ Not yet: ")
