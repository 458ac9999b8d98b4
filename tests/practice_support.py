"""What the practice tests share: loading an exercise's starter or solution, and reading a check's verdict."""

import re
from pathlib import Path

EXERCISES_DIR = Path(__file__).resolve().parents[1] / "exercises"


class Exercises:
    """The snippet sections of one ``exercises/chapterNN.py`` file."""

    def __init__(self, filename: str):
        self.filename = filename
        self.source = (EXERCISES_DIR / filename).read_text(encoding="utf-8")

    def section(self, name: str) -> str:
        match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", self.source, re.S)
        assert match, f"section {name} missing from exercises/{self.filename}"
        return match.group(1)

    def load(self, name: str, function: str):
        """Run the imports section and one exercise section, as a page does; return `function`."""
        namespace: dict = {}
        exec(self.section("imports"), namespace)
        exec(self.section(name), namespace)
        return namespace[function]


def run_check(check, answer, capsys) -> tuple[bool, str]:
    """Call a self-check on an answer: it returns a bool, and its verdict is the last line
    printed (a reader's answer may print lines of its own before it)."""
    result = check(answer)
    printed = capsys.readouterr().out.strip().splitlines()
    assert result in (True, False)
    assert printed and printed[-1].startswith(("✓ Correct: ", "✗ Not yet: ")), printed
    return result, printed[-1]
