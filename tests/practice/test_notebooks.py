"""Practice notebooks, generated from each chapter page's Practice section, executed twice
in a real kernel.

As generated (the starters), every self-check prints "✗ Not yet: " and says what is wrong;
with each starter cell replaced by its worked solution, every self-check prints
"✓ Correct: ". Both runs go through nbclient and the venv's ipykernel, as a reader's would.
"""

import re

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support import ROOT
from tools.notebooks.practice import practice_notebook
from tools.source.chapters import chapters
from tools.source.snippets import expand_snippets

CHAPTERS = [c for c in chapters(ROOT) if c.practice_lines() is not None]
CHECK_CALL = re.compile(r"^check_\w+\(\w+\)$")


def test_every_chapter_with_exercises_has_a_practice_section():
    with_exercises = {p.stem for p in (ROOT / "exercises").glob("ch*.py")}
    assert with_exercises <= {c.number for c in CHAPTERS}, "add a ## Practice section to the page"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_practice_notebook_is_valid_and_holds_every_exercise(chapter):
    nb = practice_notebook(chapter, "https://example.org/repo", "https://example.org/site/")
    nbformat.validate(nb)
    starters = [c.metadata["snippet"] for c in nb.cells if c.metadata.get("snippet", "").endswith("-starter")]
    assert starters == [f"exercises/{e.chapter}.py:{e.section}-starter" for e in chapter.exercises()]
    text = "\n".join(cell.source for cell in nb.cells)
    assert "--8<--" not in text and "???" not in text and 'title="Output"' not in text.split("<details>")[0]


def with_solutions(nb):
    """The notebook with each starter cell's code replaced by its worked solution."""
    for cell in nb.cells:
        source = cell.metadata.get("snippet", "")
        if source.endswith("-starter"):
            solution = source.removesuffix("-starter") + "-solution"
            cell.source = expand_snippets(f'--8<-- "{solution}"', ROOT)
    return nb


def verdicts(nb) -> list[str]:
    """Run the notebook; return what each self-check cell printed."""
    NotebookClient(nb, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    printed = []
    for cell in nb.cells:
        if cell.cell_type == "code" and CHECK_CALL.match(cell.source.strip()):
            printed.append("".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream"))
    return printed


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_every_self_check_fails_helpfully_on_the_starters(chapter):
    nb = practice_notebook(chapter)
    starters = sum(cell.metadata.get("snippet", "").endswith("-starter") for cell in nb.cells)
    printed = verdicts(nb)
    assert len(printed) == starters > 0
    for text in printed:
        assert text.startswith("✗ Not yet: "), text
        assert len(text.split()) >= 8, f"not much of an explanation: {text!r}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_every_self_check_passes_with_the_solutions(chapter):
    printed = verdicts(with_solutions(practice_notebook(chapter)))
    assert printed and all(text.startswith("✓ Correct: ") for text in printed), printed
