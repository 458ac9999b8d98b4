"""Practice exercises of chapter 2: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and tests/practice/test_exercises.py runs each section on its own (after the
`imports` section) through its self-check. Starter and solution define the same name on
purpose: the reader replaces the one with the other. Sections `exN-wrong-<what>` are
plausible wrong answers the check must reject (never shown on a page).
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention import softmax
from attention.practice.ch02 import (
    check_attention_weights,
    check_biased_attention,
    check_causal_mask,
    check_gqa_attention,
    check_masked_attention,
    check_multi_head_scale,
    check_padding_mask,
    check_split_qkv,
)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def attention_weights(q, k, mask=None):
    """softmax(q kᵀ / √d_k) over the last two axes; mask (True = may attend)
    gives blocked keys weight 0, and a row with no key allowed is all 0."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    # Your code: the mask, and rows where it allows no key at all.
    return softmax(scores, axis=-1)
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def attention_weights(q, k, mask=None):
    """softmax(q kᵀ / √d_k) over the last two axes; mask (True = may attend)
    gives blocked keys weight 0, and a row with no key allowed is all 0."""
    # (..., n_q, n_k)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is None:
        return softmax(scores, axis=-1)
    scores = np.where(mask, scores, -np.inf)  # blocked keys: exp(-inf) = 0
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # a row of -inf: shift by 0, not nan
    e = np.exp(scores - m)
    total = np.sum(e, axis=-1, keepdims=True)
    # A row with no key allowed sums to 0: all weights 0, as PyTorch's SDPA.
    return e / np.where(total > 0, total, 1.0)
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def make_padding_mask(batch, pad="<pad>"):
    """Boolean mask, True = a real token (not pad), for a batch of token
    lists of equal length, padded on either side, that broadcasts against
    scores of shape (batch, heads, n_q, n_k)."""
    # Your code: this returns nothing yet.
    return None
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def make_padding_mask(batch, pad="<pad>"):
    """Boolean mask, True = a real token (not pad), for a batch of token
    lists of equal length, padded on either side, that broadcasts against
    scores of shape (batch, heads, n_q, n_k)."""
    real = np.array([[token != pad for token in seq] for seq in batch])
    # real is (batch, n_k); broadcasting aligns the LAST axes, so give it
    # axes of size 1 for heads and queries: (batch, 1, 1, n_k).
    return real[:, None, None, :]
# --8<-- [end:ex2-solution]



# --8<-- [start:ex3-starter]
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    """Attention of q (batch, heads, n_q, d) over k, v (batch, heads, n_k,
    d) with nn.MultiheadAttention's boolean masks, True = blocked:
    attn_mask (n_q, n_k) for every sequence, key_padding_mask (batch, n_k)
    for the keys of each sequence."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    # Your code: no mask is applied yet.
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    """Attention of q (batch, heads, n_q, d) over k, v (batch, heads, n_k,
    d) with nn.MultiheadAttention's boolean masks, True = blocked:
    attn_mask (n_q, n_k) for every sequence, key_padding_mask (batch, n_k)
    for the keys of each sequence."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    padded = key_padding_mask[:, None, None, :]  # (batch, 1, 1, n_k)
    blocked = attn_mask | padded  # blocked by either
    scores = np.where(blocked, -np.inf, scores)
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex3-solution]


# --8<-- [start:ex4-starter]
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    """Multi-head self-attention of x (n, d_model). One line has a bug."""
    n, d_model = x.shape
    d_head = d_model // n_heads
    q = (x @ W_q).reshape(n, n_heads, d_head)  # (n, h, d_head)
    q = q.transpose(1, 0, 2)  # (h, n, d_head)
    k = (x @ W_k).reshape(n, n_heads, d_head)  # (n, h, d_head)
    k = k.transpose(1, 0, 2)  # (h, n, d_head)
    v = (x @ W_v).reshape(n, n_heads, d_head)  # (n, h, d_head)
    v = v.transpose(1, 0, 2)  # (h, n, d_head)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(d_model)  # (h, n, n)
    out = softmax(scores, axis=-1) @ v  # (h, n, d_head)
    out = out.transpose(1, 0, 2).reshape(n, d_model)  # (n, d_model)
    return out @ W_o
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    """Multi-head self-attention of x (n, d_model)."""
    n, d_model = x.shape
    d_head = d_model // n_heads
    q = (x @ W_q).reshape(n, n_heads, d_head)  # (n, h, d_head)
    q = q.transpose(1, 0, 2)  # (h, n, d_head)
    k = (x @ W_k).reshape(n, n_heads, d_head)  # (n, h, d_head)
    k = k.transpose(1, 0, 2)  # (h, n, d_head)
    v = (x @ W_v).reshape(n, n_heads, d_head)  # (n, h, d_head)
    v = v.transpose(1, 0, 2)  # (h, n, d_head)
    # Each head compares vectors of length d_head: scale by that length.
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(d_head)  # (h, n, n)
    out = softmax(scores, axis=-1) @ v  # (h, n, d_head)
    out = out.transpose(1, 0, 2).reshape(n, d_model)  # (n, d_model)
    return out @ W_o
