"""Self-checks for the practice exercises of chapter 7 (training a GPT).

Each check calls the reader's function on data it draws, prints one verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and returns True or
False. References come from ``attention.gpt``.
"""

import math

import numpy as np

from attention.gpt.adamw import adamw_init, adamw_step, decay_groups
from attention.gpt.bpe import BPETokenizer, train_bpe
from attention.gpt.schedule import warmup_cosine
from attention.practice.trials import fresh_rng
from attention.practice.verdict import call, guard_checks, num, verdict


# Exercise 1 ---------------------------------------------------------------------------

def _reference_merge(words):
    """The package's trainer (``attention.gpt.bpe``) run for one merge on these words.

    Each word is written on its own line as often as it occurs: a line of letters
    is one pre-token, so the trainer counts exactly these words; it gives ties to
    the smallest ids, which for letters is the smallest pair."""
    text = "".join(("".join(word) + "\n") * count for word, count in words.items())
    vocab, merges = train_bpe([text], vocab_size=257)
    tokenizer = BPETokenizer(vocab, merges)
    merged = {}
    for word, count in words.items():
        parts = tuple(tokenizer.tokens[i] for i in tokenizer.encode_word(word))
        merged[parts] = merged.get(parts, 0) + count
    return merges[0], merged


def _random_words(rng):
    """A few words over a small alphabet (repeated letters: overlapping pairs)."""
    words = {}
    for _ in range(int(rng.integers(3, 8))):
        word = tuple(str(c) for c in rng.choice(list("aabcd"),
                                                size=int(rng.integers(2, 8))))
        words[word] = words.get(word, 0) + int(rng.integers(1, 6))
    return words


# Words whose symbols are already merges of several letters, with their answer (the
# package's trainer sees letters, so these are worked out here): a pair is two symbols,
# never two letters that happen to sit side by side in the spelling.
_MULTI_LETTER = [
    ({("th", "e"): 2, ("t", "he"): 3, ("th", "en"): 1},
     ("t", "he"), {("th", "e"): 2, ("the",): 3, ("th", "en"): 1}),
    ({("a", "b"): 2, ("aa", "b"): 1, ("a", "ab"): 1},
     ("a", "b"), {("ab",): 2, ("aa", "b"): 1, ("a", "ab"): 1}),
]


def check_merge_step(your_function):
    """Exercise 1: your_function(words) = (pair, merged words) for one BPE step."""
    rng = fresh_rng()
    corpora = [{("a", "a", "a"): 3, ("b", "c"): 2},  # overlapping pairs: aa|a
               {("c", "d"): 2, ("a", "b"): 2}]  # a tie, built in: (a, b) wins
    corpora += [_random_words(rng) for _ in range(20)]
    cases = [(words, *_reference_merge(words)) for words in corpora] + _MULTI_LETTER
    for words, pair, expected in cases:
        got, problem = call(your_function, dict(words))
        if problem:
            return verdict(False, problem)
        if not isinstance(got, tuple) or len(got) != 2:
            return verdict(False, f"return a pair (pair, merged words), got "
                                  f"{type(got).__name__}")
        got_pair, got_words = got
        if not isinstance(got_pair, tuple):
            return verdict(False, f"return the merged pair as a tuple of two symbols, "
                                  f"got {got_pair!r}")
        if got_pair != pair:
            return verdict(False, f"for {words} the most frequent pair (counting each word "
                                  f"as often as it occurs, ties to the smallest) is "
                                  f"{pair}, you chose {got_pair}")
        if got_words != expected:
            return verdict(False, f"merging {pair} in {words} gives {expected}, you gave "
                                  f"{got_words} (merge left to right, never overlapping)")
    return verdict(True, f"{len(corpora)} corpora (20 drawn at random) merged as the "
                         f"package's trainer merges them, overlapping pairs and ties "
                         f"included, and {len(_MULTI_LETTER)} of symbols of several "
                         "letters (after earlier merges).")


# Exercise 2 ---------------------------------------------------------------------------

