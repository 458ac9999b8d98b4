"""Chapter 7's byte-level BPE against Hugging Face ``tokenizers`` 0.23: the
trainer's merges and vocabulary equal ``BpeTrainer``'s on the same texts and
vocabulary size; given the same ``vocab.json`` and ``merges.txt``, ``encode``
gives ``ByteLevelBPETokenizer``'s ids on the course's pages and on generated
texts (random Unicode, whitespace runs, digits, contractions, emoji, letters
added in Unicode 15 and 16), and ``decode(encode(s)) == s`` for every string; the
shipped letter and digit tables are what tools/unicode_classes.py reads from
``tokenizers``. Malformed or inconsistent files raise a ValueError that names the
field."""

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import ByteLevelBPETokenizer, Tokenizer, models, pre_tokenizers, trainers

from attention.gpt import unicode_classes
from attention.gpt.bpe import BPETokenizer, train_bpe, train_bpe_plain
from attention.gpt.byte_level import BYTE_TO_SYMBOL, WHITE_SPACE, pretokenize, to_symbols
from attention.gpt.tokenizer_files import read_tokenizer_files, save_tokenizer
from tests.support import ROOT

PAGES = sorted((ROOT / "docs" / "chapters").glob("ch0[1-6]*.md"))


@pytest.fixture(scope="module")
def texts():
    return [p.read_text("utf8") for p in PAGES[:2]]


@pytest.fixture(scope="module")
def trained(texts, tmp_path_factory):
    vocab, merges = train_bpe(texts, 600)
    folder = tmp_path_factory.mktemp("tok")
    save_tokenizer(folder, vocab, merges)
    hf = ByteLevelBPETokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    return vocab, merges, BPETokenizer.from_files(folder), hf, folder


def test_the_plain_recount_loop_learns_the_same_merges(texts, trained):
    # The page teaches the plain loop first; the fast one must be the same.
    short = [t[:6000] for t in texts]
    assert train_bpe_plain(short, 420) == train_bpe(short, 420)
    assert train_bpe_plain(["aaaa"], 300) == train_bpe(["aaaa"], 300)
    with pytest.raises(ValueError, match="train_bpe_plain: vocab_size"):
        train_bpe_plain(["abc"], 255)


def test_trainer_merges_and_vocab_equal_hugging_face_bpe_trainer(texts, trained):
    vocab, merges = trained[:2]
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=0, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    hf.train_from_iterator(texts, trainer)
    model = json.loads(hf.to_str())["model"]
    hf_merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                 for m in model["merges"]]
    assert hf_merges == merges
    assert model["vocab"] == vocab


def test_encode_equals_hugging_face_on_the_course_pages(trained):
    tok, hf = trained[2], trained[3]
    for page in PAGES:
        text = page.read_text("utf8")
        ids = tok.encode(text)
        assert ids == hf.encode(text).ids, page.name
        assert tok.decode(ids) == text


def test_pretokenize_equals_hugging_face_byte_level():
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    text = "It's  12 345 they'll\t\n\n  go!!  😀😀 naïve ½ ²  \u3000x"
    theirs = [w for w, _ in pre.pre_tokenize_str(text)]
    ours = ["".join(BYTE_TO_SYMBOL[b] for b in w.encode()) for w in pretokenize(text)]
    assert ours == theirs


PIECES = st.sampled_from(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", " ", "  ", "\n",
                          "\t", " \n ", "\u3000", "\xa0", "123", " 4567", "😀", "👩‍💻",
                          "🇫🇷", "the", " cat", "é", "e\u0301", "½", "Ⅻ", "²", "_", "--",
                          "x\x00y", "\x1c", "\ufeff"])
TEXTS = st.one_of(st.text(max_size=60),  # random Unicode, surrogates excluded
                  st.lists(PIECES, max_size=25).map("".join))


@settings(max_examples=120, deadline=None)
@given(text=TEXTS)
def test_encode_equals_hugging_face_and_decode_round_trips(trained, text):
    tok, hf = trained[2], trained[3]
    ids = tok.encode(text)
    assert ids == hf.encode(text).ids
    assert tok.decode(ids) == text


def test_random_code_points_of_every_plane_round_trip_and_match(trained):
    tok, hf = trained[2], trained[3]
    rng = np.random.default_rng(0)
    for _ in range(50):
        cps = rng.integers(1, 0x30000, size=40)
        text = "".join(chr(c) for c in cps if not 0xD800 <= c < 0xE000)
        assert tok.encode(text) == hf.encode(text).ids
        assert tok.decode(tok.encode(text)) == text


def _write(folder, vocab, merge_lines):
    (folder / "vocab.json").write_text(json.dumps(vocab), "utf8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merge_lines) + "\n",
                                       "utf8")
    return folder / "vocab.json", folder / "merges.txt"


def test_bad_tokenizer_files_raise_value_errors_naming_the_field(trained, tmp_path):
    vocab = trained[0]
    with pytest.raises(ValueError, match="merges.*not in the vocab"):
        read_tokenizer_files(*_write(tmp_path, vocab, ["Ġzz qq"]))
    with pytest.raises(ValueError, match="merges: line 2"):
        read_tokenizer_files(*_write(tmp_path, vocab, ["a b c"]))
    broken = dict(vocab)
    del broken["Ġ"]
    with pytest.raises(ValueError, match="vocab: ids must be"):
        read_tokenizer_files(*_write(tmp_path, broken, []))
    gapless = {t: i for i, t in enumerate(t for t in vocab if t != "Ġ")}
    with pytest.raises(ValueError, match="vocab: lacks 1 of the 256"):
        read_tokenizer_files(*_write(tmp_path, gapless, []))
    (tmp_path / "vocab.json").write_text("{not json", "utf8")
    with pytest.raises(ValueError, match="vocab: .* is not JSON"):
        read_tokenizer_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    with pytest.raises(ValueError, match="train_bpe: vocab_size"):
        train_bpe(["abc"], 100)
    with pytest.raises(ValueError, match="decode: id 5000"):
        trained[2].decode([5000])


