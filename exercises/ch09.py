"""Practice exercises of chapter 9: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention import softmax
from attention.model import ModelConfig
from attention.practice.ch09 import (check_absorb_key_packed,
                                     check_capped_softmax_grad, check_dispatch,
                                     check_latent_cache_bytes,
                                     check_masked_balancing_loss,
                                     check_top_k_router)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def absorb_key_packed(q_nope, kv_b_weight, d_v):
    """Queries in latent space, from Hugging Face's packed kv_b_proj.

    q_nope: (batch, H, n, d_nope); kv_b_weight: (H * (d_nope + d_v), r),
    kv_b_proj.weight as the checkpoint stores it: for each head in turn,
    its d_nope key rows (W_uk) then its d_v value rows (W_uv). Returns
    (batch, H, n, r): head h's query times head h's key block.
    """
    # Your code: this reads the first rows as if they were all keys.
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    return q_nope @ kv_b_weight[:d_nope]
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def absorb_key_packed(q_nope, kv_b_weight, d_v):
    """Queries in latent space, from Hugging Face's packed kv_b_proj.

    q_nope: (batch, H, n, d_nope); kv_b_weight: (H * (d_nope + d_v), r),
    kv_b_proj.weight as the checkpoint stores it: for each head in turn,
    its d_nope key rows (W_uk) then its d_v value rows (W_uv). Returns
    (batch, H, n, r): head h's query times head h's key block.
    """
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W = kv_b_weight.reshape(H, d_nope + d_v, -1)  # (H, d_nope + d_v, r)
    W_uk = W[:, :d_nope, :]                        # (H, d_nope, r)
    return q_nope @ W_uk                           # (batch, H, n, r)
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-head-layout]
# rejected with: for each head in turn
def absorb_key_packed(q_nope, kv_b_weight, d_v):
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W_uk = kv_b_weight[:H * d_nope].reshape(H, d_nope, -1)  # keys first, all heads
    return q_nope @ W_uk
# --8<-- [end:ex1-wrong-head-layout]


# --8<-- [start:ex1-wrong-summed-heads]
# rejected with: each head keeps its own
def absorb_key_packed(q_nope, kv_b_weight, d_v):
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W_uk = kv_b_weight.reshape(H, d_nope + d_v, -1)[:, :d_nope, :]
    summed = (q_nope @ W_uk).sum(axis=-3, keepdims=True)
    return np.broadcast_to(summed, q_nope.shape[:-1] + (W_uk.shape[-1],))
# --8<-- [end:ex1-wrong-summed-heads]


# --8<-- [start:ex1-wrong-scaled]
# rejected with: no scale here
def absorb_key_packed(q_nope, kv_b_weight, d_v):
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W_uk = kv_b_weight.reshape(H, d_nope + d_v, -1)[:, :d_nope, :]
    return q_nope @ W_uk / np.sqrt(d_nope)
# --8<-- [end:ex1-wrong-scaled]


# --8<-- [start:ex1-wrong-value-rows]
# rejected with: its d_nope key rows come first
def absorb_key_packed(q_nope, kv_b_weight, d_v):
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W = kv_b_weight.reshape(H, d_nope + d_v, -1)
    return q_nope @ W[:, d_v:, :]  # the last d_nope rows of each head
# --8<-- [end:ex1-wrong-value-rows]


# --8<-- [start:ex2-starter]
def latent_cache_bytes(config, n_tokens, bytes_per_value=2):
    """Bytes of MLA's cache for n_tokens tokens of one sequence, for a
    ModelConfig of arch "deepseek_v3"."""
    # Your code: what does each token leave in each layer?
    return 0
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def latent_cache_bytes(config, n_tokens, bytes_per_value=2):
    """Bytes of MLA's cache for n_tokens tokens of one sequence, for a
    ModelConfig of arch "deepseek_v3"."""
    c = config
    per_layer = c.kv_lora_rank + c.qk_rope_head_dim  # latent, shared key
    return c.n_layers * per_layer * n_tokens * bytes_per_value
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-no-rope]
# rejected with: the shared rotated key
def latent_cache_bytes(config, n_tokens, bytes_per_value=2):
    c = config
    return c.n_layers * c.kv_lora_rank * n_tokens * bytes_per_value
# --8<-- [end:ex2-wrong-no-rope]


# --8<-- [start:ex2-wrong-keys-and-values]
# rejected with: one latent, not a key and a value
def latent_cache_bytes(config, n_tokens, bytes_per_value=2):
    c = config
    per_layer = 2 * (c.kv_lora_rank + c.qk_rope_head_dim)
    return c.n_layers * per_layer * n_tokens * bytes_per_value
# --8<-- [end:ex2-wrong-keys-and-values]


# --8<-- [start:ex2-wrong-per-head]
# rejected with: shared by every head
def latent_cache_bytes(config, n_tokens, bytes_per_value=2):
    c = config
    per_layer = c.kv_lora_rank + c.n_heads * c.qk_rope_head_dim
    return c.n_layers * per_layer * n_tokens * bytes_per_value
# --8<-- [end:ex2-wrong-per-head]


# --8<-- [start:ex3-starter]
def capped_softmax_grad(g, s, cap):
    """∂ℒ/∂s from g = ∂ℒ/∂p, for p = softmax(cap * tanh(s / cap)) along
    the last axis."""
    # Your code: this is the softmax's backward alone, at the capped p.
    p = softmax(cap * np.tanh(s / cap), axis=-1)
    return p * (g - np.sum(g * p, axis=-1, keepdims=True))
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def capped_softmax_grad(g, s, cap):
    """∂ℒ/∂s from g = ∂ℒ/∂p, for p = softmax(cap * tanh(s / cap)) along
    the last axis."""
    t = np.tanh(s / cap)
    p = softmax(cap * t, axis=-1)
    d_capped = p * (g - np.sum(g * p, axis=-1, keepdims=True))
    return d_capped * (1.0 - t * t)    # the cap's own derivative
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-not-squared]
# rejected with: 1 - tanh² of s / cap
def capped_softmax_grad(g, s, cap):
    t = np.tanh(s / cap)
    p = softmax(cap * t, axis=-1)
    return p * (g - np.sum(g * p, axis=-1, keepdims=True)) * (1.0 - t)
# --8<-- [end:ex3-wrong-not-squared]


# --8<-- [start:ex3-wrong-uncapped-p]
# rejected with: the capped scores
def capped_softmax_grad(g, s, cap):
    t = np.tanh(s / cap)
    p = softmax(s, axis=-1)
    return p * (g - np.sum(g * p, axis=-1, keepdims=True)) * (1.0 - t * t)
# --8<-- [end:ex3-wrong-uncapped-p]


# --8<-- [start:ex3-wrong-times-cap]
# rejected with: no factor cap
def capped_softmax_grad(g, s, cap):
    t = np.tanh(s / cap)
    p = softmax(cap * t, axis=-1)
    return p * (g - np.sum(g * p, axis=-1, keepdims=True)) * cap * (1 - t * t)
# --8<-- [end:ex3-wrong-times-cap]


# --8<-- [start:ex4-starter]
def top_k_router(logits, k):
    """Gates (..., n_experts) from router logits (..., n_experts): the
    softmax probabilities of each token's k most probable experts,
    renormalised to sum to one; zero for the other experts."""
    # Your code: this weighs every expert by its probability.
    return softmax(logits, axis=-1)
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def top_k_router(logits, k):
    """Gates (..., n_experts) from router logits (..., n_experts): the
    softmax probabilities of each token's k most probable experts,
    renormalised to sum to one; zero for the other experts."""
    p = softmax(logits, axis=-1)                    # (..., n_experts)
    chosen = np.argsort(-p, axis=-1)[..., :k]       # (..., k)
    kept = np.take_along_axis(p, chosen, axis=-1)
    gates = np.zeros_like(p)
    np.put_along_axis(gates, chosen, kept / kept.sum(axis=-1, keepdims=True),
                      axis=-1)
    return gates
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-not-renormalised]
# rejected with: not renormalised
def top_k_router(logits, k):
    p = softmax(logits, axis=-1)
    chosen = np.argsort(-p, axis=-1)[..., :k]
    gates = np.zeros_like(p)
    np.put_along_axis(gates, chosen, np.take_along_axis(p, chosen, axis=-1),
                      axis=-1)
    return gates
# --8<-- [end:ex4-wrong-not-renormalised]


# --8<-- [start:ex4-wrong-least-probable]
# rejected with: least probable
def top_k_router(logits, k):
    p = softmax(logits, axis=-1)
    chosen = np.argsort(p, axis=-1)[..., :k]
    kept = np.take_along_axis(p, chosen, axis=-1)
    gates = np.zeros_like(p)
    np.put_along_axis(gates, chosen, kept / kept.sum(axis=-1, keepdims=True),
                      axis=-1)
    return gates
# --8<-- [end:ex4-wrong-least-probable]


# --8<-- [start:ex4-wrong-over-tokens]
# rejected with: over the tokens
def top_k_router(logits, k):
    p = softmax(logits, axis=0)
    chosen = np.argsort(-p, axis=-1)[..., :k]
    kept = np.take_along_axis(p, chosen, axis=-1)
    gates = np.zeros_like(p)
    np.put_along_axis(gates, chosen, kept / kept.sum(axis=-1, keepdims=True),
                      axis=-1)
    return gates
# --8<-- [end:ex4-wrong-over-tokens]


# --8<-- [start:ex5-starter]
def masked_balancing_loss(router_logits, k, mask):
    """n_experts * sum_e f_e P_e over the real tokens of a padded batch:
    router_logits (batch, seq, n_experts), mask (batch, seq), True for a
    real token. f_e: top-k assignments to expert e per real token; P_e:
    the mean softmax probability of expert e over the real tokens."""
    # Your code: this is the loss of a perfectly even router, whatever k.
    return float(k)
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def masked_balancing_loss(router_logits, k, mask):
    """n_experts * sum_e f_e P_e over the real tokens of a padded batch:
    router_logits (batch, seq, n_experts), mask (batch, seq), True for a
    real token. f_e: top-k assignments to expert e per real token; P_e:
    the mean softmax probability of expert e over the real tokens."""
    z = router_logits[mask]                         # (real tokens, n_experts)
    z = z - z.max(axis=-1, keepdims=True)           # no overflow
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    n_tokens, n_experts = p.shape
    chosen = np.argsort(-p, axis=-1)[:, :k]         # (tokens, k)
    f = np.bincount(chosen.ravel(), minlength=n_experts) / n_tokens
    return n_experts * np.sum(f * p.mean(axis=0))
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-padding-counted]
# rejected with: the padding
def masked_balancing_loss(router_logits, k, mask):
    z = router_logits.reshape(-1, router_logits.shape[-1])  # every position
    z = z - z.max(axis=-1, keepdims=True)           # no overflow
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    n_tokens, n_experts = p.shape
    chosen = np.argsort(-p, axis=-1)[:, :k]         # (tokens, k)
    f = np.bincount(chosen.ravel(), minlength=n_experts) / n_tokens
    return n_experts * np.sum(f * p.mean(axis=0))
# --8<-- [end:ex5-wrong-padding-counted]


# --8<-- [start:ex5-wrong-p-over-all]
# rejected with: P_e too
def masked_balancing_loss(router_logits, k, mask):
    every = router_logits.reshape(-1, router_logits.shape[-1])
    e = np.exp(every - every.max(axis=-1, keepdims=True))
    p_all = e / e.sum(axis=-1, keepdims=True)       # pads included
    p = p_all[mask.ravel()]
    n_tokens, n_experts = p.shape
    chosen = np.argsort(-p, axis=-1)[:, :k]
    f = np.bincount(chosen.ravel(), minlength=n_experts) / n_tokens
    return n_experts * np.sum(f * p_all.mean(axis=0))
# --8<-- [end:ex5-wrong-p-over-all]


# --8<-- [start:ex5-wrong-every-position]
# rejected with: every position
def masked_balancing_loss(router_logits, k, mask):
    z = router_logits[mask]
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    n_experts = p.shape[-1]
    chosen = np.argsort(-p, axis=-1)[:, :k]
    n = mask.size  # divides by every position, pads included
    f = np.bincount(chosen.ravel(), minlength=n_experts) / n
    return n_experts * np.sum(f * p.sum(axis=0) / n)
# --8<-- [end:ex5-wrong-every-position]


# --8<-- [start:ex5-wrong-no-n-experts]
# rejected with: not multiplied by n_experts
def masked_balancing_loss(router_logits, k, mask):
    z = router_logits[mask]                         # (real tokens, n_experts)
    z = z - z.max(axis=-1, keepdims=True)           # no overflow
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    n_tokens, n_experts = p.shape
    chosen = np.argsort(-p, axis=-1)[:, :k]         # (tokens, k)
    f = np.bincount(chosen.ravel(), minlength=n_experts) / n_tokens
    return np.sum(f * p.mean(axis=0))
# --8<-- [end:ex5-wrong-no-n-experts]


# --8<-- [start:ex5-wrong-per-assignment]
# rejected with: f was divided by tokens * k
def masked_balancing_loss(router_logits, k, mask):
    z = router_logits[mask]                         # (real tokens, n_experts)
    z = z - z.max(axis=-1, keepdims=True)           # no overflow
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    n_tokens, n_experts = p.shape
    chosen = np.argsort(-p, axis=-1)[:, :k]         # (tokens, k)
    f = np.bincount(chosen.ravel(), minlength=n_experts) / (n_tokens * k)
    return n_experts * np.sum(f * p.mean(axis=0))
# --8<-- [end:ex5-wrong-per-assignment]


# --8<-- [start:ex5-wrong-unshifted]
# rejected with: overflowed
def masked_balancing_loss(router_logits, k, mask):
    z = router_logits[mask]
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)  # exp(1000) is inf
    n_tokens, n_experts = p.shape
    chosen = np.argsort(-p, axis=-1)[:, :k]
    f = np.bincount(chosen.ravel(), minlength=n_experts) / n_tokens
    return n_experts * np.sum(f * p.mean(axis=0))
# --8<-- [end:ex5-wrong-unshifted]


# --8<-- [start:ex2-wrong-default-one-byte]
# rejected with: left to its default
def latent_cache_bytes(config, n_tokens, bytes_per_value=1):
    """Bytes of MLA's cache for n_tokens tokens of one sequence, for a
    ModelConfig of arch "deepseek_v3"."""
    c = config
    per_layer = c.kv_lora_rank + c.qk_rope_head_dim  # latent, shared key
    return c.n_layers * per_layer * n_tokens * bytes_per_value
# --8<-- [end:ex2-wrong-default-one-byte]


# --8<-- [start:ex2-wrong-int32]
# rejected with: Not yet
def latent_cache_bytes(config, n_tokens, bytes_per_value=2):
    """Bytes of MLA's cache for n_tokens tokens of one sequence, for a
    ModelConfig of arch "deepseek_v3"."""
    c = config
    per_layer = c.kv_lora_rank + c.qk_rope_head_dim  # latent, shared key
    return int(np.int32(c.n_layers) * np.int32(per_layer) * np.int32(n_tokens)
               * np.int32(bytes_per_value))
# --8<-- [end:ex2-wrong-int32]


# --8<-- [start:ex3-wrong-uninitialised]
# rejected with: Not yet
def capped_softmax_grad(g, s, cap):
    return np.empty_like(s)  # whatever memory held last
# --8<-- [end:ex3-wrong-uninitialised]


# --8<-- [start:ex6-starter]
def dispatch(indices, n_experts, capacity):
    """Each token's place in its experts' buffers, or -1 if it is dropped.

    indices (tokens, k): the experts each token chose, k different ones.
    Every expert takes at most `capacity` tokens. Choices are served
    slot by slot (every token's first choice before any second choice),
    in token order within a slot. Returns positions (tokens, k) of
    integers: how many served choices of the same expert came before,
    -1 where that count reaches the capacity.
    """
    # Your code: this numbers every expert's choices from 0, in token
    # order, and drops no one.
    positions = np.zeros(indices.shape, dtype=np.int64)
    for e in range(n_experts):
        chosen = indices == e
        positions[chosen] = np.arange(chosen.sum())
    return positions
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def dispatch(indices, n_experts, capacity):
    """Each token's place in its experts' buffers, or -1 if it is dropped.

    indices (tokens, k): the experts each token chose, k different ones.
    Every expert takes at most `capacity` tokens. Choices are served
    slot by slot (every token's first choice before any second choice),
    in token order within a slot. Returns positions (tokens, k) of
    integers: how many served choices of the same expert came before,
    -1 where that count reaches the capacity.
    """
    tokens, k = indices.shape
    order = indices.T.reshape(-1)               # slot by slot, tokens in order
    rank = np.argsort(order, kind="stable")     # grouped by expert, order kept
    counts = np.bincount(order, minlength=n_experts)
    starts = np.cumsum(counts) - counts  # where each expert's group begins
    position = np.empty(order.size, dtype=np.int64)
    position[rank] = np.arange(order.size) - starts[order[rank]]
    position = np.where(position < capacity, position, -1)
    return position.reshape(k, tokens).T
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-token-by-token]
# rejected with: first choice
def dispatch(indices, n_experts, capacity):
    tokens, k = indices.shape
    order = indices.reshape(-1)                 # token by token
    rank = np.argsort(order, kind="stable")     # grouped by expert, order kept
    counts = np.bincount(order, minlength=n_experts)
    starts = np.cumsum(counts) - counts  # where each expert's group begins
    position = np.empty(order.size, dtype=np.int64)
    position[rank] = np.arange(order.size) - starts[order[rank]]
    position = np.where(position < capacity, position, -1)
    return position.reshape(tokens, k)
# --8<-- [end:ex6-wrong-token-by-token]


# --8<-- [start:ex6-wrong-capacity-plus-one]
# rejected with: capacity
def dispatch(indices, n_experts, capacity):
    tokens, k = indices.shape
    order = indices.T.reshape(-1)               # slot by slot, tokens in order
    rank = np.argsort(order, kind="stable")     # grouped by expert, order kept
    counts = np.bincount(order, minlength=n_experts)
    starts = np.cumsum(counts) - counts  # where each expert's group begins
    position = np.empty(order.size, dtype=np.int64)
    position[rank] = np.arange(order.size) - starts[order[rank]]
    position = np.where(position <= capacity, position, -1)
    return position.reshape(k, tokens).T
# --8<-- [end:ex6-wrong-capacity-plus-one]


# --8<-- [start:ex6-wrong-no-drop]
# rejected with: capacity
def dispatch(indices, n_experts, capacity):
    tokens, k = indices.shape
    order = indices.T.reshape(-1)               # slot by slot, tokens in order
    rank = np.argsort(order, kind="stable")     # grouped by expert, order kept
    counts = np.bincount(order, minlength=n_experts)
    starts = np.cumsum(counts) - counts  # where each expert's group begins
    position = np.empty(order.size, dtype=np.int64)
    position[rank] = np.arange(order.size) - starts[order[rank]]
    return position.reshape(k, tokens).T
# --8<-- [end:ex6-wrong-no-drop]


# --8<-- [start:ex6-wrong-one-count-for-all]
# rejected with: counts only its own
def dispatch(indices, n_experts, capacity):
    tokens, k = indices.shape
    order = indices.T.reshape(-1)               # slot by slot, tokens in order
    rank = np.argsort(order, kind="stable")     # grouped by expert, order kept
    counts = np.bincount(order, minlength=n_experts)
    starts = np.cumsum(counts) - counts  # where each expert's group begins
    position = np.empty(order.size, dtype=np.int64)
    position[:] = np.arange(order.size)        # one count for all experts
    position = np.where(position < capacity, position, -1)
    return position.reshape(k, tokens).T
# --8<-- [end:ex6-wrong-one-count-for-all]


# --8<-- [start:ex6-wrong-float-positions]
# rejected with: integers
def dispatch(indices, n_experts, capacity):
    tokens, k = indices.shape
    order = indices.T.reshape(-1)               # slot by slot, tokens in order
    rank = np.argsort(order, kind="stable")     # grouped by expert, order kept
    counts = np.bincount(order, minlength=n_experts)
    starts = np.cumsum(counts) - counts  # where each expert's group begins
    position = np.empty(order.size, dtype=float)
    position[rank] = np.arange(order.size) - starts[order[rank]]
    position = np.where(position < capacity, position, -1)
    return position.reshape(k, tokens).T
# --8<-- [end:ex6-wrong-float-positions]
