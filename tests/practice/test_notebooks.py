"""Practice notebooks, generated from each chapter page's Practice section, executed twice
in a real kernel, outside the repository (an empty directory, only the package importable).

As generated (the starters), every self-check prints "✗ Not yet: " and says what is wrong;
with each starter cell replaced by its worked solution, every self-check prints
"✓ Correct: ". Both runs go through nbclient and the venv's ipykernel, as a reader's would.
"""

import importlib.metadata
import re
import subprocess
import sys
import zipfile

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support import ROOT
from tools.notebooks.chapter import chapter_notebook, third_party_imports
from tools.notebooks.practice import practice_notebook
from tools.site.run_in_page import checkpoint_wheel_bytes, package_wheel_bytes
from tools.source.chapters import chapters
from tools.source.snippets import expand_snippets

CHAPTERS = [c for c in chapters(ROOT) if c.practice_lines() is not None]
CHECK_CALL = re.compile(r"^check_\w+\(\w+\)$")


def test_every_chapter_with_exercises_has_a_practice_section():
    with_exercises = {p.stem for p in (ROOT / "exercises").glob("ch*.py")}
    assert with_exercises <= {c.number for c in CHAPTERS}, "add a ## Practice section to the page"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_practice_notebook_is_valid_and_holds_every_exercise(chapter):
    nb = practice_notebook(chapter, "https://example.org/site/")
    nbformat.validate(nb)
    starters = [c.metadata["snippet"] for c in nb.cells if c.metadata.get("snippet", "").endswith("-starter")]
    assert starters == [f"exercises/{e.chapter}.py:{e.section}-starter" for e in chapter.exercises()]
    text = "\n".join(cell.source for cell in nb.cells)
    assert "--8<--" not in text and "???" not in text and 'title="Output"' not in text.split("<details>")[0]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_each_hint_is_a_folded_cell_of_its_own_before_the_solution(chapter):
    nb = practice_notebook(chapter, "https://example.org/site/")
    folded = [cell.source for cell in nb.cells if cell.source.startswith("<details>")]
    expected = []
    for drill in chapter.drills():
        expected += [f"<details><summary>Hint {k}</summary>\n\n{hint}\n\n</details>"
                     for k, hint in enumerate(drill.hints, 1)]
        expected.append("Solution")
    assert [s if "<summary>Hint" in s else "Solution" for s in folded] == expected


def with_solutions(nb):
    """The notebook with each starter cell's code replaced by its worked solution."""
    for cell in nb.cells:
        source = cell.metadata.get("snippet", "")
        if source.endswith("-starter"):
            solution = source.removesuffix("-starter") + "-solution"
            cell.source = expand_snippets(f'--8<-- "{solution}"', ROOT)
    return nb


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """Where a notebook runs, as a reader's download would: an empty working directory, and
    of the repository only the package on the kernel's path (the install cell's stand-in)."""
    root = tmp_path_factory.mktemp("reader")
    (root / "site-packages").mkdir()
    (root / "site-packages" / "attention").symlink_to(ROOT / "attention")
    (root / "work").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(root / "site-packages"))
        yield root / "work"
    assert not list((root / "work").iterdir()), "a notebook wrote files"


