"""Decoding at serving speed: the tokens of ``generate``, with the work a server leaves out.

``attention.generation.generate`` runs the teaching code: every block as chapter 3
wrote it, a cache that concatenates. The same model decodes faster with four changes,
none of which changes a result beyond float rounding (the tests check float64 logits
against ``forward`` to 1e-12 and the greedy tokens against ``generate``):

- Every product multiplies a 2-D matrix: (batch x n, d) rows at once. NumPy's matmul
  does not merge a stacked operand, so ``x (8, 1, 768) @ W`` is eight matrix-vector
  products, each reading all of W from memory.
- The weights are kept in a serving layout, a prepared copy (``prepare``): q, k and v
  in one matrix, SwiGLU's gate and up in one, each stored transposed (d_out, d_in),
  which OpenBLAS multiplies faster for a few rows as ``(Wᵀ @ xᵀ)ᵀ``, and the LM head as a
  contiguous (d_model, vocab) matrix rather than the embedding's transposed view. A
  copy, not a cache keyed by the arrays' ids: training updates arrays in place, and a
  copy can never go stale unseen.
- The cache is allocated once for the whole length and written in place (Hugging
  Face's StaticCache); grouped query heads read their shared key head without a copy.
- The prefill computes the logits of the last prompt position only.

BLAS threads are chosen by shape (``blas_threads``): a product of a few rows runs
on one thread, where a second thread costs more to wake and share than it saves;
the prefill's larger products keep the caller's setting.

Supported: the pre-norm attention families (GPT-2, Llama and Qwen-like without
QK-norm) with full causal attention; anything else raises a ValueError naming it.
"""

import math
from dataclasses import dataclass

import numpy as np

from attention._blas_threads import blas_threads
from attention.feed_forward import gelu, silu
from attention.generation import check_generate
from attention.model import block_params
from attention.family import family_of
from attention.norms import layer_norm, rms_norm
from attention.positions import rope
from attention.sampling import sample_next

# The parts this decoder knows (``Family.parts``), and the settings it does not.
PARTS = {"norm": ("layer_norm", "rms_norm"), "mixer": ("attention",),
         "ffn": ("gelu_mlp", "swiglu"), "wiring": ("pre_norm",),
         "positions": ("learned", "rope")}
NOT_SUPPORTED = ("rope_scaling", "sliding_window", "attn_sinks", "qk_norm",
                 "attn_softcap", "final_softcap", "moe")
FEW_ROWS = 16  # products of at most this many rows run on one BLAS thread


def _check_config(config):
    """A ValueError naming the first part or setting this decoder lacks."""
    parts = family_of(config).parts
    for part, known in PARTS.items():
        if parts.get(part) not in known:
            raise ValueError(f"prepare: the {part} {parts.get(part)!r} of "
                             f"arch {config.arch!r} is not supported; "
                             f"supported: {known}")
    for name in NOT_SUPPORTED:
        if getattr(config, name):
            raise ValueError(f"prepare: {name}={getattr(config, name)!r} is "
                             f"not supported; use attention.generation."
                             f"generate")


# --8<-- [start:prepare]
@dataclass(frozen=True)
class ServingWeights:
    """A model's weights in the serving layout (``prepare``)."""
    config: object        # the ModelConfig
    tokens: np.ndarray    # (vocab, d_model): the embedding rows
    positions: object     # (max_positions, d_model) or None (RoPE)
    layers: tuple         # per block: its prepared weights, by short name
    final_norm: tuple     # (weight, bias or None)
    head: np.ndarray      # (d_model, vocab), contiguous


def _transposed(*matrices):
    """(d_in, d_out) matrices side by side, stored as one (d_out, d_in)."""
    return np.ascontiguousarray(np.concatenate(matrices, axis=1).T)


def _joined(*vectors):
    """Biases side by side, or None if there are none."""
    if all(v is None for v in vectors):
        return None
    return np.concatenate(vectors)


def prepare(params, config):
    """The serving copy of ``params``: one transposed matrix for q, k, v
    (and one for SwiGLU's gate and up), a contiguous LM head; every array
    copied, so later in-place updates of ``params`` do not reach it."""
    _check_config(config)

    def copied(name, p=params):
        return None if p.get(name) is None else np.array(p[name])

    layers = []
    for i in range(config.n_layers):
        p = block_params(params, i)
        layer = {"norm1": (copied("norm1.weight", p), copied("norm1.bias", p)),
                 "norm2": (copied("norm2.weight", p), copied("norm2.bias", p)),
                 "W_qkv": _transposed(p["attn.W_q"], p["attn.W_k"],
                                      p["attn.W_v"]),
                 "b_qkv": _joined(p.get("attn.b_q"), p.get("attn.b_k"),
                                  p.get("attn.b_v")),
                 "W_o": _transposed(p["attn.W_o"]),
                 "b_o": copied("attn.b_o", p)}
        if "mlp.W_gate" in p:  # SwiGLU
            layer |= {"W_in": _transposed(p["mlp.W_gate"], p["mlp.W_up"]),
                      "b_in": None, "W_out": _transposed(p["mlp.W_down"]),
                      "b_out": None}
        else:
            layer |= {"W_in": _transposed(p["mlp.W_in"]),
                      "b_in": copied("mlp.b_in", p),
                      "W_out": _transposed(p["mlp.W_out"]),
                      "b_out": copied("mlp.b_out", p)}
        layers.append(layer)
    head = (params["embed.tokens"].T if config.tie_embeddings
            else params["lm_head.W"])
    return ServingWeights(config, copied("embed.tokens"),
                          copied("embed.positions"), tuple(layers),
                          (copied("final_norm.weight"),
                           copied("final_norm.bias")),
                          np.array(head, order="C"))  # always a copy
