"""Chapter 1's self-checks let no NumPy warning through, even for a starter that
overflows. (Solutions, starters and the wrong answers of exercises/ch01.py are run by
test_exercises.py, test_wrong_answers.py and test_derived_wrong_answers.py.)"""

from attention.practice.ch01 import check_logsumexp, check_stable_softmax
from tests.support import Exercises, run_check

EXERCISES = Exercises("ch01.py")


def test_check_lets_no_numpy_warning_through_for_the_naive_starters(recwarn, capsys):
    for check, section, name in ((check_stable_softmax, "ex1-starter", "stable_softmax"),
                                 (check_logsumexp, "ex3-starter", "logsumexp")):
        ok, _ = run_check(check, EXERCISES.load(section, name), capsys)
        assert not ok
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
