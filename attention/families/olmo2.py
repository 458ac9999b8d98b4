"""OLMo 2 as a family: the norms moved after each branch, and QK-norm over whole projections.

Team OLMo, "2 OLMo 2 Furious" (2024), its changes for training stability (the norms
reordered, QK-norm); Hugging Face's ``Olmo2ForCausalLM``. Llama's parts, wired differently:
- each branch's output, not its input, is normalised before it joins the residual stream:
  x + RMSNorm(attention(x)), then x + RMSNorm(SwiGLU(x)); no norm on the way in;
- the queries and keys are RMS-normalised over the whole projection (all heads at once,
  before RoPE), with gains of n_heads * d_head and n_kv_heads * d_head numbers
  (``attention.blocks.attention_layer``'s qk_norm="projection", chapter 9).
"""

from attention.blocks import (attention_shapes, dropped, record,
                              rope_attention, swiglu_mlp)
from attention.families.llama import llama_outer, mlp_weights, rms_final_norm
from attention.family import Family, register
from attention.norms import rms_norm


# --8<-- [start:olmo2_block]
def olmo2_block(x, p, config, positions, *, trace=None, attend_fn=None,
                dropout=None):
    """OLMo 2's decoder block: each branch normalised on its way out.

    x: (batch, n, d_model); positions, attend_fn, dropout as for
    ``llama_block``. post_norm1 follows attention, post_norm2 the MLP.
    """
    eps, drop = config.norm_eps, dropout or {}
    a = rope_attention(x, p, config, positions, trace=trace,
                       attend_fn=attend_fn, dropout=drop.get("attn.weights"))
    x_mid = x + dropped(rms_norm(a, p["post_norm1.weight"], eps=eps),
                        drop.get("attn.out"))
    m = swiglu_mlp(x_mid, p, config)
    out = x_mid + dropped(rms_norm(m, p["post_norm2.weight"], eps=eps),
                          drop.get("mlp.out"))
    record(trace, x=x, x_mid=x_mid, out=out)
    return out
# --8<-- [end:olmo2_block]


def _layer_shapes(c, i):
    d, f = c.d_model, c.d_ff
    return (attention_shapes(c) | {"post_norm1.weight": (d,)}
            | {"mlp.W_gate": (d, f), "mlp.W_up": (d, f), "mlp.W_down": (f, d)}
            | {"post_norm2.weight": (d,)})


def _check(c):
    if c.qk_norm != "projection":
        raise ValueError(f"ModelConfig: olmo2 normalises its queries and "
                         f"keys over the whole projection: qk_norm must be "
                         f"'projection', got {c.qk_norm!r}")
    if c.moe is not None:
        raise ValueError("ModelConfig: olmo2 has no mixture of experts "
                         "(moe must be None)")


def olmo2_weights(sd, i, config=None):
    """Block i of OLMo 2: Llama's projections and MLP, QK-norm gains over
    the projections, a norm after each branch and none before."""
    h, a = f"model.layers.{i}.", f"model.layers.{i}.self_attn."
    p = {f"attn.W_{x}": sd[f"{a}{x}_proj.weight"].T for x in "qkvo"}
    p |= {f"attn.b_{x}": sd[f"{a}{x}_proj.bias"] for x in "qkvo"
          if f"{a}{x}_proj.bias" in sd}
    p |= {f"attn.{x}_norm.weight": sd[f"{a}{x}_norm.weight"] for x in "qk"}
    return p | {
        "post_norm1.weight": sd[h + "post_attention_layernorm.weight"],
        "post_norm2.weight": sd[h + "post_feedforward_layernorm.weight"],
    } | mlp_weights(sd, h)


OLMO2 = register(Family(
    name="olmo2",
    parts={"norm": "rms_norm", "mixer": "attention", "ffn": "swiglu",
           "wiring": "post_norm", "positions": "rope"},
    block=lambda config, i: olmo2_block,
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,  # Llama's names
    hf_layer=olmo2_weights,
    check=_check,
))
