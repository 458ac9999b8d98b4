"""Chapter 7's corpus: the prose of a page, without its code, output, formulas or markup."""

from attention.gpt.corpus import prose
from tests.support import ROOT

PAGE = """---
title: A page
---

# A title

A paragraph that is
wrapped over two lines, with a [link](other.md#x) and `code`.

```python
print("code")
```

```text title="Output"
code
```

$$
a = b
$$

$$c = d$$

| a | table |
|---|---|

!!! note "An aside"
    Its body is prose, indented.

    ````text title="Output"
    ```
    a fence inside a longer fence
    ```
    ````

- an item
- another item
  that goes on

![a figure](figure.svg)
<div>html</div>
--8<-- "a/snippet.py:section"
"""


def test_prose_keeps_the_sentences_and_drops_everything_else():
    assert prose(PAGE) == (
        "# A title\n\n"
        "A paragraph that is wrapped over two lines, with a link and `code`.\n\n"
        "Its body is prose, indented.\n\n"
        "- an item\n- another item that goes on\n")


def test_a_chapter_keeps_no_code_of_its_blocks():
    page = (ROOT / "docs" / "chapters" / "ch02-self-attention.md").read_text("utf8")
    text = prose(page)
    assert "```" not in text and "import numpy" not in text and "--8<--" not in text
    assert "Attention is a soft version of the same lookup." in text
    assert 0.2 < len(text) / len(page) < 0.8
