"""Gemma 2's block: the pieces that differ from Llama's.

Gemma Team, "Gemma 2: Improving Open Language Models at a Practical Size" (2024),
section 2, and Hugging Face's ``Gemma2ForCausalLM``:
- RMSNorm scales by (1 + weight), so a weight stored as zeros is the identity;
- every branch is normalised on the way in and on the way out ("pre and post norms"):
  x + post_norm(branch(pre_norm(x)));
- the MLP is GeGLU: the tanh GELU of the gate times the up projection;
- embeddings are multiplied by sqrt(d_model) (the head, tied to them, is not);
- attention scores (and final logits) are soft-capped (``attention.families.softcap``)
  and queries are scaled by 1 / sqrt(query_pre_attn_scalar) instead of 1 / sqrt(d_head);
- local (sliding-window) and global layers alternate, local first.
"""

# --8<-- [start:imports]
import math

from attention.blocks import (attention_shapes, dropped, record,
                              rope_attention)
from attention.families.llama import llama_outer
from attention.families.softcap import capped_logits
from attention.family import Family, register
from attention.feed_forward import gelu
from attention.norms import rms_norm
# --8<-- [end:imports]


# --8<-- [start:gemma_pieces]
def gemma_rms_norm(x, weight, *, eps=1e-6):
    """Gemma's RMSNorm: rms_norm with the gain 1 + weight.

    x: (..., d); weight: (d,), stored as an offset from one.
    """
    return rms_norm(x, 1.0 + weight, eps=eps)


def geglu(x, W_gate, W_up, W_down):
    """GeGLU (Gemma): gelu_tanh(x W_gate) * (x W_up), then W_down.

    SwiGLU's shape with the tanh GELU for SiLU. x: (..., d_model);
    W_gate, W_up: (d_model, d_ff); W_down: (d_ff, d_model).
    """
    gate = gelu(x @ W_gate, approximate="tanh")             # (..., d_ff)
    return (gate * (x @ W_up)) @ W_down                     # (..., d_model)
# --8<-- [end:gemma_pieces]


# --8<-- [start:gemma2_block]
def gemma2_block(x, p, config, positions, *, trace=None, attend_fn=None,
                 dropout=None):
    """Gemma 2's decoder block: each branch normalised before and after,
    (1 + weight) RMSNorms, GeGLU (the pieces above).

    x: (batch, n, d_model); positions, attend_fn, dropout as for
    ``llama_block``. The norms: norm1 and post_norm1 around attention,
    norm2 and post_norm2 around the MLP.
    """
    eps, drop = config.norm_eps, dropout or {}
    h = gemma_rms_norm(x, p["norm1.weight"], eps=eps)
    a = rope_attention(h, p, config, positions, trace=trace,
                       attend_fn=attend_fn, dropout=drop.get("attn.weights"))
    x_mid = x + dropped(gemma_rms_norm(a, p["post_norm1.weight"], eps=eps),
                        drop.get("attn.out"))
    h2 = gemma_rms_norm(x_mid, p["norm2.weight"], eps=eps)
    m = geglu(h2, p["mlp.W_gate"], p["mlp.W_up"], p["mlp.W_down"])
    out = x_mid + dropped(gemma_rms_norm(m, p["post_norm2.weight"], eps=eps),
                          drop.get("mlp.out"))
    record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out
# --8<-- [end:gemma2_block]


def _layer_shapes(c, i):
    d = c.d_model
    return ({"norm1.weight": (d,)} | attention_shapes(c)
            | {"post_norm1.weight": (d,), "norm2.weight": (d,),
               "post_norm2.weight": (d,)}
            | {"mlp.W_gate": (d, c.d_ff), "mlp.W_up": (d, c.d_ff),
               "mlp.W_down": (c.d_ff, d)})


def _check(c):
    if c.moe is not None:
        raise ValueError("ModelConfig: a mixture of experts (moe) is for "
                         "arch 'llama' or 'deepseek_v3', not 'gemma2'")


def gemma2_weights(sd, i, config=None):
    """Block i of Gemma 2: Llama's names, plus a norm after each branch
    and one before the MLP (chapter 9). Gains stay offsets from one."""
    h = f"model.layers.{i}."
    return {
        "norm1.weight": sd[h + "input_layernorm.weight"],
        "attn.W_q": sd[h + "self_attn.q_proj.weight"].T,
        "attn.W_k": sd[h + "self_attn.k_proj.weight"].T,
        "attn.W_v": sd[h + "self_attn.v_proj.weight"].T,
        "attn.W_o": sd[h + "self_attn.o_proj.weight"].T,
        "post_norm1.weight": sd[h + "post_attention_layernorm.weight"],
        "norm2.weight": sd[h + "pre_feedforward_layernorm.weight"],
        "mlp.W_gate": sd[h + "mlp.gate_proj.weight"].T,
        "mlp.W_up": sd[h + "mlp.up_proj.weight"].T,
        "mlp.W_down": sd[h + "mlp.down_proj.weight"].T,
        "post_norm2.weight": sd[h + "post_feedforward_layernorm.weight"],
    }


GEMMA2 = register(Family(
    name="gemma2",
    parts={"norm": "gemma_rms_norm", "mixer": "attention", "ffn": "geglu",
           "wiring": "pre_and_post_norm", "positions": "rope"},
    block=lambda config, i: gemma2_block,
    layer_shapes=_layer_shapes,
    final_norm=lambda x, params, c: gemma_rms_norm(
        x, params["final_norm.weight"], eps=c.norm_eps),
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,  # Llama's names
    hf_layer=gemma2_weights,
    check=_check,
    # Gemma's embeddings are scaled; the tied head is not
    embed=lambda x, params, positions, c: x * math.sqrt(c.d_model),
    logits=capped_logits,
    gain=0.0,  # each gain stored as its offset from one
))
