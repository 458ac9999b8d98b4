"""The mutation tool (tools/mutants.py): the mutants it makes, and chapter 1's checks
killing every mutant of their worked solutions that is not listed as equivalent."""

from tools.mutants import mutants, report, score


def test_each_site_gives_one_mutant():
    made = dict(mutants("def f(x):\n    return np.max(x) + 1 < 2 and True\n"))
    assert set(made) == {"line 2: Add -> Sub", "line 2: Lt -> LtE", "line 2: And -> Or",
                         "line 2: 1 -> 2", "line 2: 2 -> 3", "line 2: True -> False",
                         "line 2: .max -> .min"}
    assert "np.min(x)" in made["line 2: .max -> .min"]


def test_chapter_1_kills_every_mutant():
    found = score(("ch01",))
    assert len(found) > 50
    assert all(m.killed for m in found), report(found)
