"""Every chapter's exercises: each worked solution passes its self-check, and each check
rejects the unsolved starter, with a verdict line, without raising."""

import re

import pytest

from attention import practice
from tests.practice_support import Exercises, run_check

# exercises file -> {exercise number: (self-check, name of the function the reader writes)}
CHAPTERS = {
    "chapter02.py": {
        1: (practice.check_attention_weights, "attention_weights"),
        2: (practice.check_padding_mask, "make_padding_mask"),
        3: (practice.check_permutation_test, "is_permutation_equivariant"),
        4: (practice.check_multi_head_scale, "multi_head"),
    },
    "chapter05.py": {
        1: (practice.check_running_max_and_sum, "running_max_and_sum"),
        2: (practice.check_merge, "merge"),
        3: (practice.check_tile_kind, "tile_kind"),
        4: (practice.check_tile_attention, "tile_attention"),
    },
    "ch04.py": {
        1: (practice.check_top_p_filter, "top_p_filter"),
        2: (practice.check_decode_step, "decode_step"),
        3: (practice.check_kv_cache_size, "kv_cache_size"),
        4: (practice.check_window_cache_step, "window_cache_step"),
    },
    "ch06.py": {
        1: (practice.check_softmax_vjp, "softmax_vjp"),
        2: (practice.check_dv_and_dq, "dv_and_dq"),
        3: (practice.check_numerical_gradient, "numerical_gradient"),
        4: (practice.check_fixed_backward, "causal_attention_backward"),
    },
}
CASES = [(file, number) for file, table in CHAPTERS.items() for number in table]


@pytest.mark.parametrize("file, number", CASES)
def test_worked_solution_passes_its_check(file, number, capsys):
    check, name = CHAPTERS[file][number]
    ok, line = run_check(check, Exercises(file).load(f"ex{number}-solution", name), capsys)
    assert ok and line.startswith("✓ Correct: ")


@pytest.mark.parametrize("file, number", CASES)
def test_check_rejects_the_unsolved_starter(file, number, capsys):
    check, name = CHAPTERS[file][number]
    ok, line = run_check(check, Exercises(file).load(f"ex{number}-starter", name), capsys)
    assert not ok and line.startswith("✗ Not yet: ")


def test_every_exercise_in_the_exercise_files_is_tested():
    for file, table in CHAPTERS.items():
        source = Exercises(file).source
        numbers = {int(n) for n in re.findall(r"\[start:ex(\d+)-solution\]", source)}
        assert numbers == set(table), f"exercises/{file}: exercises {sorted(numbers)} vs tested {sorted(table)}"