def verdicts(nb, where) -> list[str]:
    """Run the notebook in ``where`` (its install cell skipped: no network here; the kernel
    sees the checkout's package only); return what each self-check cell printed."""
    assert nb.cells[1].source.startswith("%pip install")
    nb.cells[1].source = "# " + nb.cells[1].source.replace("\n", "\n# ")
    NotebookClient(nb, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(where)}}).execute()
    printed = []
    for cell in nb.cells:
        if cell.cell_type == "code" and CHECK_CALL.match(cell.source.strip()):
            printed.append("".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream"))
    return printed


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_every_self_check_fails_helpfully_on_the_starters(chapter, outside):
    nb = practice_notebook(chapter)
    starters = sum(cell.metadata.get("snippet", "").endswith("-starter") for cell in nb.cells)
    printed = verdicts(nb, outside)
    assert len(printed) == starters > 0
    for text in printed:
        assert text.startswith("✗ Not yet: "), text
        assert len(text.split()) >= 8, f"not much of an explanation: {text!r}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.number)
def test_every_self_check_passes_with_the_solutions(chapter, outside):
    printed = verdicts(with_solutions(practice_notebook(chapter)), outside)
    assert printed and all(text.startswith("✓ Correct: ") for text in printed), printed


SITE = "https://example.org/course/"


def notebooks():
    """Every notebook the site offers: each chapter's, and each practice notebook."""
    for chapter in chapters(ROOT):
        page = chapter.page.relative_to(ROOT / "docs").with_suffix("").as_posix()
        yield chapter.number, chapter_notebook(chapter.page, ROOT, f"{SITE}{page}/")
        if chapter.practice_lines() is not None:
            yield f"practice {chapter.number}", practice_notebook(chapter, SITE)


@pytest.mark.parametrize("name,nb", list(notebooks()), ids=lambda v: v if isinstance(v, str) else "")
def test_install_cell_installs_the_sites_wheel_and_every_import_pinned(name, nb):
    """Found from the code (chapters 3, 4 and 6 import transformers, which the old cells
    left out), pinned to what is installed here, the package from the site itself: always
    reinstalled, whatever other module named ``attention`` the kernel can import."""
    install = next(cell.source for cell in nb.cells if cell.cell_type == "code")
    code = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code"
                     and not cell.source.startswith("%pip"))
    wheels = [package_wheel_bytes()[0]]
    # their code reads chapter 7's checkpoint (chapter 14's also its own run), a wheel of its own
    if name in ("ch04", "ch07", "ch11", "ch14"):
        wheels.append(checkpoint_wheel_bytes()[0])
    assert install.split("\n")[0] == ("%pip install --quiet --force-reinstall --no-deps "
                                      + " ".join(f"{SITE}assets/pyodide/{w}" for w in wheels))
    pins = install.split("\n")[1].removeprefix("%pip install --quiet ").split()
    wanted = set(third_party_imports(code)) | {"numpy"}
    assert {pin.split("==")[0] for pin in pins} == wanted, name
    for pin in pins:
        dist, version = pin.split("==")
        assert importlib.metadata.version(dist).split("+")[0] == version
    if name in ("ch03", "ch04", "ch06"):
        assert "transformers" in wanted


def test_the_sites_wheel_installs_the_package_and_chapter_5s_benchmark_results(tmp_path):
    """Chapter 5 reads benchmarks/results.json next to the package's folder: installed from
    the site's wheel (no repository), the file is there, and the package imports."""
    name, data = package_wheel_bytes()
    (tmp_path / name).write_bytes(data)
    with zipfile.ZipFile(tmp_path / name) as wheel:
        assert "benchmarks/results.json" in wheel.namelist()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--target", str(tmp_path / "site"), str(tmp_path / name)], check=True)
    probe = ("import json, pathlib, attention\n"
             "root = pathlib.Path(attention.__file__).resolve().parent.parent\n"
             "print(root, len(json.loads((root / 'benchmarks' / 'results.json').read_text())"
             "['records']))")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, "
                          f"{str(tmp_path / 'site')!r})\n" + probe], capture_output=True,
                         text=True, check=True, cwd=tmp_path).stdout.split()
    assert out[0] == str((tmp_path / "site").resolve()) and int(out[1]) > 0


def test_the_sites_two_wheels_install_chapter_7s_model_beside_the_package(tmp_path):
    """A notebook that reads chapter 7's checkpoint installs its wheel with the package's
    (``install_cell``): together they give ``shipped()`` its files."""
    paths = []
    for name, data in (package_wheel_bytes(), checkpoint_wheel_bytes()):
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--target", str(tmp_path / "site"), *paths], check=True)
    probe = ("import attention\nfrom attention.gpt.run import shipped\n"
             "tokenizer, params, config, tokens, log = shipped()\n"
             "print(attention.__file__, len(tokenizer.vocab), len(params))")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, "
                          f"{str(tmp_path / 'site')!r})\n" + probe], capture_output=True,
                         text=True, check=True, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str((tmp_path / "site").resolve())) and int(out[1]) > 256
