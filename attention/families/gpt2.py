"""GPT-2 (chapter 3) as a family: LayerNorm, learned positions, attention with biases,
the GELU (tanh) MLP, pre-norm wiring (``attention.blocks.gpt2_block``).
"""

import numpy as np

from attention.blocks import attention_shapes, gpt2_block
from attention.family import Family, register
from attention.norms import layer_norm


def _layer_shapes(c, i):
    d, norm = c.d_model, _norm_shapes(c)
    return ({f"norm1.{k}": s for k, s in norm.items()}
            | attention_shapes(c, bias=True)
            | {f"norm2.{k}": s for k, s in norm.items()}
            | {"mlp.W_in": (d, c.d_ff), "mlp.b_in": (c.d_ff,),
               "mlp.W_out": (c.d_ff, d), "mlp.b_out": (d,)})


def _norm_shapes(c):
    return {"weight": (c.d_model,), "bias": (c.d_model,)}


def _check(c):
    """GPT-2 has one key/value head per query head and none of the later
    chapters' options."""
    if c.n_kv_heads != c.n_heads:
        raise ValueError("ModelConfig: gpt2 has n_kv_heads == n_heads")
    if (c.rope_scaling is not None or c.attn_sinks
            or c.sliding_window is not None):
        raise ValueError("ModelConfig: gpt2 has no RoPE, window or sinks "
                         "(rope_scaling, sliding_window, attn_sinks)")
    used = [name for name in ("head_dim", "qk_norm", "attn_scale",
                              "attn_softcap", "final_softcap")
            if getattr(c, name) is not None]
    if used:
        raise ValueError(f"ModelConfig: gpt2 has none of {used}")
    if c.moe is not None:
        raise ValueError("ModelConfig: a mixture of experts (moe) is for "
                         "arch 'llama' or 'deepseek_v3', not 'gpt2'")


# --8<-- [start:hf_names]
def gpt2_outer(sd):
    """GPT-2's embeddings and final norm, by Hugging Face's names."""
    return {"embed.tokens": sd["transformer.wte.weight"],
            "embed.positions": sd["transformer.wpe.weight"],
            "final_norm.weight": sd["transformer.ln_f.weight"],
            "final_norm.bias": sd["transformer.ln_f.bias"]}


def gpt2_weights(sd, i, config=None):
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
# --8<-- [end:hf_names]


GPT2 = register(Family(
    name="gpt2",
    parts={"norm": "layer_norm", "mixer": "attention", "ffn": "gelu_mlp",
           "wiring": "pre_norm", "positions": "learned"},
    block=lambda config, i: gpt2_block,
    layer_shapes=_layer_shapes,
    final_norm=lambda x, params, c: layer_norm(
        x, params["final_norm.weight"], params["final_norm.bias"],
        eps=c.norm_eps),
    norm_shapes=_norm_shapes,
    hf_outer=gpt2_outer,
    hf_layer=gpt2_weights,
    check=_check,
    embed=lambda x, params, positions, c: (
        x + params["embed.positions"][positions]),   # + (n, d_model)
    embed_shapes=lambda c: {"embed.positions": (c.max_positions, c.d_model)},
))
