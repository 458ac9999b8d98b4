"""Transformer blocks: attention and an MLP, each wrapped in a residual connection.

References: Vaswani et al. (2017), section 3.1 (the post-LN encoder block); Xiong et al.,
"On Layer Normalization in the Transformer Architecture" (2020) (pre-LN); Radford et al.
(2019) (GPT-2: pre-LN, causal, GELU tanh, biases); Touvron et al. (2023) and the Llama 3
report (2024) (RMSNorm, RoPE, grouped-query attention, SwiGLU, no biases).

Every block takes its parameters as one dict with short names ("attn.W_q",
"norm1.weight", ...; see ``attention.model`` for the full list) and calls attention
through one small function, ``attend``: the only place that sees keys and values, which is
where a KV cache goes (chapter 4). Pass ``trace={}`` to get the block's intermediate
values back in that dict (for backward passes, chapter 6).
"""

# --8<-- [start:imports]
import numpy as np

from attention.families.softcap import capped_attention
from attention.families.gemma import geglu, gemma_rms_norm
from attention.families.moe import feed_forward
from attention.feed_forward import mlp
from attention.multi_head import merge_heads, split_heads
from attention.norms import layer_norm, rms_norm
from attention.long_context.sinks import sink_attention
from attention.positions import rope
from attention.scaled_dot_product import attention


def _linear(x, W, b=None):
    y = x @ W
    if b is not None:
        y += b  # in place: no second array of y's size
    return y


def _record(trace, **values):
    """Keep intermediate values in ``trace`` when it is a dict."""
    if trace is not None:
        trace.update(values)


def dropped(x, mask):
    """Dropout with a given mask (0 or 1/(1 - p) per entry): x * mask.

    mask None: no dropout (evaluation). Its backward is the same product:
    the gradient passes where the entry was kept, scaled alike (chapter 7).
    """
    return x if mask is None else x * mask
# --8<-- [end:imports]


# --8<-- [start:attend]
def attend(q, k, v, *, causal=True, mask=None, sinks=None, dropout=None,
           scale=None, softcap=None, expand=None):
    """The one call to attention in every block.

    q: (batch, n_heads, n_q, d_head); k, v: (batch, n_kv_heads, n_k, d_head).
    Each key/value head serves n_heads // n_kv_heads query heads (GQA).
    sinks: one learned sink logit per head (n_heads,), gpt-oss (chapter 8).
    dropout: a mask shaped like the weights, applied to them (training).
    scale: multiplies q kᵀ (None: 1/√d_head); softcap: caps the scaled
    scores at +-softcap with tanh, Gemma 2 (chapter 9); expand(k, v): the
    keys and values attention reads, from what is passed (MLA's latent).
    Returns (output (batch, n_heads, n_q, d_head), weights (..., n_q, n_k)).
    """
    if expand is not None:  # MLA (chapter 9): keys and values from a latent
        k, v = expand(k, v)
    group = q.shape[-3] // k.shape[-3]
    if group > 1:  # (np.repeat copies even when it repeats once)
        k = np.repeat(k, group, axis=-3)  # (batch, n_heads, n_k, d_head)
        v = np.repeat(v, group, axis=-3)  # (batch, n_heads, n_k, d_head)
    out, weights = _scores_to_output(q, k, v, mask=mask, causal=causal,
                                     sinks=sinks, scale=scale,
                                     softcap=softcap)
    if dropout is not None:  # the values mixed by the dropped-out weights
        out = dropped(weights, dropout) @ v
    return out, weights


def _scores_to_output(q, k, v, *, mask, causal, sinks, scale, softcap):
    """Plain, sink (chapter 8) or soft-capped (chapter 9) attention."""
    if sinks is not None and softcap is not None:
        raise ValueError("attend: learned sinks and a softcap together are "
                         "not implemented (no model family uses both)")
    if sinks is not None:
        return sink_attention(q, k, v, sinks, mask=mask, causal=causal,
                              scale=scale, return_weights=True)
    if softcap is not None:
        return capped_attention(q, k, v, cap=softcap, mask=mask,
                                causal=causal, scale=scale,
                                return_weights=True)
    return attention(q, k, v, mask=mask, causal=causal, scale=scale,
                     return_weights=True)
# --8<-- [end:attend]


