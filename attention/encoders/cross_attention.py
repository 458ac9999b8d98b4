"""Cross-attention: a decoder's queries read an encoder's output, cached once.

References: Vaswani et al., "Attention Is All You Need" (2017), section 3.2.3
("encoder-decoder attention"); Raffel et al., "Exploring the Limits of Transfer
Learning with a Unified Text-to-Text Transformer" (2020) (T5); Radford et al., "Robust
Speech Recognition via Large-Scale Weak Supervision" (2022) (Whisper).

The target tokens ask (queries, one per decoder position); the encoder's output, the
*memory*, answers (keys and values, one per source position). Nothing is causal here:
every target token may read the whole source, and only a padding mask hides <pad>
source tokens. The memory does not change while the decoder generates, so each decoder
layer projects it to keys and values once, at the first step, and reads them at every
later step: that is the cross-attention cache. It never grows, unlike the
self-attention cache of chapter 4, which gains one key per generated token.

A layer's parameters are one dict with short names: W_q, W_k, W_v, W_o (applied on the
right, x @ W, each (d_model, n_heads * d_head) or its transpose for W_o) and, where the
model has them, biases b_q, b_k, b_v, b_o.
"""

# --8<-- [start:imports]
import numpy as np

from attention.backward.scaled_dot_product import attention_backward
from attention.kv_cache import KVCache
from attention.multi_head import merge_heads, split_heads
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_tokens(fn, name, x, d_model=None):
    """x as a (batch, n, d_model) array of real numbers, or a ValueError."""
    x = np.asarray(x)
    if x.ndim != 3 or x.dtype.kind not in "fiu" or (
            d_model is not None and x.shape[-1] != d_model):
        want = "d_model" if d_model is None else d_model
        raise ValueError(f"{fn}: {name} must be real numbers of shape "
                         f"(batch, n, {want}), got dtype {x.dtype} and "
                         f"shape {x.shape}")
    return x


def _check_layer(fn, p, n_heads, d_model):
    """The projections' shapes against d_model and n_heads."""
    missing = [n for n in ("W_q", "W_k", "W_v", "W_o") if n not in p]
    if missing:
        raise ValueError(f"{fn}: the layer's parameters lack {missing}")
    inner = np.shape(p["W_q"])[-1]
    if (isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer))
            or n_heads < 1 or inner % n_heads):
        raise ValueError(f"{fn}: n_heads must be a positive integer that "
                         f"divides W_q's width {inner}, got {n_heads!r}")
    for name, shape in (("W_q", (d_model, inner)), ("W_k", (d_model, inner)),
                        ("W_v", (d_model, inner)), ("W_o", (inner, d_model)),
                        ("b_q", (inner,)), ("b_k", (inner,)),
                        ("b_v", (inner,)), ("b_o", (d_model,))):
        if name in p and np.shape(p[name]) != shape:
            raise ValueError(f"{fn}: {name} must have shape {shape}, "
                             f"got {np.shape(p[name])}")


def _check_valid(fn, memory_valid, batch, n_src):
    """memory_valid as (batch, 1, 1, n_src) booleans, or None."""
    if memory_valid is None:
        return None
    valid = np.asarray(memory_valid)
    if valid.shape != (batch, n_src) or valid.dtype != np.bool_:
        raise ValueError(f"{fn}: memory_valid must be booleans of shape "
                         f"{(batch, n_src)}, got dtype {valid.dtype} and "
                         f"shape {valid.shape}")
    return valid[:, None, None, :]  # (batch, 1, 1, n_src): every head, query


def check_decoding(fn, vocab_size, max_new_tokens, stop_token):
    """An encoder-decoder's generate arguments: at least one new token, and
    a stop token that is None or a token id."""
    if (isinstance(max_new_tokens, bool) or not isinstance(
            max_new_tokens, (int, np.integer)) or max_new_tokens < 1):
        raise ValueError(f"{fn}: max_new_tokens must be a positive integer, "
                         f"got {max_new_tokens!r}")
    if stop_token is not None and (
            isinstance(stop_token, bool)
            or not isinstance(stop_token, (int, np.integer))
            or not 0 <= stop_token < vocab_size):
        raise ValueError(f"{fn}: stop_token must be None or a token id in "
                         f"0..{vocab_size - 1}, got {stop_token!r}")
