"""A whole decoder-only language model: embeddings, N blocks, a final norm, the LM head.

References: Radford et al., "Language Models are Unsupervised Multitask Learners" (2019)
(GPT-2); Touvron et al., "LLaMA" (2023) and Grattafiori et al., "The Llama 3 Herd of
Models" (2024) (Llama). Hugging Face's GPT2LMHeadModel and LlamaForCausalLM compute the
same logits from the same weights (``attention.checkpoints`` converts them; the tests and
chapter 3 check it in float64).

The parameters are ONE flat dict of NumPy arrays with dotted names, every weight applied
on the right (x @ W, W of shape (d_in, d_out)):

    embed.tokens                    (vocab_size, d_model)
    embed.positions                 (max_positions, d_model)       gpt2 only
    blocks.{i}.norm1.weight         (d_model,)   (+ .bias for gpt2)
    blocks.{i}.attn.W_q             (d_model, n_heads * d_head)    (+ attn.b_q for gpt2)
    blocks.{i}.attn.W_k, attn.W_v   (d_model, n_kv_heads * d_head) (+ biases for gpt2)
    blocks.{i}.attn.W_o             (n_heads * d_head, d_model)    (+ attn.b_o for gpt2)
    blocks.{i}.norm2.weight         (d_model,)   (+ .bias for gpt2)
    blocks.{i}.mlp.W_in, mlp.b_in, mlp.W_out, mlp.b_out            gpt2: GELU MLP
    blocks.{i}.mlp.W_gate, mlp.W_up, mlp.W_down                    llama: SwiGLU
    final_norm.weight               (d_model,)   (+ .bias for gpt2)
    lm_head.W                       (d_model, vocab_size)  only if not tie_embeddings

Chapter 9 adds attn.q_norm.weight, attn.k_norm.weight (QK-norm), post_norm1.weight and
post_norm2.weight (gemma2), and for deepseek_v3 MLA's attn.W_dq, attn.dq_norm.weight,
attn.W_uq, attn.W_qr, attn.W_dkv, attn.dkv_norm.weight, attn.W_kr, attn.W_uk, attn.W_uv
in place of attn.W_q, attn.W_k, attn.W_v (``attention.families.mla``), and for a
mixture of experts (config.moe) mlp.router.*, mlp.experts.* and mlp.shared.* in place of
the mlp.* of every layer from moe.first_dense on but moe.dense_layers
(``attention.families.moe``).
Chapter 12 adds attn.W_gate (d_model, n_heads * d_head), the output gate
(config.attn_gate), and for the layers that config.layer_types calls "linear" a
recurrent mixer's linear.* in place of attn.* (``attention.families.qwen3_next``,
``kimi_linear``, ``minimax``).
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.blocks import dropped
from attention.family import family_of
from attention.kv_cache import attend_functions, positions_for
# --8<-- [end:imports]

# --8<-- [start:checks]
MLA_SIZES = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
             "v_head_dim")
MLA_ABSORB = ("decode", "always", "never")
LAYER_TYPES = ("full", "sliding", "linear")  # linear: a recurrent mixer
QK_NORMS = (None, "head", "projection")
SIZES = ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff",
         "max_positions")


def _is_int(value):
    """An integer (NumPy's included), but not a bool."""
    return (isinstance(value, (int, np.integer))
            and not isinstance(value, (bool, np.bool_)))


def _is_real(value):
    """A real number (NumPy's included), but not a bool."""
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def _complete_and_check(c):
    """Fill in the defaults that depend on other fields, then validate."""
    if c.n_kv_heads is None:  # the class is frozen: set through object
        object.__setattr__(c, "n_kv_heads", c.n_heads)
    if c.d_ff is None:
        object.__setattr__(c, "d_ff", 4 * c.d_model)
    family = family_of(c)  # or a ValueError naming the known ones
    for name in SIZES:
        value = getattr(c, name)
        if not _is_int(value) or value < 1:
            raise ValueError(f"ModelConfig: {name} must be a positive "
                             f"integer, got {value!r}")
        object.__setattr__(c, name, int(value))  # np.int64(8) -> 8
    for name, low in (("norm_eps", "0 <="), ("rope_base", "0 <")):
        value = getattr(c, name)
        if (not _is_real(value) or not np.isfinite(value)
                or value < 0 or (value == 0 and low == "0 <")):
            raise ValueError(f"ModelConfig: {name} must be a finite number "
                             f"with {low} {name}, got {value!r}")
        object.__setattr__(c, name, float(value))
    if not isinstance(c.tie_embeddings, (bool, np.bool_)):
        raise ValueError(f"ModelConfig: tie_embeddings must be True or "
                         f"False, got {c.tie_embeddings!r}")
    object.__setattr__(c, "tie_embeddings", bool(c.tie_embeddings))
    latent = family.parts["mixer"] == "latent"  # MLA's own head sizes
    if c.head_dim is None and not latent and c.d_model % c.n_heads:
        raise ValueError(f"ModelConfig: d_model = {c.d_model} is not "
                         f"divisible by n_heads = {c.n_heads}")
    if c.n_heads % c.n_kv_heads:
        raise ValueError(f"ModelConfig: n_heads = {c.n_heads} is not "
                         f"divisible by n_kv_heads = {c.n_kv_heads}")
    if family.parts["positions"] == "rope" and not latent and c.d_head % 2:
        raise ValueError(f"ModelConfig: RoPE needs an even d_head, "
                         f"got {c.d_head}")
    if c.rope_layout not in ("halves", "interleaved"):
        raise ValueError("ModelConfig: rope_layout must be 'halves' or "
                         f"'interleaved', got {c.rope_layout!r}")
    _check_long_context(c)
    _check_chapter_9(c, latent)
    if c.indexer is not None and "indexer" not in family.parts:
        raise ValueError(f"ModelConfig: indexer (DeepSeek Sparse Attention) "
                         f"is for arch='deepseek_v32', not {c.arch!r}")
    family.check(c)  # the family's own rules (attention.families)


def _check_long_context(c):
    """Chapter 8's fields: RoPE scaling, windows per layer, bias and sinks."""
    if c.rope_scaling is not None and not callable(
            getattr(c.rope_scaling, "angles", None)):
        raise TypeError(f"ModelConfig: rope_scaling must be a RopeScaling or "
                        f"None, got {c.rope_scaling!r}")
    w = c.sliding_window
    if w is not None and (isinstance(w, bool) or not isinstance(
            w, (int, np.integer)) or w < 1):
        raise ValueError(f"ModelConfig: sliding_window must be a positive "
                         f"integer or None, got {w!r}")
    if c.layer_types is not None:
        types = tuple(c.layer_types)
        if len(types) != c.n_layers or not set(types) <= set(LAYER_TYPES):
            raise ValueError(
                f"ModelConfig: layer_types must name one of {LAYER_TYPES} "
                f"for each of the {c.n_layers} layers, got {c.layer_types!r}")
        if "sliding" in types and w is None:
            raise ValueError("ModelConfig: layer_types has sliding layers "
                             "but sliding_window is None")
        object.__setattr__(c, "layer_types", types)
    _check_chapter_12(c)
    for name in ("attn_bias", "attn_sinks", "tie_embeddings"):
        if not isinstance(getattr(c, name), (bool, np.bool_)):
            raise ValueError(f"ModelConfig: {name} must be True or False, "
                             f"got {getattr(c, name)!r}")


def _check_chapter_12(c):
    """Chapter 12's fields: partial RoPE, the output gate, linear layers."""
    f = c.rope_fraction
    odd = _is_real(f) and f < 1 and int(c.d_head * f) % 2
    if not _is_real(f) or not 0 < f <= 1 or odd:
        raise ValueError(f"ModelConfig: rope_fraction must be in (0, 1] "
                         f"and rotate an even number of the d_head = "
                         f"{c.d_head} features, got {f!r}")
    object.__setattr__(c, "rope_fraction", float(f))
    if not isinstance(c.attn_gate, (bool, np.bool_)):
        raise ValueError(f"ModelConfig: attn_gate must be True or False, "
                         f"got {c.attn_gate!r}")
    family = family_of(c)
    scales = c.branch_scales
    if scales is not None:
        if family.parts["wiring"] != "scaled_residual":
            raise ValueError(f"ModelConfig: branch_scales are for a scaled "
                             f"residual wiring (arch 'minimax'), not "
                             f"{c.arch!r}")
        pairs = np.asarray(scales, dtype=object)
        if pairs.shape != (3, 2) or not all(
                _is_real(a) and 0 < a < np.inf for a in pairs.flat):
            raise ValueError(f"ModelConfig: branch_scales must be three "
                             f"(alpha, beta) pairs of positive numbers, got "
                             f"{scales!r}")
        object.__setattr__(c, "branch_scales", tuple(
            (float(a), float(b)) for a, b in scales))
    for i, kind in enumerate(c.layer_types or ()):
        mixer = family.layer_mixer(c, i)
        if (kind == "linear") != (mixer == "recurrent"):
            raise ValueError(f"ModelConfig: layer {i} is {kind!r} in "
                             f"layer_types, but the {c.arch!r} family runs "
                             f"a {mixer!r} mixer there")


def _check_chapter_9(c, latent):
    """Chapter 9's fields: head size, QK-norm, attention scale and caps."""
    if c.head_dim is not None:
        if not _is_int(c.head_dim) or c.head_dim < 1:
            raise ValueError(f"ModelConfig: head_dim must be a positive "
                             f"integer or None, got {c.head_dim!r}")
        object.__setattr__(c, "head_dim", int(c.head_dim))
    if c.qk_norm not in QK_NORMS:
        raise ValueError(f"ModelConfig: qk_norm must be one of {QK_NORMS}, "
                         f"got {c.qk_norm!r}")
    for name in ("attn_scale", "attn_softcap", "final_softcap"):
        value = getattr(c, name)
        if value is None:
            continue
        if not _is_real(value) or not 0 < value < np.inf:
            raise ValueError(f"ModelConfig: {name} must be a positive finite "
                             f"number or None, got {value!r}")
        object.__setattr__(c, name, float(value))
    if not latent:  # MLA's sizes: for a latent mixer only (chapter 9)
        used = [name for name in MLA_SIZES + ("q_lora_rank",)
                if getattr(c, name) is not None]
        if used:
            raise ValueError(f"ModelConfig: {used} belong to MLA "
                             f"(arch='deepseek_v3'), not {c.arch!r}")


def _check_inputs(config, ids, positions, valid, cache, window, n_sinks):
    """forward's inputs as arrays: ids and valid (batch, n), positions
    (n,) or (batch, n); or a ValueError that names the one at fault."""
    ids = np.asarray(ids)
    if ids.ndim not in (1, 2) or ids.dtype.kind not in "iu":
        raise ValueError(f"forward: token_ids must be integers of shape (n,) "
                         f"or (batch, n), got dtype {ids.dtype} and shape "
                         f"{ids.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= config.vocab_size):
        raise ValueError(f"forward: token ids must lie in "
                         f"0..{config.vocab_size - 1}, "
                         f"got {ids.min()}..{ids.max()}")
    shape, ids = ids.shape, np.atleast_2d(ids)  # ids: (batch, n)
    if valid is not None:
        valid = np.asarray(valid)
        if valid.shape != shape or valid.dtype != np.bool_:
            raise ValueError(f"forward: valid must be booleans of the shape "
                             f"of token_ids, {shape}, got dtype {valid.dtype} "
                             f"and shape {valid.shape}")
        valid = np.atleast_2d(valid)  # (batch, n)
    # A KVCache, or a page's own copy of the class (chapter 4 defines one).
    if cache is not None and not all(hasattr(cache, name) for name in (
            "update", "advance", "new_positions", "window", "n_sinks")):
        raise TypeError(f"forward: cache must be a KVCache, got "
                        f"{type(cache).__name__}")
    if cache is not None and (window is not None or n_sinks):
        if (window, n_sinks) != (cache.window, cache.n_sinks):
            raise ValueError(
                f"forward: with a cache the window is the cache's "
                f"(window={cache.window}, n_sinks={cache.n_sinks}); got "
                f"window={window!r}, n_sinks={n_sinks!r}: pass them to "
                f"KVCache instead")
    n = ids.shape[-1]
    if positions is None:
        positions = positions_for(n, cache=cache, valid=valid)
    else:
        positions = np.asarray(positions)
        if positions.shape not in ((n,), shape) or (
                positions.dtype.kind not in "iu"):
            shapes = f"({n},)" + ("" if len(shape) == 1 else f" or {shape}")
            raise ValueError(f"forward: positions must be integers of shape "
                             f"{shapes}, got dtype {positions.dtype} and "
                             f"shape {positions.shape}")
        if positions.ndim == 2:
            positions = np.atleast_2d(positions)  # (batch, n)
    # Dynamic NTK exists to read past max_positions (chapter 8).
    limit = (np.inf if config.rope_scaling is not None
             and config.rope_scaling.rope_type == "dynamic"
             else config.max_positions)
    if n and (positions.min() < 0 or positions.max() >= limit):
        raise ValueError(f"forward: positions must lie in "
                         f"0..{config.max_positions - 1}, "
                         f"got {positions.min()}..{positions.max()}")
    return ids, positions, valid
# --8<-- [end:checks]


# --8<-- [start:config]
@dataclass(frozen=True)
class ModelConfig:
    arch: str = "gpt2"              # gpt2, llama, gemma2 or deepseek_v3
    vocab_size: int = 50257         # number of distinct token ids
    d_model: int = 768              # width of the residual stream
    n_layers: int = 12              # number of blocks
    n_heads: int = 12               # query heads per attention layer
    n_kv_heads: int | None = None   # key/value heads (GQA); None: n_heads
    d_ff: int | None = None         # hidden width of the MLP; None: 4 * d_model
    max_positions: int = 1024       # longest sequence (GPT-2's position table)
    norm_eps: float = 1e-5          # eps of every LayerNorm / RMSNorm
    rope_base: float = 10000.0      # RoPE's base (llama); Llama 3 uses 500,000
    rope_layout: str = "halves"     # RoPE pairs: "halves" or "interleaved"
    tie_embeddings: bool = True     # LM head = token embedding, transposed
    # Chapter 8 (llama only): long contexts.
    rope_scaling: "RopeScaling | None" = None  # scaled RoPE; None: plain
    sliding_window: int | None = None  # keys a sliding layer's query sees
    layer_types: tuple | None = None   # "full"/"sliding" per layer; None:
    #                                    all sliding if sliding_window is set
    attn_bias: bool = False         # biases on W_q, W_k, W_v, W_o (gpt-oss)
    attn_sinks: bool = False        # a learned sink logit per head (gpt-oss)
    # Chapter 9 (not gpt2): Qwen3 and Gemma 2.
    head_dim: int | None = None     # d_head; None: d_model // n_heads
    qk_norm: str | None = None      # RMSNorm of q, k: "head" (Qwen3) or
    #                                 "projection" (OLMo 2); None: none
    attn_scale: float | None = None  # multiplies q kᵀ; None: 1 / sqrt(d_head)
    #                                  (MLA: 1 / sqrt(qk_nope + qk_rope))
    attn_softcap: float | None = None   # caps attention scores (Gemma 2)
    final_softcap: float | None = None  # caps the final logits (Gemma 2)
    # Chapter 9, arch "deepseek_v3": multi-head latent attention (MLA).
    q_lora_rank: int | None = None  # low-rank queries' width; None: full
    kv_lora_rank: int | None = None  # the cached latent's width, r
    qk_rope_head_dim: int | None = None  # rotated part of q, k (shared k)
    qk_nope_head_dim: int | None = None  # per-head part of q, k, no RoPE
    v_head_dim: int | None = None   # each head's value size
    mla_absorb: str = "decode"      # fold W_uk, W_uv: "decode" (one new
    #                                 token), "always" or "never"
    # Chapter 9 (llama, deepseek_v3): a mixture of experts for the MLP.
    moe: "MoE | None" = None        # None: every layer a dense SwiGLU
    # Chapter 12 (deepseek_v32): DeepSeek Sparse Attention's indexer.
    indexer: "Indexer | None" = None  # picks each query's keys; None: all
    # Chapter 12: gated attention and hybrid models (Qwen3-Next, Qwen3.5).
    rope_fraction: float = 1.0      # share of d_head that RoPE rotates
    attn_gate: bool = False         # sigmoid(x W_gate) times each head's
    #                                 output, before W_o (attn.W_gate)
    linear: object = None           # the "linear" layers' own sizes (a
    #                                 GatedDeltaNetConfig, ...; DeepSeek-V4's
    #                                 V4Sizes); its family checks it
    branch_scales: tuple | None = None  # MiniMax: (alpha, beta) after full
    #   attention, linear attention, the MLP: alpha norm(x) + beta branch

    @property
    def d_head(self) -> int:        # size of one head
        return self.head_dim or self.d_model // self.n_heads

    @property
    def layer_windows(self) -> list:  # each layer's window, None: full
        # (or a "linear" layer: no window, it keeps no keys)
        if self.sliding_window is None:
            return [None] * self.n_layers
        types = self.layer_types or ("sliding",) * self.n_layers
        return [self.sliding_window if t == "sliding" else None
                for t in types]

    def __post_init__(self):
        _complete_and_check(self)
# --8<-- [end:config]


# Published configurations (GPT-2: Radford et al. 2019 and the released checkpoints;
# Llama 3: the released config.json files of Meta-Llama-3-8B and -70B).
CONFIGS = {
    "gpt2": ModelConfig(),
    "gpt2-medium": ModelConfig(d_model=1024, n_layers=24, n_heads=16),
    "gpt2-large": ModelConfig(d_model=1280, n_layers=36, n_heads=20),
    "gpt2-xl": ModelConfig(d_model=1600, n_layers=48, n_heads=25),
    "llama-3-8b": ModelConfig(
        arch="llama", vocab_size=128256, d_model=4096, n_layers=32, n_heads=32,
        n_kv_heads=8, d_ff=14336, max_positions=8192, rope_base=500000.0,
        tie_embeddings=False),
    "llama-3-70b": ModelConfig(
        arch="llama", vocab_size=128256, d_model=8192, n_layers=80, n_heads=64,
        n_kv_heads=8, d_ff=28672, max_positions=8192, rope_base=500000.0,
        tie_embeddings=False),
}


# --8<-- [start:parameter_shapes]
def parameter_shapes(config):
    """Name -> shape of every parameter, in a fixed order. Allocates nothing.

    Each layer's shapes are its family's (``Family.layer_shapes``)."""
    c, family = config, family_of(config)
    shapes = {"embed.tokens": (c.vocab_size, c.d_model)}
    shapes |= family.embed_shapes(c)  # GPT-2's position table
    for i in range(c.n_layers):
        shapes |= {f"blocks.{i}.{k}": s
                   for k, s in family.layer_shapes(c, i).items()}
    shapes |= {f"final_norm.{k}": s for k, s in family.norm_shapes(c).items()}
    if not c.tie_embeddings:
        shapes["lm_head.W"] = (c.d_model, c.vocab_size)
    return shapes

# --8<-- [end:parameter_shapes]


# --8<-- [start:init_params]
def init_params(config, rng, *, std=0.02, dtype=np.float64):
    """Random parameters as GPT-2 initialised them.

    Weights ~ N(0, std^2); the projections that write into the residual
    stream (attn.W_o, mlp.W_out, mlp.W_down, the experts' W_down) get
    std / sqrt(2 n_layers), so the stream does not grow with depth; biases
    (a router's too) 0; norm weights 1.
    Draws from ``rng`` in the order of ``parameter_shapes(config)``.
    """
    params = {}
    for name, shape in parameter_shapes(config).items():
        if name.endswith("bias") or ".b_" in name:
            params[name] = np.zeros(shape, dtype)
        elif name.endswith(".weight"):      # the norms' gains: 1, or
            # 0 where the family stores offsets from one (Gemma 2)
            params[name] = np.full(shape, family_of(config).gain, dtype)
        else:
            out = name.endswith(("W_o", "W_out", "W_down"))
            s = std / np.sqrt(2 * config.n_layers) if out else std
            params[name] = rng.normal(0.0, s, size=shape).astype(dtype)
    return params
# --8<-- [end:init_params]


# --8<-- [start:forward]
def forward(params, config, token_ids, *, positions=None, trace=None,
            valid=None, cache=None, window=None, n_sinks=0, dropout=None):
    """Logits for every position: token_ids (batch, n) -> (batch, n, vocab).

    token_ids may also be (n,), giving (n, vocab). positions: the absolute
    positions of the n tokens, default 0..n-1. trace: a dict to receive the
    intermediate values, named like the parameters ("blocks.0.q", ...).
    Chapter 4: valid (batch, n) marks real tokens (False on left <pad>);
    cache: a ``KVCache`` the tokens are appended to and attend over;
    window, n_sinks: sliding-window attention (``attention.kv_cache``).
    Chapter 7: dropout, masks by name ("embed", "blocks.{i}.attn.weights",
    "blocks.{i}.attn.out", "blocks.{i}.mlp.out"; ``attention.gpt.dropout``).
    """
    single = np.ndim(token_ids) == 1  # (n,): give (n, vocab) back
    ids, positions, valid = _check_inputs(config, token_ids, positions, valid,
                                          cache, window, n_sinks)
    # ids, valid: (batch, n); positions: (n,) or (batch, n)
    family = family_of(config)  # its parts (``attention.family``)
    attend_fns = attend_functions(config.n_layers, ids.shape[-1], cache=cache,
                                  valid=valid, window=window, n_sinks=n_sinks,
                                  layer_windows=config.layer_windows,
                                  mixers=[family.layer_mixer(config, i)
                                          for i in range(config.n_layers)])
    x = params["embed.tokens"][ids]                       # (batch, n, d_model)
    x = family.embed(x, params, positions, config)  # GPT-2: + positions
    drop = dropout or {}
    x = dropped(x, drop.get("embed"))
    for i in range(config.n_layers):
        kept = None if trace is None else {}
        block = family.block(config, i)  # layer i's parts, wired
        x = block(x, block_params(params, i), config, positions, trace=kept,
                  attend_fn=attend_fns[i], dropout=block_params(drop, i),
                  **({"token_ids": ids} if family.token_ids else {}))
        if trace is not None:
            trace.update({f"blocks.{i}.{k}": v for k, v in kept.items()})
    if cache is not None:
        cache.advance(ids.shape[-1])  # the new tokens are now in the cache
    h = family.final_norm(x, params, config)
    if config.tie_embeddings:
        logits = h @ params["embed.tokens"].T             # (batch, n, vocab)
    else:
        logits = h @ params["lm_head.W"]                  # (batch, n, vocab)
    logits = family.logits(logits, config)  # Gemma 2: soft-capped
    if trace is not None:
        trace.update({"final_norm.in": x, "final_norm.out": h})
    return logits[0] if single else logits


def block_params(params, i):
    """The parameters of block i, with their short names ("attn.W_q", ...)."""
    prefix = f"blocks.{i}."
    return {k[len(prefix):]: v for k, v in params.items()
            if k.startswith(prefix)}
# --8<-- [end:forward]
