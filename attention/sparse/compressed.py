"""DeepSeek-V4's compressed cache: one entry for every m tokens, pooled by a learned gate.

DeepSeek-AI, "DeepSeek-V4" (2026), section 2.3, as Hugging Face's ``DeepseekV4HCACompressor``
and ``DeepseekV4CSACompressor`` compute it. Each attention layer keeps a window of the
last tokens' keys (one head, and the key is also the value) and, beside it, compressed
entries that stand for whole blocks of the past:

- heavily compressed attention (HCA): every m' = 128 tokens become one entry, the
  softmax-gated sum of the block's projected tokens, per channel:
  C_w = sum_j softmax_j(Z_j + B_j) * C_j over the block's j, with Z = x W_gate,
  C = x W_kv and a learned bias B per place in the block;
- compressed sparse attention (CSA): every m = 4 tokens make one entry, from two
  overlapping series: each token projects to 2d features, Ca (first d) and Cb (last d);
  entry w pools block w's Cb together with block w - 1's Ca, 2m slots, so neighbouring
  entries share information. A lightning indexer (``attention.sparse.indexer``'s score,
  on compressed keys of its own) then picks the top_k entries each query reads.

An entry is RMS-normalised and its last qk_rope_head_dim features are rotated (RoPE,
interleaved pairs) at the position of its block's first token. A query may read entry w
only once the whole block is in its past: w < (t + 1) // m for a query at position t.
"""

# --8<-- [start:imports]
import numpy as np

from attention.norms import rms_norm
from attention.positions import rope
from attention.sparse.indexer import index_scores, top_k_keys
# --8<-- [end:imports]


def _check_pool(fn, kv, gate, bias, m, width):
    """kv, gate (batch, n, f) alike, bias (m, f), f = width x d; m >= 1."""
    kv, gate, bias = np.asarray(kv), np.asarray(gate), np.asarray(bias)
    if (isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer))
            or m < 1):
        raise ValueError(f"{fn}: m must be a positive integer, got {m!r}")
    if (kv.ndim != 3 or gate.shape != kv.shape or kv.shape[-1] % width
            or bias.shape != (m, kv.shape[-1])):
        raise ValueError(f"{fn}: kv and gate must be (batch, n, {width} d) "
                         f"and bias (m, {width} d) with m = {m}; got kv "
                         f"{kv.shape}, gate {gate.shape}, bias {bias.shape}")
    return kv, gate, bias