# --8<-- [end:prepare]


def _linear(x, Wt, b):
    """x (m, d_in) @ W + b with W stored transposed (d_out, d_in).

    A few rows: (Wᵀ xᵀ)ᵀ, the order OpenBLAS runs faster at small m;
    many: x Wᵀᵀ, its usual kernel."""
    y = (Wt @ x.T).T if len(x) <= FEW_ROWS else x @ Wt.T
    if b is not None:
        y += b
    return y  # (m, d_out)


def _norm(x, weight_bias, eps):
    weight, bias = weight_bias
    if bias is None:
        return rms_norm(x, weight, eps=eps)
    return layer_norm(x, weight, bias, eps=eps)


# --8<-- [start:decoder]
class Decoder:
    """One batch's decoding: ``prefill`` the prompts, then ``step`` a token
    per sequence; each returns the logits of the next token (batch, vocab).

    The keys and values of every layer live in two arrays (layers, batch,
    n_kv_heads, length, d_head) allocated once for ``length`` slots.
    """

    def __init__(self, weights, batch, length):
        c = self.config = weights.config
        if not 0 < length <= c.max_positions:
            raise ValueError(f"Decoder: length must lie in 1.."
                             f"{c.max_positions} (max_positions), got {length}")
        self.weights = weights
        shape = (c.n_layers, batch, c.n_kv_heads, length, c.d_head)
        dtype = weights.head.dtype
        self.keys, self.values = np.empty(shape, dtype), np.empty(shape, dtype)
        self.valid = np.zeros((batch, length), bool)  # real tokens' slots
        self.n_real = np.zeros(batch, np.int64)  # real tokens per sequence
        self.length = 0  # slots filled
        self.rope = family_of(c).parts["positions"] == "rope"
        self.scale = c.attn_scale or 1.0 / math.sqrt(c.d_head)

    def prefill(self, ids, valid=None):
        """The prompts ids (batch, n), valid False on left <pad>."""
        ids = self._checked("prefill", "ids", ids, 2)
        if valid is not None and (np.shape(valid) != ids.shape
                                  or np.asarray(valid).dtype != np.bool_):
            raise ValueError(f"Decoder.prefill: valid must be booleans of "
                             f"shape {ids.shape}, got {np.shape(valid)}")
        return self._forward(ids, valid)

    def step(self, new):
        """One token per sequence, new (batch,)."""
        new = self._checked("step", "new", new, 1)
        with blas_threads(1 if len(new) <= FEW_ROWS else None):
            return self._forward(new[:, None], None)

    def _checked(self, fn, name, ids, ndim):
        """ids as an array of ndim axes, one row per sequence, of token ids
        in the vocabulary; or a ValueError naming the fault."""
        ids, batch = np.asarray(ids), len(self.n_real)
        vocab = self.config.vocab_size
        if (ids.ndim != ndim or ids.dtype.kind not in "iu" or len(ids) != batch
                or ids.size == 0 or ids.min() < 0 or ids.max() >= vocab):
            raise ValueError(f"Decoder.{fn}: {name} must be token ids in "
                             f"0..{vocab - 1} of {ndim} axes, {batch} rows, "
                             f"got shape {ids.shape} and dtype {ids.dtype}")
        return ids

    def _forward(self, ids, valid):
        c, w = self.config, self.weights
        batch, n = ids.shape
        start, end = self.length, self.length + n
        if end > self.keys.shape[3]:
            raise ValueError(f"Decoder: {end} slots needed, "
                             f"{self.keys.shape[3]} allocated")
        valid = np.ones((batch, n), bool) if valid is None else valid
        self.valid[:, start:end] = valid
        positions = self.n_real[:, None] + np.cumsum(valid, axis=1) - 1
        positions = np.where(valid, positions, 0)  # (batch, n); <pad>: 0
        self.n_real += valid.sum(axis=1)
        self.length = end
        x = w.tokens[ids]                                  # (batch, n, d)
        if w.positions is not None:
            x = x + w.positions[positions]
        x = x.reshape(batch * n, c.d_model)                # 2-D from here
        bias = self._mask(start, end)  # None, or (batch, 1, 1, n, end)
        for i, layer in enumerate(w.layers):
            h = _norm(x, layer["norm1"], c.norm_eps)
            x = x + self._attention(h, layer, i, positions, bias, batch, n)
            h = _norm(x, layer["norm2"], c.norm_eps)
            x = x + self._mlp(h, layer)
        last = x.reshape(batch, n, c.d_model)[:, -1]       # (batch, d)
        return _norm(last, w.final_norm, c.norm_eps) @ w.head