def test_save_tokenizer_writes_vocab_and_merges_as_one_unit(trained, tmp_path,
                                                            monkeypatch):
    """A failure while writing merges.txt (a full disk, Ctrl-C) leaves the old pair:
    never a new vocabulary beside old merges, and no temporary file."""
    bytes_only = {s: i for i, s in enumerate(BYTE_TO_SYMBOL.values())}
    save_tokenizer(tmp_path, bytes_only, [])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    write_text = type(tmp_path).write_text

    def failing(path, *args, **kwargs):
        if path.name.startswith("merges"):
            raise KeyboardInterrupt
        return write_text(path, *args, **kwargs)

    monkeypatch.setattr(type(tmp_path), "write_text", failing)
    with pytest.raises(KeyboardInterrupt):
        save_tokenizer(tmp_path, *trained[:2])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("ids, message, hf_refuses", [
    ([1.7], r"ids\[0\] must be an int, got 1.7", True),
    ([65, "5"], r"ids\[1\] must be an int, got '5'", True),
    (np.array([1.0]), r"ids\[0\] must be an int", True),
    (5, "ids must be a sequence of ints, got int", True),
    ("65", "ids must be a sequence of ints, got str", True),
    ([True], r"ids\[0\] must be an int, got True", False)])  # HF reads id 1
def test_decode_refuses_ids_that_are_not_integers(trained, ids, message, hf_refuses):
    with pytest.raises(TypeError, match=f"decode: {message}"):
        trained[2].decode(ids)
    if hf_refuses:
        with pytest.raises(TypeError):
            trained[3].decode(ids)


def test_decode_takes_numpy_integers(trained):
    tok = trained[2]
    ids = tok.encode("the tokens of a sentence")
    assert tok.decode(np.array(ids, dtype=np.int32)) == tok.decode(ids)


@pytest.mark.parametrize("text, at, code", [("a\ud800b", 1, "D800"),
                                           ("naïve 😀 \ude00", 8, "DE00")])
def test_encode_refuses_a_lone_surrogate_naming_its_position(trained, text, at, code):
    with pytest.raises(ValueError, match=rf"encode: text\[{at}\] is a lone surrogate U\+{code}"):
        trained[2].encode(text)
    with pytest.raises(TypeError):  # Hugging Face refuses it too: not a valid str
        trained[3].encode(text)


@pytest.mark.parametrize("texts, error, message", [
    ("the cat the hat", TypeError, r"texts must be a list of strings, got str \(one text: \[text\]\)"),
    (7, TypeError, "texts must be a list of strings, got int"),
    (["the cat", b"the hat"], TypeError, r"texts\[1\] must be a str, got bytes"),
    (["ok", "the c\udc00t"], ValueError, r"texts\[1\]\[5\] is a lone surrogate U\+DC00")])
def test_train_bpe_refuses_a_bare_string_and_what_is_not_text(texts, error, message):
    with pytest.raises(error, match=f"train_bpe: {message}"):
        train_bpe(texts, 300)


def test_train_bpe_takes_any_iterable_of_texts():
    texts = ["the cat the hat", "that hat"]
    assert train_bpe(iter(texts), 270) == train_bpe(texts, 270)


# Letters and digits that Python 3.11's unicodedata (Unicode 14.0) does not know:
# CJK Extension C's U+2B739, Extension H's U+31350, Kawi's letter U+11F04 and digit
# U+11F50, Nag Mundari U+1E4D0 (Unicode 15.0); Extension I's U+2EBF0 (15.1); Garay
# U+10D4A, Kirat Rai U+16D43 and digit U+16D70, Todhri U+105C0, outlined digit U+1CCF0,
# and in the BMP Cyrillic U+1C89 and Latin U+A7CB, U+A7DA (16.0). Sidetic U+10940 is
# Unicode 17.0, which tokenizers does not have yet: it is no letter there, nor here.
NEWER_LETTERS = ["東京\U0002B739!!", "x\U00031350y 42\U00011F50 \U00011F04\U0001E4D0",
                 "\U0002EBF0 \U00010D4A\U00016D43 \U00016D70\U0001CCF0 \U000105C0.",
                 "\u1C89\uA7CB\uA7DA's \u1C89!", "Sidetic \U00010940a 1\U00010940"]


@pytest.mark.parametrize("text", NEWER_LETTERS)
def test_letters_and_digits_of_unicode_15_and_16_split_and_encode_as_hugging_face(trained,
                                                                                 text):
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    theirs = [w for w, _ in pre.pre_tokenize_str(text)]
    assert [to_symbols(w) for w in pretokenize(text)] == theirs
    tok, hf = trained[2], trained[3]
    assert tok.encode(text) == hf.encode(text).ids


def test_shipped_unicode_tables_are_what_the_generator_reads_from_tokenizers():
    from tools import unicode_classes as generator
    assert generator.tables() == {"LETTERS": unicode_classes.LETTERS,
                                  "NUMBERS": unicode_classes.NUMBERS}
    # \s of the same engine is the White_Space the pattern spells out
    spaces = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000
              and re.fullmatch(f"[{WHITE_SPACE}]", chr(cp))]
    assert generator.members(r"\s") == spaces