def _blocks(a, m):
    """The complete blocks of m tokens: a (batch, n, f) -> (batch, n // m,
    m, f); the tokens of an unfinished block wait for the next call."""
    batch, n, f = a.shape
    used = n // m * m
    return a[:, :used].reshape(batch, n // m, m, f)  # (b, blocks, m, f)


def _gated_sum(values, gates):
    """Per channel, a softmax over the block's slots: (..., slots, d)."""
    gates = gates - gates.max(axis=-2, keepdims=True)
    weights = np.exp(gates)
    weights /= weights.sum(axis=-2, keepdims=True)
    return (weights * values).sum(axis=-2)  # (..., d)


# --8<-- [start:pool]
def pool_blocks(kv, gate, bias, m):
    """HCA's pooling: one entry per complete block of m tokens.

    kv, gate: (batch, n, d) projections of the tokens; bias: (m, d), a
    gate bias per place in the block. Returns (batch, n // m, d).
    """
    kv, gate, bias = _check_pool("pool_blocks", kv, gate, bias, m, 1)
    return _gated_sum(_blocks(kv, m), _blocks(gate, m) + bias)


def pool_overlapping(kv, gate, bias, m):
    """CSA's pooling: entry w from block w's second series and block
    w - 1's first, 2m slots (block 0: its own m only).

    kv, gate: (batch, n, 2d), the series Ca = [..., :d], Cb = [..., d:];
    bias: (m, 2d). Returns (batch, n // m, d).
    """
    kv, gate, bias = _check_pool("pool_overlapping", kv, gate, bias, m, 2)
    d = kv.shape[-1] // 2
    kv, gate = _blocks(kv, m), _blocks(gate, m) + bias  # (b, w, m, 2d)
    before_kv = np.zeros_like(kv[..., :d])                # (b, w, m, d)
    before_gate = np.full_like(gate[..., :d], -np.inf)    # weight 0
    before_kv[:, 1:] = kv[:, :-1, :, :d]          # block w - 1's Ca
    before_gate[:, 1:] = gate[:, :-1, :, :d]
    slots_kv = np.concatenate([before_kv, kv[..., d:]], axis=-2)  # 2m slots
    slots_gate = np.concatenate([before_gate, gate[..., d:]], axis=-2)
    return _gated_sum(slots_kv, slots_gate)
# --8<-- [end:pool]


# --8<-- [start:compress]
def compress(x, p, *, m, overlapping, d_rope, rope_base, eps, state=None,
             rope_scaling=None):
    """A layer's compressed entries for tokens x (batch, n, d_model).

    p: W_kv, W_gate (d_model, d or 2d), bias (m, d or 2d), norm (d,).
    The pooled entries are RMS-normalised, then their last d_rope
    features rotated, interleaved, at their block's first position.
    Returns (batch, n // m, d). state: a dict kept between calls (the
    model's cache; empty before the first): x then follows the tokens
    of the earlier calls, and all their entries come back. rope_scaling:
    a chapter-8 RopeScaling (DeepSeek-V4's YaRN), or None.
    """
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[-1] != np.shape(p["W_kv"])[0]:
        raise ValueError(f"compress: x must be (batch, n, d_model) with "
                         f"d_model = {np.shape(p['W_kv'])[0]} (W_kv's rows), "
                         f"got {x.shape}")
    kv, gate = x @ p["W_kv"], x @ p["W_gate"]
    state = {} if state is None else state
    if state:  # the unfinished block (CSA: and the last whole one) first
        kv = np.concatenate([state["kv"], kv], axis=1)
        gate = np.concatenate([state["gate"], gate], axis=1)
    carried, done = state.get("carried", 0), state.get("done", 0)
    pool = pool_overlapping if overlapping else pool_blocks
    pooled = pool(kv, gate, p["bias"], m)[:, carried:]  # the new entries
    entries = rms_norm(pooled, p["norm"], eps=eps)
    positions = (done + np.arange(entries.shape[1])) * m  # blocks' starts
    rotated = rope(entries[..., -d_rope:], positions, base=rope_base,
                   layout="interleaved", scaling=rope_scaling)
    entries = np.concatenate([entries[..., :-d_rope], rotated], axis=-1)
    if "entries" in state:
        entries = np.concatenate([state["entries"], entries], axis=1)
    # Keep what the next call pools: CSA's last whole block (its first
    # series joins the next entry) and the unfinished one.
    blocks = kv.shape[1] // m
    carried = int(overlapping and blocks > 0)
    keep = (blocks - carried) * m
    state.update(kv=kv[:, keep:], gate=gate[:, keep:], carried=carried,
                 done=entries.shape[1], entries=entries)
    return entries


def visible_entries(query_positions, n_entries, m):
    """Which entries each query may read, (n_q, n_entries): entry w
    once its whole block is past, w < (t + 1) // m."""
    ready = (np.asarray(query_positions) + 1) // m          # (n_q,)
    return np.arange(n_entries)[None, :] < ready[:, None]
# --8<-- [end:compress]


# --8<-- [start:csa_select]
def csa_select(q, w, index_keys, query_positions, m, top_k):
    """CSA's choice: the lightning indexer over compressed keys.

    q: (batch, n_q, heads, d_index) rotated queries; w: (batch, n_q,
    heads) weights (already scaled by heads ** -0.5); index_keys: (batch,
    n_entries, d_index), the indexer's own compressed keys. Returns
    (batch, n_q, n_entries) booleans: the entries each query reads.
    """
    scores = index_scores(q, w, index_keys)
    allowed = visible_entries(query_positions, index_keys.shape[1], m)
    indices, kept = top_k_keys(scores, top_k, allowed[None])
    chosen = np.zeros(scores.shape, bool)
    np.put_along_axis(chosen, indices, kept, axis=-1)
    return chosen
# --8<-- [end:csa_select]
