"""Attention over the keys the indexer chose: first with a mask, then by gathering them.

DeepSeek-AI, "DeepSeek-V3.2" (2025), section 2.1. Each query reads only the ``top_k``
keys that ``attention.sparse.indexer`` ranked highest. Two ways to compute the same
thing:

- ``masked_sparse_attention``, the simple one: full attention with every key the query
  did not choose masked out. It still builds the (n_q, n_k) score matrix, so it saves
  nothing; it is the definition, and it is how Hugging Face's eager path computes it.
- ``sparse_attention``, the fast one: gather the chosen keys and values, (n_q, top_k)
  of them, and attend over those only. A decoded token then reads top_k keys, not n.

``select_attention`` is the score rule ``"select"`` of ``attention.blocks.SCORE_RULES``:
a block passes ``select=Selection(...)`` to ``attend`` and the rule ranks the keys with
the indexer, keeps the causal and padding masks, and attends by gathering. The
``Selection`` receives the indexer's keys from the cache as the block's ``expand`` reads
them (``attention.families.deepseek_v32``), so the indexer's keys live in the same cache
as the latent they sit beside.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.blocks import SCORE_RULES
from attention.masks import causal_mask
from attention.scaled_dot_product import attention
from attention.sparse.indexer import index_scores, top_k_keys
# --8<-- [end:imports]


def check_selection(fn, q, k, v, indices, kept):
    """Shapes of the selection against q (..., H, n_q, d), k, v."""
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    indices, kept = np.asarray(indices), np.asarray(kept)
    ok = (q.ndim == 4 and k.ndim == 4 and v.shape[:-1] == k.shape[:-1]
          and k.shape[0] == q.shape[0] and k.shape[1] >= 1
          and q.shape[1] % k.shape[1] == 0 and q.shape[-1] == k.shape[-1]
          and indices.shape[:2] == (q.shape[0], q.shape[2])
          and indices.ndim == 3 and kept.shape == indices.shape
          and indices.dtype.kind in "iu" and kept.dtype == np.bool_)
    if not ok:
        raise ValueError(f"{fn}: q must be (batch, heads, n_q, d), k and v "
                         f"(batch, kv_heads, n_k, d) with kv_heads dividing "
                         f"heads, indices integers and kept "
                         f"booleans of shape (batch, n_q, top_k); got q "
                         f"{q.shape}, k {k.shape}, v {v.shape}, indices "
                         f"{indices.shape} ({indices.dtype}), kept "
                         f"{kept.shape} ({kept.dtype})")
    if indices.size and (indices.min() < 0 or indices.max() >= k.shape[-2]):
        raise ValueError(f"{fn}: indices must lie in 0..{k.shape[-2] - 1}, "
                         f"got {indices.min()}..{indices.max()}")
    return q, k, v, indices, kept


# --8<-- [start:masked]
def masked_sparse_attention(q, k, v, indices, kept, *, scale=None):
    """The definition: attention with the unchosen keys masked out.

    q: (batch, heads, n_q, d); k, v: (batch, heads, n_k, d); indices,
    kept: (batch, n_q, top_k) from ``top_k_keys``, the same for every head.
    Builds the full (n_q, n_k) scores. Returns (output, weights (batch,
    heads, n_q, n_k)).
    """
    q, k, v, indices, kept = check_selection("masked_sparse_attention", q, k,
                                             v, indices, kept)
    chosen = np.zeros((q.shape[0], q.shape[2], k.shape[2]), bool)
    np.put_along_axis(chosen, indices, kept, axis=-1)  # (batch, n_q, n_k)
    return attention(q, k, v, mask=chosen[:, None], scale=scale,
                     return_weights=True)
# --8<-- [end:masked]


# --8<-- [start:gathered]
def sparse_attention(q, k, v, indices, kept, *, scale=None):
    """The fast way: gather each query's chosen keys and values, attend.

    Same arguments as ``masked_sparse_attention``; k and v may have fewer
    heads than q (grouped queries; MLA's absorbed latent is one head for
    all): each key head is gathered once for its group. Reads top_k keys
    and values per query, never an (n_q, n_k) matrix. Returns (output,
    weights (batch, heads, n_q, top_k)); a query with no kept key gets
    zeros.
    """
    q, k, v, indices, kept = check_selection("sparse_attention", q, k, v,
                                             indices, kept)
    b, H, n_q, d = q.shape
    G = k.shape[1]                                # key/value heads
    scale = d ** -0.5 if scale is None else scale
    at = indices[:, None, :, :, None]             # (b, 1, n_q, top_k, 1)
    k_sel = np.take_along_axis(k[:, :, None], at, axis=-2)  # (b, G, n_q, k, d)
    v_sel = np.take_along_axis(v[:, :, None], at, axis=-2)  # (b, G, n_q, k, dv)
    q = q.reshape(b, G, H // G, n_q, d)           # (b, G, group, n_q, d)
    scores = np.einsum("bgrsd,bgsjd->bgrsj", q, k_sel) * scale
    scores = np.where(kept[:, None, None], scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)   # a row with nothing kept
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)  # (b, G, group, n_q, k)
    out = np.einsum("bgrsj,bgsjd->bgrsd", weights, v_sel)
    return (out.reshape(b, H, n_q, -1),           # (b, H, n_q, dv)
            weights.reshape(b, H, n_q, -1))       # (b, H, n_q, top_k)
# --8<-- [end:gathered]


# --8<-- [start:select]
@dataclass
class Selection:
    """What the "select" score rule needs beside q, k, v: the indexer's
    queries q (batch, n_q, heads, d) and weights w (batch, n_q, heads),
    top_k, and its keys (batch, n_k, d), which ``keys`` receives when the
    block's expand reads them from the cache."""
    q: np.ndarray
    w: np.ndarray
    top_k: int
    keys: np.ndarray | None = None


def select_attention(q, k, v, selection, *, mask=None, causal=False,
                     scale=None, return_weights=True):
    """The score rule "select": rank every allowed key with the indexer,
    keep the top_k, attend over those by gathering. mask: booleans,
    (n_q, n_k) or (batch, 1, n_q, n_k); causal: bottom-right."""
    if selection.keys is None:
        raise ValueError("select_attention: the Selection has no indexer "
                         "keys; the block's expand must set them")
    scores = index_scores(selection.q, selection.w, selection.keys)
    n_q, n_k = scores.shape[-2:]
    allowed = np.ones((1, n_q, n_k), bool)
    if causal:
        allowed = allowed & causal_mask(n_q, n_k)
    if mask is not None:
        mask = np.asarray(mask)
        allowed = allowed & (mask[:, 0] if mask.ndim == 4 else mask)
    indices, kept = top_k_keys(scores, selection.top_k, allowed)
    out, weights = sparse_attention(q, k, v, indices, kept, scale=scale)
    return (out, weights) if return_weights else out


SCORE_RULES["select"] = select_attention
# --8<-- [end:select]
