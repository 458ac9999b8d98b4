"""What a fixed-size state cannot do: recall one of many stored tokens exactly.

A sequence stores n_pairs pairs (key, token): unit-length random keys of d_k numbers and
tokens one-hot over a vocabulary of d_v. Then every stored key is asked for its token,
after the whole sequence was read. Softmax attention reads the whole context again and
finds each key; linear attention and the delta rule must answer from a d_k x d_v state,
which cannot hold more than d_k independent keys exactly (the state is a linear map from
keys to values, of rank at most d_k). This is the associative-recall task of Zoology
(Arora et al., "Zoology: Measuring and Improving Recall in Efficient Language Models",
2023) and of the copy experiments of Jelassi et al. ("Repeat After Me: Transformers are
Better than State Space Models at Copying", ICML 2024), without training: each mixer
reads and writes with the keys themselves.
"""

# --8<-- [start:imports]
import numpy as np

from attention.linear.delta_rule import recurrent_gated_delta_rule
from attention.linear.feature_maps import elu_plus_one
from attention.linear.linear_attention import linear_attention_recurrent
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:recall]
def stored_pairs(rng, n_pairs, d_k, d_v):
    """n_pairs unit keys (n_pairs, d_k) and their tokens, one-hot values
    (n_pairs, d_v), and the token ids (n_pairs,)."""
    keys = rng.normal(size=(n_pairs, d_k))
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
    tokens = rng.integers(0, d_v, size=n_pairs)
    return keys, np.eye(d_v)[tokens], tokens


def recall_answers(mixer, keys, values, *, sharpness=50.0):
    """What each mixer answers, for every stored key, after the sequence.

    mixer: "softmax" (attention over the stored pairs, scores times
    sharpness), "linear" (elu + 1 features, normalised) or "delta" (the
    delta rule with beta = 1). Returns the answers (n_pairs, d_v).
    """
    n, d_k = keys.shape
    if mixer == "softmax":
        return attention(keys, keys, values, scale=sharpness)
    if mixer == "linear":
        phi = elu_plus_one(keys)
        _, S = linear_attention_recurrent(phi, phi, values)  # (d_k, d_v + 1)
        read = phi @ S                                   # (n, d_v + 1)
        return read[:, :-1] / read[:, -1:]
    if mixer == "delta":
        zeros, ones = np.zeros(n), np.ones(n)           # no decay, beta = 1
        _, S = recurrent_gated_delta_rule(keys, keys, values, zeros, ones,
                                          np.zeros((d_k, values.shape[-1])))
        return keys @ S
    raise ValueError(f"recall_answers: mixer must be 'softmax', 'linear' or "
                     f"'delta', got {mixer!r}")


def recall_accuracy(mixer, rng, n_pairs, *, d_k=16, d_v=16, trials=8):
    """The share of stored tokens a mixer gives back (its largest answer),
    over ``trials`` random sequences of n_pairs pairs."""
    right = 0
    for _ in range(trials):
        keys, values, tokens = stored_pairs(rng, n_pairs, d_k, d_v)
        answers = recall_answers(mixer, keys, values)
        right += int((answers.argmax(axis=-1) == tokens).sum())
    return right / (trials * n_pairs)
# --8<-- [end:recall]