# --8<-- [end:ex4-solution]



# --8<-- [start:ex5-starter]
def split_qkv(x, n_heads, n_kv_heads):
    """Queries, keys and values from a fused projection, as Phi-3's
    qkv_proj gives them: x (..., n, (n_heads + 2 n_kv_heads) d_head), its
    features the queries' n_heads d_head, then the keys' n_kv_heads
    d_head, then the values'. Returns q (..., n_heads, n, d_head) and k, v
    (..., n_kv_heads, n, d_head), head h holding its own d_head features."""
    # Your code: this cuts the features in three equal parts, one head each.
    q, k, v = np.split(x, 3, axis=-1)
    return q[..., None, :, :], k[..., None, :, :], v[..., None, :, :]
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def split_qkv(x, n_heads, n_kv_heads):
    """Queries, keys and values from a fused projection, as Phi-3's
    qkv_proj gives them: x (..., n, (n_heads + 2 n_kv_heads) d_head), its
    features the queries' n_heads d_head, then the keys' n_kv_heads
    d_head, then the values'. Returns q (..., n_heads, n, d_head) and k, v
    (..., n_kv_heads, n, d_head), head h holding its own d_head features."""
    *lead, n, width = x.shape
    d_head = width // (n_heads + 2 * n_kv_heads)
    q_end, k_end = n_heads * d_head, (n_heads + n_kv_heads) * d_head

    def heads(part, h):  # (..., n, h d_head) -> (..., h, n, d_head)
        return np.swapaxes(part.reshape(*lead, n, h, d_head), -2, -3)

    q = heads(x[..., :q_end], n_heads)
    k = heads(x[..., q_end:k_end], n_kv_heads)
    return q, k, heads(x[..., k_end:], n_kv_heads)
# --8<-- [end:ex5-solution]


# --8<-- [start:ex6-starter]
def gqa_attention(q, k, v):
    """Grouped-query attention: q (B, h, n_q, d), k and v (B, h_kv, n_k, d);
    query heads g * group .. (g + 1) * group - 1 share key head g."""
    # Your code: k and v have fewer heads than q.
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def gqa_attention(q, k, v):
    """Grouped-query attention: q (B, h, n_q, d), k and v (B, h_kv, n_k, d);
    query heads g * group .. (g + 1) * group - 1 share key head g."""
    group = q.shape[-3] // k.shape[-3]  # query heads per key head
    # Each key head in place, `group` times: heads (0, 0, 1, 1),
    # not (0, 1, 0, 1).
    k = np.repeat(k, group, axis=-3)  # (B, h, n_k, d)
    v = np.repeat(v, group, axis=-3)  # (B, h, n_k, d)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex6-solution]


# --8<-- [start:ex7-starter]
def causal_mask(n_q, n_k):
    """(n_q, n_k) booleans, True = may attend; the n_q queries are the last
    n_q of the n_k tokens (a decoder's new tokens after its cache)."""
    # Your code: right when n_q == n_k only.
    return np.tril(np.ones((n_q, n_k), dtype=bool))
# --8<-- [end:ex7-starter]


# --8<-- [start:ex7-solution]
def causal_mask(n_q, n_k):
    """(n_q, n_k) booleans, True = may attend; the n_q queries are the last
    n_q of the n_k tokens (a decoder's new tokens after its cache)."""
    query_positions = np.arange(n_k - n_q, n_k)[:, None]  # (n_q, 1)
    key_positions = np.arange(n_k)[None, :]  # (1, n_k)
    return key_positions <= query_positions  # (n_q, n_k)
# --8<-- [end:ex7-solution]


