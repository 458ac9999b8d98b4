"""What each head does, measured: attention scores, the copying score, ablation, composition.

Scores from the attention pattern, on sequences made of a random segment and its repeat
(Olsson et al. 2022, "Per-token losses" and the appendix on head scores):

- previous-token score: the mean weight a query puts on the position just before it;
- prefix-matching score: in the repeat, the mean weight a query puts on the position just
  after the earlier occurrence of its own token (what an induction head attends to).

Each is compared with what a head that spreads its weight uniformly over the positions it
may see would get: 1 / (i + 1) for the query at position i.

From the weights alone (Elhage et al. 2021): the copying score of a head's OV circuit
W_E W_V W_O W_U, the sum of its eigenvalues over the sum of their absolute values (1 for a
head that copies every token, -1 for one that suppresses it, near 0 for random matrices);
and the composition scores, how much of a later head's query, key or value input reads the
output of an earlier head.
"""

# --8<-- [start:scores]
import numpy as np

from attention.circuits.model import forward


def attention_patterns(params, config, ids):
    """Each layer's weights, (n_layers, batch, heads, n, n)."""
    trace = {}
    forward(params, config, ids, trace=trace)
    return np.stack([trace[f"{i}.weights"] for i in range(config.n_layers)])


def previous_token_score(weights):
    """Mean weight on the previous position, per head: (..., heads)."""
    n = weights.shape[-1]
    rows = np.arange(1, n)
    return weights[..., rows, rows - 1].mean(axis=-1).mean(axis=-2)


def prefix_matching_score(weights, half):
    """Mean weight on the token after the earlier occurrence, in the repeat
    of a (segment, segment) sequence: query i (i >= half) to i - half + 1."""
    rows = np.arange(half, weights.shape[-1])
    return weights[..., rows, rows - half + 1].mean(axis=-1).mean(axis=-2)


def uniform_baseline(rows):
    """The same mean for uniform attention: query i gives 1 / (i + 1)."""
    return float(np.mean(1.0 / (np.asarray(rows) + 1.0)))


def head_slices(params, config, layer, head):
    """(W_Q, W_K, W_V, W_O) of one head: (d_model, d_head) three times,
    then (d_head, d_model)."""
    cols = slice(head * config.d_head, (head + 1) * config.d_head)
    return (params[f"{layer}.W_Q"][:, cols], params[f"{layer}.W_K"][:, cols],
            params[f"{layer}.W_V"][:, cols], params[f"{layer}.W_O"][cols])


def copying_score(W_E, W_V, W_O, W_U):
    """Σλ / Σ|λ| over the eigenvalues λ of the OV circuit W_E W_V W_O W_U."""
    eigenvalues = np.linalg.eigvals(
        (W_E @ W_V @ W_O @ W_U).astype(np.float64))  # (vocab,) complex
    return float(eigenvalues.sum().real / np.abs(eigenvalues).sum())


def composition_scores(earlier, later):
    """{"Q", "K", "V"}: ‖M W_OV‖ / (‖M‖ ‖W_OV‖), Frobenius norms, for M the
    later head's matrix that reads the earlier head's output W_OV = W_V W_O.

    Row vectors: the score of query x and key y is x W_QK yᵀ with
    W_QK = W_Q W_Kᵀ; a key that holds z W_OV adds x W_QK W_OVᵀ zᵀ."""
    _, _, V1, O1 = earlier
    Q2, K2, V2, O2 = later
    ov1 = V1 @ O1  # (d_model, d_model)
    qk2, ov2 = Q2 @ K2.T, V2 @ O2

    def score(a, b):
        return float(np.linalg.norm(a @ b)
                     / (np.linalg.norm(a) * np.linalg.norm(b)))
    return {"Q": score(ov1, qk2), "K": score(qk2, ov1.T),
            "V": score(ov1, ov2)}


def random_composition(shapes, rng, draws=100):
    """The mean of each composition score over heads with random normal
    weights of the given shapes (earlier's four, then later's four)."""
    runs = [composition_scores(
        *(tuple(rng.standard_normal(s) for s in group)
          for group in (shapes[:4], shapes[4:])))
        for _ in range(draws)]
    return {k: float(np.mean([r[k] for r in runs])) for k in "QKV"}
# --8<-- [end:scores]
