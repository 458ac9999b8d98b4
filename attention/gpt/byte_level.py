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
Unicode classes \\p{L} and \\p{N}, which Python's ``re`` lacks; here the two
classes are built once from ``unicodedata`` (Python's Unicode version), and
whitespace is Unicode's White_Space property, as in the Rust regex engine.
"""

# --8<-- [start:alphabet]
import re
import unicodedata


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
WHITE_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029"
               "\u202f\u205f\u3000")  # Unicode's White_Space property


def _unicode_classes(*categories):
    """Regex character classes of the code points in each major category.

    Letters and numbers all lie below U+40000: planes 4 to 13 are
    unassigned, 14 holds only format tags and variation selectors, 15 and 16
    are private use. So the scan stops there (a quarter of the code points).
    """
    major = [unicodedata.category(chr(cp))[0] for cp in range(0x40000)]
    classes = []
    for category in categories:
        ranges, start = [], None
        for cp, c in enumerate(major + [None]):  # None closes the last range
            if c == category and start is None:
                start = cp
            elif c != category and start is not None:
                first, last = re.escape(chr(start)), re.escape(chr(cp - 1))
                ranges.append(first if start == cp - 1 else f"{first}-{last}")
                start = None
        classes.append("".join(ranges))
    return classes


LETTERS, NUMBERS = _unicode_classes("L", "N")
PRETOKENIZE = re.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d"        # contractions
    rf"| ?[{LETTERS}]+"               # a word, with its leading space
    rf"| ?[{NUMBERS}]+"               # digits
    rf"| ?[^{WHITE_SPACE}{LETTERS}{NUMBERS}]+"  # punctuation, symbols
    rf"|[{WHITE_SPACE}]+(?![^{WHITE_SPACE}])"   # spaces not before a word
    rf"|[{WHITE_SPACE}]+")            # the rest of a run of spaces


def pretokenize(text):
    """GPT-2's split of text into words: merges never cross them."""
    return PRETOKENIZE.findall(text)
# --8<-- [end:pretokenize]
