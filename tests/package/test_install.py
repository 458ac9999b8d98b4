"""The README's install, ``pip install .``, as a reader runs it: the wheel built from this
checkout, installed into a fresh virtual environment outside the repository, holds what
chapter 7 loads (``attention/gpt/shipped/``): ``shipped()`` returns the model and the live
figure draws on it. About 5 s here (the build and the install, no network).

NumPy comes from this environment: a folder holding links to it alone (and its metadata,
so pip sees the dependency met) is put on the new environment's path by a ``.pth`` file.
Nothing else of this environment is visible there, the repository's editable install
included, and the test checks that ``attention`` is imported from the new environment.
"""

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np

from tests.support import ROOT

CHECK = """
import json, attention
from attention.gpt.run import shipped
from attention.interactive import compute
tokenizer, params, config, tokens, log = shipped()
figure = compute("ch07-attention-head", {"prompt": "The attention weights"})
print(json.dumps({"module": attention.__file__, "vocab": len(tokenizer.vocab),
                  "rows": params["embed.tokens"].shape[0], "val": len(tokens["val"]),
                  "val_tokens": log["n_tokens"]["val"], "summary": figure["summary"]}))
"""


def run(*command, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_pip_install_ships_chapter_7s_model(tmp_path):
    source = tmp_path / "source"  # a copy: building in place would write build/ here
    shutil.copytree(ROOT / "attention", source / "attention",
                    ignore=shutil.ignore_patterns("__pycache__", ".shipped-*"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = (sys.executable, "-m", "pip", "--disable-pip-version-check")
    run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w",
        str(tmp_path / "wheels"), str(source), cwd=tmp_path)
    wheel, = (tmp_path / "wheels").glob("attention_from_scratch-*.whl")

    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    numpy_only = tmp_path / "numpy-only"
    numpy_only.mkdir()
    site = Path(np.__file__).parents[1]
    for linked in [*site.glob("numpy"), *site.glob("numpy.libs"),
                   *site.glob("numpy-*.dist-info")]:
        (numpy_only / linked.name).symlink_to(linked)
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                  cwd=tmp_path).strip()
    Path(purelib, "numpy-only.pth").write_text(f"{numpy_only}\n")
    run(*pip, "--python", str(python), "install", "--no-index", str(wheel), cwd=tmp_path)

    got = json.loads(run(python, "-c", CHECK, cwd=tmp_path))
    assert Path(got["module"]).is_relative_to(env), got["module"]
    assert got["vocab"] == got["rows"] == 1024
    assert got["val"] == got["val_tokens"]
    assert got["summary"].startswith("Layer 0, head 2, ")  # the head chapter 7 shows
