"""Llama (chapter 3) as a family, with what later chapters add to its layer: RMSNorm,
RoPE attention (scaled RoPE, windows, biases and learned sinks: Mistral, gpt-oss, chapter
8; QK-norm: Qwen3, chapter 9), SwiGLU or a mixture of experts (Mixtral, Qwen3-MoE,
gpt-oss, chapter 9), pre-norm wiring (``attention.blocks.llama_block``).
"""

from functools import partial

from attention.blocks import attention_shapes, llama_block
from attention.families.moe import (check_model_moe, experts_weights,
                                    feed_forward, ffn_shapes, has_mixture)
from attention.families.softcap import capped_logits
from attention.family import Family, register
from attention.norms import rms_norm


def _block(c, i):
    """Layer i: Llama's parts, the mixture feed-forward where moe has one."""
    if has_mixture(c, i):
        return partial(llama_block, ffn=feed_forward)
    return llama_block


def _layer_shapes(c, i):
    d = c.d_model
    return ({"norm1.weight": (d,)} | attention_shapes(c)
            | {"norm2.weight": (d,)} | ffn_shapes(c, i))


def rms_final_norm(x, params, c):
    """The final RMSNorm of the RMSNorm families."""
    return rms_norm(x, params["final_norm.weight"], eps=c.norm_eps)


# --8<-- [start:hf_names]
def llama_outer(sd):
    """Llama's embeddings and final norm, by Hugging Face's names."""
    return {"embed.tokens": sd["model.embed_tokens.weight"],
            "final_norm.weight": sd["model.norm.weight"]}


def llama_weights(sd, i, config=None):
    """Block i of Llama: nn.Linear weights are (d_out, d_in), so transpose.
    Biases and learned sinks where the model has them (chapter 8)."""
    h = f"model.layers.{i}."
    extra = {f"attn.b_{x}": sd[f"{h}self_attn.{x}_proj.bias"]
             for x in "qkvo" if f"{h}self_attn.{x}_proj.bias" in sd}
    if h + "self_attn.sinks" in sd:
        extra["attn.sinks"] = sd[h + "self_attn.sinks"]
    for x in "qk":  # Qwen3's QK-norm (chapter 9)
        if f"{h}self_attn.{x}_norm.weight" in sd:
            extra[f"attn.{x}_norm.weight"] = sd[f"{h}self_attn.{x}_norm.weight"]
    return extra | {
        "norm1.weight": sd[h + "input_layernorm.weight"],
        "attn.W_q": sd[h + "self_attn.q_proj.weight"].T,
        "attn.W_k": sd[h + "self_attn.k_proj.weight"].T,
        "attn.W_v": sd[h + "self_attn.v_proj.weight"].T,
        "attn.W_o": sd[h + "self_attn.o_proj.weight"].T,
        "norm2.weight": sd[h + "post_attention_layernorm.weight"],
    } | mlp_weights(sd, h)


def mlp_weights(sd, h):
    """Block h's MLP: Llama's SwiGLU, or a mixture of experts (chapter 9)."""
    if h + "mlp.gate.weight" in sd or h + "mlp.router.weight" in sd:
        return experts_weights(sd, h + "mlp.")
    return {"mlp.W_gate": sd[h + "mlp.gate_proj.weight"].T,
            "mlp.W_up": sd[h + "mlp.up_proj.weight"].T,
            "mlp.W_down": sd[h + "mlp.down_proj.weight"].T}
# --8<-- [end:hf_names]


LLAMA = register(Family(
    name="llama",
    parts={"norm": "rms_norm", "mixer": "attention", "ffn": "swiglu",
           "wiring": "pre_norm", "positions": "rope"},
    block=_block,
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,
    hf_layer=llama_weights,
    check=check_model_moe,
    logits=capped_logits,
))