def _random_params(rng):
    """Matrices of two and three axes, biases and norm gains, of random sizes."""
    d, h = (int(x) for x in rng.integers(2, 7, size=2))
    return {"wte": rng.normal(size=(int(rng.integers(5, 9)), d)),
            "attn.W_q": rng.normal(size=(d, h)), "attn.b_q": rng.normal(size=h),
            "mlp.W_in": rng.normal(size=(2, d, h)),
            "norm1.weight": 1 + 0.1 * rng.normal(size=d)}


def check_adamw_groups(your_function):
    """Exercise 2: your_function(params, grads, state, lr, weight_decay, betas, eps) in
    place: three steps with betas and eps left to their defaults, then three with
    others (so neither can be hard-coded)."""
    rng = fresh_rng()
    for options in ({}, {"betas": (0.8, 0.99), "eps": 1e-3}):
        problem = _adamw_run(your_function, rng, options)
        if problem is not None:
            return verdict(False, problem)
    return verdict(True, "3 AdamW steps with a random rate and decay, and 3 more with "
                         "betas (0.8, 0.99) and eps 1e-3, equal the two-group optimiser: "
                         "the matrices decayed, the bias and the gain did not.")


def _adamw_run(your_function, rng, options):
    """Three steps of the reader's optimiser and the package's; None, or what differs."""
    params = _random_params(rng)
    lr, weight_decay = float(rng.uniform(0.01, 0.1)), float(rng.uniform(0.1, 1.0))
    ours = {n: p.copy() for n, p in params.items()}
    groups = decay_groups(ours)
    state = adamw_init(ours, groups)
    theirs = {"step": 0, "m": {n: np.zeros_like(p) for n, p in params.items()},
              "v": {n: np.zeros_like(p) for n, p in params.items()}}
    where = (f"with betas {options['betas']} and eps {options['eps']:g}" if options
             else "with betas and eps left to their defaults")
    for _ in range(3):
        grads = {n: rng.normal(size=p.shape) for n, p in params.items()}
        adamw_step(ours, grads, state, groups, lr=lr, weight_decay=weight_decay, **options)
        _, problem = call(your_function, params, {n: g.copy() for n, g in grads.items()},
                          theirs, lr, weight_decay, may_change=("params", "state"),
                          **options)
        if problem:
            return f"{where}: {problem}"
    for name in params:
        got = np.asarray(params[name], dtype=np.float64)
        if got.shape != ours[name].shape or not np.all(np.isfinite(got)):
            return f"{where}: {name} lost its shape or holds NaN"
        error = float(np.max(np.abs(got - ours[name])))
        if error > 1e-10:
            return (f"{where}, after 3 steps {name} differs by {num(error)}; "
                    + ("a parameter of two or more axes decays: p ← p (1 - lr λ) each "
                       "step" if name in groups["decay"] else
                       "biases and norm gains are not decayed")
                    + ("; use the betas and eps you are given" if options else ""))
    return None


# Exercise 3 ---------------------------------------------------------------------------

def check_warmup_cosine(your_function):
    """Exercise 3: your_function(step, peak, floor, warmup, total) = the rate."""
    rng = fresh_rng()
    for _ in range(5):
        total = int(rng.integers(100, 1000))  # three digits, two for the warm-up:
        warmup = int(rng.integers(10, 100))   # the verdict wraps the same way
        peak = float(rng.uniform(1e-4, 1e-2))
        floor = peak * float(rng.uniform(0, 0.5))
        for step in range(total):
            want = warmup_cosine(step, peak=peak, floor=floor, warmup=warmup, total=total)
            got, problem = call(your_function, step, peak, floor, warmup, total)
            if problem:
                return verdict(False, problem)
            try:
                got = float(got)
            except (TypeError, ValueError):
                return verdict(False, f"return a number, got {type(got).__name__}")
            if not math.isfinite(got) or abs(got - want) > 1e-12 * peak:
                where = "warm-up" if step < warmup else "cosine"
                return verdict(False, f"in the {where} of a random schedule (warm-up "
                                      f"{warmup} of {total} steps, peak {num(peak)}, "
                                      f"floor {num(floor)}) the rate at step {step} is "
                                      f"{num(want)}, you gave {num(got)}")
    return verdict(True, "every step of 5 random schedules equals warm-up then cosine.")


guard_checks(globals())