# --8<-- [end:decoder]

    def _mask(self, start, end):
        """An additive mask (0 or -inf) over the keys 0..end - 1 of the
        queries in slots start..end - 1: causal, <pad> keys blocked; None
        when it would block nothing (one query, no <pad>)."""
        key_valid = self.valid[:, :end]                     # (batch, end)
        if end - start == 1 and key_valid.all():
            return None
        slots = np.arange(end)
        allowed = slots[None, :] <= slots[start:end, None]  # (n, end)
        allowed = allowed & key_valid[:, None, :]            # (batch, n, end)
        bias = np.where(allowed, 0.0, -np.inf).astype(self.keys.dtype)
        return bias[:, None, None]                          # (b, 1, 1, n, e)

    def _attention(self, h, layer, i, positions, bias, batch, n):
        """Attention of the n new tokens over every slot so far."""
        c = self.config
        kv, d_head, end = c.n_kv_heads, c.d_head, self.length
        group = c.n_heads // kv
        qkv = _linear(h, layer["W_qkv"], layer["b_qkv"])
        qkv = qkv.reshape(batch, n, c.n_heads + 2 * kv, d_head)
        qkv = qkv.transpose(0, 2, 1, 3)             # (batch, heads, n, d)
        qk = qkv[:, :c.n_heads + kv]
        if self.rope:
            qk = rope(qk, positions[:, None, :], base=c.rope_base,
                      layout=c.rope_layout)
        q, k = qk[:, :c.n_heads], qk[:, c.n_heads:]
        self.keys[i, :, :, end - n:end] = k
        self.values[i, :, :, end - n:end] = qkv[:, c.n_heads + kv:]
        keys, values = self.keys[i, :, :, :end], self.values[i, :, :, :end]
        # The query heads of each key head as one matrix of group x n rows.
        q = q.reshape(batch, kv, group * n, d_head)
        scores = (q @ keys.transpose(0, 1, 3, 2)) * self.scale  # (b, kv, g n, e)
        if bias is not None:
            scores = scores.reshape(batch, kv, group, n, end)
            scores += bias
            scores = scores.reshape(batch, kv, group * n, end)
        top = scores.max(axis=-1, keepdims=True)
        if bias is not None:
            top[top == -np.inf] = 0.0  # a <pad> query that sees no key
        scores -= top
        np.exp(scores, out=scores)
        total = scores.sum(axis=-1, keepdims=True)
        if bias is not None:
            total[total == 0] = 1.0  # its weights stay 0, as attend's do
        scores /= total
        out = scores @ values                       # (b, kv, g n, d_head)
        out = out.reshape(batch, c.n_heads, n, d_head).transpose(0, 2, 1, 3)
        out = out.reshape(batch * n, c.n_heads * d_head)
        return _linear(out, layer["W_o"], layer["b_o"])

    def _mlp(self, h, layer):
        """GELU (tanh) MLP or SwiGLU, by the weights present."""
        up = _linear(h, layer["W_in"], layer["b_in"])
        if layer["b_in"] is None:  # SwiGLU: gate and up side by side
            d_ff = up.shape[1] // 2
            up = silu(up[:, :d_ff]) * up[:, d_ff:]
        else:
            up = gelu(up, approximate="tanh")
        return _linear(up, layer["W_out"], layer["b_out"])


# --8<-- [start:fast_generate]
def fast_generate(weights, token_ids, *, max_new_tokens, valid=None,
                  temperature=0.0, top_k=None, top_p=None, min_p=None,
                  rng=None, stop_token=None):
    """``generate``'s tokens from a ``prepare``d model, at serving speed.

    Same arguments as ``attention.generation.generate`` (no window, no
    cache choice); returns (batch, n + new) ids."""
    if not isinstance(weights, ServingWeights):
        raise TypeError(f"fast_generate: weights must come from prepare(), "
                        f"got {type(weights).__name__}")
    ids = check_generate(weights.config, token_ids, max_new_tokens,
                         stop_token)
    batch, n = ids.shape
    out = np.empty((batch, n + max_new_tokens), np.int64)  # written in place
    out[:, :n] = ids
    decoder = Decoder(weights, batch, n + max_new_tokens)
    logits = decoder.prefill(ids, None if valid is None
                             else np.atleast_2d(valid))
    finished = np.zeros(batch, bool)
    for step in range(max_new_tokens):
        new = sample_next(logits, rng, temperature=temperature, top_k=top_k,
                          top_p=top_p, min_p=min_p)        # (batch,)
        if stop_token is not None:
            new = np.where(finished, stop_token, new)
            finished |= new == stop_token
        out[:, n + step] = new
        if finished.all() or step == max_new_tokens - 1:
            return out[:, :n + step + 1]
        logits = decoder.step(new)
    return out
# --8<-- [end:fast_generate]
