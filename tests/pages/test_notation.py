"""The course's one notation (chapter 1, "The course's shape vocabulary") holds on every
page: W is a weight, so a window is w; L counts layers, so a loss is ℒ; positions are i
and j, since n is the length, so RoPE's pairs are k. The Practice sections, the exercises
(exercises/chNN.py) and their checks' messages (attention/practice/chNN.py) are held to
it too: a reader sees their text beside the lesson's.
"""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted([*DOCS.glob("chapters/*.md"), *DOCS.glob("blog/posts/*.md")])
EXERCISES = sorted([*(DOCS.parent / "exercises").glob("ch*.py"),
                    *(DOCS.parent / "attention/practice").glob("ch*.py")])

# (what is wrong, a pattern that finds it in a page's prose or math)
MISUSES = [
    ("a window written W (W is a weight matrix)", re.compile(r"(?:last|beyond) \$W\$|\$W [-+]|\(W - 1\)")),
    ("a loss written L (L counts layers)", re.compile(r"\\partial L\b|∂L/∂")),
    ("positions written m, n (n is the length)", re.compile(r"\bq_m\b|\bk_n\b|\bm - n\b|\$n - m\$")),
    ("a RoPE pair written i (i is a position)", re.compile(r"\bpair i\b|θ_i\b|\\theta_i\b")),
    ("key/value heads written n_kv in a formula (the table's h_kv)", re.compile(r"\$[^$]*n_\{kv\}")),
    ("a score scaled by √d (the table's d_k)", re.compile(r"q \\cdot k / \\sqrt\{d\}")),
]


@pytest.mark.parametrize("page", PAGES + EXERCISES,
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_page_follows_the_course_notation(page):
    text = page.read_text(encoding="utf8")
    found = [f"line {text[:m.start()].count(chr(10)) + 1}: {what}: {m.group(0)!r}"
             for what, pattern in MISUSES for m in pattern.finditer(text)]
    assert not found, f"{page.name}:\n" + "\n".join(found)


def test_the_shapes_page_pairs_formula_letters_with_code_names():
    shapes = (DOCS / "chapters/ch01-foundations.md").read_text(encoding="utf8")
    table = shapes[shapes.index("{ #shapes }"):shapes.index("## 1.6")]
    for row in ("`n_heads`, `n_kv_heads`", "`window`", "`n_layers`", r"\mathcal{L}",
                "$i$, $j$", "`top_k`, `n_draft`", "$m_h$", "`kv_lora_rank`"):
        assert row in table, row
