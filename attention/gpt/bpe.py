"""Byte-pair encoding: learn merges from a corpus, then apply them to any text.

References: Sennrich, Haddow and Birch, "Neural Machine Translation of Rare
Words with Subword Units" (2016), section 3.2 (the merge loop); Radford et al.
(2019), section 2.2 (on bytes, within GPT-2's words). Hugging Face
``tokenizers`` (``BpeTrainer``, ``models.BPE``) gives the same merges and the
same ids (tests/package/test_gpt_tokenizer.py).

Training starts from the 256 byte symbols and repeats one step: count every
adjacent pair of tokens in every word (a word seen f times counts f times),
make the most frequent pair a new token, and rewrite the words with it. Ties
go to the pair of smallest ids, as in ``tokenizers``. The base symbols get ids
in the order of their characters, as ``tokenizers``' trainer gives them;
each merge's token takes the next id.

Encoding applies the merges in the order they were learned: in each word,
repeatedly merge the adjacent pair that was learned first, until no pair of
the word is a merge. Every string is encodable (its bytes are the base
symbols) and decode(encode(s)) == s.
"""

# --8<-- [start:plain]
from collections import Counter, defaultdict
from collections.abc import Iterable
from numbers import Integral

from attention.gpt.byte_level import (BYTE_TO_SYMBOL, from_symbols,
                                      pretokenize, surrogate_error,
                                      to_symbols)
from attention.gpt.tokenizer_files import check_tokenizer, read_tokenizer_files


def merge_word(word, pair, new):
    """Replace each occurrence of pair in word (a list of ids, or of
    symbols), left first."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def start_bpe(fn, texts, vocab_size):
    """(tokens [id -> token], ids {token: id}, words as lists of ids, their
    frequencies): the 256 byte symbols and every word of texts, counted."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or (
            vocab_size < 256):
        raise ValueError(f"{fn}: vocab_size must be an integer >= 256 "
                         f"(the byte symbols), got {vocab_size!r}")
    if isinstance(texts, str) or not isinstance(texts, Iterable):
        raise TypeError(f"{fn}: texts must be a list of strings, got "
                        f"{type(texts).__name__} (one text: [text])")
    counts = Counter()  # word (as symbols) -> how often it occurs
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{fn}: texts[{k}] must be a str, got "
                            f"{type(text).__name__}")
        try:
            counts.update(to_symbols(w) for w in pretokenize(text))
        except UnicodeEncodeError:  # only a lone surrogate has no UTF-8
            raise surrogate_error(fn, text, f"texts[{k}]") from None
    tokens = sorted(BYTE_TO_SYMBOL.values())  # id -> token
    ids = {t: i for i, t in enumerate(tokens)}
    words = [[ids[s] for s in w] for w in counts]  # each word as ids
    return tokens, ids, words, list(counts.values())


def add_merge(pair, tokens, ids, merges):
    """Record the merge of pair; the id of its token (a new one unless two
    merges spell the same token)."""
    token = tokens[pair[0]] + tokens[pair[1]]
    if token not in ids:
        ids[token] = len(tokens)
        tokens.append(token)
    merges.append((tokens[pair[0]], tokens[pair[1]]))
    return ids[token]


def train_bpe_plain(texts, vocab_size):
    """train_bpe as the paper states it: recount every pair of every word
    before each merge. The same merges as train_bpe, far slower."""
    tokens, ids, words, freq = start_bpe("train_bpe_plain", texts, vocab_size)
    merges = []
    while len(ids) < vocab_size:
        pairs = Counter()
        for word, f in zip(words, freq):
            for pair in zip(word, word[1:]):
                pairs[pair] += f
        if not pairs:
            break
        # the most frequent pair; among ties, the smallest ids
        pair = max(pairs, key=lambda p: (pairs[p], -p[0], -p[1]))
        new = add_merge(pair, tokens, ids, merges)
        words = [merge_word(word, pair, new) for word in words]
    return ids, merges
# --8<-- [end:plain]


