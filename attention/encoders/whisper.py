"""Whisper: a text decoder that reads an audio encoder through cross-attention.

Reference: Radford et al., "Robust Speech Recognition via Large-Scale Weak Supervision"
(2022), section 2.2 and figure 1. Hugging Face's ``WhisperForConditionalGeneration``
computes the same logits from the same weights (tests/package/test_whisper.py, float64).

The audio arrives as log-mel features, (batch, n_mels, n_frames): 80 (or 128) mel bands
every 10 ms, 3,000 frames for 30 s. Computing them from a waveform is signal processing,
not attention, so here they are given as an array. The encoder:
- a stem of two 1-D convolutions, kernel 3, each followed by the exact GELU; the second
  has stride 2, so 3,000 frames become 1,500 tokens;
- fixed sinusoidal positions (``whisper_positions``), added once;
- pre-LN blocks of bidirectional self-attention and a GELU MLP; a final LayerNorm.
The decoder is GPT-2-like (learned positions, pre-LN, causal), with a cross-attention
branch in every block between its self-attention and its MLP; its head is tied to the
token embedding. Attention is the usual 1/√d_head scaled kind, with biases on the query,
value and output projections (none on the key: softmax ignores a per-query constant).

Parameters, one flat dict (weights on the right, x @ W):

    encoder.conv1.W (3, n_mels, d_model), encoder.conv1.b   (a kernel tap per row)
    encoder.conv2.W (3, d_model, d_model), encoder.conv2.b
    {stack}.blocks.{i}.norm1.weight, .bias                  stack: encoder, decoder
    {stack}.blocks.{i}.attn.W_q, b_q, W_k, W_v, b_v, W_o, b_o
    decoder.blocks.{i}.norm_cross.weight, .bias; decoder.blocks.{i}.cross.* as attn.*
    {stack}.blocks.{i}.norm2.weight, .bias
    {stack}.blocks.{i}.mlp.W_in, b_in, W_out, b_out
    {stack}.final_norm.weight, .bias
    embed.tokens (vocab_size, d_model); decoder.positions (max_target_positions, d_model)
"""

# --8<-- [start:imports]
import math
from dataclasses import dataclass

import numpy as np

from attention.encoders.cross_attention import (DecoderCache,
                                                causal_self_attention,
                                                check_decoding,
                                                cross_attention, layer_params,
                                                memory_kv, project)
from attention.feed_forward import gelu, mlp
from attention.multi_head import merge_heads, split_heads
from attention.norms import layer_norm
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_features(config, features):
    features = np.asarray(features)
    frames = 2 * config.max_source_positions
    if features.shape[1:] != (config.n_mels, frames) or (
            features.ndim != 3 or features.dtype.kind != "f"):
        raise ValueError(f"encode: features must be floats of shape (batch, "
                         f"n_mels={config.n_mels}, {frames}) (the encoder "
                         f"reads 2 * max_source_positions frames), got dtype "
                         f"{features.dtype} and shape {features.shape}")
    return features


