"""Self-checks for the practice exercises of chapter 7 (training a GPT).

Each check calls the reader's function on data it draws, prints one verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and returns True or
False. References come from ``attention.gpt``.
"""

import math

import numpy as np

from attention.optim import adam_init, adam_step
from attention.gpt.bpe import BPETokenizer, train_bpe
from attention.gpt.schedule import warmup_cosine
from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, matches, redrawable, shape_text)
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


def _random_groups(rng, names):
    """PyTorch-style parameter groups, each with its own rate and decay, that do not
    follow the parameters' shapes: a bias decays with some matrices, the embedding
    does not decay (a recipe some runs use), the rest decays harder."""
    return [{"names": ["attn.W_q", "attn.b_q"], "lr": float(rng.uniform(0.01, 0.1)),
             "weight_decay": float(rng.uniform(0.1, 1.0))},
            {"names": ["wte", "norm1.weight"], "lr": float(rng.uniform(0.01, 0.1)),
             "weight_decay": 0.0},
            {"names": ["mlp.W_in"], "lr": float(rng.uniform(0.001, 0.01)),
             "weight_decay": float(rng.uniform(1.0, 3.0))}]


def check_adamw_groups(your_function):
    """Exercise 2: your_function(params, grads, state, groups, betas, eps) in place:
    three steps with betas and eps left to their defaults, then three with others
    (so neither can be hard-coded), each group with its own rate and decay."""
    rng = fresh_rng()
    for options in ({}, {"betas": (0.8, 0.99), "eps": 1e-3}):
        problem = _adamw_run(your_function, rng, options)
        if problem is not None:
            return verdict(False, problem)
    return verdict(True, "3 AdamW steps with three parameter groups of random rates and "
                         "decays, and 3 more with betas (0.8, 0.99) and eps 1e-3, equal "
                         "the package's optimiser run group by group.")


def _adamw_run(your_function, rng, options):
    """Three steps of the reader's optimiser and the package's; None, or what differs."""
    params = _random_params(rng)
    groups = _random_groups(rng, list(params))
    ours = {n: p.copy() for n, p in params.items()}
    states = [adam_init({n: ours[n] for n in g["names"]}) for g in groups]
    theirs = {"step": 0, "m": {n: np.zeros_like(p) for n, p in params.items()},
              "v": {n: np.zeros_like(p) for n, p in params.items()}}
    where = (f"with betas {options['betas']} and eps {options['eps']:g}" if options
             else "with betas and eps left to their defaults")
    for _ in range(3):
        grads = {n: rng.normal(size=p.shape) for n, p in params.items()}
        for group, state in zip(groups, states):
            adam_step({n: ours[n] for n in group["names"]},
                      {n: grads[n] for n in group["names"]}, state, lr=group["lr"],
                      weight_decay=group["weight_decay"], **options)
        _, problem = call(your_function, params, {n: g.copy() for n, g in grads.items()},
                          theirs, groups, may_change=("params", "state"), **options)
        if problem:
            return f"{where}: {problem}"
    for name in params:
        got = np.asarray(params[name], dtype=np.float64)
        if got.shape != ours[name].shape or not np.all(np.isfinite(got)):
            return f"{where}: {name} lost its shape or holds NaN"
        error = float(np.max(np.abs(got - ours[name])))
        if error > 1e-10:
            group = next(g for g in groups if name in g["names"])
            return (f"{where}, after 3 steps {name} (in a group with lr "
                    f"{num(group['lr'])} and weight_decay {num(group['weight_decay'])}) "
                    f"differs by {num(error)}; each group steps with its own lr, and "
                    "decays by the group's weight_decay, decoupled: p ← p (1 - lr λ) "
                    "before the Adam step"
                    + ("; use the betas and eps you are given" if options else ""))
    return None


# Exercise 3 ---------------------------------------------------------------------------