# --8<-- [start:ex8-starter]
def biased_attention(q, k, v, bias):
    """Attention of q over k, v with a float bias (..., n_q, n_k) added to
    the scaled scores: -inf blocks a key, and a query whose bias blocks
    every key gets an all-zero output."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = scores + bias  # (..., n_q, n_k)
    # Your code: right until a row of the bias is all -inf.
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex8-starter]


# --8<-- [start:ex8-solution]
def biased_attention(q, k, v, bias):
    """Attention of q over k, v with a float bias (..., n_q, n_k) added to
    the scaled scores: -inf blocks a key, and a query whose bias blocks
    every key gets an all-zero output."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = scores + bias  # (..., n_q, n_k)
    m = np.max(scores, axis=-1, keepdims=True)  # (..., n_q, 1)
    m = np.where(np.isfinite(m), m, 0.0)  # a row of -inf: shift by 0
    e = np.exp(scores - m)  # the largest entry of a row is exp(0) = 1
    total = np.sum(e, axis=-1, keepdims=True)  # 0 on a row of -inf
    return e / np.where(total > 0, total, 1.0) @ v
# --8<-- [end:ex8-solution]


# Plausible wrong answers its check must reject (tests/practice/test_wrong_answers.py);
# never shown on the page.

# --8<-- [start:ex1-wrong-hard-coded-scale]
# rejected with: you divided by 4.0
def attention_weights(q, k, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / 4.0
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - np.max(np.where(np.isfinite(scores), scores, -1e300), -1, keepdims=True))
    return e / np.maximum(e.sum(-1, keepdims=True), 1e-300)
# --8<-- [end:ex1-wrong-hard-coded-scale]


# --8<-- [start:ex1-wrong-2d-only]
# rejected with: on q (2, 3, 5, 32)
def attention_weights(q, k, mask=None):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(m), m, 0.0))
    t = e.sum(-1, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
# --8<-- [end:ex1-wrong-2d-only]


# --8<-- [start:ex1-wrong-nan-rows]
# rejected with: its first row all False
def attention_weights(q, k, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1)
# --8<-- [end:ex1-wrong-nan-rows]


# --8<-- [start:ex1-wrong-d-k]
# rejected with: you divided by d_k
def attention_weights(q, k, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1]
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    return softmax(scores, axis=-1) * (True if mask is None else mask.any(-1, keepdims=True))
# --8<-- [end:ex1-wrong-d-k]


# --8<-- [start:ex2-wrong-no-broadcast-axes]
# rejected with: lines up the LAST axes
def make_padding_mask(batch, pad="<pad>"):
    return np.array([[t != pad for t in seq] for seq in batch])
# --8<-- [end:ex2-wrong-no-broadcast-axes]


# --8<-- [start:ex2-wrong-query-axis]
# rejected with: attends to <pad>
def make_padding_mask(batch, pad="<pad>"):
    return np.array([[t != pad for t in seq] for seq in batch])[:, None, :, None]
# --8<-- [end:ex2-wrong-query-axis]


# --8<-- [start:ex2-wrong-integers]
# rejected with: dtype int64
def make_padding_mask(batch, pad="<pad>"):
    return np.array([[int(t != pad) for t in seq] for seq in batch])[:, None, None, :]
# --8<-- [end:ex2-wrong-integers]


# --8<-- [start:ex2-wrong-fixed-pad]
# rejected with: the pad token is '[PAD]' here
def make_padding_mask(batch, pad="<pad>"):
    return np.array([[t != "<pad>" for t in seq] for seq in batch])[:, None, None, :]
# --8<-- [end:ex2-wrong-fixed-pad]


# --8<-- [start:ex2-wrong-right-padding-only]
# rejected with: attends to [PAD]
def make_padding_mask(batch, pad="<pad>"):
    lengths = np.array([sum(t != pad for t in seq) for seq in batch])
    n = len(batch[0])  # the first `length` tokens are real: right padding only
    return (np.arange(n)[None, :] < lengths[:, None])[:, None, None, :]
# --8<-- [end:ex2-wrong-right-padding-only]


# --8<-- [start:ex3-wrong-blocks-the-allowed]
# rejected with: read the other way round
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    allowed = attn_mask & key_padding_mask[:, None, None, :]  # True = may attend
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex3-wrong-blocks-the-allowed]


# --8<-- [start:ex3-wrong-multiplies]
# rejected with: on q (2, 3, 4, 8)
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    keep = ~(attn_mask | key_padding_mask[:, None, None, :])
    return softmax(scores * keep, axis=-1) @ v
# --8<-- [end:ex3-wrong-multiplies]


