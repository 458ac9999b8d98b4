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
    if c.model_type == "llama":
        d_head = (getattr(c, "head_dim", None)
                  or c.hidden_size // c.num_attention_heads)
        rope = getattr(c, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))
        if (c.hidden_act != "silu" or c.attention_bias or c.mlp_bias
                or d_head * c.num_attention_heads != c.hidden_size
                or rope.get("rope_type", "default") != "default"):
            raise ValueError(
                "config_from_hf: only plain Llama is supported (SiLU, no "
                "biases, d_head = d_model / n_heads, unscaled RoPE)")
        return ModelConfig(
            arch="llama", vocab_size=c.vocab_size, d_model=c.hidden_size,
            n_layers=c.num_hidden_layers, n_heads=c.num_attention_heads,
            n_kv_heads=c.num_key_value_heads, d_ff=c.intermediate_size,
            max_positions=c.max_position_embeddings, norm_eps=c.rms_norm_eps,
            rope_base=float(theta), rope_layout="halves",
            tie_embeddings=c.tie_word_embeddings)
    raise ValueError(f"config_from_hf: model_type {c.model_type!r} "
                     "is neither gpt2 nor llama")
# --8<-- [end:config_from_hf]


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
    """Block i of Llama: nn.Linear weights are (d_out, d_in), so transpose."""
    h = f"model.layers.{i}."
    return {
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