def check_warmup_cosine(your_function):
    """Exercise 3: your_function(step, peak, floor, warmup, total) = the rate."""
    rng = fresh_rng()
    for i in range(5):
        total = int(rng.integers(100, 1000))  # three digits, two for the warm-up:
        warmup = int(rng.integers(10, 100))   # the verdict wraps the same way
        warmup = 0 if i == 4 else warmup      # the last: no warm-up at all
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

# Exercise 4 ---------------------------------------------------------------------------

def clip_reference(grads, max_norm, norm_type=2.0):
    """PyTorch's ``clip_grad_norm_`` for any p-norm (inf: the largest |entry|), on
    copies: (clipped gradients, the norm before clipping). With p = 2 it is the
    package's ``clip_by_global_norm`` (tests/practice/test_ch07.py)."""
    flat = [np.abs(g.astype(np.float64)).ravel() for g in grads.values()]
    every = np.concatenate(flat)
    if norm_type == math.inf:
        norm = float(np.max(every))
    else:  # scaled by the largest entry: |g|^p of a big gradient stays finite
        top = float(np.max(every))
        norm = top * float(np.sum((every / top) ** norm_type)) ** (1 / norm_type) if (
            top > 0) else 0.0
    scale = min(max_norm / (norm + 1e-6), 1.0)
    return {name: (g * scale).astype(g.dtype) for name, g in grads.items()}, norm


def _per_parameter(grads, max_norm, norm_type=2.0):
    """The mistake of clipping each gradient by its own norm."""
    return {name: clip_reference({name: g}, max_norm, norm_type)[0][name]
            for name, g in grads.items()}, clip_reference(grads, max_norm, norm_type)[1]


def _uncapped(grads, max_norm, norm_type=2.0):
    """The mistake of scaling by max_norm / norm even when that is above 1."""
    norm = clip_reference(grads, max_norm, norm_type)[1]
    return {n: g * (max_norm / (norm + 1e-6)) for n, g in grads.items()}, norm


def _no_epsilon(grads, max_norm, norm_type=2.0):
    """The scale without PyTorch's 1e-6 in the denominator."""
    norm = clip_reference(grads, max_norm, norm_type)[1]
    return {n: g * min(max_norm / norm, 1.0) for n, g in grads.items()}, norm


@redrawable
def _clip_trial(rng, sizes, norm_type, clip, dtype=np.float64, *, spread=False,
                default=False):
    """Gradients of random shapes; max_norm drawn below the norm (``clip``: they are
    scaled) or above it (left as they are), or 0. ``spread``: one gradient a thousand
    times larger than another."""
    grads = {}
    for i, shape in enumerate(sizes):
        scale = 10.0 ** (3 * (i % 2) - 1) if spread else 1.0
        grads[f"p{i}"] = (rng.normal(size=shape) * scale).astype(dtype)
    norm = clip_reference(grads, 1.0, norm_type)[1]
    max_norm = 0.0 if clip == "zero" else norm * float(
        rng.uniform(0.2, 0.8) if clip else rng.uniform(1.2, 3.0))
    label = (f"gradients of shapes {', '.join(shape_text(s) for s in sizes)} "
             f"({np.dtype(dtype).name}{', spread over 1e-1 to 1e2' if spread else ''}), "
             f"max_norm {'0' if clip == 'zero' else num(max_norm)}")
    if default:
        return Trial(label + ", norm_type left to its default 2", (grads, max_norm),
                     {}, np.dtype(dtype))
    return Trial(label + f", norm_type {norm_type:g}", (grads, max_norm),
                 {"norm_type": norm_type}, np.dtype(dtype))


