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


# --8<-- [start:beam_search]
def beam_search(next_log_probs, prompt, *, beam_width, max_new_tokens):
    """The beam_width best continuations found, best first: sequences
    (w, n + new) and scores (w,), the sums of the new tokens' log-probs."""
    w = beam_width
    if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
        raise ValueError(f"beam_search: beam_width must be a positive "
                         f"integer, got {beam_width!r}")
    beams = np.asarray(prompt, dtype=np.int64)[None, :]  # (1, n): the prompt
    scores = np.zeros(1)                                 # (1,)
    for _ in range(max_new_tokens):
        log_probs = np.asarray(next_log_probs(beams))    # (beams, vocab)
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
