"""Turning the next-token logits into a choice: temperature, top-k, top-p, min-p.

References: Holtzman et al., "The Curious Case of Neural Text Degeneration" (2020) for
top-p (nucleus) sampling; Fan et al. (2018) for top-k; Nguyen et al., "Turning Up the
Heat: Min-p Sampling" (2024) for min-p. The rules, including the boundary cases, are
those of Hugging Face Transformers' TemperatureLogitsWarper, TopKLogitsWarper,
TopPLogitsWarper and MinPLogitsWarper, applied in that order by ``generate()``; the
tests check the filtered probability vectors against them.

Every filter takes logits of shape (..., vocab_size) and returns logits of the same
shape in which the removed tokens are ``-inf``, so filters chain and ``probabilities``
renormalises what is left. Ties: top-k keeps every token tied with the k-th largest
logit. Top-p's ``min_tokens_to_keep`` orders tokens by a stable ascending sort of the
logits, so among tied tokens the one with the larger index counts as more likely
(PyTorch's CPU sort, which Hugging Face calls, is stable for at most 16 entries). Min-p's
``min_tokens_to_keep`` picks the most probable tokens as Hugging Face does, with
``torch.topk``, whose CPU kernel selects with the C++ standard library's
``std::nth_element`` or ``std::partial_sort``; among tied tokens this package makes the
same choice by running the same selection (``_topk_indices``, libstdc++'s algorithms).

Degenerate rows: ``sample_next`` refuses a row of logits that holds NaN or has no token
left (every logit -inf), naming the row, instead of returning a token. A ``+inf`` logit
wins: ``probabilities`` gives it all the probability (shared equally when several tie).
Probabilities are computed in at least float32, so float16 logits divided by a small
temperature do not overflow.
"""

# --8<-- [start:imports]
import numpy as np

from attention.softmax import softmax
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_logits(fn, logits):
    logits = np.asarray(logits)
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(f"{fn}: logits must have shape (..., vocab_size), "
                         f"got {logits.shape}")
    if not np.issubdtype(logits.dtype, np.floating):
        logits = logits.astype(np.float64)
    return logits


def _check_keep(fn, min_tokens_to_keep):
    keep = min_tokens_to_keep
    if (isinstance(keep, bool) or not isinstance(keep, (int, np.integer))
            or keep < 1):
        raise ValueError(f"{fn}: min_tokens_to_keep must be a positive "
                         f"integer, got {keep!r}")
# --8<-- [end:checks]


def _check_rows(fn, logits):
    """A ValueError naming the first row that no token can be drawn from:
    one holding NaN, or one whose every logit is -inf."""
    flat = logits.reshape(-1, logits.shape[-1])  # (rows, vocab)
    bad = np.isnan(flat).any(axis=-1) | np.isneginf(flat).all(axis=-1)
    if bad.any():
        first = np.unravel_index(np.argmax(bad), logits.shape[:-1])
        row = logits[first]
        what = "NaN" if np.isnan(row).any() else "only -inf"
        raise ValueError(f"{fn}: row {tuple(int(i) for i in first)} of "
                         f"logits {logits.shape} holds {what}; no token can "
                         f"be chosen from {row}")


def _check_fraction(fn, name, p):
    """p a real number in [0, 1] (NaN and booleans refused)."""
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating,
                                                 np.integer)):
        raise TypeError(f"{fn}: {name} must be a number in [0, 1], got {p!r}")
    if not 0 <= p <= 1:
        raise ValueError(f"{fn}: {name} must lie in [0, 1], got {p!r}")


def _check_top_k(fn, k, *, zero_is_off=False):
    """k a positive integer (or 0, meaning no top-k, where zero_is_off)."""
    low = 0 if zero_is_off else 1
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < low:
        what = "a non-negative" if zero_is_off else "a positive"
        raise ValueError(f"{fn}: k must be {what} integer, got {k!r}")


def _check_settings(fn, top_k, top_p, min_p, min_tokens_to_keep):
    """Every sampling setting, checked whether or not its filter runs."""
    _check_keep(fn, min_tokens_to_keep)
    if top_k is not None:
        _check_top_k(fn, top_k, zero_is_off=True)
    for name, p in (("top_p", top_p), ("min_p", min_p)):
        if p is not None:
            _check_fraction(fn, name, p)


# --8<-- [start:temperature]
def apply_temperature(logits, temperature):
    """Divide the logits by the temperature: below 1 sharpens, above 1 flattens.

    Temperature 0 is not a division: it is greedy decoding (argmax), which
    ``sample_next`` does when given temperature=0.
    """
    logits = _check_logits("apply_temperature", logits)
    if not temperature > 0:
        raise ValueError(f"apply_temperature: temperature must be > 0, got "
                         f"{temperature!r} (0 means greedy: the argmax)")
    return logits / temperature