def check_clip_grad_norm(your_function):
    """Exercise 4: your_function(grads, max_norm, norm_type=2.0) = (clipped copies of
    the gradients, the global p-norm before clipping)."""
    rng = fresh_rng()
    p = float(rng.uniform(1.0, 8.0))
    trials = [_clip_trial(rng, [(3, 4), (4,)], 2.0, True, default=True),
              _clip_trial(rng, [(2, 3), (5,), (2, 2, 3)], 1.0, True),
              _clip_trial(rng, [(4, 3), (3,)], math.inf, True),
              _clip_trial(rng, [(3, 5), (5,), (5,)], p, True, spread=True),
              _clip_trial(rng, [(6,), (2, 6)], 2.0, False),
              _clip_trial(rng, [(3, 3)], math.inf, False),
              _clip_trial(rng, [(2, 5), (5,)], p, "zero"),
              _clip_trial(rng, [(4, 4), (4,)], 3.0, True, np.float32)]
    hints = [(_per_parameter, "each gradient was clipped by its own norm: one norm over "
                              "every gradient together sets one scale for all"),
             (lambda grads, max_norm, norm_type=2.0: clip_reference(
                 grads, max_norm, 2.0),
              "that is the 2-norm: use the norm_type you are given (inf: the largest "
              "absolute entry)"),
             (_uncapped, "gradients whose norm is already below max_norm are left as they "
                         "are: the scale is capped at 1, never above"),
             (_no_epsilon,
              "the scale is max_norm / (norm + 1e-6), as PyTorch computes it")]

    def compare(result, expected, trial):
        if not (isinstance(result, tuple) and len(result) == 2
                and isinstance(result[0], dict)):
            return ("return a pair (dict of clipped gradients, norm), got "
                    f"{type(result).__name__}")
        got, norm = result
        if got.keys() != expected[0].keys():
            return f"return one gradient per name {sorted(expected[0])}"
        try:
            norm = float(norm)
        except (TypeError, ValueError):
            return f"the norm should be a number, got {type(norm).__name__}"
        rtol = 1e-5 if trial.dtype == np.float32 else 1e-9
        if not np.isclose(norm, expected[1], rtol=rtol):
            if np.isclose(norm, clip_reference(trial.args[0], 1.0, 2.0)[1], rtol=rtol):
                return hints[1][1]
            return (f"the global norm before clipping is {num(expected[1])}, you "
                    f"returned {num(norm)}")
        for name, want in expected[0].items():
            array, problem = as_array(got[name], f"gradient {name!r}")
            problem = problem or difference(array, want, trial.dtype)
            if problem is None:
                continue
            for wrong, message in hints:
                if matches(array, wrong(*trial.args, **trial.kwargs)[0][name],
                           trial.dtype):
                    return message
            return f"gradient {name!r}: {problem}"
        return None

    problem = first_failure(your_function, trials, clip_reference,
                            what="clip_grad_norm", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random sets of gradients (norm_type 1, 2, "
                         f"{p:.2f}, 3 and inf; clipped, left alone, max_norm 0; "
                         "float32 and float64; one set spread over a thousandfold) your "
                         "clipped copies and norms equal PyTorch's clip_grad_norm_.")


# Exercise 5 ---------------------------------------------------------------------------

def smoothed_reference(logits, targets, smoothing=0.0, ignore_index=-100):
    """PyTorch's ``cross_entropy(..., label_smoothing, ignore_index)``, mean over the
    targets not ignored, as a Python float: each kept row's loss is (1 - ε) times
    -log p(target) plus ε times the mean of -log p over all V classes."""
    x = logits.astype(np.float64)
    top = np.max(x, axis=-1, keepdims=True)
    log_p = x - top - np.log(np.sum(np.exp(x - top), axis=-1, keepdims=True))
    keep = targets != ignore_index
    picked = np.take_along_axis(log_p, np.where(keep, targets, 0)[..., None], -1)[..., 0]
    rows = -(1 - smoothing) * picked - smoothing * np.mean(log_p, axis=-1)
    return float(np.sum(rows[keep]) / np.sum(keep))


@redrawable
def _smoothing_trial(rng, lead, V, smoothing, ignore_index, dtype=np.float64, kind=""):
    """Logits of a shape; about a third of the targets set to ignore_index (never all);
    ``kind``: rows near ±1000 or spread over thousands."""
    shape = (*lead, V)
    logits = rng.normal(size=shape) * (3000.0 if kind == "spread over thousands" else 1.0)
    if kind == "near ±1000":  # rows at -1000 and +1000 in turn
        logits += np.where(np.arange(int(np.prod(lead))) % 2, 1000.0,
                           -1000.0).reshape(*lead, 1)
    targets = rng.integers(0, V, size=lead)
    size = targets.size  # a third ignored, never the last
    targets.flat[rng.permutation(size - 1)[:max(1, size // 3)]] = ignore_index
    if targets.flat[-1] == ignore_index:
        targets.flat[-1] = (ignore_index + 1) % V
    label = (f"{shape_text(shape)} {np.dtype(dtype).name} logits"
             f"{' ' + kind if kind else ''}, "
             f"{int(np.sum(targets == ignore_index))} targets ignored")
    kwargs = {}
    label += (f", smoothing {smoothing:.3f}" if smoothing is not None
              else ", smoothing left to its default 0")
    if smoothing is not None:
        kwargs["smoothing"] = smoothing
    label += (f", ignore_index {ignore_index}" if ignore_index != -100
              else ", ignore_index left to its default -100")
    if ignore_index != -100:
        kwargs["ignore_index"] = ignore_index
    return Trial(label, (logits.astype(dtype), targets), kwargs, np.dtype(dtype))


def check_smoothed_cross_entropy(your_function):
    """Exercise 5: your_function(logits, targets, smoothing=0.0, ignore_index=-100) =
    the mean smoothed cross-entropy over the targets not ignored."""
    rng = fresh_rng()
    eps = float(rng.uniform(0.05, 0.3))
    trials = [_smoothing_trial(rng, (6,), 5, None, -100),
              _smoothing_trial(rng, (7,), 4, eps, -100),
              _smoothing_trial(rng, (2, 5), 6, eps, -1),
              _smoothing_trial(rng, (8,), 5, 0.1, 0),  # a real class: the padding id
              _smoothing_trial(rng, (4,), 3, 1.0, -100),
              _smoothing_trial(rng, (6,), 7, eps, -100, kind="near ±1000"),
              _smoothing_trial(rng, (5,), 6, eps, -100, kind="spread over thousands"),
              _smoothing_trial(rng, (3, 4), 5, eps, -100, np.float32),
              _smoothing_trial(rng, (int(rng.integers(2, 9)),), int(rng.integers(2, 9)),
                               float(rng.uniform(0, 1)), int(rng.integers(-5, 0)))]
    hints = [(lambda x, t, smoothing=0.0, ignore_index=-100:
              smoothed_reference(x, t, smoothing, ignore_index)
              * np.mean(t != ignore_index),
              "the mean is over the targets that are not ignored, not over every "
              "position"),
             (lambda x, t, smoothing=0.0, ignore_index=-100:
              smoothed_reference(x, t, smoothing * x.shape[-1] / (x.shape[-1] - 1),
                                 ignore_index),
              "ε is spread over all V classes, the target included: ε/V each, and "
              "1 - ε + ε/V on the target"),
             (lambda x, t, smoothing=0.0, ignore_index=-100:
              smoothed_reference(x, t, 0.0, ignore_index),
              "no smoothing applied: mix in ε times the mean of -log p over the classes")]

    def compare(result, expected, trial):
        try:
            got = float(result)
        except (TypeError, ValueError):
            return f"return one number, got {type(result).__name__}"
        rtol = 2e-4 if trial.dtype == np.float32 else 1e-9
        if np.isclose(got, expected, rtol=rtol, atol=rtol):
            return None
        if not math.isfinite(got):
            return (f"the loss is {got} where it is {num(expected)}: an exponential "
                    "overflowed; subtract each row's largest logit before exp")
        for wrong, message in hints:
            if np.isclose(got, wrong(*trial.args, **trial.kwargs), rtol=rtol, atol=rtol):
                return message
        return f"the loss is {num(expected)}, you gave {num(got)}"

    problem = first_failure(your_function, trials, smoothed_reference,
                            what="smoothed_cross_entropy", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random batches (smoothing 0 to 1, the "
                         "defaults, ignore_index -100, negative and a real class 0, "
                         "one and two leading axes, float32, rows near ±1000 and "
                         "spread over thousands) your loss equals PyTorch's "
                         "cross_entropy.")

# Exercise 6 ---------------------------------------------------------------------------

def accumulate_reference(grads, counts):
    """The gradient of the mean loss over every token of the batch, from each
    micro-batch's gradient of its own mean: Σ_i n_i g_i / Σ_i n_i, micro-batches
    without a token left out (their mean is 0/0)."""
    total = float(sum(int(n) for n in counts))
    out = {}
    for name, first in grads[0].items():
        acc = np.zeros(first.shape, np.float64)
        for g, n in zip(grads, counts):
            if int(n):
                acc += (int(n) / total) * g[name]
        out[name] = acc.astype(first.dtype)
    return out


@redrawable
def _accumulate_trial(rng, counts, dtype=np.float64):
    """Micro-batch gradients of random shapes; a micro-batch of 0 tokens has NaN
    gradients (the mean of nothing), as a framework would give."""
    shapes = {"W": (int(rng.integers(2, 5)), 3), "b": (int(rng.integers(2, 6)),)}
    grads = []
    for n in counts:
        grads.append({name: (rng.normal(size=shape) if int(n) else
                             np.full(shape, np.nan)).astype(dtype)
                      for name, shape in shapes.items()})
    shown = counts.tolist() if isinstance(counts, np.ndarray) else list(counts)
    label = (f"{len(counts)} micro-batches of {shown} tokens, {np.dtype(dtype).name}"
             + (" (a NumPy int64 array)" if isinstance(counts, np.ndarray) else ""))
    return Trial(label, (grads, counts), {}, np.dtype(dtype))


def check_accumulate(your_function):
    """Exercise 6: your_function(grads, counts) = the whole batch's gradient."""
    rng = fresh_rng()
    trials = [_accumulate_trial(rng, [3, 7, 2]),
              _accumulate_trial(rng, [5, 5]),
              _accumulate_trial(rng, [4, 0, 6]),  # one micro-batch all padding
              _accumulate_trial(rng, [1]),
              _accumulate_trial(rng, np.array([3_000_000_000, 1_500_000_000,
                                               2_000_000_000], dtype=np.int64)),
              _accumulate_trial(rng, [8, 3, 5], np.float32),
              _accumulate_trial(rng, [int(n) for n in rng.integers(0, 40, 4)] + [1])]

    def mean_of_means(grads, counts):
        kept = [g for g, n in zip(grads, counts) if int(n)]
        return {k: sum(g[k] for g in kept) / len(kept) for k in grads[0]}

    hints = [(mean_of_means, "a mean of the micro-batches' means weighs a short "
                             "micro-batch like a long one; weigh each by its tokens")]

    def compare(result, expected, trial):
        if not isinstance(result, dict) or result.keys() != expected.keys():
            return f"return a dict with the keys {sorted(expected)}"
        for name, want in expected.items():
            got, problem = as_array(result[name], f"gradient {name!r}")
            problem = problem or difference(got, want, trial.dtype)
            if problem is None:
                continue
            if got.shape == want.shape and np.isnan(got).any():
                return (f"gradient {name!r} holds NaN: a micro-batch of 0 tokens has "
                        "no mean (its gradient is NaN) and carries no weight; leave it "
                        "out")
            for wrong, message in hints:
                if matches(got, wrong(*trial.args)[name], trial.dtype):
                    return message
            return f"gradient {name!r}: {problem}"
        return None

    problem = first_failure(your_function, trials, accumulate_reference,
                            what="accumulate", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random batches (1 to 5 micro-batches, "
                         "equal and unequal, one of 0 tokens, counts summing past "
                         "2^32, float32) your gradient equals that of the mean loss "
                         "over every token.")


guard_checks(globals())
