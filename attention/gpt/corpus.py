"""The training text: the prose of the course's own pages, some held out for
validation.

The model is to write English, so it reads the pages' sentences: ``prose``
drops what is not prose (the code and its printed output, display formulas,
tables, HTML, snippet and figure lines).

Held-out text is cut in whole pieces, not random lines: lines of one page
share its words and examples, so a line-level split would let the
validation text leak into training. ``cut`` splits a page's prose at line
boundaries into contiguous pieces (chapter 7 holds out a tenth of each
page, and a whole page besides). Batches are random windows of n + 1
consecutive tokens of the training stream: the first n are the input, the
last n the targets (each the token after its input).
"""

# --8<-- [start:prose]
import re

import numpy as np

FENCE = re.compile(r"(`{3,}|~{3,})")  # a code block opens (or closes)
NOT_PROSE = ("|", "<", "!!!", "???", "===", "--8<--", "![", "{{")
ITEM = re.compile(r"#|[-*+] |\d+\. ")  # a heading or list item: own line


def prose(markdown):
    """The sentences of a Markdown page, one paragraph after another."""
    lines = markdown.split("\n")
    if lines[:1] == ["---"] and "---" in lines[1:]:
        lines = lines[lines.index("---", 1) + 1:]  # the front matter
    kept, fence, in_math = [], None, False
    for line in lines:
        text = line.strip()  # admonitions and tabs indent their bodies
        if fence:  # inside a block: it ends at a fence as long, alone
            if re.fullmatch(re.escape(fence[0]) + f"{{{len(fence)},}}", text):
                fence = None
        elif FENCE.match(text):
            fence = FENCE.match(text).group(1)
        elif in_math:
            in_math = not text.endswith("$$")
        elif text.startswith("$$"):  # a display formula, maybe one line
            in_math = len(text) == 2 or not text.endswith("$$")
        elif not text.startswith(NOT_PROSE):
            text = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", text)  # links
            if kept and kept[-1] and text and not ITEM.match(text):
                kept[-1] += " " + text  # a paragraph's lines: one line
            else:
                kept.append(text)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip() + "\n"
# --8<-- [end:prose]


# --8<-- [start:cut]
def cut(text, *fractions):
    """text in len(fractions) + 1 contiguous pieces, cut at the first line
    boundary at or after each fraction (0 to 1, rising) of its length."""
    if any(not 0 <= f <= 1 for f in fractions) or list(fractions) != sorted(
            fractions):
        raise ValueError(f"cut: fractions must rise within [0, 1], got "
                         f"{fractions!r}")
    ends = []
    for f in fractions:
        at = round(f * len(text))
        if at and text[at - 1] != "\n":  # inside a line: on to its end
            at = text.find("\n", at) + 1 or len(text)
        ends.append(at)
    return [text[a:b] for a, b in zip([0, *ends], [*ends, len(text)])]
# --8<-- [end:cut]


# --8<-- [start:corpus]
def check_windows(fn, ids, n, batch=1):
    """ids as a 1-D int64 array holding a window of n + 1; n and batch
    positive integers. Float ids are refused, not truncated to integers."""
    for name, value in (("n", n), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(
                value, (int, np.integer)) or value < 1:
            raise ValueError(f"{fn}: {name} must be a positive integer, "
                             f"got {value!r}")
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{fn}: ids must be a 1-D sequence of integers, "
                         f"got dtype {ids.dtype} and shape {ids.shape}")
    if len(ids) < n + 1:
        raise ValueError(f"{fn}: {len(ids)} tokens hold no window of {n} + 1")
    return ids.astype(np.int64, copy=False)


def windows(ids, n):
    """Non-overlapping (inputs, targets) windows covering ids, (m, n) each."""
    ids = check_windows("windows", ids, n)
    m = (len(ids) - 1) // n
    inputs = ids[: m * n].reshape(m, n)  # (m, n)
    targets = ids[1: m * n + 1].reshape(m, n)  # (m, n), shifted by one
    return inputs, targets


def random_windows(rng, ids, batch, n):
    """(inputs, targets), (batch, n) each, from random starts in ids."""
    ids = check_windows("random_windows", ids, n, batch)
    starts = rng.integers(0, len(ids) - n, size=batch)  # (batch,)
    rows = starts[:, None] + np.arange(n + 1)  # (batch, n + 1)
    chunk = ids[rows]
    return chunk[:, :-1], chunk[:, 1:]
# --8<-- [end:corpus]
