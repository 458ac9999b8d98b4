"""Which blocks the reader's browser runs: decided from the code at build time."""

import re
import subprocess
import sys

import pytest

from tests.support import ROOT
from tools.site.run_in_page import browser_plan, fence_bands, mark_blocks


def test_importing_a_missing_library_runs_and_using_it_does_not():
    plan = browser_plan(["import numpy as np\nimport torch", "x = np.ones(2)",
                         "t = torch.ones(2)"])
    assert plan == [None, None, "needs PyTorch"]


def test_names_from_a_block_that_cannot_run_are_missing_until_rebound():
    plan = browser_plan(["import torch", "t = torch.ones(2)", "print(t)", "t = 1",
                         "print(t)"])
    assert plan[2] == "uses `t` from a block that does not run here"
    assert plan[3:] == [None, None]


def test_a_function_parameter_or_loop_target_is_not_the_missing_global():
    plan = browser_plan(["import matplotlib.pyplot as plt\nx = plt.gca()\nfor T in (1,):"
                         "\n    plt.plot([T])",
                         "def f(x):\n    return x + 1", "for T in (1, 2):\n    print(T)",
                         "print([x for x in range(3)])"])
    assert plan == ["needs Matplotlib", None, None, None]


def test_imports_in_functions_try_importlib_and_star_imports_are_seen():
    plan = browser_plan([
        "def make():\n    import torch\n    return torch.ones(2)", "make()",
        "try:\n    import transformers\nexcept ImportError:\n    pass", "transformers.AutoModel",
        "import importlib\nt = importlib.import_module('torch').ones(2)",
        "m = __import__('matplotlib')", "m.pyplot",
        "from torch import *", "print(tensor([1]))", "print(len([1]))",
        "def fine():\n    import numpy\n    return numpy.ones(1)", "fine()"])
    assert plan == [None, "needs PyTorch", None, "needs Hugging Face Transformers",
                    "needs PyTorch", "needs Matplotlib", "needs Matplotlib", None, "needs PyTorch",
                    None, None, None]


def test_an_import_in_a_block_that_cannot_run_does_not_happen_there():
    # Chapter 6: the shown source of a function (with helpers outside the shown part), then
    # a block that imports the package's function and uses PyTorch, then one that uses it.
    plan = browser_plan(["def step():\n    return helper()",
                         "import torch\nfrom attention.optim import step\ntorch.ones(1)",
                         "step()"])
    assert plan[2] == "uses `step` from a block that does not run here"
    # The same import made earlier by a block that runs is still in place.
    plan = browser_plan(["import numpy as np", "import torch\nimport numpy as np\n"
                         "torch.ones(1)", "np.ones(1)"])
    assert plan == [None, "needs PyTorch", None]


def test_blocks_kept_out_by_hand_say_why_and_their_names_follow():
    plan = browser_plan(["slow = 1  # the big one", "print(slow)"],
                        {"the big one": "too slow"})
    assert plan == ["too slow", "uses `slow` from a block that does not run here"]


def worker_prelude() -> str:
    """The Python the worker runs first (run-worker.js), to run here with CPython."""
    worker = (ROOT / "docs" / "javascripts" / "run-worker.js").read_text("utf8")
    return worker.split("const PRELUDE = `", 1)[1].split("`;", 1)[0].replace("\\\\", "\\")


def run_in_worker_python(script: str) -> str:
    return subprocess.run([sys.executable, "-c", worker_prelude() + script], capture_output=True,
                          text=True, check=True).stdout


def test_each_page_keeps_its_own_print_options_and_random_generators():
    """The worker's Python, run here by CPython: what one page sets of the state pages
    share does not reach another page, and is there again when its page runs."""
    runs = [("a", "import numpy as np, random\nnp.set_printoptions(precision=1)\n"
                  "print(np.ones(1) / 3, np.random.random(), random.random())"),
            ("b", "import numpy as np, random\n"
                  "print(np.ones(1) / 3, np.random.random(), random.random())"),
            ("a", "print(np.ones(1) / 3, np.random.random())")]
    script = "".join(f"\n_run({page!r}, {code!r}, emit=lambda s, t: print(t, end=''));print('|')"
                     for page, code in runs)
    out = run_in_worker_python(script)
    fresh = "0.5488135039273248 0.8444218515250481"  # seed 0, as the page checker seeds
    assert out.split("|\n") == [f"[0.3] {fresh}\n", f"[0.33333333] {fresh}\n",
                                 "[0.3] 0.7151893663724195\n", ""]


