"""DiffLlama as a family: Llama's layer with differential attention as its token mixer.

Ye et al., "Differential Transformer" (2024); Hugging Face's ``DiffLlamaForCausalLM``:
Llama's wiring, RMSNorm, RoPE and SwiGLU; the attention of layer i is
``attention.sparse.differential``'s, with four λ vectors of d_head numbers per layer and
a λ_init that depends on i. Key/value heads come in pairs (their number is even).
"""

from functools import partial

from attention.blocks import attention_shapes, llama_block
from attention.families.llama import llama_outer, llama_weights, rms_final_norm
from attention.family import Family, register
from attention.sparse.differential import differential_mixer

LAMBDAS = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")


def _layer_shapes(c, i):
    d, f = c.d_model, c.d_ff
    return ({"norm1.weight": (d,)} | attention_shapes(c)
            | {f"attn.{x}": (c.d_head,) for x in LAMBDAS}
            | {"norm2.weight": (d,), "mlp.W_gate": (d, f), "mlp.W_up": (d, f),
               "mlp.W_down": (f, d)})


def _check(c):
    """Pairs of key/value heads; none of the options its mixer ignores."""
    if c.n_kv_heads % 2:
        raise ValueError(f"ModelConfig: differential attention pairs the "
                         f"key/value heads: n_kv_heads must be even, got "
                         f"{c.n_kv_heads}")
    unused = [name for name in ("attn_sinks", "qk_norm", "attn_softcap",
                                "final_softcap", "moe")
              if getattr(c, name) not in (None, False)]
    if unused:
        raise ValueError(f"ModelConfig: diffllama has none of {unused}")


def diffllama_weights(sd, i, config=None):
    """Block i of DiffLlama: Llama's names and the four λ vectors."""
    a = f"model.layers.{i}.self_attn."
    return llama_weights(sd, i) | {f"attn.{x}": sd[a + x] for x in LAMBDAS}


DIFFLLAMA = register(Family(
    name="diffllama",
    parts={"norm": "rms_norm", "mixer": "differential", "ffn": "swiglu",
           "wiring": "pre_norm", "positions": "rope"},
    block=lambda c, i: partial(llama_block,
                               mixer=partial(differential_mixer, layer=i)),
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,
    hf_layer=diffllama_weights,
    check=_check,
))
