"""Chapter 7's corpus: the prose of a page, without its code, output, formulas or markup."""

import numpy as np
import pytest

from attention.gpt.corpus import prose, random_windows, windows
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


@pytest.mark.parametrize("call, message", [
    (lambda: windows(np.arange(10), 0), "windows: n must be a positive integer, got 0"),
    (lambda: windows(np.arange(10), 2.0), "windows: n must be a positive integer"),
    (lambda: windows(np.arange(10) + 0.7, 3), "windows: ids must be a 1-D sequence of "
     "integers, got dtype float64"),
    (lambda: windows(np.arange(10).reshape(2, 5), 3), r"windows: ids .* shape \(2, 5\)"),
    (lambda: windows([], 3), r"windows: 0 tokens hold no window of 3 \+ 1"),
    (lambda: random_windows(np.random.default_rng(0), [0.7, 1.2, 2.9, 3.5], 2, 2),
     "random_windows: ids must be a 1-D sequence of integers"),
    (lambda: random_windows(np.random.default_rng(0), np.arange(9) > 4, 2, 2),
     "random_windows: ids must be a 1-D sequence of integers, got dtype bool"),
    (lambda: random_windows(np.random.default_rng(0), np.arange(9), 0, 2),
     "random_windows: batch must be a positive integer, got 0"),
    (lambda: random_windows(np.random.default_rng(0), np.arange(9), 2, -1),
     "random_windows: n must be a positive integer, got -1"),
])
def test_windows_refuse_a_zero_length_and_float_ids_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_windows_of_integer_ids_of_any_width_are_int64():
    inputs, targets = windows(np.arange(11, dtype=np.uint16), 5)
    assert inputs.dtype == np.int64 and inputs.shape == (2, 5)
    assert np.array_equal(targets, inputs + 1)