def test_a_block_shows_stderr_warnings_its_own_traceback_line_and_output_up_to_a_limit():
    script = """
import json
seen = []
emit = lambda stream, text: seen.append((stream, text))
results = [_run("p", "import sys, warnings\\nprint('out')\\nprint('err', file=sys.stderr)\\n"
                     "warnings.warn('careful')", "<block 1>", emit),
           _run("p", "def f():\\n    return 1 / 0\\n", "<block 2>", emit),
           _run("p", "x = 1\\nf()", "<block 3>", emit),
           _run("p", "name = input()", "<block 4>", emit),
           _run("p", "for i in range(100_000):\\n    print('0123456789')", "<block 5>", emit)]
print(json.dumps({"seen": seen, "results": results}))
"""
    record = __import__("json").loads(run_in_worker_python(script))
    streams = {}
    for stream, text in record["seen"]:
        streams.setdefault(stream, []).append(text)
    assert streams["stdout"][0] == "out\n"
    assert "err\n" in streams["stderr"][0] and "UserWarning: careful" in "".join(streams["stderr"])
    (ok, _), (_, _), (traceback, _), (no_input, _), (cut, printed) = record["results"]
    assert ok is None
    # The line of the reader's block that failed, and the function's line it called.
    assert 'File "<block 3>", line 2, in <module>\n    f()' in traceback, traceback
    assert 'File "<block 2>", line 2, in f\n    return 1 / 0' in traceback, traceback
    assert traceback.endswith("ZeroDivisionError: division by zero")
    assert "_run" not in traceback
    assert "input() cannot ask you for a value here" in no_input
    assert cut is None and printed == 1_100_000
    assert len("".join(t for s, t in record["seen"] if s == "stdout")) == 200_000 + len("out\n")


def test_each_python_blocks_band_reaches_the_browser_in_page_order():
    page = ('```python\nx = 1\n```\n\n```text\nnot python\n```\n\n'
            '??? note "Folded"\n    ```{.python band="10"}\n    y = 2\n    ```\n\n'
            '```{.python timeout="9" band="any"}\nz = 3\n```\n')
    assert fence_bands(page, 3) == [None, "10", "any"]
    with pytest.raises(ValueError, match="2 Python blocks in the page's HTML, 3 in its"):
        fence_bands(page, 2)


def test_the_block_after_a_your_turn_paragraph_is_the_readers():
    """Only the block right after "Your turn ..." is marked: its output shows as it is."""
    block = '<div class="language-python highlight"><pre><code>x = 1\n</code></pre></div>'
    content = ("<p>Your turn: change it.</p>\n" + block + "<p>Then this.</p>" + block
               + "<p>Your turn: and this.</p><p>No, not yet.</p>" + block)
    marked = mark_blocks(content, {}, "```python\nx = 1\n```\n\n" * 3)
    divs = re.findall(r'<div class="language-python highlight"[^>]*>', marked)
    assert ["data-run-yours" in div for div in divs] == [True, False, False], divs


def test_the_package_wheel_leaves_the_shipped_runs_to_a_wheel_of_their_own():
    import io
    import zipfile

    from tools.site.run_in_page import checkpoint_wheel_bytes, gzipped, package_wheel_bytes

    def names(wheel):
        archive = zipfile.ZipFile(io.BytesIO(wheel[1]))
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in archive.infolist())
        return [n for n in archive.namelist() if ".dist-info/" not in n]

    shipped = sorted(p.relative_to(ROOT).as_posix() for run in ("gpt", "circuits")
                     for p in (ROOT / "attention" / run / "shipped").iterdir() if p.is_file())
    package, checkpoint = names(package_wheel_bytes()), names(checkpoint_wheel_bytes())
    assert sorted(checkpoint) == shipped and "attention/gpt/shipped/model.npz" in checkpoint
    assert "attention/circuits/shipped/models.npz" in checkpoint
    assert not set(package) & set(shipped) and "attention/gpt/run.py" in package
    assert len(gzipped(package_wheel_bytes())) < 400e3  # the modules, as Run fetches them