# --8<-- [start:attention_layer]
def attention_layer(x, p, *, n_heads, n_kv_heads=None, causal=True,
                    mask=None, positions=None, rope_base=None,
                    rope_layout="halves", rope_scaling=None, trace=None,
                    attend_fn=None, dropout=None, qk_norm=None, norm_eps=1e-6,
                    scale=None, softcap=None):
    """Project, split into heads, (rotate), attend, merge, project back.

    x: (batch, n, d_model). p holds attn.W_q, attn.W_k, attn.W_v, attn.W_o
    and optionally the biases attn.b_q, ... and learned sinks attn.sinks.
    With rope_base set, q and k are rotated by their positions (n,) or
    (batch, n) before attention (rope_scaling: chapter 8's RopeScaling).
    attend_fn(q, k, v, sinks) -> (output, weights) replaces ``attend`` (and
    its causal and mask): a KV cache goes there (``attention.kv_cache``).
    dropout: a mask for the attention weights (``attend``; training).
    Chapter 9: qk_norm "head" RMS-normalises each head's query and key
    (Qwen3: attn.q_norm.weight, attn.k_norm.weight of shape (d_head,)),
    "projection" the whole projections (OLMo 2: (n_heads * d_head,) and
    (n_kv_heads * d_head,)), before RoPE, with norm_eps; scale, softcap: as
    for ``attend`` (Gemma 2).
    """
    n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
    q = _linear(x, p["attn.W_q"], p.get("attn.b_q"))
    k = _linear(x, p["attn.W_k"], p.get("attn.b_k"))
    v = _linear(x, p["attn.W_v"], p.get("attn.b_v"))
    if qk_norm == "projection":  # OLMo 2: over all heads at once
        q = rms_norm(q, p["attn.q_norm.weight"], eps=norm_eps)
        k = rms_norm(k, p["attn.k_norm.weight"], eps=norm_eps)
    q = split_heads(q, n_heads)     # (batch, n_heads, n, d_head)
    k = split_heads(k, n_kv_heads)  # (batch, n_kv_heads, n, d_head)
    v = split_heads(v, n_kv_heads)  # (batch, n_kv_heads, n, d_head)
    if qk_norm == "head":  # Qwen3: each head's d_head features on their own
        q = rms_norm(q, p["attn.q_norm.weight"], eps=norm_eps)
        k = rms_norm(k, p["attn.k_norm.weight"], eps=norm_eps)
    if rope_base is not None:
        positions = np.asarray(positions)
        if positions.ndim == 2:  # (batch, n): one row of positions per sequence
            positions = positions[:, None, :]  # (batch, 1, n): for every head
        rotate = dict(base=rope_base, layout=rope_layout, scaling=rope_scaling)
        q, k = rope(q, positions, **rotate), rope(k, positions, **rotate)
    sinks = p.get("attn.sinks")  # (n_heads,) or None
    score = {name: value for name, value in (("scale", scale),
                                             ("softcap", softcap))
             if value is not None}  # chapter 9's settings, where set
    if attend_fn is None:
        out, weights = attend(q, k, v, causal=causal, mask=mask, sinks=sinks,
                              dropout=dropout, **score)
    else:
        out, weights = attend_fn(q, k, v, sinks, **score)
    heads = merge_heads(out)        # (batch, n, n_heads * d_head)
    _record(trace, q=q, k=k, v=v, weights=weights, heads=heads)
    return _linear(heads, p["attn.W_o"], p.get("attn.b_o"))
# --8<-- [end:attention_layer]


# --8<-- [start:encoder_block]
def encoder_block(x, p, *, n_heads, norm_first=False, activation="relu",
                  eps=1e-5, mask=None, trace=None):
    """A transformer encoder block (no causal mask), like PyTorch's.

    norm_first=False is the original post-LN block: norm(x + sublayer(x)).
    norm_first=True is pre-LN: x + sublayer(norm(x)), the norm inside the
    branch, so the residual path from input to output is the identity.
    x: (batch, n, d_model); mask: boolean, True = may attend.
    """
    def attn(h):
        return attention_layer(h, p, n_heads=n_heads, causal=False,
                               mask=mask, trace=trace)

    def ff(h):
        return mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"],
                   p["mlp.b_out"], activation=activation)

    def norm(h, i):
        return layer_norm(h, p[f"norm{i}.weight"], p[f"norm{i}.bias"], eps=eps)

    if norm_first:
        x = x + attn(norm(x, 1))
        return x + ff(norm(x, 2))
    x = norm(x + attn(x), 1)
    return norm(x + ff(x), 2)
# --8<-- [end:encoder_block]