# --8<-- [start:ex3-wrong-zeroes-after]
# rejected with: on q (2, 3, 4, 8)
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    keep = ~(attn_mask | key_padding_mask[:, None, None, :])
    return (softmax(scores, axis=-1) * keep) @ v
# --8<-- [end:ex3-wrong-zeroes-after]


# --8<-- [start:ex3-wrong-no-padding]
# rejected with: the key padding mask is ignored
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return softmax(np.where(attn_mask, -np.inf, scores), axis=-1) @ v
# --8<-- [end:ex3-wrong-no-padding]


# --8<-- [start:ex3-wrong-both-needed]
# rejected with: when either mask blocks it
def masked_attention(q, k, v, attn_mask, key_padding_mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    blocked = attn_mask & key_padding_mask[:, None, None, :]
    return softmax(np.where(blocked, -np.inf, scores), axis=-1) @ v
# --8<-- [end:ex3-wrong-both-needed]


# --8<-- [start:ex4-wrong-no-scaling]
# rejected with: even with one head
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    n, d_model = x.shape
    d_head = d_model // n_heads
    q, k, v = ((x @ W).reshape(n, n_heads, d_head).transpose(1, 0, 2) for W in (W_q, W_k, W_v))
    out = softmax(q @ k.transpose(0, 2, 1), axis=-1) @ v
    return out.transpose(1, 0, 2).reshape(n, d_model) @ W_o
# --8<-- [end:ex4-wrong-no-scaling]


# --8<-- [start:ex4-wrong-merge]
# rejected with: one head matches
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    n, d_model = x.shape
    d_head = d_model // n_heads
    q, k, v = ((x @ W).reshape(n, n_heads, d_head).transpose(1, 0, 2) for W in (W_q, W_k, W_v))
    out = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d_head), axis=-1) @ v
    return out.reshape(n, d_model) @ W_o
# --8<-- [end:ex4-wrong-merge]


# --8<-- [start:ex4-wrong-fixed-four-heads]
# rejected with: even with one head
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    n, d_model = x.shape
    d_head = d_model // n_heads
    q, k, v = ((x @ W).reshape(n, n_heads, d_head).transpose(1, 0, 2) for W in (W_q, W_k, W_v))
    out = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d_model / 4), axis=-1) @ v
    return out.transpose(1, 0, 2).reshape(n, d_model) @ W_o
# --8<-- [end:ex4-wrong-fixed-four-heads]


# --8<-- [start:ex5-wrong-reshape-only]
# rejected with: mixes tokens into heads
def split_qkv(x, n_heads, n_kv_heads):
    *lead, n, width = x.shape
    d_head = width // (n_heads + 2 * n_kv_heads)
    q_end, k_end = n_heads * d_head, (n_heads + n_kv_heads) * d_head

    def heads(part, h):
        return part.reshape(*lead, h, n, d_head)  # straight to heads

    q = heads(x[..., :q_end], n_heads)
    k = heads(x[..., q_end:k_end], n_kv_heads)
    return q, k, heads(x[..., k_end:], n_kv_heads)
# --8<-- [end:ex5-wrong-reshape-only]


# --8<-- [start:ex5-wrong-equal-thirds]
# rejected with: equal thirds
def split_qkv(x, n_heads, n_kv_heads):
    *lead, n, width = x.shape
    d_head = width // (n_heads + 2 * n_kv_heads)
    q, k, v = np.split(x, 3, axis=-1)  # as if there were as many kv heads

    def heads(part):
        h = part.shape[-1] // d_head
        return np.swapaxes(part.reshape(*lead, n, h, d_head), -2, -3)

    return heads(q), heads(k), heads(v)
# --8<-- [end:ex5-wrong-equal-thirds]


# --8<-- [start:ex5-wrong-strided-heads]
# rejected with: its own d_head features
def split_qkv(x, n_heads, n_kv_heads):
    *lead, n, width = x.shape
    d_head = width // (n_heads + 2 * n_kv_heads)
    q_end, k_end = n_heads * d_head, (n_heads + n_kv_heads) * d_head

    def heads(part, h):  # head h takes every h-th feature
        return np.swapaxes(part.reshape(*lead, n, d_head, h), -1, -3).swapaxes(-1, -2)

    q = heads(x[..., :q_end], n_heads)
    k = heads(x[..., q_end:k_end], n_kv_heads)
    return q, k, heads(x[..., k_end:], n_kv_heads)
# --8<-- [end:ex5-wrong-strided-heads]