def _check_ids(fn, config, ids, start):
    """ids (batch, n) in the vocabulary, positions start .. start + n - 1
    inside the decoder's table."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu" or ids.shape[1] == 0:
        raise ValueError(f"{fn}: ids must be integers of shape (batch, n), "
                         f"n >= 1, got dtype {ids.dtype} and shape "
                         f"{ids.shape}")
    if ids.min() < 0 or ids.max() >= config.vocab_size:
        raise ValueError(f"{fn}: ids must lie in 0..{config.vocab_size - 1}, "
                         f"got {ids.min()}..{ids.max()}")
    if start + ids.shape[1] > config.max_target_positions:
        raise ValueError(f"{fn}: {start + ids.shape[1]} target positions do "
                         f"not fit max_target_positions = "
                         f"{config.max_target_positions}")
    return ids
# --8<-- [end:checks]


# --8<-- [start:config]
SIZES = ("vocab_size", "n_mels", "d_model", "encoder_layers", "decoder_layers",
         "encoder_heads", "decoder_heads", "encoder_ffn", "decoder_ffn",
         "max_source_positions", "max_target_positions")


@dataclass(frozen=True)
class WhisperConfig:
    vocab_size: int = 51865          # token ids (multilingual tokenizer)
    n_mels: int = 80                 # mel bands per frame
    d_model: int = 384               # width of both stacks (tiny: 384)
    encoder_layers: int = 4          # encoder blocks
    decoder_layers: int = 4          # decoder blocks
    encoder_heads: int = 6           # heads of the encoder's attention
    decoder_heads: int = 6           # heads of the decoder's attention
    encoder_ffn: int = 1536          # hidden width of the encoder's MLP
    decoder_ffn: int = 1536          # hidden width of the decoder's MLP
    max_source_positions: int = 1500  # audio tokens: 30 s after the stem
    max_target_positions: int = 448  # longest text (learned positions)
    norm_eps: float = 1e-5           # eps of every LayerNorm

    def __post_init__(self):
        for name in SIZES:
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(
                    value, (int, np.integer)) or value < 1):
                raise ValueError(f"WhisperConfig: {name} must be a positive "
                                 f"integer, got {value!r}")
        for heads in ("encoder_heads", "decoder_heads"):
            if self.d_model % getattr(self, heads):
                raise ValueError(f"WhisperConfig: d_model = {self.d_model} "
                                 f"is not divisible by {heads} = "
                                 f"{getattr(self, heads)}")
        if self.d_model % 2 or self.d_model < 4:  # sin and cos halves
            raise ValueError(f"WhisperConfig: d_model must be even and >= 4 "
                             f"(sinusoidal positions), got {self.d_model}")
# --8<-- [end:config]


# --8<-- [start:stem]
def conv1d(x, W, b, *, stride=1):
    """A 1-D convolution over time, as one matrix product per window.

    x: (batch, n, c_in), time first (tokens); W: (k, c_in, c_out), one
    (c_in, c_out) matrix per tap of the kernel; b: (c_out,). Pads (k - 1)
    / 2 zero frames at each end, as Whisper's padding=1 does for k = 3.
    Output frame t reads input frames t * stride - 1 .. t * stride + 1.
    Returns (batch, ceil(n / stride), c_out).
    """
    x, W, b = (np.asarray(a) for a in (x, W, b))
    if (x.ndim != 3 or W.ndim != 3 or W.shape[1] != x.shape[-1]
            or W.shape[0] % 2 == 0 or b.shape != W.shape[2:]):
        raise ValueError(f"conv1d: x must be (batch, n, c_in), W (k, c_in, "
                         f"c_out) with k odd, b (c_out,); got x {x.shape}, "
                         f"W {W.shape}, b {b.shape}")
    if (isinstance(stride, bool) or not isinstance(stride, (int, np.integer))
            or stride < 1):
        raise ValueError(f"conv1d: stride must be a positive integer, got "
                         f"{stride!r}")
    k = W.shape[0]
    pad = (k - 1) // 2
    x = np.pad(x, ((0, 0), (pad, pad), (0, 0)))          # (batch, n + 2p, c_in)
    windows = np.lib.stride_tricks.sliding_window_view(x, k, axis=1)
    windows = windows[:, ::stride]                   # (batch, n_out, c_in, k)
    # Sum over input channels and taps: one matrix product (BLAS).
    return np.tensordot(windows, W, axes=([2, 3], [1, 0])) + b  # (., ., c_out)


def whisper_positions(n, d_model, max_timescale=10000.0):
    """Whisper's fixed positions, (n, d_model): sines, then cosines.

    Unlike Vaswani et al.'s interleaved pairs (``sinusoidal_positions``),
    the first half of the features are sin(p w_i), the second half
    cos(p w_i), with w_i = max_timescale ** (-i / (d_model / 2 - 1)): the
    slowest wave's period is 2π times max_timescale.
    """
    if (isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer))
            or d_model < 4 or d_model % 2):
        raise ValueError(f"whisper_positions: d_model must be an even integer "
                         f">= 4, got {d_model!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"whisper_positions: n must be a non-negative "
                         f"integer, got {n!r}")
    half = d_model // 2
    w = np.exp(-math.log(max_timescale) / (half - 1) * np.arange(half))
    angles = np.arange(n)[:, None] * w[None, :]          # (n, d_model / 2)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
# --8<-- [end:stem]


# --8<-- [start:blocks]
def self_attention(h, p, n_heads, *, causal=False, cache=None, layer=0):
    """Whisper's self-attention, biases included: (batch, n, d_model).

    p: the block's parameters; its attention's are ``attn.*``."""
    p = layer_params(p, "attn")
    q, k, v = (split_heads(project(h, p, n), n_heads) for n in "qkv")
    if causal:  # the decoder, through its KVCache when there is one
        out = causal_self_attention(q, k, v, cache=cache, layer=layer)
    else:       # the encoder: every frame sees every frame
        out = attention(q, k, v)                        # (batch, h, n, d)
    return project(merge_heads(out), p, "o")            # (batch, n, d_model)


def _norm(x, params, name, config):
    return layer_norm(x, params[name + ".weight"], params[name + ".bias"],
                      eps=config.norm_eps)


def _mlp(h, p):
    return mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
               activation="gelu")
# --8<-- [end:blocks]


# --8<-- [start:encode]
def encode(params, config, features):
    """The audio tokens: features (batch, n_mels, 2 * max_source_positions)
    -> memory (batch, max_source_positions, d_model)."""
    features = _check_features(config, features)
    x = np.swapaxes(features, 1, 2)                      # (batch, frames, mels)
    x = gelu(conv1d(x, params["encoder.conv1.W"], params["encoder.conv1.b"]))
    x = gelu(conv1d(x, params["encoder.conv2.W"], params["encoder.conv2.b"],
                    stride=2))                           # (batch, n, d_model)
    x = x + whisper_positions(x.shape[1], config.d_model)
    for i in range(config.encoder_layers):
        p = layer_params(params, f"encoder.blocks.{i}")
        x = x + self_attention(_norm(x, p, "norm1", config), p,
                               config.encoder_heads)
        x = x + _mlp(_norm(x, p, "norm2", config), p)
    return _norm(x, params, "encoder.final_norm", config)
# --8<-- [end:encode]


# --8<-- [start:decode]
def decode(params, config, ids, memory, *, cache=None):
    """Logits of the decoder: ids (batch, n) -> (batch, n, vocab).

    memory: ``encode``'s output. cache: a ``DecoderCache``; the ids are
    then the tokens after those it holds (their positions follow them),
    and each layer projects the memory only at the first step.
    """
    start = 0 if cache is None else len(cache.self_attn)
    ids = _check_ids("decode", config, ids, start)
    n, heads = ids.shape[1], config.decoder_heads
    x = params["embed.tokens"][ids]                      # (batch, n, d_model)
    x = x + params["decoder.positions"][start:start + n]  # learned
    for i in range(config.decoder_layers):
        p = layer_params(params, f"decoder.blocks.{i}")
        x = x + self_attention(_norm(x, p, "norm1", config), p, heads,
                               causal=True, layer=i, cache=None
                               if cache is None else cache.self_attn)
        cross = layer_params(p, "cross")
        kv = (memory_kv(memory, cross, heads) if cache is None
              else cache.cross_kv(i, memory, cross, heads))
        x = x + cross_attention(_norm(x, p, "norm_cross", config), kv, cross,
                                heads)
        x = x + _mlp(_norm(x, p, "norm2", config), p)
    if cache is not None:
        cache.self_attn.advance(n)
    x = _norm(x, params, "decoder.final_norm", config)
    return x @ params["embed.tokens"].T                  # tied head
# --8<-- [end:decode]


# --8<-- [start:generate]
def generate(params, config, features, prompt, *, max_new_tokens,
             stop_token=None, use_cache=True):
    """Greedy transcription: encode the audio once, then one token a step.

    prompt: the decoder's first tokens, (batch, n) (Whisper's are special
    tokens: start of transcript, language, task). A sequence that emits
    stop_token keeps it. use_cache=False recomputes the decoder at every
    step. Returns (batch, n + new) ids.
    """
    check_decoding("generate", config.vocab_size, max_new_tokens, stop_token)
    # The last new token is never fed back: n + new - 1 positions in all.
    ids = _check_ids("generate", config, prompt, max_new_tokens - 1)
    memory = encode(params, config, features)
    cache = DecoderCache(config.decoder_layers) if use_cache else None
    finished = np.zeros(len(ids), bool)
    step_ids = ids
    for _ in range(max_new_tokens):
        logits = decode(params, config, step_ids, memory, cache=cache)
        new = logits[:, -1].argmax(axis=-1)              # (batch,)
        if stop_token is not None:
            new = np.where(finished, stop_token, new)
            finished |= new == stop_token
        ids = np.concatenate([ids, new[:, None]], axis=1)
        if finished.all():
            break
        step_ids = new[:, None] if use_cache else ids
    return ids
# --8<-- [end:generate]


# --8<-- [start:parameter_shapes]
def parameter_shapes(config):
    """Name -> shape of every parameter (the module's docstring lists them)."""
    c, d = config, config.d_model
    attn = {"W_q": (d, d), "b_q": (d,), "W_k": (d, d), "W_v": (d, d),
            "b_v": (d,), "W_o": (d, d), "b_o": (d,)}
    norm = {"weight": (d,), "bias": (d,)}
    shapes = {"embed.tokens": (c.vocab_size, d),
              "decoder.positions": (c.max_target_positions, d),
              "encoder.conv1.W": (3, c.n_mels, d), "encoder.conv1.b": (d,),
              "encoder.conv2.W": (3, d, d), "encoder.conv2.b": (d,)}
    for stack, n, ffn in (("encoder", c.encoder_layers, c.encoder_ffn),
                          ("decoder", c.decoder_layers, c.decoder_ffn)):
        parts = ["norm1", "attn"] + (["norm_cross", "cross"]
                                     if stack == "decoder" else []) + ["norm2"]
        for i in range(n):
            block = f"{stack}.blocks.{i}."
            for part in parts:
                shapes |= {f"{block}{part}.{k}": s for k, s in
                           (norm if part.startswith("norm") else attn).items()}
            shapes |= {block + "mlp.W_in": (d, ffn), block + "mlp.b_in": (ffn,),
                       block + "mlp.W_out": (ffn, d), block + "mlp.b_out": (d,)}
        shapes |= {f"{stack}.final_norm.{k}": s for k, s in norm.items()}
    return shapes
# --8<-- [end:parameter_shapes]


# --8<-- [start:from_hf]
# Options of Hugging Face's WhisperConfig that this module does not implement,
# with the value it requires.
REQUIRED = {"activation_function": "gelu", "scale_embedding": False,
            "tie_word_embeddings": True}


def config_from_hf(hf):
    """Our WhisperConfig from a Hugging Face WhisperConfig's ``to_dict()``;
    options this module does not implement are refused by name."""
    for name, value in REQUIRED.items():
        if hf.get(name, value) != value:
            raise ValueError(f"config_from_hf: {name}={hf[name]!r} is not "
                             f"implemented (only {value!r})")
    return WhisperConfig(
        vocab_size=hf["vocab_size"], n_mels=hf["num_mel_bins"],
        d_model=hf["d_model"], encoder_layers=hf["encoder_layers"],
        decoder_layers=hf["decoder_layers"],
        encoder_heads=hf["encoder_attention_heads"],
        decoder_heads=hf["decoder_attention_heads"],
        encoder_ffn=hf["encoder_ffn_dim"], decoder_ffn=hf["decoder_ffn_dim"],
        max_source_positions=hf["max_source_positions"],
        max_target_positions=hf["max_target_positions"])


def params_from_hf(sd, config):
    """Our parameters from WhisperForConditionalGeneration's state dict
    (NumPy arrays by name). The encoder's position table is not read: it
    is ``whisper_positions``, computed."""
    e, d = "model.encoder.", "model.decoder."
    params = {"embed.tokens": sd[d + "embed_tokens.weight"],
              "decoder.positions": sd[d + "embed_positions.weight"]}
    for conv in ("conv1", "conv2"):  # PyTorch: (c_out, c_in, k) -> ours
        params[f"encoder.{conv}.W"] = sd[f"{e}{conv}.weight"].transpose(2, 1, 0)
        params[f"encoder.{conv}.b"] = sd[f"{e}{conv}.bias"]
    for stack, n in (("encoder", config.encoder_layers),
                     ("decoder", config.decoder_layers)):
        hf = f"model.{stack}."
        for part in ("weight", "bias"):
            params[f"{stack}.final_norm.{part}"] = sd[f"{hf}layer_norm.{part}"]
        for i in range(n):
            params |= _block_from_hf(sd, f"{hf}layers.{i}.",
                                     f"{stack}.blocks.{i}.")
    return params


def _block_from_hf(sd, hf, ours):
    names = {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm",
             "norm_cross": "encoder_attn_layer_norm"}
    out = {}
    for name, hf_name in names.items():
        for part in ("weight", "bias"):
            if f"{hf}{hf_name}.{part}" in sd:  # the encoder has no cross
                out[f"{ours}{name}.{part}"] = sd[f"{hf}{hf_name}.{part}"]
    for name, hf_name in (("attn", "self_attn"), ("cross", "encoder_attn")):
        for w, proj in zip("qkvo", ("q_proj", "k_proj", "v_proj", "out_proj")):
            key = f"{hf}{hf_name}.{proj}."
            if key + "weight" in sd:
                out[f"{ours}{name}.W_{w}"] = sd[key + "weight"].T
            if key + "bias" in sd:  # k_proj has none
                out[f"{ours}{name}.b_{w}"] = sd[key + "bias"]
    for name, hf_name in (("in", "fc1"), ("out", "fc2")):
        out[f"{ours}mlp.W_{name}"] = sd[f"{hf}{hf_name}.weight"].T
        out[f"{ours}mlp.b_{name}"] = sd[f"{hf}{hf_name}.bias"]
    return out
# --8<-- [end:from_hf]
