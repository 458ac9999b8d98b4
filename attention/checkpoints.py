"""Hugging Face GPT-2 and Llama weights -> this package's parameter dict (NumPy only).

``from_hf_state_dict`` takes a state dict whose values are already NumPy arrays (for
example ``{k: v.numpy() for k, v in model.state_dict().items()}``) and renames, splits and
transposes them; ``config_from_hf`` reads a Hugging Face configuration object by its
attribute names. Neither imports torch or transformers.

What changes on the way:
- GPT-2 stores its projections as ``Conv1D`` modules whose weight is already (d_in,
  d_out), the layout used here, and packs W_q, W_k and W_v side by side in ``c_attn``:
  split its columns in three.
- Llama uses ``nn.Linear``, whose weight is (d_out, d_in): transpose. Its q_proj/k_proj
  rows are in the "halves" RoPE layout (Hugging Face's ``rotate_half``); Meta's original
  checkpoints use "interleaved" (see ``attention.positions.rope_weights_to_layout``).
"""

# --8<-- [start:imports]
import numpy as np

from attention.long_context.rope_scaling import ROPE_TYPES, RopeScaling
from attention.model import ModelConfig, parameter_shapes
# --8<-- [end:imports]


# --8<-- [start:config_from_hf]
def config_from_hf(hf_config):
    """A ModelConfig from a Hugging Face GPT2Config or LlamaConfig."""
    c = hf_config
    if c.model_type == "gpt2":
        if c.activation_function not in ("gelu_new", "gelu_pytorch_tanh"):
            raise ValueError(
                f"config_from_hf: GPT-2 with {c.activation_function!r}; "
                "only GELU tanh is supported")
        return ModelConfig(
            arch="gpt2", vocab_size=c.vocab_size, d_model=c.n_embd,
            n_layers=c.n_layer, n_heads=c.n_head,
            d_ff=c.n_inner or 4 * c.n_embd, max_positions=c.n_positions,
            norm_eps=c.layer_norm_epsilon,
            tie_embeddings=c.tie_word_embeddings)
    if c.model_type in ("llama", "mistral", "ministral"):
        d_head = (getattr(c, "head_dim", None)
                  or c.hidden_size // c.num_attention_heads)
        rope = getattr(c, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))
        if (c.hidden_act != "silu" or getattr(c, "mlp_bias", False)
                or d_head * c.num_attention_heads != c.hidden_size):
            raise ValueError(
                "config_from_hf: only plain Llama is supported (SiLU, no "
                "MLP biases, d_head = d_model / n_heads)")
        return ModelConfig(
            arch="llama", vocab_size=c.vocab_size, d_model=c.hidden_size,
            n_layers=c.num_hidden_layers, n_heads=c.num_attention_heads,
            n_kv_heads=c.num_key_value_heads, d_ff=c.intermediate_size,
            max_positions=c.max_position_embeddings, norm_eps=c.rms_norm_eps,
            rope_base=float(theta), rope_layout="halves",
            rope_scaling=_rope_scaling(rope, c.max_position_embeddings),
            sliding_window=getattr(c, "sliding_window", None),
            layer_types=_layer_types(c),
            attn_bias=bool(getattr(c, "attention_bias", False)),
            tie_embeddings=c.tie_word_embeddings)
    raise ValueError(f"config_from_hf: model_type {c.model_type!r} "
                     "is not gpt2, llama, mistral or ministral")


def _layer_types(c):
    """"sliding"/"full" per layer from Hugging Face's layer_types (None: all
    layers alike)."""
    types = getattr(c, "layer_types", None)
    if types is None or getattr(c, "sliding_window", None) is None:
        return None
    names = {"sliding_attention": "sliding", "full_attention": "full"}
    unknown = sorted(set(types) - set(names))
    if unknown:
        raise ValueError(f"config_from_hf: layer_types {unknown} are not "
                         f"implemented (only {sorted(names)})")
    return tuple(names[t] for t in types)
# --8<-- [end:config_from_hf]


# --8<-- [start:rope_scaling]
# The keys of Hugging Face's rope_parameters that each type reads.
_ROPE_KEYS = {
    "default": set(),
    "linear": {"factor"},
    "dynamic": {"factor"},
    "yarn": {"factor", "original_max_position_embeddings", "beta_fast",
             "beta_slow", "truncate", "attention_factor", "mscale",
             "mscale_all_dim"},
    "llama3": {"factor", "original_max_position_embeddings",
               "low_freq_factor", "high_freq_factor"},
}