def test_a_page_needs_the_checkpoint_when_its_code_or_live_figure_reads_it():
    from tools.site.run_in_page import needs_checkpoint

    assert needs_checkpoint(["from attention.gpt.run import shipped"], [])
    assert needs_checkpoint(["from attention.gpt import run\nrun.shipped()"], [])
    assert not needs_checkpoint(["import attention.gpt.byte_level", "import numpy"], [])
    assert needs_checkpoint([], ["ch07-attention-head"])  # through a cached helper
    assert needs_checkpoint(["from attention.circuits.run import shipped"], [])
    assert needs_checkpoint([], ["ch14-induction-head"])
    assert not needs_checkpoint([], ["ch02-heads", "ch04-sampling-filters"])


def test_only_the_pages_that_read_the_checkpoint_fetch_it(built_site):
    from tools.site.run_in_page import CHECKPOINT_MARK

    docs = ROOT / "docs"  # (a chapter's notebook page is marked as its chapter is)
    marked = sorted(p.relative_to(docs).as_posix() for p, html in built_site.pages.items()
                    if p.is_relative_to(docs) and CHECKPOINT_MARK in html)
    assert marked == ["chapters/ch04-generation.md", "chapters/ch07-train-a-gpt.md",
                      "chapters/ch11-serving.md", "chapters/ch14-what-attention-learns.md"]


def test_the_first_run_downloads_under_8_mb():
    """The runtime, NumPy and the package (the shipped runs not counted: only four pages
    fetch them). It was 9.06 MB before NumPy's wheel and the standard library were
    repacked without what no code can use in the browser, and 8.02 MB with chapters 12-14
    before the package's wheel was served gzipped whole (405 KB -> 326 KB)."""
    from tools.site.run_in_page import download_bytes

    assert download_bytes() < 8e6, download_bytes()


def test_the_repacked_runtime_is_deterministic_and_keeps_what_code_uses():
    import gzip
    import io
    import zipfile

    from tools.site.pyodide_runtime import NUMPY_WHEEL, ensure_runtime
    from tools.site.run_in_page import served
    from tools.site.runtime_repack import NUMPY_UNUSED, STDLIB_UNUSED, repack

    kept = {NUMPY_WHEEL: ["numpy/__init__.py", "numpy/testing/__init__.py",
                          "numpy/typing/__init__.py", "numpy/_pytesttester.py",
                          "numpy/linalg/lapack_lite.cpython-312-wasm32-emscripten.so",
                          "numpy/_core/_multiarray_tests.cpython-312-wasm32-emscripten.so",
                          "numpy-2.0.2.dist-info/LICENSE.txt"],
            "python_stdlib.zip": ["encodings/cp437.py", "encodings/cp1252.py",
                                  "encodings/utf_8.py", "socketserver.py", "webbrowser.py",
                                  "concurrent/futures/thread.py", "datetime.py", "io.py",
                                  "http/client.py", "unittest/__init__.py"]}
    dropped = {NUMPY_WHEEL: ["numpy/__init__.pyi", "numpy/f2py/__init__.py",
                             "numpy/_core/include/numpy/ndarraytypes.h",
                             "numpy/_core/_umath_tests.cpython-312-wasm32-emscripten.so"],
               "python_stdlib.zip": ["multiprocessing/__init__.py", "smtplib.py",
                                     "_pydatetime.py", "encodings/cp850.py", "cgi.py"]}
    for name, unused in ((NUMPY_WHEEL, NUMPY_UNUSED), ("python_stdlib.zip", STDLIB_UNUSED)):
        original = (ensure_runtime() / name).read_bytes()
        data = repack(original, unused)[0]
        assert data == repack(original, unused)[0] == served()[name + ".gz"]
        archive = zipfile.ZipFile(io.BytesIO(gzip.decompress(data)))
        source = zipfile.ZipFile(io.BytesIO(original))
        names = archive.namelist()
        assert set(kept[name]) <= set(names) and not set(dropped[name]) & set(names), name
        for member in names:  # what remains is byte for byte the original's
            assert (archive.read(member) == source.read(member)
                    or member.endswith(".dist-info/RECORD")), member
    record = zipfile.ZipFile(io.BytesIO(gzip.decompress(served()[NUMPY_WHEEL + ".gz"])))
    rows = record.read("numpy-2.0.2.dist-info/RECORD").decode().splitlines()
    assert sorted(row.split(",")[0] for row in rows) == sorted(record.namelist())