# --8<-- [end:checks]


# --8<-- [start:cross_attention]
def project(x, p, name):
    """x @ W_name (+ b_name when the layer has that bias)."""
    y = x @ p["W_" + name]
    bias = p.get("b_" + name)
    return y if bias is None else y + bias


def memory_kv(memory, p, n_heads):
    """The memory's keys and values for one layer, computed once.

    memory: (batch, n_src, d_model), the encoder's output.
    Returns (k, v), each (batch, n_heads, n_src, d_head).
    """
    memory = _check_tokens("memory_kv", "memory", memory)
    _check_layer("memory_kv", p, n_heads, memory.shape[-1])
    k = split_heads(project(memory, p, "k"), n_heads)  # (batch, h, n_src, d)
    v = split_heads(project(memory, p, "v"), n_heads)  # (batch, h, n_src, d)
    return k, v


def cross_attention(x, kv, p, n_heads, *, memory_valid=None, scale=None,
                    return_weights=False):
    """Decoder tokens x (batch, n_q, d_model) read the memory's (k, v).

    kv: ``memory_kv``'s pair. memory_valid (batch, n_src): False on <pad>
    source tokens. No causal mask: every query sees every real source
    token. scale: multiplies q kᵀ (None: 1/√d_head; T5 uses 1).
    Returns (batch, n_q, d_model), or (output, weights (batch, h, n_q,
    n_src)).
    """
    x = _check_tokens("cross_attention", "x", x)
    _check_layer("cross_attention", p, n_heads, x.shape[-1])
    k, v = kv
    if np.ndim(k) != 4 or np.shape(k)[:2] != (len(x), n_heads):
        raise ValueError(f"cross_attention: kv must be memory_kv's keys and "
                         f"values, (batch={len(x)}, n_heads={n_heads}, n_src, "
                         f"d_head), got keys of shape {np.shape(k)}")
    mask = _check_valid("cross_attention", memory_valid, len(x), k.shape[-2])
    q = split_heads(project(x, p, "q"), n_heads)  # (batch, h, n_q, d_head)
    out, weights = attention(q, k, v, mask=mask, scale=scale,
                             return_weights=True)  # (batch, h, n_q, d_head)
    out = project(merge_heads(out), p, "o")        # (batch, n_q, d_model)
    return (out, weights) if return_weights else out
# --8<-- [end:cross_attention]


def layer_params(params, prefix):
    """The entries of params under ``prefix.``, named without it:
    layer_params(params, "decoder.blocks.0")["cross.W_q"]."""
    return {k[len(prefix) + 1:]: v for k, v in params.items()
            if k.startswith(prefix + ".")}


def random_params(shapes, rng, *, std=0.02, dtype=np.float64):
    """Random parameters for a dict of name -> shape: norm gains 1, biases
    0, every other array N(0, std²), drawn from ``rng`` in the dict's order.
    """
    params = {}
    for name, shape in shapes.items():
        if "norm" in name and name.endswith(".weight"):
            params[name] = np.ones(shape, dtype)
        elif name.endswith((".bias", ".b")) or ".b_" in name:
            params[name] = np.zeros(shape, dtype)
        else:
            params[name] = rng.normal(0.0, std, size=shape).astype(dtype)
    return params


# --8<-- [start:decoder_cache]
class DecoderCache:
    """What an encoder-decoder keeps while it generates, per decoder layer.

    ``self_attn``: chapter 4's KVCache, one key and value more per token.
    ``cross``: the memory's (k, v), filled by ``cross_kv`` at the first
    step and read unchanged at every later one; ``projections`` counts how
    often the memory was projected (once per layer, whatever the length).
    """

    def __init__(self, n_layers):
        self.self_attn = KVCache(n_layers)
        self.cross = [None] * n_layers
        self.projections = 0

    def cross_kv(self, layer, memory, p, n_heads):
        """Layer ``layer``'s memory keys and values, projected on first use."""
        if self.cross[layer] is None:
            self.cross[layer] = memory_kv(memory, p, n_heads)
            self.projections += 1
        return self.cross[layer]
# --8<-- [end:decoder_cache]


