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
logit. Top-p and min-p's ``min_tokens_to_keep`` order tokens by a stable ascending sort (of the
logits for top-p, of the probabilities for min-p, as Hugging Face does), so among tied tokens the one with the larger index counts as more likely. (PyTorch's
sort is stable on the CPU only for at most 16 entries, and its topk breaks ties in no
documented order, so Hugging Face agrees with this tie-break for small vocabularies.)
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
    """Softmax over the vocabulary; -inf (filtered) tokens get probability 0."""
    return softmax(_check_logits("probabilities", logits), axis=-1)
# --8<-- [end:probabilities]


# --8<-- [start:top_k]
def filter_top_k(logits, k, *, min_tokens_to_keep=1):
    """Keep the k largest logits (and any tied with the k-th); -inf else."""
    logits = _check_logits("filter_top_k", logits)
    _check_keep("filter_top_k", min_tokens_to_keep)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"filter_top_k: k must be a positive integer, "
                         f"got {k!r}")
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
    top = np.argsort(probs, axis=-1, kind="stable")[..., -k:]  # (..., k)
    np.put_along_axis(remove, top, False, axis=-1)
    return np.where(remove, -np.inf, logits)
# --8<-- [end:min_p]


# --8<-- [start:process_logits]
def process_logits(logits, *, temperature=1.0, top_k=None, top_p=None,
                   min_p=None, min_tokens_to_keep=1):
    """Temperature, then top-k, top-p and min-p, as ``generate()`` orders them.

    A setting left at None (or temperature 1, top_p 1) leaves the logits alone.
    """
    logits = _check_logits("process_logits", logits)
    keep = min_tokens_to_keep
    if temperature != 1.0:
        logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = filter_top_k(logits, top_k, min_tokens_to_keep=keep)
    if top_p is not None and top_p < 1.0:
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
    the same seed gives the same tokens.
    """
    logits = _check_logits("sample_next", logits)
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
