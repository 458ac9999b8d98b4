"""The backward pass of BERT's post-LN encoder block, with a padding mask, by hand.

Chapter 6 differentiates the pre-LN decoder block; the post-LN block runs the same
pieces in another order, and its attention has a padding mask instead of the causal
one. The forward, for x (batch, n, d):

    s1 = x + attention(x)       h = LayerNorm1(s1)
    s2 = h + mlp(h)             out = LayerNorm2(s2)

so going backwards the gradient crosses LayerNorm2 first, then splits between the MLP
and the residual, joins again, crosses LayerNorm1, and splits between attention and the
residual. Each step is one of chapter 6's backward functions. From the forward we keep
what ``encoder_block(..., trace=t)`` records (q, k, v, the weights, the merged heads);
s1, s2 and the MLP's hidden layer are rebuilt, each one product away. A padded key has
weight 0 in every row, so it gets no gradient through attention.
"""

# --8<-- [start:encoder_block_backward]
import numpy as np

from attention.backward import (attention_backward, gelu_backward,
                                layer_norm_backward, linear_backward)
from attention.backward.norms import layer_norm_stats
from attention.feed_forward import gelu
from attention.multi_head import merge_heads, split_heads
from attention.norms import layer_norm


def post_ln_block_backward(d_out, x, p, trace, *, n_heads, mask=None,
                           eps=1e-12):
    """(dx, grads) of out = encoder_block(x, p, norm_first=False,
    activation="gelu", mask=mask, eps=eps, trace=trace).

    d_out: ∂L/∂out (batch, n, d); trace: the dict that forward filled.
    grads: {parameter name: gradient}, shaped like p's entries.
    """
    missing = {"q", "k", "v", "weights", "heads"} - set(trace or {})
    if missing:
        raise ValueError(f"post_ln_block_backward: trace lacks "
                         f"{sorted(missing)}; pass the dict that "
                         f"encoder_block(..., trace=trace) filled")
    if np.shape(d_out) != np.shape(x):
        raise ValueError(f"post_ln_block_backward: d_out must have x's shape "
                         f"{np.shape(x)}, got {np.shape(d_out)}")
    g = {}
    s1 = x + trace["heads"] @ p["attn.W_o"] + p["attn.b_o"]  # rebuilt
    h = layer_norm(s1, p["norm1.weight"], p["norm1.bias"], eps=eps)
    pre = h @ p["mlp.W_in"] + p["mlp.b_in"]               # (batch, n, d_ff)
    act = gelu(pre)
    s2 = h + act @ p["mlp.W_out"] + p["mlp.b_out"]
    # out = LayerNorm2(s2)
    d_s2, g["norm2.weight"], g["norm2.bias"] = layer_norm_backward(
        d_out, s2, p["norm2.weight"], *layer_norm_stats(s2, eps=eps))
    # s2 = h + mlp(h): the residual passes d_s2 to h unchanged
    d_act, g["mlp.W_out"], g["mlp.b_out"] = linear_backward(
        d_s2, act, p["mlp.W_out"])
    dh_mlp, g["mlp.W_in"], g["mlp.b_in"] = linear_backward(
        gelu_backward(d_act, pre), h, p["mlp.W_in"])
    # h = LayerNorm1(s1)
    d_s1, g["norm1.weight"], g["norm1.bias"] = layer_norm_backward(
        d_s2 + dh_mlp, s1, p["norm1.weight"], *layer_norm_stats(s1, eps=eps))
    # s1 = x + attention(x)
    d_heads, g["attn.W_o"], g["attn.b_o"] = linear_backward(
        d_s1, trace["heads"], p["attn.W_o"])
    dq, dk, dv = attention_backward(
        split_heads(d_heads, n_heads), trace["q"], trace["k"], trace["v"],
        mask=mask, weights=trace["weights"])  # (batch, heads, n, d_head)
    dx = d_s1.copy()
    for name, d in (("q", dq), ("k", dk), ("v", dv)):
        dx_part, g[f"attn.W_{name}"], g[f"attn.b_{name}"] = linear_backward(
            merge_heads(d), x, p[f"attn.W_{name}"])
        dx += dx_part
    return dx, {name: g[name] for name in p}  # p's order
# --8<-- [end:encoder_block_backward]