# --8<-- [end:temperature]


# --8<-- [start:probabilities]
def probabilities(logits):
    """Softmax over the vocabulary; -inf (filtered) tokens get probability 0.

    A +inf logit outweighs every finite one: its token gets probability 1
    (tokens tied at +inf share it). float16 is computed in float32.
    """
    logits = _check_logits("probabilities", logits)
    top = np.isposinf(logits)  # (..., vocab)
    if top.any():  # a row with +inf: only its +inf tokens count
        only_top = np.where(top, 0.0, -np.inf).astype(logits.dtype)
        logits = np.where(top.any(axis=-1, keepdims=True), only_top, logits)
    return softmax(logits, axis=-1)
# --8<-- [end:probabilities]


# --8<-- [start:top_k]
def filter_top_k(logits, k, *, min_tokens_to_keep=1):
    """Keep the k largest logits (and any tied with the k-th); -inf else."""
    logits = _check_logits("filter_top_k", logits)
    _check_keep("filter_top_k", min_tokens_to_keep)
    _check_top_k("filter_top_k", k)
    k = min(max(k, min_tokens_to_keep), logits.shape[-1])
    # The k-th largest value of each row: np.partition puts it at index -k.
    kth = np.partition(logits, -k, axis=-1)[..., -k:-k + 1 or None]  # (..., 1)
    return np.where(logits < kth, -np.inf, logits)
# --8<-- [end:top_k]


# --8<-- [start:top_p]
def filter_top_p(logits, p, *, min_tokens_to_keep=1):
    """Nucleus filter: the fewest most likely tokens whose probabilities
    add up to at least p.

    Hugging Face's rule, from the unlikely end: sort ascending, and remove
    every token whose cumulative probability (itself included) is <= 1 - p.
    The last ``min_tokens_to_keep`` tokens of the order are always kept.
    """
    logits = _check_logits("filter_top_p", logits)
    _check_keep("filter_top_p", min_tokens_to_keep)
    if not 0 <= p <= 1:
        raise ValueError(f"filter_top_p: p must lie in [0, 1], got {p!r}")
    order = np.argsort(logits, axis=-1, kind="stable")  # (..., vocab) ascending
    sorted_logits = np.take_along_axis(logits, order, axis=-1)
    cumulative = np.cumsum(softmax(sorted_logits, axis=-1), axis=-1)
    remove_sorted = cumulative <= 1 - p  # (..., vocab) in sorted order
    remove_sorted[..., -min_tokens_to_keep:] = False  # the most likely are kept
    remove = np.empty_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, axis=-1)  # vocab order
    return np.where(remove, -np.inf, logits)
# --8<-- [end:top_p]


# --8<-- [start:min_p]
def filter_min_p(logits, p, *, min_tokens_to_keep=1):
    """Keep the tokens whose probability is at least p times the top token's."""
    logits = _check_logits("filter_min_p", logits)
    _check_keep("filter_min_p", min_tokens_to_keep)
    if not 0 <= p <= 1:
        raise ValueError(f"filter_min_p: p must lie in [0, 1], got {p!r}")
    probs = softmax(logits, axis=-1)  # (..., vocab)
    remove = probs < p * probs.max(axis=-1, keepdims=True)
    k = min(min_tokens_to_keep, logits.shape[-1])
    top = _topk_indices(probs, k)  # (..., k): the k most probable tokens
    np.put_along_axis(remove, top, False, axis=-1)
    return np.where(remove, -np.inf, logits)
# --8<-- [end:min_p]


# --8<-- [start:process_logits]
def process_logits(logits, *, temperature=1.0, top_k=None, top_p=None,
                   min_p=None, min_tokens_to_keep=1):
    """Temperature, then top-k, top-p and min-p, as ``generate()`` orders them.

    A setting left at None (or temperature 1, top_k 0, top_p 1) leaves the
    logits alone. Every setting is checked, whether or not its filter runs:
    top_k a non-negative integer, top_p and min_p in [0, 1].
    """
    logits = _check_logits("process_logits", logits)
    keep = min_tokens_to_keep
    _check_settings("process_logits", top_k, top_p, min_p, keep)
    if temperature != 1.0:
        logits = apply_temperature(logits, temperature)
    if top_k is not None and top_k != 0:  # top_k=0: off, as in generate()
        logits = filter_top_k(logits, top_k, min_tokens_to_keep=keep)
    if top_p is not None and top_p != 1.0:
        logits = filter_top_p(logits, top_p, min_tokens_to_keep=keep)
    if min_p is not None:
        logits = filter_min_p(logits, min_p, min_tokens_to_keep=keep)
    return logits
# --8<-- [end:process_logits]


