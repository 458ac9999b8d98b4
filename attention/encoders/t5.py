"""T5: an encoder-decoder with relative position bias and no 1/√d scaling.

Reference: Raffel et al., "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer" (JMLR 2020), section 2.1; Shaw et al., "Self-Attention with
Relative Position Representations" (2018). Hugging Face's ``T5ForConditionalGeneration``
computes the same logits from the same weights (tests/package/test_t5.py, in float64).

What differs from the decoders of chapters 3-12:
- no position embeddings: a learned scalar per (bucket of relative distance, head) is
  added to the attention scores. Distances below half the buckets get a bucket each;
  longer ones share logarithmically wider buckets up to ``max_distance``. The encoder's
  buckets are bidirectional (left and right get separate halves); the decoder's are
  causal. Only the first layer of each stack holds the table; the bias it computes is
  shared by every layer of that stack. Cross-attention has none.
- the scores are q kᵀ, not q kᵀ / √d: the initialisation of W_q absorbs the factor.
- RMSNorm (no mean, no bias) before each branch, pre-norm.
- the decoder reads the encoder through cross-attention (``cross_attention``); the
  original T5 ties the head to the embedding and scales the decoder's output by
  d_model^-1/2 first.

Parameters, one flat dict (weights applied on the right, x @ W):

    embed.tokens                            (vocab_size, d_model), shared
    {stack}.rel_bias                        (num_buckets, n_heads), stack = encoder, decoder
    {stack}.blocks.{i}.norm1.weight         (d_model,)
    {stack}.blocks.{i}.attn.W_q, W_k, W_v   (d_model, n_heads * d_kv); attn.W_o its transpose
    decoder.blocks.{i}.norm_cross.weight    (d_model,)
    decoder.blocks.{i}.cross.W_q, ..., W_o  as attn.*
    {stack}.blocks.{i}.norm2.weight         (d_model,)
    {stack}.blocks.{i}.mlp.W_in, mlp.W_out  plain feed-forward (d_model, d_ff), (d_ff, d_model)
    {stack}.blocks.{i}.mlp.W_gate, W_up, W_down   gated feed-forward
    {stack}.final_norm.weight               (d_model,)
    lm_head.W                               (d_model, vocab_size)
"""

# --8<-- [start:imports]
import math
from dataclasses import dataclass

import numpy as np

from attention.encoders.cross_attention import (DecoderCache,
                                                causal_self_attention,
                                                check_decoding, cross_attention,
                                                layer_params, memory_kv)
from attention.feed_forward import ACTIVATIONS
from attention.multi_head import merge_heads, split_heads
from attention.norms import rms_norm
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_buckets(fn, num_buckets, max_distance):
    """Enough buckets for an exact half in each direction, and a
    max_distance past it (the logarithm's range must not be empty)."""
    for name, value in (("num_buckets", num_buckets),
                        ("max_distance", max_distance)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < 1):
            raise ValueError(f"{fn}: {name} must be a positive integer, got "
                             f"{value!r}")
    if num_buckets < 4:  # half per direction, half of it exact
        raise ValueError(f"{fn}: num_buckets must be >= 4, got {num_buckets}")
    if max_distance <= num_buckets // 2:
        raise ValueError(f"{fn}: max_distance must exceed num_buckets // 2 = "
                         f"{num_buckets // 2}, got {max_distance}")


