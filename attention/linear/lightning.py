"""MiniMax's lightning attention: linear attention with a fixed decay per head, in blocks.

MiniMax, "MiniMax-01: Scaling Foundation Models with Lightning Attention" (2025), section
2.2; Qin et al., "Lightning Attention-2" (2024); Hugging Face's
``MiniMaxLightningAttention``. Per head h, with a decay lambda_h = exp(-s_h) fixed at
initialisation (never learned):

    S_t = lambda_h S_{t-1} + k_t^T v_t,    out_t = q_t S_t,

chapter 10's decayed linear attention (``attention.linear.decayed``) with the same g = -s_h
at every token (RetNet's choice). "Lightning" is how it is computed: in blocks of B tokens,
the masked product (Q K^T * D) V inside a block and the state between blocks, which is
``decayed_chunked`` with chunks of B. The slopes are ALiBi's geometric series, scaled down
layer by layer: s_h = 2^(-8 (h + 1) / H) (1 - i / (L - 1) + 1e-5) for layer i of L (HF
adds 1e-5 to L - 1 too), so the first layer forgets fastest and the last barely at all.

Around it: q, k, v = silu(x W_qkv) (no 1/sqrt(d) scale, no normaliser), then an RMSNorm
over all heads' outputs, an output gate sigmoid(x W_gate) (the gate of gated attention,
``attention.sparse.gated_output``) and W_o. The state of a layer is S, (H, d, d).
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.feed_forward import silu
from attention.linear.decayed import decayed_chunked, decayed_recurrent
from attention.linear.gated_deltanet import sigmoid
from attention.multi_head import split_heads
from attention.norms import rms_norm
# --8<-- [end:imports]


# --8<-- [start:config]
@dataclass(frozen=True)
class LightningConfig:
    """The sizes of MiniMax's lightning layers (HF's names after #)."""
    d_model: int               # hidden_size
    n_heads: int               # num_attention_heads
    d_head: int                # head_dim: d_k = d_v
    block_size: int = 256      # block_size: tokens per block
    norm_eps: float = 1e-6     # the output norm's eps (its default in HF)

    def __post_init__(self):
        for name in ("d_model", "n_heads", "d_head", "block_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                raise ValueError(f"LightningConfig: {name} must be an "
                                 f"integer >= 1, got {value!r}")


def slopes(n_heads, layer, n_layers):
    """s_h of each head of one layer: ALiBi's slopes 2^(-8 (h+1) / H),
    times 1 - layer / (n_layers - 1 + 1e-5) + 1e-5."""
    base = 1 / 2 ** (8 / n_heads)
    factor = 1 - layer / (n_layers - 1 + 1e-5) + 1e-5
    return base ** np.arange(1, n_heads + 1) * factor  # (H,)
# --8<-- [end:config]


# --8<-- [start:layer]
def lightning_layer(x, p, config, s, state=None, *, valid=None):
    """One lightning layer over n new tokens after the state's tokens.

    x: (batch, n, d_model); p: W_qkv (d_model, H * 3 d; per head q, k, v),
    norm.weight (H d,), W_gate (d_model, H d), W_o (H d, d_model); s: the
    layer's slopes (H,); state: S (batch, H, d, d) or None; valid (batch,
    n): False on <pad>, whose q, k, v are zeroed. Returns (y, new S).
    """
    c = config
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[-1] != c.d_model:
        raise ValueError(f"lightning_layer: x must have shape (batch, n, "
                         f"d_model={c.d_model}), got {x.shape}")
    batch, n, _ = x.shape
    qkv = silu(x @ p["W_qkv"])                         # (batch, n, H * 3d)
    if valid is not None:
        qkv = qkv * valid[..., None]
    qkv = split_heads(qkv, c.n_heads)                  # (batch, H, n, 3d)
    q, k, v = np.split(qkv, 3, axis=-1)                # (batch, H, n, d)
    g = np.broadcast_to(-np.asarray(s)[:, None], (batch, c.n_heads, n))
    if n == 1 and state is not None:                   # decode: one step
        out, S = decayed_recurrent(q, k, v, g, initial_state=state)
    else:                                              # blocks of B tokens
        out, S = decayed_chunked(q, k, v, g, chunk_size=c.block_size,
                                 initial_state=state)
    out = np.swapaxes(out, 1, 2).reshape(batch, n, -1)  # (batch, n, H d)
    out = rms_norm(out, p["norm.weight"], eps=c.norm_eps)
    return (out * sigmoid(x @ p["W_gate"])) @ p["W_o"], S
# --8<-- [end:layer]


def lightning_shapes(c):
    """A lightning layer's parameters, short names."""
    hd = c.n_heads * c.d_head
    return {"W_qkv": (c.d_model, 3 * hd), "norm.weight": (hd,),
            "W_gate": (c.d_model, hd), "W_o": (hd, c.d_model)}
