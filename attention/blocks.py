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

A block is named parts (a norm, a token mixer, a feed-forward) and their wiring; later
chapters add parts without editing this module: a score rule registers in
``SCORE_RULES`` (sinks, chapter 8; soft-capping, chapter 9), Llama's block takes another
token mixer or feed-forward (MLA, a mixture of experts), and each model family declares
its blocks in ``attention.families`` (``attention.family``).
"""

# --8<-- [start:imports]
import numpy as np

from attention.feed_forward import mlp, swiglu
from attention.multi_head import merge_heads, split_heads
from attention.norms import layer_norm, rms_norm
from attention.positions import rope
from attention.scaled_dot_product import attention


def _linear(x, W, b=None):
    y = x @ W
    if b is not None:
        y += b  # in place: no second array of y's size
    return y


def record(trace, **values):
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
# Later chapters' ways from scores to weights, by the name attend is given
# them with: "sinks" (chapter 8, ``attention.long_context.sinks``),
# "softcap" (chapter 9, ``attention.families.softcap``). Each takes (q, k,
# v, its value, mask=, causal=, scale=, return_weights=True).
SCORE_RULES = {}


def attend(q, k, v, *, causal=True, mask=None, dropout=None, scale=None,
           expand=None, **rule):
    """The one call to attention in every block.

    q: (batch, n_heads, n_q, d_head); k, v: (batch, n_kv_heads, n_k, d_head).
    Each key/value head serves n_heads // n_kv_heads query heads (GQA).
    dropout: a mask shaped like the weights, applied to them (training).
    scale: multiplies q kᵀ (None: 1/√d_head); expand(k, v): the keys and
    values attention reads, from what is passed (MLA's latent, chapter 9).
    rule: a later chapter's score rule by name (``SCORE_RULES``), e.g.
    sinks=(n_heads,) learned logits (gpt-oss) or softcap=50.0 (Gemma 2).
    Returns (output (batch, n_heads, n_q, d_head), weights (..., n_q, n_k)).
    """
    if expand is not None:  # MLA (chapter 9): keys and values from a latent
        k, v = expand(k, v)
    group = q.shape[-3] // k.shape[-3]
    if group > 1:  # (np.repeat copies even when it repeats once)
        k = np.repeat(k, group, axis=-3)  # (batch, n_heads, n_k, d_head)
        v = np.repeat(v, group, axis=-3)  # (batch, n_heads, n_k, d_head)
    out, weights = scores_to_output(q, k, v, mask=mask, causal=causal,
                                    scale=scale, **rule)
    if dropout is not None:  # the values mixed by the dropped-out weights
        out = dropped(weights, dropout) @ v
    return out, weights


def scores_to_output(q, k, v, *, mask=None, causal=False, scale=None,
                     **rule):
    """Plain attention, or the one score rule named (``SCORE_RULES``);
    a rule given as None is not used. Returns (output, weights)."""
    rule = {name: value for name, value in rule.items() if value is not None}
    if len(rule) > 1:
        raise ValueError(f"attend: the score rules {sorted(rule)} together "
                         f"are not implemented (no model family uses two)")
    if not rule:
        return attention(q, k, v, mask=mask, causal=causal, scale=scale,
                         return_weights=True)
    (name, value), = rule.items()
    if name not in SCORE_RULES:
        raise TypeError(f"attend: unknown score rule {name!r}; known: "
                        f"{sorted(SCORE_RULES)}")
    return SCORE_RULES[name](q, k, v, value, mask=mask, causal=causal,
                             scale=scale, return_weights=True)
# --8<-- [end:attend]


# --8<-- [start:attention_layer]
def attention_layer(x, p, *, n_heads, n_kv_heads=None, causal=True,
                    mask=None, positions=None, rope_base=None,
                    rope_layout="halves", rope_scaling=None, trace=None,
                    attend_fn=None, dropout=None, qk_norm=None, norm_eps=1e-6,
                    scale=None, softcap=None, rope_dims=None, out_gate=None):
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
    for ``attend`` (Gemma 2). Chapter 12: rope_dims rotates only each
    head's first rope_dims features (None: all); out_gate (batch, n,
    n_heads * d_head) multiplies the heads' outputs before W_o (Qwen3-Next's
    output gate).
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
        if rope_dims is None:
            q, k = rope(q, positions, **rotate), rope(k, positions, **rotate)
        else:  # partial RoPE (chapter 12): the rest passes unrotated
            q, k = (np.concatenate([rope(a[..., :rope_dims], positions,
                                         **rotate), a[..., rope_dims:]],
                                   axis=-1) for a in (q, k))
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
    record(trace, q=q, k=k, v=v, weights=weights, heads=heads)
    if out_gate is not None:        # chapter 12: gated attention
        heads = heads * out_gate
    return _linear(heads, p["attn.W_o"], p.get("attn.b_o"))

def attention_shapes(config, *, bias=False):
    """The attention part's parameters, short names: the projections, and
    where config has them biases, sinks (chapter 8) and QK-norm (9)."""
    c = config
    d, d_q, d_kv = c.d_model, c.n_heads * c.d_head, c.n_kv_heads * c.d_head
    shapes = {"attn.W_q": (d, d_q), "attn.W_k": (d, d_kv),
              "attn.W_v": (d, d_kv), "attn.W_o": (d_q, d)}
    if bias or c.attn_bias:
        shapes |= {"attn.b_q": (d_q,), "attn.b_k": (d_kv,),
                   "attn.b_v": (d_kv,), "attn.b_o": (d,)}
    if c.attn_sinks:
        shapes["attn.sinks"] = (c.n_heads,)
    if c.qk_norm is not None:  # chapter 9: Qwen3 per head, OLMo 2 whole
        head = c.qk_norm == "head"
        shapes |= {"attn.q_norm.weight": (c.d_head,) if head else (d_q,),
                   "attn.k_norm.weight": (c.d_head,) if head else (d_kv,)}
    return shapes
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
    record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out
# --8<-- [end:gpt2_block]


# --8<-- [start:llama_block]
def llama_block(x, p, config, positions, *, trace=None, attend_fn=None,
                dropout=None, mixer=None, ffn=None):
    """Llama's decoder block: RMSNorm, RoPE, grouped-query attention, SwiGLU.

    x: (batch, n, d_model); positions: (n,) or (batch, n) integers, the
    absolute positions of the tokens (what RoPE rotates by).
    attend_fn: see ``attention_layer`` (a KV cache, a padding mask).
    dropout: masks by name, as in ``gpt2_block``.
    mixer, ffn: the block's two parts, called like ``rope_attention`` and
    ``swiglu_mlp`` (None: those); later families swap in their own
    (chapter 9: MLA, a mixture of experts) and keep this wiring.
    """
    mixer, ffn = mixer or rope_attention, ffn or swiglu_mlp
    eps, drop = config.norm_eps, dropout or {}
    h = rms_norm(x, p["norm1.weight"], eps=eps)
    x_mid = x + dropped(mixer(h, p, config, positions, trace=trace,
                              attend_fn=attend_fn,
                              dropout=drop.get("attn.weights")),
                        drop.get("attn.out"))
    h2 = rms_norm(x_mid, p["norm2.weight"], eps=eps)
    out = x_mid + dropped(ffn(h2, p, config, trace=trace),
                          drop.get("mlp.out"))
    record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out


def swiglu_mlp(h, p, config, *, trace=None):
    """Llama's feed-forward part: SwiGLU on mlp.W_gate, W_up, W_down."""
    return swiglu(h, p["mlp.W_gate"], p["mlp.W_up"], p["mlp.W_down"])
# --8<-- [end:llama_block]


# --8<-- [start:rope_attention]
def rope_attention(h, p, config, positions, *, trace=None, attend_fn=None,
                   dropout=None, out_gate=None):
    """The attention branch of the RoPE families (Llama, Qwen3, Gemma 2),
    every setting read from config; out_gate: as for attention_layer."""
    fraction = getattr(config, "rope_fraction", 1.0)  # chapter 12
    rope_dims = None if fraction == 1 else int(config.d_head * fraction)
    return attention_layer(
        h, p, n_heads=config.n_heads, n_kv_heads=config.n_kv_heads,
        positions=positions, rope_base=config.rope_base,
        rope_layout=config.rope_layout, rope_scaling=config.rope_scaling,
        trace=trace, attend_fn=attend_fn, dropout=dropout,
        qk_norm=config.qk_norm, norm_eps=config.norm_eps,
        scale=config.attn_scale, softcap=config.attn_softcap,
        rope_dims=rope_dims, out_gate=out_gate)
# --8<-- [end:rope_attention]