def _check_ids(fn, config, ids, valid):
    """ids (batch, n) integers in the vocabulary; valid (batch, n) or None."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu" or ids.shape[1] == 0:
        raise ValueError(f"{fn}: ids must be integers of shape (batch, n), "
                         f"n >= 1, got dtype {ids.dtype} and shape "
                         f"{ids.shape}")
    if ids.min() < 0 or ids.max() >= config.vocab_size:
        raise ValueError(f"{fn}: ids must lie in 0..{config.vocab_size - 1}, "
                         f"got {ids.min()}..{ids.max()}")
    if valid is not None:
        valid = np.asarray(valid)
        if valid.shape != ids.shape or valid.dtype != np.bool_:
            raise ValueError(f"{fn}: valid must be booleans of ids' shape "
                             f"{ids.shape}, got dtype {valid.dtype} and "
                             f"shape {valid.shape}")
    return ids, valid
# --8<-- [end:checks]


# --8<-- [start:config]
# Hugging Face's activation names -> ours ("gelu_new" is the tanh GELU).
T5_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh",
                  "silu": "silu"}
SIZES = ("vocab_size", "d_model", "d_kv", "d_ff", "n_heads", "n_layers",
         "n_decoder_layers", "num_buckets", "max_distance")


@dataclass(frozen=True)
class T5Config:
    vocab_size: int = 32128       # token ids (shared by encoder and decoder)
    d_model: int = 512            # width of the residual stream
    d_kv: int = 64                # size of one head
    d_ff: int = 2048              # hidden width of the feed-forward
    n_heads: int = 8              # heads of every attention
    n_layers: int = 6             # encoder blocks
    n_decoder_layers: int = 6     # decoder blocks
    num_buckets: int = 32         # relative-distance buckets
    max_distance: int = 128       # distances from here on share a bucket
    norm_eps: float = 1e-6        # eps of every RMSNorm
    activation: str = "relu"      # relu (T5), gelu_new (T5 v1.1), gelu, silu
    gated: bool = False           # act(x W_gate) * (x W_up): T5 v1.1's FF
    scale_decoder_output: bool = True  # x d_model^-1/2 before the head

    def __post_init__(self):
        for name in SIZES:
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(
                    value, (int, np.integer)) or value < 1):
                raise ValueError(f"T5Config: {name} must be a positive "
                                 f"integer, got {value!r}")
        _check_buckets("T5Config", self.num_buckets, self.max_distance)
        if self.activation not in T5_ACTIVATIONS:
            raise ValueError(f"T5Config: activation must be one of "
                             f"{sorted(T5_ACTIVATIONS)}, got "
                             f"{self.activation!r}")
        if not (0 <= self.norm_eps < math.inf):
            raise ValueError(f"T5Config: norm_eps must be a finite number "
                             f">= 0, got {self.norm_eps!r}")
# --8<-- [end:config]


# --8<-- [start:buckets]
def relative_position_bucket(relative, *, bidirectional, num_buckets=32,
                             max_distance=128):
    """Bucket of each relative position (key position - query position).

    Bidirectional (encoder): half the buckets for keys on the left, half
    for keys on the right. Causal (decoder): keys on the right never
    count, so every bucket is for the left. Within a direction, the first
    half of its buckets hold distances 0, 1, 2, ... exactly; the rest
    cover max_exact .. max_distance on a log scale; farther is the last.
    """
    relative = np.asarray(relative)
    if relative.dtype.kind not in "iu":
        raise ValueError(f"relative_position_bucket: relative must be "
                         f"integers, got dtype {relative.dtype}")
    _check_buckets("relative_position_bucket", num_buckets, max_distance)
    n, bucket = num_buckets, np.zeros(relative.shape, np.int64)
    if bidirectional:
        n //= 2
        bucket += (relative > 0) * n  # keys to the right: the upper half
        distance = np.abs(relative)
    else:
        distance = np.maximum(-relative, 0)  # the future: distance 0
    max_exact = n // 2
    # log(d / max_exact) / log(max_distance / max_exact) spreads the
    # buckets max_exact .. n - 1 over distances max_exact .. max_distance.
    far = np.maximum(distance, max_exact)  # (the near ones are not used)
    log_bucket = max_exact + (np.log(far / max_exact)
                              / math.log(max_distance / max_exact)
                              * (n - max_exact)).astype(np.int64)
    log_bucket = np.minimum(log_bucket, n - 1)
    return bucket + np.where(distance < max_exact, distance, log_bucket)
# --8<-- [end:buckets]


# --8<-- [start:position_bias]
def position_bias(table, n_q, n_k, *, bidirectional, config, start=0):
    """The bias added to every layer's scores: (n_heads, n_q, n_k).

    table: (num_buckets, n_heads), one learned scalar per bucket and
    head. Queries sit at start .. start + n_q - 1 (a decoder step after
    ``start`` cached tokens), keys at 0 .. n_k - 1.
    """
    want = (config.num_buckets, config.n_heads)
    if np.shape(table) != want:
        raise ValueError(f"position_bias: table must have shape {want} "
                         f"(num_buckets, n_heads), got {np.shape(table)}")
    query = start + np.arange(n_q)[:, None]             # (n_q, 1)
    key = np.arange(n_k)[None, :]                       # (1, n_k)
    buckets = relative_position_bucket(
        key - query, bidirectional=bidirectional,
        num_buckets=config.num_buckets, max_distance=config.max_distance)
    return np.moveaxis(table[buckets], -1, 0)           # (h, n_q, n_k)
# --8<-- [end:position_bias]


# --8<-- [start:blocks]
def feed_forward(h, p, config):
    """Plain, act(h W_in) W_out, or gated, (act(h W_gate) * h W_up) W_down."""
    act = ACTIVATIONS[T5_ACTIVATIONS[config.activation]]
    if config.gated:
        gate = act(h @ p["mlp.W_gate"])                # (batch, n, d_ff)
        return (gate * (h @ p["mlp.W_up"])) @ p["mlp.W_down"]
    return act(h @ p["mlp.W_in"]) @ p["mlp.W_out"]      # (batch, n, d_model)


def self_attention(h, p, config, bias, *, cache=None, layer=0, causal):
    """T5's self-attention: scores q kᵀ (scale 1) + the position bias.

    bias: (batch or 1, h, n, n_keys), the padding mask folded in (-inf).
    causal: the decoder's (through its KVCache when there is one).
    """
    q, k, v = (split_heads(h @ p["attn.W_" + n], config.n_heads)
               for n in "qkv")                          # (batch, h, n, d_kv)
    if causal:
        out = causal_self_attention(q, k, v, cache=cache, layer=layer,
                                    bias=bias, scale=1.0)
    else:
        out = attention(q, k, v, mask=bias, scale=1.0)  # (batch, h, n, d_kv)
    return merge_heads(out) @ p["attn.W_o"]             # (batch, n, d_model)

# --8<-- [end:blocks]


# --8<-- [start:encode]
def encode(params, config, ids, valid=None):
    """The encoder's output (the memory): ids (batch, n) -> (batch, n, d).

    valid (batch, n): False on <pad>; padded keys get -inf added to their
    scores, so the real tokens never read them.
    """
    ids, valid = _check_ids("encode", config, ids, valid)
    n, eps = ids.shape[1], config.norm_eps
    bias = position_bias(params["encoder.rel_bias"], n, n, bidirectional=True,
                         config=config)[None]          # (1, h, n, n)
    if valid is not None:  # mask <pad> keys through the bias
        bias = np.where(valid[:, None, None, :], bias, -np.inf)
    x = params["embed.tokens"][ids]                    # (batch, n, d_model)
    for i in range(config.n_layers):
        p = layer_params(params, f"encoder.blocks.{i}")
        x = x + self_attention(rms_norm(x, p["norm1.weight"], eps=eps), p,
                               config, bias, causal=False)
        x = x + feed_forward(rms_norm(x, p["norm2.weight"], eps=eps), p,
                             config)
    return rms_norm(x, params["encoder.final_norm.weight"], eps=eps)
# --8<-- [end:encode]


# --8<-- [start:decode]
def decode(params, config, ids, memory, *, memory_valid=None, cache=None):
    """Logits of the decoder: ids (batch, n) -> (batch, n, vocab).

    memory: ``encode``'s output (batch, n_src, d_model); memory_valid its
    valid mask. cache: a ``DecoderCache``; the ids are then the new tokens
    after those it holds, and the memory is projected only at its first
    step. Without one, ids is the whole target so far.
    """
    ids, _ = _check_ids("decode", config, ids, None)
    eps, n = config.norm_eps, ids.shape[1]
    start = 0 if cache is None else len(cache.self_attn)
    bias = position_bias(params["decoder.rel_bias"], n, start + n,
                         bidirectional=False, config=config, start=start)
    x = params["embed.tokens"][ids]                    # (batch, n, d_model)
    for i in range(config.n_decoder_layers):
        p = layer_params(params, f"decoder.blocks.{i}")
        x = x + self_attention(rms_norm(x, p["norm1.weight"], eps=eps), p,
                               config, bias[None], cache=None if cache is None
                               else cache.self_attn, layer=i, causal=True)
        cross, h = layer_params(p, "cross"), rms_norm(x, p["norm_cross.weight"],
                                             eps=eps)
        kv = (memory_kv(memory, cross, config.n_heads) if cache is None
              else cache.cross_kv(i, memory, cross, config.n_heads))
        x = x + cross_attention(h, kv, cross, config.n_heads,
                                memory_valid=memory_valid, scale=1.0)
        x = x + feed_forward(rms_norm(x, p["norm2.weight"], eps=eps), p,
                             config)
    if cache is not None:
        cache.self_attn.advance(n)
    x = rms_norm(x, params["decoder.final_norm.weight"], eps=eps)
    if config.scale_decoder_output:
        x = x * config.d_model ** -0.5
    return x @ params["lm_head.W"]                     # (batch, n, vocab)

# --8<-- [end:decode]


# --8<-- [start:generate]
def generate(params, config, ids, *, max_new_tokens, valid=None,
             start_token=0, stop_token=None, use_cache=True):
    """Greedy decoding: encode once, then one target token per step.

    ids, valid (batch, n_src): the source. Every target starts with
    start_token (T5's is the pad id, 0). A target that emits stop_token
    gets stop_token from then on. use_cache=False recomputes the whole
    decoder at every step (what the cache must equal). Returns the
    targets (batch, 1 + new) with the start token.
    """
    ids, valid = _check_ids("generate", config, ids, valid)
    check_decoding("generate", config.vocab_size, max_new_tokens, stop_token)
    memory = encode(params, config, ids, valid)
    target = np.full((len(ids), 1), start_token, np.int64)
    cache = DecoderCache(config.n_decoder_layers) if use_cache else None
    finished = np.zeros(len(ids), bool)
    for _ in range(max_new_tokens):
        step_ids = target[:, -1:] if use_cache else target
        logits = decode(params, config, step_ids, memory, memory_valid=valid,
                        cache=cache)[:, -1]            # (batch, vocab)
        new = logits.argmax(axis=-1)
        if stop_token is not None:
            new = np.where(finished, stop_token, new)
            finished |= new == stop_token
        target = np.concatenate([target, new[:, None]], axis=1)
        if finished.all():
            break
    return target
# --8<-- [end:generate]


# --8<-- [start:parameter_shapes]
def parameter_shapes(config):
    """Name -> shape of every parameter (the module's docstring lists them)."""
    c, d, inner = config, config.d_model, config.n_heads * config.d_kv
    attn = {"W_q": (d, inner), "W_k": (d, inner), "W_v": (d, inner),
            "W_o": (inner, d)}
    ff = ({"W_gate": (d, c.d_ff), "W_up": (d, c.d_ff), "W_down": (c.d_ff, d)}
          if c.gated else {"W_in": (d, c.d_ff), "W_out": (c.d_ff, d)})
    shapes = {"embed.tokens": (c.vocab_size, d)}
    for stack, n in (("encoder", c.n_layers), ("decoder", c.n_decoder_layers)):
        shapes[f"{stack}.rel_bias"] = (c.num_buckets, c.n_heads)
        for i in range(n):
            block = f"{stack}.blocks.{i}."
            shapes[block + "norm1.weight"] = (d,)
            shapes |= {f"{block}attn.{k}": s for k, s in attn.items()}
            if stack == "decoder":
                shapes[block + "norm_cross.weight"] = (d,)
                shapes |= {f"{block}cross.{k}": s for k, s in attn.items()}
            shapes[block + "norm2.weight"] = (d,)
            shapes |= {f"{block}mlp.{k}": s for k, s in ff.items()}
        shapes[f"{stack}.final_norm.weight"] = (d,)
    shapes["lm_head.W"] = (d, c.vocab_size)
    return shapes
# --8<-- [end:parameter_shapes]


# --8<-- [start:from_hf]
def config_from_hf(hf):
    """Our T5Config from a Hugging Face T5Config's ``to_dict()``.

    The options this module does not implement are refused by name.
    """
    act = hf["feed_forward_proj"].split("-")
    gated = act[0] == "gated"
    # Hugging Face reads "gated-gelu" as the tanh GELU (T5 v1.1)
    activation = ("gelu_new" if hf["feed_forward_proj"] == "gated-gelu"
                  else act[-1])
    if activation not in T5_ACTIVATIONS or len(act) > 2 or (
            len(act) == 2 and not gated):
        raise ValueError(f"config_from_hf: feed_forward_proj="
                         f"{hf['feed_forward_proj']!r} is not implemented "
                         f"(activations: {sorted(T5_ACTIVATIONS)}, plain or "
                         f"'gated-')")
    if hf.get("is_decoder") or not hf.get("is_encoder_decoder", True):
        raise ValueError("config_from_hf: only the encoder-decoder T5 "
                         "(T5ForConditionalGeneration) is implemented")
    return T5Config(
        vocab_size=hf["vocab_size"], d_model=hf["d_model"], d_kv=hf["d_kv"],
        d_ff=hf["d_ff"], n_heads=hf["num_heads"], n_layers=hf["num_layers"],
        n_decoder_layers=hf["num_decoder_layers"],
        num_buckets=hf["relative_attention_num_buckets"],
        max_distance=hf["relative_attention_max_distance"],
        norm_eps=hf["layer_norm_epsilon"], activation=activation, gated=gated,
        scale_decoder_output=hf.get("scale_decoder_outputs", True))


def params_from_hf(sd, config):
    """Our parameters from T5ForConditionalGeneration's state dict (NumPy
    arrays by name). nn.Linear stores W as (out, in): we transpose."""
    params = {"embed.tokens": sd["shared.weight"],
              "lm_head.W": sd["lm_head.weight"].T}
    for stack, n in (("encoder", config.n_layers),
                     ("decoder", config.n_decoder_layers)):
        # Only the first layer holds the table; every layer uses its bias.
        table = "block.0.layer.0.SelfAttention.relative_attention_bias"
        params[f"{stack}.rel_bias"] = sd[f"{stack}.{table}.weight"]
        params[f"{stack}.final_norm.weight"] = sd[
            f"{stack}.final_layer_norm.weight"]
        for i in range(n):
            params |= _block_from_hf(sd, config, stack, i)
    return params


def _block_from_hf(sd, config, stack, i):
    hf, ours = f"{stack}.block.{i}.layer.", f"{stack}.blocks.{i}."
    layers = [("attn", "SelfAttention", "norm1")]
    if stack == "decoder":
        layers.append(("cross", "EncDecAttention", "norm_cross"))
    out = {}
    for j, (name, hf_name, norm) in enumerate(layers):
        out[f"{ours}{norm}.weight"] = sd[f"{hf}{j}.layer_norm.weight"]
        for w in "qkvo":
            out[f"{ours}{name}.W_{w}"] = sd[f"{hf}{j}.{hf_name}.{w}.weight"].T
    ff = f"{hf}{len(layers)}."
    out[f"{ours}norm2.weight"] = sd[ff + "layer_norm.weight"]
    names = ({"W_gate": "wi_0", "W_up": "wi_1", "W_down": "wo"} if config.gated
             else {"W_in": "wi", "W_out": "wo"})
    for ours_name, hf_name in names.items():
        out[f"{ours}mlp.{ours_name}"] = sd[
            f"{ff}DenseReluDense.{hf_name}.weight"].T
    return out
# --8<-- [end:from_hf]
