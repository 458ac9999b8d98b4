"""Qwen3-Next and Qwen3.5: hybrid models, a Gated DeltaNet layer beside gated attention.

Qwen Team, "Qwen3-Next" (2025) and "Qwen3.5" (2026); Hugging Face's ``Qwen3NextForCausalLM``
and ``Qwen3_5ForCausalLM``. Llama's pre-norm wiring, with two token mixers chosen per
layer by ``config.layer_types`` (three "linear" layers to one "full" in the released
models):
- "linear": chapter 10's Gated DeltaNet (``attention.linear.gated_deltanet``), whose
  fixed-size state the cache keeps (``layer_mixer`` says "recurrent");
- "full": RoPE attention on part of each head (``rope_fraction`` 0.25), QK-norm per
  head, and the output gate (``attention.sparse.gated_output``);
and as feed-forward a mixture of experts with one shared expert under a sigmoid gate
(Qwen3-Next) or a dense SwiGLU (Qwen3.5). Every RMSNorm but the DeltaNet's gated norm
scales by (1 + weight), as Gemma's; the converter stores 1 + weight, so Llama's
``rms_norm`` computes it.
"""

# --8<-- [start:imports]
from functools import partial

from attention.blocks import attention_shapes, llama_block, rope_attention
from attention.families.llama import mlp_weights, rms_final_norm
from attention.families.moe import check_model_moe, feed_forward, ffn_shapes
from attention.family import Family, register
from attention.linear.gated_deltanet import (GatedDeltaNetConfig,
                                             gated_deltanet)
from attention.linear.qwen3_next import params_from_hf
from attention.sparse.gated_output import gated_attention
# --8<-- [end:imports]


# --8<-- [start:mixers]
def is_linear(c, i):
    """Whether layer i is a recurrent ("linear") layer."""
    return c.layer_types is not None and c.layer_types[i] == "linear"


def deltanet_mixer(h, p, config, positions, *, trace=None, attend_fn=None,
                   dropout=None):
    """Gated DeltaNet as a block's token mixer. attend_fn: the layer's
    ``RecurrentSlot`` (its state before h, h's padding mask); <pad> tokens
    are zeroed first, as Hugging Face does, so they write nothing."""
    slot = attend_fn
    if slot is not None and slot.valid is not None:
        h = h * slot.valid[..., None]                  # (batch, n, d_model)
    weights = {k[len("linear."):]: v for k, v in p.items()
               if k.startswith("linear.")}
    weights["norm"] = weights.pop("norm.weight")
    y, state = gated_deltanet(h, weights, config.linear,
                              None if slot is None else slot.state)
    if slot is not None:
        slot.save(state)
    return y
# --8<-- [end:mixers]


def deltanet_shapes(c):
    """The Gated DeltaNet layer's parameters, short names."""
    g, d = c.linear, c.d_model
    d_qk, d_vv = g.n_qk_heads * g.d_k, g.n_v_heads * g.d_v
    return {f"linear.{k}": s for k, s in {
        "W_q": (d, d_qk), "W_k": (d, d_qk), "W_v": (d, d_vv),
        "W_z": (d, d_vv), "W_b": (d, g.n_v_heads), "W_a": (d, g.n_v_heads),
        "conv": (g.conv_channels, g.conv_kernel), "A_log": (g.n_v_heads,),
        "dt_bias": (g.n_v_heads,), "norm.weight": (g.d_v,),
        "W_o": (d_vv, d)}.items()}


def _block(c, i):
    if is_linear(c, i):
        mixer = deltanet_mixer
    else:
        mixer = gated_attention if c.attn_gate else rope_attention
    return partial(llama_block, mixer=mixer, ffn=feed_forward)


def _layer_shapes(c, i):
    d = c.d_model
    if is_linear(c, i):
        mixer = deltanet_shapes(c)
    else:
        mixer = attention_shapes(c)
        if c.attn_gate:
            mixer["attn.W_gate"] = (d, c.n_heads * c.d_head)
    return ({"norm1.weight": (d,)} | mixer | {"norm2.weight": (d,)}
            | ffn_shapes(c, i))


def _check(c):
    """The linear layers' sizes: a GatedDeltaNetConfig of d_model."""
    if c.layer_types is not None and "linear" in c.layer_types and not (
            isinstance(c.linear, GatedDeltaNetConfig)
            and c.linear.d_model == c.d_model):
        raise ValueError(f"ModelConfig: the linear layers need linear = a "
                         f"GatedDeltaNetConfig with d_model = {c.d_model}, "
                         f"got {c.linear!r}")
    check_model_moe(c)


# --8<-- [start:hf_names]
def qwen3_next_outer(sd):
    """Embeddings and the final norm, its gain stored as 1 + weight."""
    return {"embed.tokens": sd["model.embed_tokens.weight"],
            "final_norm.weight": 1.0 + sd["model.norm.weight"]}


def qwen3_next_weights(sd, i, config):
    """Layer i: its DeltaNet (``attention.linear.qwen3_next``) or its gated
    attention, whose q_proj holds each head's d_head query rows then its
    d_head gate rows; norms' gains as 1 + weight; the shared expert."""
    h = f"model.layers.{i}."
    p = {"norm1.weight": 1.0 + sd[h + "input_layernorm.weight"],
         "norm2.weight": 1.0 + sd[h + "post_attention_layernorm.weight"]}
    if is_linear(config, i):
        a = h + "linear_attn."
        layer = {k[len(a):]: sd[k] for k in list(sd) if k.startswith(a)}
        p |= {f"linear.{k}": v for k, v in
              params_from_hf(layer, config.linear).items()}
        p["linear.norm.weight"] = p.pop("linear.norm")
    else:
        a, H, d_head = h + "self_attn.", config.n_heads, config.d_head
        W = sd[a + "q_proj.weight"].reshape(H, 2, d_head, config.d_model)
        p |= {"attn.W_q": W[:, 0].reshape(H * d_head, -1).T,
              "attn.W_gate": W[:, 1].reshape(H * d_head, -1).T,
              "attn.W_k": sd[a + "k_proj.weight"].T,
              "attn.W_v": sd[a + "v_proj.weight"].T,
              "attn.W_o": sd[a + "o_proj.weight"].T,
              "attn.q_norm.weight": 1.0 + sd[a + "q_norm.weight"],
              "attn.k_norm.weight": 1.0 + sd[a + "k_norm.weight"]}
    p |= mlp_weights(sd, h)
    s = h + "mlp.shared_expert."
    if s + "gate_proj.weight" in sd:
        p |= {f"mlp.shared.W_{x}": sd[f"{s}{x}_proj.weight"].T
              for x in ("gate", "up", "down")}
        p["mlp.shared.gate"] = sd[h + "mlp.shared_expert_gate.weight"][0]
    return p
# --8<-- [end:hf_names]


QWEN3_NEXT = register(Family(
    name="qwen3_next",
    parts={"norm": "rms_norm", "mixer": "hybrid", "ffn": "moe",
           "wiring": "pre_norm", "positions": "rope"},
    block=_block,
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=qwen3_next_outer,
    hf_layer=qwen3_next_weights,
    check=_check,
    layer_mixer=lambda c, i: "recurrent" if is_linear(c, i) else "attention",
))