# --8<-- [start:causal_self_attention]
def causal_self_attention(q, k, v, *, cache=None, layer=0, bias=None,
                          scale=None):
    """The decoder's own attention: new tokens' q, k, v (batch, h, n, d).

    With a ``KVCache`` the new keys and values are appended to ``layer``'s
    and the queries see all of them, causal aligned bottom-right (chapter
    4). bias: added to the scores, broadcastable to (batch, h, n, n_keys)
    (T5's relative position bias). Returns (batch, h, n, d_head).
    """
    if cache is not None:
        k, v, _, _ = cache.update(layer, k, v)  # (batch, h, n_keys, d_head)
    return attention(q, k, v, mask=bias, causal=True, scale=scale)
# --8<-- [end:causal_self_attention]


# --8<-- [start:cross_attention_backward]
def cross_attention_backward(d_out, x, memory, p, n_heads, *,
                             memory_valid=None, scale=None):
    """Gradients of cross_attention(x, memory_kv(memory, p), p) by hand.

    d_out (batch, n_q, d_model) is ∂L/∂output. Returns a dict: "x",
    "memory" and every parameter of p ("W_q", ..., "b_o"), each shaped
    like its input. The memory's gradient gathers what its keys and its
    values received from every query: dmemory = dK W_kᵀ + dV W_vᵀ.
    """
    x = _check_tokens("cross_attention_backward", "x", x)
    memory = _check_tokens("cross_attention_backward", "memory", memory,
                           x.shape[-1])
    _check_layer("cross_attention_backward", p, n_heads, x.shape[-1])
    d_out = _check_tokens("cross_attention_backward", "d_out", d_out,
                          x.shape[-1])
    if d_out.shape != x.shape:
        raise ValueError(f"cross_attention_backward: d_out must have x's "
                         f"shape {x.shape}, got {d_out.shape}")
    mask = _check_valid("cross_attention_backward", memory_valid, len(x),
                        memory.shape[1])
    q = split_heads(project(x, p, "q"), n_heads)       # (batch, h, n_q, d)
    k, v = memory_kv(memory, p, n_heads)               # (batch, h, n_src, d)
    o = merge_heads(attention(q, k, v, mask=mask, scale=scale))
    grads = {"W_o": _flat(o).T @ _flat(d_out)}         # (inner, d_model)
    if "b_o" in p:
        grads["b_o"] = _flat(d_out).sum(axis=0)
    d_o = split_heads(d_out @ p["W_o"].T, n_heads)     # (batch, h, n_q, d)
    dq, dk, dv = attention_backward(d_o, q, k, v, mask=mask, scale=scale)
    grads["x"] = 0.0
    grads["memory"] = 0.0
    for name, inp, d in (("q", x, dq), ("k", memory, dk), ("v", memory, dv)):
        d = merge_heads(d)                             # (batch, n, inner)
        grads["W_" + name] = _flat(inp).T @ _flat(d)   # (d_model, inner)
        if "b_" + name in p:
            grads["b_" + name] = _flat(d).sum(axis=0)
        who = "x" if name == "q" else "memory"
        grads[who] = grads[who] + d @ p["W_" + name].T  # (batch, n, d_model)
    return grads


def _flat(a):
    """(batch, n, d) -> (batch * n, d): every token one row."""
    return a.reshape(-1, a.shape[-1])
# --8<-- [end:cross_attention_backward]


# --8<-- [start:cross_cache_bytes]
def cross_cache_bytes(n_layers, n_heads, d_head, n_src, *, bytes_per_value=2):
    """Bytes of one sequence's cross-attention cache: keys and values of
    n_src source positions in every decoder layer, fixed for the whole
    generation: 2 x layers x heads x d_head x n_src x bytes."""
    for name, value in (("n_layers", n_layers), ("n_heads", n_heads),
                        ("d_head", d_head), ("n_src", n_src),
                        ("bytes_per_value", bytes_per_value)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < 0):
            raise ValueError(f"cross_cache_bytes: {name} must be a "
                             f"non-negative integer, got {value!r}")
    return 2 * n_layers * n_heads * d_head * n_src * bytes_per_value
# --8<-- [end:cross_cache_bytes]