# --8<-- [start:train]
def train_bpe(texts, vocab_size):
    """(vocab {token: id}, merges [(left, right)]) learned from texts: the
    plain loop's merges, with each pair's count and the words that hold it
    kept up to date, so a merge touches only the words it changes."""
    tokens, ids, words, freq = start_bpe("train_bpe", texts, vocab_size)
    pairs, where = Counter(), defaultdict(set)  # pair -> count, -> words
    for w, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pairs[pair] += freq[w]
            where[pair].add(w)
    merges = []
    while len(ids) < vocab_size and pairs:
        # the most frequent pair; among ties, the smallest ids
        pair = max(pairs, key=lambda p: (pairs[p], -p[0], -p[1]))
        token = add_merge(pair, tokens, ids, merges)
        changed = set()
        for w in where.pop(pair):
            old = words[w]
            new = merge_word(old, pair, token)
            for p in zip(old, old[1:]):  # the word's pairs, before...
                pairs[p] -= freq[w]
                changed.add(p)
            for p in zip(new, new[1:]):  # ... and after the merge
                pairs[p] += freq[w]
                where[p].add(w)
            words[w] = new
        for p in changed:
            if pairs[p] <= 0:
                del pairs[p]
    return ids, merges
# --8<-- [end:train]


# --8<-- [start:tokenizer]
class BPETokenizer:
    """encode(text) -> ids and decode(ids) -> text with a vocabulary and
    merges (``train_bpe``'s, or read by ``tokenizer_files.load_tokenizer``)."""

    def __init__(self, vocab, merges):
        self.vocab, self.merges = check_tokenizer(vocab, merges)
        self.tokens = {i: t for t, i in self.vocab.items()}  # id -> token
        self.ranks = {pair: r for r, pair in enumerate(self.merges)}
        self._cache = {}  # word -> its ids: words repeat

    @classmethod
    def from_files(cls, folder):
        """The tokenizer in folder/vocab.json and folder/merges.txt."""
        return cls(*read_tokenizer_files(f"{folder}/vocab.json",
                                         f"{folder}/merges.txt"))

    def __len__(self):
        return len(self.vocab)

    def encode_word(self, symbols):
        """One word's symbols -> ids: merge the earliest-learned pair first."""
        parts = list(symbols)
        while len(parts) > 1:
            pairs = list(zip(parts, parts[1:]))
            first = min(pairs, key=lambda p: self.ranks.get(p, len(self.ranks)))
            if first not in self.ranks:
                break  # no pair of this word is a merge
            parts = merge_word(parts, first, first[0] + first[1])
        return [self.vocab[p] for p in parts]

    def encode(self, text):
        """A string -> its token ids (a list of ints)."""
        if not isinstance(text, str):
            raise TypeError(f"encode: text must be a str, got "
                            f"{type(text).__name__}")
        ids = []
        try:
            for word in pretokenize(text):
                if word not in self._cache:
                    self._cache[word] = self.encode_word(to_symbols(word))
                ids.extend(self._cache[word])
        except UnicodeEncodeError:  # only a lone surrogate has no UTF-8
            raise surrogate_error("encode", text) from None
        return ids

    def decode(self, ids):
        """Token ids -> the string (bytes that are not UTF-8: U+FFFD)."""
        if not isinstance(ids, Iterable) or isinstance(ids, str):
            raise TypeError(f"decode: ids must be a sequence of ints, got "
                            f"{type(ids).__name__}")
        ids = list(ids)
        for k, i in enumerate(ids):  # int(1.7) or int("5") would be 1, 5
            if isinstance(i, bool) or not isinstance(i, Integral):
                raise TypeError(f"decode: ids[{k}] must be an int, got {i!r}")
        try:
            return from_symbols("".join(self.tokens[i] for i in ids))
        except KeyError as bad:
            raise ValueError(f"decode: id {bad} is not in the vocabulary "
                             f"(0..{len(self) - 1})") from None
# --8<-- [end:tokenizer]
