"""Beam search: keep the ``beam_width`` most probable partial sequences at every step.

Greedy decoding keeps one; exhaustive search keeps all (vocab_size ** length of them).
Beam search sits between: at each step it extends every kept sequence by every token
and keeps the best ``beam_width`` by total log-probability. It can miss the most
probable sequence when that sequence starts with an unlikely token that a narrow beam
drops. Here every sequence has the same length (``max_new_tokens``, no stop token), so
no length penalty is needed: sums of the same number of log-probabilities compare fairly.
(Hugging Face's ``num_beams`` search divides by length**length_penalty to compare
finished sequences of different lengths.)

``next_log_probs(sequences)`` is any model: it takes token ids (n_beams, n) and
returns the log-probabilities of the next token, (n_beams, vocab_size).
"""

# --8<-- [start:imports]
import itertools

import numpy as np
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_search(prompt, beam_width, max_new_tokens):
    """beam_search's prompt as int64 ids (n,), or a ValueError."""
    for name, value, low in (("beam_width", beam_width, 1),
                             ("max_new_tokens", max_new_tokens, 0)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < low):
            kind = "positive" if low else "non-negative"
            raise ValueError(f"beam_search: {name} must be a {kind} "
                             f"integer, got {value!r}")
    ids = np.asarray(prompt)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise ValueError(f"beam_search: prompt must be a 1-D sequence of "
                         f"integer token ids, got {prompt!r}")
    return ids.astype(np.int64)


def _check_log_probs(log_probs, n_beams):
    """The model's answer: real (n_beams, vocab_size), no NaN."""
    log_probs = np.asarray(log_probs)
    if (log_probs.ndim != 2 or log_probs.shape[0] != n_beams
            or log_probs.shape[1] < 1 or log_probs.dtype.kind not in "iuf"):
        raise ValueError(f"beam_search: next_log_probs must return real "
                         f"log-probabilities of shape ({n_beams}, vocab_size) "
                         f"for {n_beams} beams, got dtype {log_probs.dtype} "
                         f"and shape {log_probs.shape}")
    if np.isnan(log_probs).any():
        row = int(np.argmax(np.isnan(log_probs).any(axis=-1)))
        raise ValueError(f"beam_search: next_log_probs returned NaN for "
                         f"beam {row}: {log_probs[row]}")
    return log_probs
# --8<-- [end:checks]


# --8<-- [start:beam_search]
def beam_search(next_log_probs, prompt, *, beam_width, max_new_tokens):
    """The beam_width best continuations found, best first: sequences
    (w, n + new) and scores (w,), the sums of the new tokens' log-probs."""
    prompt = _check_search(prompt, beam_width, max_new_tokens)
    beams = prompt[None, :]                              # (1, n): the prompt
    scores = np.zeros(1)                                 # (1,)
    for _ in range(max_new_tokens):
        log_probs = _check_log_probs(next_log_probs(beams), len(beams))
        vocab_size = log_probs.shape[-1]
        total = scores[:, None] + log_probs  # (beams, vocab): every extension
        best = np.argsort(-total, axis=None, kind="stable")[:beam_width]
        beam, token = np.divmod(best, vocab_size)  # flat index -> (row, col)
        beams = np.concatenate([beams[beam], token[:, None]], axis=1)
        scores = total[beam, token]                      # (w,)
    return beams, scores
# --8<-- [end:beam_search]


# --8<-- [start:exhaustive_search]
def exhaustive_search(next_log_probs, prompt, *, vocab_size, max_new_tokens):
    """Score all vocab_size ** max_new_tokens continuations; return them,
    best first, as (sequences, scores). Only for tiny vocabularies."""
    prompt = list(prompt)
    sequences, scores = [], []
    for new in itertools.product(range(vocab_size), repeat=max_new_tokens):
        seq = np.array(prompt + list(new))
        # The log-probability of each new token given everything before it.
        score = sum(float(next_log_probs(seq[None, :len(prompt) + i])[0, t])
                    for i, t in enumerate(new))
        sequences.append(seq)
        scores.append(score)
    order = np.argsort(-np.array(scores), kind="stable")
    return np.array(sequences)[order], np.array(scores)[order]
# --8<-- [end:exhaustive_search]
