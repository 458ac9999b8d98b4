"""The mutation tool (tools/mutants.py): the mutants it makes, and chapter 1's checks
killing every mutant of their worked solutions that is not listed as equivalent."""

from tools.mutants import mutants, report, score


def test_each_site_gives_one_mutant():
    made = dict(mutants("def f(x):\n    return np.max(x) + 1 < 2 and True\n"))
    assert set(made) == {"line 2: Add -> Sub", "line 2: Lt -> LtE", "line 2: And -> Or",
                         "line 2: 1 -> 2", "line 2: 2 -> 3", "line 2: True -> False",
                         "line 2: .max -> .min"}
    assert "np.min(x)" in made["line 2: .max -> .min"]


def test_keywords_arms_and_statements_are_mutated_but_not_a_repeated_default():
    made = dict(mutants("def f(x):\n    y = np.where(x > 0, x, 0.0)\n"
                        "    y = np.sum(y, axis=0)\n"
                        "    return softmax(y, axis=-1)\n"))
    assert "line 3: drops axis=" in made  # np.sum over every axis instead
    assert "line 4: drops axis=" not in made  # softmax's own default: equivalent
    assert "np.where(x > 0, 0.0, x)" in made["line 2: np.where's arms exchanged"]
    assert "line 2: deleted" in made and "line 3: deleted" in made
    assert "line 4: deleted" not in made  # a return stays


def test_chapter_1_kills_every_mutant():
    found = score(("ch01",))
    assert len(found) > 50
    assert all(m.killed for m in found), report(found)
