"""A tokenizer as two text files, in the format GPT-2 was released in and
Hugging Face loads (``ByteLevelBPETokenizer(vocab, merges)``,
``GPT2TokenizerFast(vocab_file=..., merges_file=...)``).

``vocab.json`` maps each token (in byte symbols, "Ġthe") to its id;
``merges.txt`` has a version line ("#version: 0.2") and then one merge a
line, its two parts separated by one space, in the order they were learned.
Reading checks what ``BPETokenizer`` relies on, and says which field is
wrong: ids 0..V-1, each once; all 256 byte symbols present (so that every
string can be encoded); every merge's parts and its result in the vocabulary.
Writing puts both files in temporary files first, then renames each with
``os.replace``: a reader never finds half a file, and an interrupted write
leaves the old pair, not a new vocabulary beside old merges.
"""

# --8<-- [start:files]
import json
import os
from pathlib import Path

from attention.gpt.byte_level import BYTE_TO_SYMBOL

VERSION_LINE = "#version: 0.2"


def check_tokenizer(vocab, merges):
    """(vocab, merges) checked; a ValueError names the field at fault."""
    if not isinstance(vocab, dict) or not all(
            isinstance(t, str) and isinstance(i, int)
            and not isinstance(i, bool) for t, i in vocab.items()):
        raise ValueError("tokenizer vocab: must map token strings to "
                         "integer ids")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise ValueError(f"tokenizer vocab: ids must be 0..{len(vocab) - 1}, "
                         "each once")
    missing = [s for s in BYTE_TO_SYMBOL.values() if s not in vocab]
    if missing:
        raise ValueError(f"tokenizer vocab: lacks {len(missing)} of the 256 "
                         f"byte symbols, e.g. {missing[0]!r}")
    checked = []
    for n, merge in enumerate(merges, start=1):
        if (not isinstance(merge, (tuple, list)) or len(merge) != 2
                or not all(isinstance(p, str) and p for p in merge)):
            raise ValueError(f"tokenizer merges: merge {n} must be two "
                             f"non-empty strings, got {merge!r}")
        for part in (*merge, merge[0] + merge[1]):
            if part not in vocab:
                raise ValueError(f"tokenizer merges: merge {n} {merge!r} "
                                 f"uses {part!r}, which is not in the vocab")
        checked.append(tuple(merge))
    return dict(vocab), checked


def _replace_together(files):
    """Write {path: text} as one unit: every file to a temporary file
    first, then each renamed over its path. An error while writing leaves
    every old file as it was (and no temporary file behind)."""
    tmps = {Path(path): Path(path).with_name(Path(path).name + ".tmp")
            for path in files}
    try:
        for path, tmp in tmps.items():
            tmp.write_text(files[path], encoding="utf-8")
    except BaseException:
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)
        raise
    for path, tmp in tmps.items():
        os.replace(tmp, path)


def save_tokenizer(folder, vocab, merges):
    """Write folder/vocab.json and folder/merges.txt, together (a
    vocabulary never sits beside another run's merges); returns their
    paths."""
    vocab, merges = check_tokenizer(vocab, merges)
    folder = Path(folder)
    ordered = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    lines = [VERSION_LINE] + [f"{a} {b}" for a, b in merges]
    paths = folder / "vocab.json", folder / "merges.txt"
    _replace_together({
        paths[0]: json.dumps(ordered, ensure_ascii=False),
        paths[1]: "\n".join(lines) + "\n"})
    return paths


def read_tokenizer_files(vocab_path, merges_path):
    """(vocab, merges) from the two files, checked."""
    try:
        vocab = json.loads(Path(vocab_path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"tokenizer vocab: {vocab_path} is not JSON "
                         f"({error})") from None
    merges = []
    lines = Path(merges_path).read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines, start=1):
        if not line or (n == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise ValueError(f"tokenizer merges: line {n} of {merges_path} "
                             f"must be two tokens and one space, got "
                             f"{line!r}")
        merges.append(tuple(parts))
    return check_tokenizer(vocab, merges)
# --8<-- [end:files]