# --8<-- [start:sample_next]
def sample_next(logits, rng=None, *, temperature=1.0, top_k=None, top_p=None,
                min_p=None):
    """One token per row of logits (..., vocab_size) -> (...) integer ids.

    temperature=0 is greedy decoding: the argmax, no randomness (ties: the
    lowest id, as NumPy's and PyTorch's argmax). Otherwise draw from the
    filtered distribution with ``rng``, a seeded ``np.random.Generator``:
    the same seed gives the same tokens. A row holding NaN, or with every
    logit -inf, raises ValueError naming it; a +inf logit wins.
    """
    logits = _check_logits("sample_next", logits)
    _check_rows("sample_next", logits)
    # float16 / 0.1 overflows float16: compute in at least float32
    logits = logits.astype(np.promote_types(logits.dtype, np.float32))
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"sample_next: sampling needs rng, a "
                        f"np.random.Generator, got {type(rng).__name__}")
    probs = probabilities(process_logits(
        logits, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p))
    # Inverse transform: the first token whose cumulative probability passes u.
    cumulative = np.cumsum(probs, axis=-1)  # (..., vocab)
    u = rng.random(size=probs.shape[:-1] + (1,))  # (..., 1)
    ids = np.sum(cumulative <= u * cumulative[..., -1:], axis=-1)  # (...)
    # Guard against rounding landing on a zero-probability token at the end.
    last = np.argmax(cumulative >= cumulative[..., -1:], axis=-1)
    return np.minimum(ids, last)
# --8<-- [end:sample_next]


# torch.topk's choice among ties, which Hugging Face's min-p keeps. Its CPU kernel
# (aten/src/ATen/native/cpu/SortingKernel.cpp) pairs every value with its index and
# selects with std::partial_sort when 64 k <= n, otherwise with std::nth_element,
# comparing values only ("x > y", NaN counting as the largest). Below: libstdc++'s
# __heap_select and __introselect, step by step, so that the same tied tokens win.
def _topk_indices(probs, k):
    """Indices (..., k) of the k largest entries of each row, the set that
    torch.topk picks on the CPU (ties included)."""
    flat = probs.reshape(-1, probs.shape[-1])  # (rows, n)
    n = flat.shape[-1]
    # Without a tie at the k-th largest value every selection agrees.
    kth = -np.partition(-flat, k - 1, axis=-1)[:, k - 1:k]  # (rows, 1)
    greater, equal = (flat > kth).sum(-1), (flat == kth).sum(-1)
    tied = (greater + equal > k) | np.isnan(flat).any(axis=-1)
    top = np.argsort(-flat, axis=-1, kind="stable")[:, :k]  # (rows, k)
    for r in np.flatnonzero(tied):
        top[r] = _libstdcxx_topk(flat[r].tolist(), k, n)
    return top.reshape(probs.shape[:-1] + (k,))


def _greater(x, y):  # torch's comparator for largest=True
    return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]


def _libstdcxx_topk(values, k, n):
    queue = [(v, j) for j, v in enumerate(values)]
    if k * 64 <= n:
        _heap_select(queue, 0, k, n)
    else:
        _introselect(queue, 0, k - 1, n, 2 * (n.bit_length() - 1))
    return [j for _, j in queue[:k]]


def _adjust_heap(a, first, hole, length, value):
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _greater(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2  # __push_heap
    while hole > top and _greater(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole, parent = parent, (parent - 1) // 2
    a[first + hole] = value


def _heap_select(a, first, middle, last):
    length = middle - first
    if length >= 2:  # __make_heap
        for parent in range((length - 2) // 2, -1, -1):
            _adjust_heap(a, first, parent, length, a[first + parent])
    for i in range(middle, last):
        if _greater(a[i], a[first]):  # __pop_heap(first, middle, i)
            value, a[i] = a[i], a[first]
            _adjust_heap(a, first, 0, length, value)


def _introselect(a, first, nth, last, depth):
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    for i in range(first + 1, last):  # __insertion_sort
        value = a[i]
        if _greater(value, a[first]):
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            j = i
            while _greater(value, a[j - 1]):
                a[j] = a[j - 1]
                j -= 1
            a[j] = value


def _partition_pivot(a, first, last):
    mid = first + (last - first) // 2
    x, y, z = first + 1, mid, last - 1  # __move_median_to_first
    if _greater(a[x], a[y]):
        m = y if _greater(a[y], a[z]) else z if _greater(a[x], a[z]) else x
    else:
        m = x if _greater(a[x], a[z]) else z if _greater(a[y], a[z]) else y
    a[first], a[m] = a[m], a[first]
    lo, hi, pivot = first + 1, last, a[first]  # __unguarded_partition
    while True:
        while _greater(a[lo], pivot):
            lo += 1
        hi -= 1
        while _greater(pivot, a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1