# --8<-- [start:gpt2_block]
def gpt2_block(x, p, config, positions, *, trace=None, attend_fn=None,
               dropout=None):
    """GPT-2's decoder block: pre-LN, causal attention, GELU (tanh), biases.

    x: (batch, n, d_model). positions are not used here: GPT-2 adds its
    learned position embeddings once, before the first block.
    attend_fn: see ``attention_layer`` (a KV cache, a padding mask).
    dropout: masks by name ("attn.weights", "attn.out", "mlp.out"), or None.
    """
    eps, drop = config.norm_eps, dropout or {}
    h = layer_norm(x, p["norm1.weight"], p["norm1.bias"], eps=eps)
    x_mid = x + dropped(attention_layer(
        h, p, n_heads=config.n_heads, trace=trace, attend_fn=attend_fn,
        dropout=drop.get("attn.weights")), drop.get("attn.out"))
    h2 = layer_norm(x_mid, p["norm2.weight"], p["norm2.bias"], eps=eps)
    out = x_mid + dropped(mlp(h2, p["mlp.W_in"], p["mlp.b_in"],
                              p["mlp.W_out"], p["mlp.b_out"],
                              activation="gelu_tanh"), drop.get("mlp.out"))
    _record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out
# --8<-- [end:gpt2_block]


# --8<-- [start:llama_block]
def llama_block(x, p, config, positions, *, trace=None, attend_fn=None,
                dropout=None):
    """Llama's decoder block: RMSNorm, RoPE, grouped-query attention, SwiGLU.

    No biases (chapter 8's ``attn_bias`` adds them to attention; chapter 9's
    ``qk_norm`` normalises queries and keys, Qwen3, and its ``moe`` makes
    the MLP a mixture of experts: ``attention.families.moe.feed_forward``).
    x: (batch, n, d_model); positions: (n,) or (batch, n) integers, the
    absolute positions of the tokens (what RoPE rotates by).
    attend_fn: see ``attention_layer`` (a KV cache, a padding mask).
    dropout: masks by name, as in ``gpt2_block``.
    """
    eps, drop = config.norm_eps, dropout or {}
    h = rms_norm(x, p["norm1.weight"], eps=eps)
    x_mid = x + dropped(rope_attention(h, p, config, positions, trace=trace,
                                       attend_fn=attend_fn,
                                       dropout=drop.get("attn.weights")),
                        drop.get("attn.out"))
    h2 = rms_norm(x_mid, p["norm2.weight"], eps=eps)
    out = x_mid + dropped(feed_forward(h2, p, config, trace=trace),
                          drop.get("mlp.out"))
    _record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out
# --8<-- [end:llama_block]


# --8<-- [start:rope_attention]
def rope_attention(h, p, config, positions, *, trace=None, attend_fn=None,
                   dropout=None):
    """The attention branch of the RoPE families (Llama, Qwen3, Gemma 2),
    every setting read from config."""
    return attention_layer(
        h, p, n_heads=config.n_heads, n_kv_heads=config.n_kv_heads,
        positions=positions, rope_base=config.rope_base,
        rope_layout=config.rope_layout, rope_scaling=config.rope_scaling,
        trace=trace, attend_fn=attend_fn, dropout=dropout,
        qk_norm=config.qk_norm, norm_eps=config.norm_eps,
        scale=config.attn_scale, softcap=config.attn_softcap)
# --8<-- [end:rope_attention]


# --8<-- [start:gemma2_block]
def gemma2_block(x, p, config, positions, *, trace=None, attend_fn=None,
                 dropout=None):
    """Gemma 2's decoder block: each branch normalised before and after,
    (1 + weight) RMSNorms, GeGLU (``attention.families.gemma``).

    x: (batch, n, d_model); positions, attend_fn, dropout as for
    ``llama_block``. The norms: norm1 and post_norm1 around attention,
    norm2 and post_norm2 around the MLP.
    """
    eps, drop = config.norm_eps, dropout or {}
    h = gemma_rms_norm(x, p["norm1.weight"], eps=eps)
    a = rope_attention(h, p, config, positions, trace=trace,
                       attend_fn=attend_fn, dropout=drop.get("attn.weights"))
    x_mid = x + dropped(gemma_rms_norm(a, p["post_norm1.weight"], eps=eps),
                        drop.get("attn.out"))
    h2 = gemma_rms_norm(x_mid, p["norm2.weight"], eps=eps)
    m = geglu(h2, p["mlp.W_gate"], p["mlp.W_up"], p["mlp.W_down"])
    out = x_mid + dropped(gemma_rms_norm(m, p["post_norm2.weight"], eps=eps),
                          drop.get("mlp.out"))
    _record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out
# --8<-- [end:gemma2_block]
