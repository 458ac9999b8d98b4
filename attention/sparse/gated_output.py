"""Gated attention: each head's output times a sigmoid of the token's own input.

Qiu et al., "Gated Attention for Large Language Models: Non-linearity, Sparsity, and
Attention-Sink-Free" (2025), and Qwen3-Next and Qwen3.5, which ship it. For a token x
(d_model,) whose heads' outputs, side by side, are o (n_heads * d_head,):

    y = (o * sigmoid(x W_gate)) W_o,    W_gate: (d_model, n_heads * d_head).

Every feature of every head gets its own gate in (0, 1), computed from the token that
asks, not from the keys it read: a head can now output (nearly) nothing, which plain
softmax attention cannot (its weights sum to one, so a head with nothing to say must
park its weight somewhere: the attention sink). The gate also puts a non-linearity
between W_v and W_o, two matrices that would otherwise multiply into one low-rank map.
Hugging Face's ``Qwen3NextAttention`` stores W_gate inside q_proj, head by head: d_head
query rows, then d_head gate rows (``attention.families.qwen3_next`` splits them).
"""

# --8<-- [start:imports]
import numpy as np

from attention.blocks import record, rope_attention
# --8<-- [end:imports]


# --8<-- [start:output_gate]
def sigmoid(x):
    """1 / (1 + e^-x), in (0, 1); no overflow warning for x << 0."""
    with np.errstate(over="ignore"):  # e^-x = inf gives 0, as it should
        return 1.0 / (1.0 + np.exp(-x))


def output_gate(heads, x, W_gate):
    """The gate alone: heads (..., n_heads * d_head) times sigmoid(x W_gate).

    x: (..., d_model), the tokens the heads' outputs belong to.
    """
    heads, x, W_gate = np.asarray(heads), np.asarray(x), np.asarray(W_gate)
    if (W_gate.ndim != 2 or x.shape[-1:] != W_gate.shape[:1]
            or heads.shape != x.shape[:-1] + W_gate.shape[1:]):
        raise ValueError(f"output_gate: heads (..., n_heads * d_head), x "
                         f"(..., d_model) and W_gate (d_model, n_heads * "
                         f"d_head) must agree, got heads {heads.shape}, x "
                         f"{x.shape}, W_gate {W_gate.shape}")
    return heads * sigmoid(x @ W_gate)
# --8<-- [end:output_gate]


# --8<-- [start:gated_attention]
def gated_attention(h, p, config, positions, *, trace=None, attend_fn=None,
                    dropout=None):
    """A block's token mixer: ``rope_attention`` with the output gate
    sigmoid(h attn.W_gate) on its heads (h: the normed input, (batch, n,
    d_model)); the same arguments as ``rope_attention``."""
    gate = sigmoid(h @ p["attn.W_gate"])   # (batch, n, n_heads * d_head)
    record(trace, gate=gate)
    return rope_attention(h, p, config, positions, trace=trace,
                          attend_fn=attend_fn, dropout=dropout, out_gate=gate)
# --8<-- [end:gated_attention]