# --8<-- [start:ex6-wrong-tile]
# rejected with: np.tile cycles the key heads
def gqa_attention(q, k, v):
    group = q.shape[-3] // k.shape[-3]
    k, v = np.tile(k, (1, group, 1, 1)), np.tile(v, (1, group, 1, 1))
    return softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), axis=-1) @ v
# --8<-- [end:ex6-wrong-tile]


# --8<-- [start:ex6-wrong-first-head-only]
# rejected with: on 4 query heads sharing 2 key heads
def gqa_attention(q, k, v):
    k, v = k[:, :1], v[:, :1]
    return softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), axis=-1) @ v
# --8<-- [end:ex6-wrong-first-head-only]


# --8<-- [start:ex6-wrong-scale-by-group]
# rejected with: on 4 query heads sharing 2 key heads
def gqa_attention(q, k, v):
    group = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    return softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1] * group), axis=-1) @ v
# --8<-- [end:ex6-wrong-scale-by-group]


# --8<-- [start:ex7-wrong-top-left]
# rejected with: sits at position n_k - n_q + i
def causal_mask(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool))
# --8<-- [end:ex7-wrong-top-left]


# --8<-- [start:ex7-wrong-off-by-one]
# rejected with: for n_q = 4 and n_k = 4
def causal_mask(n_q, n_k):
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q - 1)
# --8<-- [end:ex7-wrong-off-by-one]


# --8<-- [start:ex7-wrong-integers]
# rejected with: it must be boolean
def causal_mask(n_q, n_k):
    return np.tril(np.ones((n_q, n_k)), k=n_k - n_q)
# --8<-- [end:ex7-wrong-integers]


# --8<-- [start:ex8-wrong-nan-rows]
# rejected with: gives nan
def biased_attention(q, k, v, bias):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + bias
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex8-wrong-nan-rows]


# --8<-- [start:ex8-wrong-before-scale]
# rejected with: before dividing by √d_k
def biased_attention(q, k, v, bias):
    scores = (q @ np.swapaxes(k, -1, -2) + bias) / math.sqrt(q.shape[-1])
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(m), m, 0.0))
    t = e.sum(-1, keepdims=True)
    return e / np.where(t > 0, t, 1.0) @ v
# --8<-- [end:ex8-wrong-before-scale]


# --8<-- [start:ex8-wrong-as-boolean]
# rejected with: only the -inf entries of the bias count
def biased_attention(q, k, v, bias):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(np.isneginf(bias), -np.inf, scores)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(m), m, 0.0))
    t = e.sum(-1, keepdims=True)
    return e / np.where(t > 0, t, 1.0) @ v
# --8<-- [end:ex8-wrong-as-boolean]


# --8<-- [start:ex8-wrong-no-shift]
# rejected with: underflows to 0
def biased_attention(q, k, v, bias):
    e = np.exp(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + bias)
    t = e.sum(-1, keepdims=True)
    return e / np.where(t > 0, t, 1.0) @ v
# --8<-- [end:ex8-wrong-no-shift]


# --8<-- [start:ex8-wrong-weights-times-bias]
# rejected with: on q (4, 8), k (6, 8) and a (4, 6) bias
def biased_attention(q, k, v, bias):
    weights = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), axis=-1)
    return weights * np.exp(bias) @ v
# --8<-- [end:ex8-wrong-weights-times-bias]


# --8<-- [start:ex1-wrong-shift-by-minimum]
# rejected with: scores spread over thousands
def attention_weights(q, k, mask=None):
    """softmax(q kᵀ / √d_k) over the last two axes; mask (True = may attend)
    gives blocked keys weight 0, and a row with no key allowed is all 0."""
    # (..., n_q, n_k)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is None:
        return softmax(scores, axis=-1)
    scores = np.where(mask, scores, -np.inf)  # blocked keys: exp(-inf) = 0
    m = np.min(np.where(mask, scores, np.inf), axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # a row of -inf: shift by 0, not nan
    e = np.exp(scores - m)
    total = np.sum(e, axis=-1, keepdims=True)
    # A row with no key allowed sums to 0: all weights 0, as PyTorch's SDPA.
    return e / np.where(total > 0, total, 1.0)
# --8<-- [end:ex1-wrong-shift-by-minimum]


# --8<-- [start:ex1-wrong-uninitialised]
# rejected with: Not yet
def attention_weights(q, k, mask=None):
    shape = q.shape[:-1] + (k.shape[-2],)
    return np.empty(shape, q.dtype)  # whatever memory held last
# --8<-- [end:ex1-wrong-uninitialised]
