"""Practice notebooks: up to date with exercises/, and executed twice in a real kernel.

As shipped (the starters), every self-check prints "✗ Not yet: " and says what is wrong;
with each starter cell replaced by its worked solution, every self-check prints
"✓ Correct: ". Both runs go through nbclient and the venv's ipykernel, as a reader's would.
"""

import re

import jupytext
import pytest
from nbclient import NotebookClient

from tests.conftest import ROOT
from tools.markdown_source import expand_snippets
from tools.notebooks import fill_practice, practice_notebooks

NOTEBOOKS = practice_notebooks()
CHECK_CALL = re.compile(r"^check_\w+\(\w+\)$")


def test_every_chapter_with_exercises_has_a_practice_notebook():
    chapters = {p.stem for p in (ROOT / "exercises").glob("chapter*.py")}
    assert chapters <= {p.stem for p in NOTEBOOKS}, "run: add docs/practice/<chapter>.py"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_practice_notebook_is_up_to_date_with_its_exercises(path):
    assert fill_practice(path.read_text("utf8")) == path.read_text("utf8"), (
        f"{path.relative_to(ROOT)} is stale: run `make outputs` (python -m tools.notebooks)"
    )


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_self_check_fails_helpfully_on_the_starters(path):
    nb = jupytext.read(path)
    starters = sum(cell.metadata.get("snippet", "").endswith("-starter") for cell in nb.cells)
    printed = verdicts(nb)
    assert len(printed) == starters > 0
    for text in printed:
        assert text.startswith("✗ Not yet: "), text
        assert len(text.split()) >= 8, f"not much of an explanation: {text!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_self_check_passes_with_the_solutions(path):
    printed = verdicts(with_solutions(jupytext.read(path)))
    assert printed and all(text.startswith("✓ Correct: ") for text in printed), printed
