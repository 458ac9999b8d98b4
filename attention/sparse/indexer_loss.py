"""Training the lightning indexer: pull its scores toward where the main attention looks.

DeepSeek-AI, "DeepSeek-V3.2" (2025), section 2.1.1 (continued pre-training). The target
for query t is the main attention's weights summed over its heads and normalised to sum
to one, p[t, :]; the indexer's scores I[t, :] become a distribution by softmax, and the
loss is the KL divergence

    L = sum_t KL(p[t, :] || softmax(I[t, :])).

In the dense warm-up every allowed (causal) key counts; in the sparse stage only the
keys the indexer chose, S_t, and both p and the softmax are taken over S_t. Either way
``allowed`` says which keys count. The target is a constant: the indexer's input is
detached from the main model, so this loss trains the indexer alone.

The gradient by hand: dL/dI[t, j] = softmax(I[t])[j] - p[t, j] on the allowed keys (the
familiar softmax-minus-target of cross-entropy, since KL is cross-entropy minus the
target's own entropy), 0 elsewhere; ``index_scores_backward`` carries it through the
ReLU to the indexer's queries, weights and keys.
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:kl_loss]
def indexer_kl_loss(weights, scores, allowed):
    """The indexer's KL loss and its gradient with respect to the scores.

    weights: the main attention's (batch, heads, n_q, n_k); scores: the
    indexer's (batch, n_q, n_k); allowed: booleans broadcasting to
    (batch, n_q, n_k), each row with at least one True. Returns
    (loss summed over queries and batch, d_scores (batch, n_q, n_k)).
    """
    weights, scores = np.asarray(weights), np.asarray(scores)
    if weights.ndim != 4 or scores.shape != (weights.shape[0],
                                             *weights.shape[2:]):
        raise ValueError(f"indexer_kl_loss: weights must be (batch, heads, "
                         f"n_q, n_k) and scores (batch, n_q, n_k); got "
                         f"weights {weights.shape}, scores {scores.shape}")
    try:
        allowed = np.broadcast_to(np.asarray(allowed, bool), scores.shape)
    except ValueError:
        raise ValueError(f"indexer_kl_loss: allowed of shape "
                         f"{np.shape(allowed)} does not broadcast to the "
                         f"scores' {scores.shape}") from None
    if not allowed.any(axis=-1).all():
        raise ValueError("indexer_kl_loss: every query needs an allowed key; "
                         "allowed has a row of False")
    p = np.where(allowed, weights.sum(axis=1), 0.0)       # (batch, n_q, n_k)
    p = p / p.sum(axis=-1, keepdims=True)                  # target rows
    s = np.where(allowed, scores, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    log_q = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))  # log-softmax
    safe_p = np.where(p > 0, p, 1.0)                        # 0 log 0 = 0
    loss = np.where(p > 0, p * (np.log(safe_p) - np.where(allowed, log_q, 0)),
                    0.0).sum()
    d_scores = np.where(allowed, np.exp(log_q) - p, 0.0)
    return float(loss), d_scores
# --8<-- [end:kl_loss]


# --8<-- [start:backward]
def index_scores_backward(q, w, k, d_scores):
    """``index_scores``'s backward: d_scores (batch, n_q, n_k) ->
    (dq (batch, n_q, heads, d), dw (batch, n_q, heads), dk (batch, n_k, d)).
    The ReLU passes the gradient only where q . k > 0."""
    q, w, k = np.asarray(q), np.asarray(w), np.asarray(k)
    d_scores = np.asarray(d_scores)
    if (q.ndim != 4 or w.shape != q.shape[:3] or k.ndim != 3
            or k.shape[0] != q.shape[0] or k.shape[-1] != q.shape[-1]
            or d_scores.shape != (q.shape[0], q.shape[1], k.shape[1])):
        raise ValueError(f"index_scores_backward: q must be (batch, n_q, "
                         f"heads, d), w (batch, n_q, heads), k (batch, n_k, "
                         f"d) and d_scores (batch, n_q, n_k); got q "
                         f"{q.shape}, w {w.shape}, k {k.shape}, d_scores "
                         f"{d_scores.shape}")
    root = np.sqrt(q.shape[-1])
    logits = np.einsum("bshd,btd->bsht", q, k) / root   # (b, n_q, h, n_k)
    d_w = np.einsum("bst,bsht->bsh", d_scores, np.maximum(logits, 0.0))
    d_logits = (d_scores[:, :, None, :] * w[..., None]) * (logits > 0)
    d_q = np.einsum("bsht,btd->bshd", d_logits, k) / root
    d_k = np.einsum("bsht,bshd->btd", d_logits, q) / root
    return d_q, d_w, d_k
# --8<-- [end:backward]
