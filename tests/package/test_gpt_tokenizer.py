"""Chapter 7's byte-level BPE against Hugging Face ``tokenizers`` 0.23: the
trainer's merges and vocabulary equal ``BpeTrainer``'s on the same texts and
vocabulary size; given the same ``vocab.json`` and ``merges.txt``, ``encode``
gives ``ByteLevelBPETokenizer``'s ids on the course's pages and on generated
texts (random Unicode, whitespace runs, digits, contractions, emoji), and
``decode(encode(s)) == s`` for every string. Malformed or inconsistent files
raise a ValueError that names the field."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import ByteLevelBPETokenizer, Tokenizer, models, pre_tokenizers, trainers

from attention.gpt.bpe import BPETokenizer, train_bpe, train_bpe_plain
from attention.gpt.byte_level import BYTE_TO_SYMBOL, pretokenize
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


def test_no_letter_or_number_lies_beyond_the_scanned_planes():
    import unicodedata
    assert not any(unicodedata.category(chr(cp))[0] in "LN"
                   for cp in range(0x40000, 0x110000))
