"""DeepSeek Sparse Attention's lightning indexer: which keys each query reads.

DeepSeek-AI, "DeepSeek-V3.2: Pushing the Frontier of Open Large Language Models" (2025),
section 2.1 (DeepSeek Sparse Attention), and Hugging Face's ``DeepseekV32Indexer``. A
few small heads score every earlier token for each query,

    I[s, t] = sum_h w[s, h] * ReLU(q[s, h] . k[t] / sqrt(d_index)),

with one key k[t] per token shared by every indexer head (its own small cache, beside the
main attention's) and a weight w[s, h] per query and head, computed from the query's
token. The main attention then reads only the ``top_k`` keys with the largest I[s, t].
The indexer is cheap because it has few heads, small ones, and no softmax; the real
model also runs it in FP8, which this float64 version does not.

Ties: ``top_k_keys`` keeps the earlier position when two scores are equal (a stable
sort). PyTorch's ``topk`` promises no order among ties, so a comparison with Hugging
Face needs scores with no tie at the k-th place (the tests check that they have none).
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.norms import layer_norm
from attention.positions import rope
# --8<-- [end:imports]


# --8<-- [start:config]
@dataclass(frozen=True)
class Indexer:
    """The lightning indexer's sizes (DeepSeek-V3.2: 64, 128, 2048)."""
    n_heads: int      # indexer heads (index_n_heads)
    head_dim: int     # size of each indexer query and of its one key
    top_k: int        # keys each query reads (index_topk)
    norm_eps: float = 1e-6  # the key's LayerNorm (fixed in Hugging Face)
    rope_layout: str = "halves"  # its RoPE's pairs: "halves" (DeepSeek-V3.2)
    #                              or "interleaved" (GLM-5)

    def __post_init__(self):
        if self.rope_layout not in ("halves", "interleaved"):
            raise ValueError(f"Indexer: rope_layout must be 'halves' or "
                             f"'interleaved', got {self.rope_layout!r}")
        for name in ("n_heads", "head_dim", "top_k"):
            value = getattr(self, name)
            if (isinstance(value, (bool, np.bool_))
                    or not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"Indexer: {name} must be a positive "
                                 f"integer, got {value!r}")
            object.__setattr__(self, name, int(value))
# --8<-- [end:config]


# --8<-- [start:index_scores]
def index_scores(q, w, k):
    """The indexer's score of every key for every query.

    q: (batch, n_q, n_heads, d) queries; w: (batch, n_q, n_heads) weights;
    k: (batch, n_k, d), one key per token for all heads. Returns
    (batch, n_q, n_k): sum_h w[h] * ReLU(q[h] . k / sqrt(d)).
    """
    q, w, k = np.asarray(q), np.asarray(w), np.asarray(k)
    if (q.ndim != 4 or w.shape != q.shape[:3] or k.ndim != 3
            or k.shape[0] != q.shape[0] or k.shape[-1] != q.shape[-1]):
        raise ValueError(f"index_scores: q must be (batch, n_q, n_heads, d), "
                         f"w (batch, n_q, n_heads) and k (batch, n_k, d); "
                         f"got q {q.shape}, w {w.shape}, k {k.shape}")
    scale = q.shape[-1] ** -0.5  # a Python float: float32 stays float32
    logits = np.einsum("bshd,btd->bsht", q, k) * scale  # per head
    return np.einsum("bsh,bsht->bst", w, np.maximum(logits, 0.0))
# --8<-- [end:index_scores]


# --8<-- [start:top_k_keys]
def top_k_keys(scores, k, allowed=None):
    """The k best keys of each query: (indices, kept), both (..., n_q, k').

    scores: (..., n_q, n_k); allowed: booleans broadcasting to it (False:
    never chosen, e.g. the future); k' = min(k, n_k). Ties go to the
    earlier key. kept is False where a query has fewer than k' allowed
    keys: those slots hold some key that must not be read.
    """
    scores = np.asarray(scores)
    if scores.ndim < 2:
        raise ValueError(f"top_k_keys: scores must be (..., n_q, n_k), "
                         f"got shape {scores.shape}")
    if (isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer))
            or k < 1):
        raise ValueError(f"top_k_keys: k must be a positive integer, "
                         f"got {k!r}")
    if allowed is None:
        allowed = np.ones(scores.shape, bool)
    allowed = np.asarray(allowed)
    try:
        allowed = np.broadcast_to(allowed, scores.shape)
    except ValueError:
        raise ValueError(f"top_k_keys: allowed of shape {allowed.shape} does "
                         f"not broadcast to the scores' {scores.shape}"
                         ) from None
    if allowed.dtype != np.bool_:
        raise ValueError(f"top_k_keys: allowed must be booleans, got dtype "
                         f"{allowed.dtype}")
    ranked = np.where(allowed, scores, -np.inf)
    k = min(int(k), scores.shape[-1])
    # A stable sort of the negated scores: equal scores keep key order.
    order = np.argsort(-ranked, axis=-1, kind="stable")[..., :k]
    kept = np.take_along_axis(allowed, order, axis=-1)
    return order, kept
# --8<-- [end:top_k_keys]


# --8<-- [start:indexer_inputs]
def indexer_inputs(x, c_q, p, config, positions):
    """The indexer's queries, weights and keys for tokens x (batch, n, d).

    c_q: the normalised low-rank query (batch, n, q_lora_rank), which the
    indexer shares with MLA. Returns q (batch, n, heads, d_index), w
    (batch, n, heads) and k (batch, n, d_index). The first
    qk_rope_head_dim features of q and k are rotated, in the indexer's own
    layout: halves in DeepSeek-V3.2 (whose MLA rotates interleaved pairs),
    interleaved in GLM-5, as Hugging Face's indexers do.
    """
    ix = config.indexer
    batch, n, _ = x.shape
    q = (c_q @ p["attn.indexer.W_q"]).reshape(batch, n, ix.n_heads,
                                              ix.head_dim)  # (b, n, h, d)
    k = layer_norm(x @ p["attn.indexer.W_k"], p["attn.indexer.k_norm.weight"],
                   p["attn.indexer.k_norm.bias"], eps=ix.norm_eps)  # (b, n, d)
    w = (x @ p["attn.indexer.W_w"]) * ix.n_heads ** -0.5  # (batch, n, heads)
    d_rope = config.qk_rope_head_dim
    positions = np.asarray(positions)
    rotate = dict(base=config.rope_base, layout=ix.rope_layout,
                  scaling=config.rope_scaling)
    heads_pos = positions[:, None, :] if positions.ndim == 2 else positions
    q_rot = rope(q[..., :d_rope].swapaxes(1, 2), heads_pos,  # (b, h, n, r)
                 **rotate).swapaxes(1, 2)                    # (b, n, h, r)
    q = np.concatenate([q_rot, q[..., d_rope:]], axis=-1)
    k = np.concatenate([rope(k[..., :d_rope], positions, **rotate),
                        k[..., d_rope:]], axis=-1)
    return q, w, k
# --8<-- [end:indexer_inputs]