def _rope_scaling(rope, max_positions):
    """A RopeScaling from Hugging Face's ``rope_parameters`` (None: plain)."""
    kind = rope.get("rope_type", "default")
    if kind not in ROPE_TYPES:
        raise ValueError(f"config_from_hf: rope_parameters['rope_type'] = "
                         f"{kind!r} is not implemented (only {ROPE_TYPES})")
    extra = set(rope) - _ROPE_KEYS[kind] - {"rope_type", "rope_theta"}
    if rope.get("partial_rotary_factor", 1.0) == 1.0:
        extra.discard("partial_rotary_factor")
    if extra:
        raise ValueError(f"config_from_hf: rope_parameters {sorted(extra)} "
                         f"are not implemented for rope_type {kind!r}")
    if kind == "default":
        return None
    original = rope.get("original_max_position_embeddings")
    if kind == "dynamic":  # grows past the model's own length
        original = max_positions
    factor = rope.get("factor")
    if kind == "yarn" and factor is None:
        factor = max_positions / original
    get = rope.get
    return RopeScaling(
        kind, factor=float(factor), original_max_positions=original,
        low_freq_factor=get("low_freq_factor", 1.0),
        high_freq_factor=get("high_freq_factor", 4.0),
        beta_fast=get("beta_fast") or 32.0, beta_slow=get("beta_slow") or 1.0,
        truncate=get("truncate", True),
        attention_factor=get("attention_factor"), mscale=get("mscale"),
        mscale_all_dim=get("mscale_all_dim"))
# --8<-- [end:rope_scaling]


# --8<-- [start:hf_names]
def _gpt2(sd, i):
    """Block i of GPT-2: Conv1D weights are already (d_in, d_out)."""
    h = f"transformer.h.{i}."
    W_q, W_k, W_v = np.split(sd[h + "attn.c_attn.weight"], 3, axis=1)
    b_q, b_k, b_v = np.split(sd[h + "attn.c_attn.bias"], 3)
    return {
        "norm1.weight": sd[h + "ln_1.weight"],
        "norm1.bias": sd[h + "ln_1.bias"],
        "attn.W_q": W_q, "attn.W_k": W_k, "attn.W_v": W_v,
        "attn.b_q": b_q, "attn.b_k": b_k, "attn.b_v": b_v,
        "attn.W_o": sd[h + "attn.c_proj.weight"],
        "attn.b_o": sd[h + "attn.c_proj.bias"],
        "norm2.weight": sd[h + "ln_2.weight"],
        "norm2.bias": sd[h + "ln_2.bias"],
        "mlp.W_in": sd[h + "mlp.c_fc.weight"],
        "mlp.b_in": sd[h + "mlp.c_fc.bias"],
        "mlp.W_out": sd[h + "mlp.c_proj.weight"],
        "mlp.b_out": sd[h + "mlp.c_proj.bias"],
    }


def _llama(sd, i):
    """Block i of Llama: nn.Linear weights are (d_out, d_in), so transpose.
    Biases and learned sinks where the model has them (chapter 8)."""
    h = f"model.layers.{i}."
    extra = {f"attn.b_{x}": sd[f"{h}self_attn.{x}_proj.bias"]
             for x in "qkvo" if f"{h}self_attn.{x}_proj.bias" in sd}
    if h + "self_attn.sinks" in sd:
        extra["attn.sinks"] = sd[h + "self_attn.sinks"]
    return extra | {
        "norm1.weight": sd[h + "input_layernorm.weight"],
        "attn.W_q": sd[h + "self_attn.q_proj.weight"].T,
        "attn.W_k": sd[h + "self_attn.k_proj.weight"].T,
        "attn.W_v": sd[h + "self_attn.v_proj.weight"].T,
        "attn.W_o": sd[h + "self_attn.o_proj.weight"].T,
        "norm2.weight": sd[h + "post_attention_layernorm.weight"],
        "mlp.W_gate": sd[h + "mlp.gate_proj.weight"].T,
        "mlp.W_up": sd[h + "mlp.up_proj.weight"].T,
        "mlp.W_down": sd[h + "mlp.down_proj.weight"].T,
    }
# --8<-- [end:hf_names]


# --8<-- [start:from_hf_state_dict]
def from_hf_state_dict(state_dict, config):
    """Our flat parameter dict from a GPT2LMHeadModel or LlamaForCausalLM
    state dict (values: NumPy arrays). Shapes are checked against config."""
    try:
        params = _rename(dict(state_dict), config)
    except KeyError as missing:
        raise ValueError(
            f"from_hf_state_dict: the state dict has no {missing} "
            f"(is it a {config.arch} model of this config?)") from None
    expected = parameter_shapes(config)
    for name, shape in expected.items():
        got = np.shape(params.get(name))
        if got != shape:
            raise ValueError(f"from_hf_state_dict: {name} should have shape "
                             f"{shape} for this config, got {got}")
    # Copies: contiguous arrays that no longer share memory with the source.
    return {name: np.array(params[name]) for name in expected}


def _rename(sd, config):
    if config.arch == "gpt2":
        params = {"embed.tokens": sd["transformer.wte.weight"],
                  "embed.positions": sd["transformer.wpe.weight"],
                  "final_norm.weight": sd["transformer.ln_f.weight"],
                  "final_norm.bias": sd["transformer.ln_f.bias"]}
        block = _gpt2
    else:
        params = {"embed.tokens": sd["model.embed_tokens.weight"],
                  "final_norm.weight": sd["model.norm.weight"]}
        block = _llama
    for i in range(config.n_layers):
        params |= {f"blocks.{i}.{k}": v for k, v in block(sd, i).items()}
    if not config.tie_embeddings:
        params["lm_head.W"] = sd["lm_head.weight"].T     # (d_model, vocab)
    return params
# --8<-- [end:from_hf_state_dict]
