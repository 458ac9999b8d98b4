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
