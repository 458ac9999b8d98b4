"""Byte-level text: every string as a sequence of printable symbols, split into
words the way GPT-2 splits them.

References: Radford et al. (2019), section 2.2 (byte-level BPE); OpenAI's
released ``encoder.py`` (``bytes_to_unicode`` and the pre-tokenization
pattern), which Hugging Face ``tokenizers``' ``ByteLevel`` pre-tokenizer
reproduces.

A byte-level tokenizer works on UTF-8 bytes, so every string can be encoded
and nothing is ever "unknown". The 256 byte values are shown as 256 printable
characters: the printable Latin-1 bytes stand for themselves, and the other 68
(control characters, the space, a few others) are moved to U+0100 onwards, so
the space becomes "Ġ" and the newline "Ċ". Merges and vocabulary files are
then plain text.

Before any merging, text is cut into words: a contraction ('s 't 're 've 'm
'll 'd), letters, digits or other symbols, each with at most one leading
space, or a run of whitespace. No merge crosses a word's edge, so " the"
can become one token but "e t" never can. GPT-2 writes the rule with the
Unicode classes \\p{L} and \\p{N}, which Python's ``re`` lacks. Which code
points they hold depends on the Unicode version: ``unicodedata`` is Unicode
14.0 on Python 3.11, Hugging Face ``tokenizers`` 16.0, so a letter added in
15.0 would split a word differently. The two classes are therefore shipped as
tables of code point ranges (``unicode_classes``, generated from
``tokenizers``' own engine by tools/unicode_classes.py); whitespace is
Unicode's White_Space property, as in that engine's \\s.
"""

# --8<-- [start:alphabet]
import re


def byte_alphabet():
    """The 256 printable symbols, one per byte value (GPT-2's table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]  # 188 shown as themselves
    symbols, moved = {}, 0
    for b in range(256):
        if b in printable:
            symbols[b] = chr(b)
        else:  # the other 68 move past Latin-1, in order
            symbols[b] = chr(256 + moved)
            moved += 1
    return symbols


BYTE_TO_SYMBOL = byte_alphabet()
SYMBOL_TO_BYTE = {s: b for b, s in BYTE_TO_SYMBOL.items()}


def to_symbols(word):
    """A string -> its UTF-8 bytes, each as its printable symbol."""
    return "".join(BYTE_TO_SYMBOL[b] for b in word.encode("utf-8"))


def from_symbols(symbols):
    """Printable symbols -> the string their bytes spell (bad UTF-8: U+FFFD)."""
    return bytes(SYMBOL_TO_BYTE[s] for s in symbols).decode("utf-8", "replace")
# --8<-- [end:alphabet]


def surrogate_error(fn, text, name="text"):
    """The error for a text with a lone surrogate (U+D800-U+DFFF), half of a
    UTF-16 pair, as half of a pasted emoji arrives. UTF-8 has no bytes for
    it, so no byte-level tokenizer can encode it; Hugging Face's refuses it
    too (a TypeError: not a valid str)."""
    at = re.search("[\ud800-\udfff]", text).start()
    return ValueError(f"{fn}: {name}[{at}] is a lone surrogate "
                      f"U+{ord(text[at]):04X} (half of a UTF-16 pair, such as "
                      f"half an emoji), which UTF-8 cannot encode")


# --8<-- [start:pretokenize]
from attention.gpt import unicode_classes  # generated tables: Unicode 16.0

WHITE_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029"
               "\u202f\u205f\u3000")  # Unicode's White_Space property


def char_class(ranges, below):
    """A regex class body from hex code point ranges ("41-5a aa" -> "A-Zª"),
    keeping the code points below `below`."""
    body = ""
    for r in ranges.split():
        first, _, last = r.partition("-")
        first, last = int(first, 16), int(last or first, 16)
        if first < below:
            last = min(last, below - 1)
            body += re.escape(chr(first)) + "-" + re.escape(chr(last))
    return body


def gpt2_pattern(below):
    """GPT-2's pre-tokenization rule for text of code points below `below`."""
    L = char_class(unicode_classes.LETTERS, below)  # \p{L} of tokenizers
    N = char_class(unicode_classes.NUMBERS, below)  # \p{N}
    W = WHITE_SPACE
    return re.compile(r"'s|'t|'re|'ve|'m|'ll|'d"  # contractions
                      rf"| ?[{L}]+"          # a word, with its leading space
                      rf"| ?[{N}]+"          # digits
                      rf"| ?[^{W}{L}{N}]+"   # punctuation, symbols
                      rf"|[{W}]+(?![^{W}])"  # spaces not before a word
                      rf"|[{W}]+")           # the rest of a run of spaces


# Python's re tries a class's ranges above U+FFFF one by one, on every
# character that is not in the class: text without such code points (nearly
# all text) is split several times faster by a pattern without them.
PRETOKENIZE = gpt2_pattern(0x110000)
PRETOKENIZE_BMP = gpt2_pattern(0x10000)


def pretokenize(text):
    """GPT-2's split of text into words: merges never cross them."""
    bmp = text.isascii() or max(text) < "\U00010000"
    return (PRETOKENIZE_BMP if bmp else PRETOKENIZE).findall(text)
# --8<-- [end:pretokenize]
