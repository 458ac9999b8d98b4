"""The whole model's backward pass: every parameter's gradient, for chapter
3's decoder (GPT-2 and Llama).

Nothing here runs the model forward a second time. ``attention.model.forward``
takes a ``trace`` dict and fills it with what each block computed (its input
x, the normalised inputs of its two sublayers, the attention's q, k, v and
weights, the merged heads); the backward walks the blocks in reverse and turns
those values into gradients. Two kinds of values are rebuilt instead of kept,
because they are cheap: each norm's one or two statistics per token, and the
MLP's hidden layer, one matrix product from the MLP's traced input (the trade
FlashAttention makes for the attention weights, at a smaller scale).

An embedding lookup, out = W_emb[ids], copies rows; its backward adds each row
of d_out back into the row it came from. A token that appears twice collects
both gradients, so the adding must accumulate (``np.add.at``). With tied
embeddings the token table is also the LM head: one parameter, two uses, and
its gradient is the sum of both.
"""

# --8<-- [start:imports]
import numpy as np

from attention.backward.feed_forward import gelu_backward, linear_backward
from attention.backward.norms import (layer_norm_backward, layer_norm_stats,
                                      rms_norm_backward, rms_norm_stats)
from attention.backward.scaled_dot_product import attention_backward
from attention.blocks import dropped
from attention.family import family_of
from attention.feed_forward import gelu, silu
from attention.loss import cross_entropy, cross_entropy_backward
from attention.model import block_params, forward
from attention.multi_head import merge_heads, split_heads
from attention.positions import rope
# --8<-- [end:imports]


# --8<-- [start:embedding_backward]
def embedding_backward(d_out, ids, vocab_size):
    """∂L/∂W_emb (vocab_size, d) of out = W_emb[ids]; d_out (..., d)."""
    d_weight = np.zeros((vocab_size, d_out.shape[-1]), dtype=d_out.dtype)
    rows = d_out.reshape(-1, d_out.shape[-1])  # (tokens, d)
    np.add.at(d_weight, np.asarray(ids).reshape(-1), rows)  # repeats add up
    return d_weight
# --8<-- [end:embedding_backward]


# --8<-- [start:sublayers_backward]
def norm_backward(config, d_y, x, p, name, grads):
    """The norm's backward (LayerNorm: gpt2, RMSNorm: llama); returns dx."""
    w, eps = p[name + ".weight"], config.norm_eps
    if family_of(config).parts["norm"] == "layer_norm":
        mean, rstd = layer_norm_stats(x, eps=eps)  # rebuilt: 2 per token
        dx, grads[name + ".weight"], grads[name + ".bias"] = (
            layer_norm_backward(d_y, x, w, mean, rstd))
    else:
        rrms = rms_norm_stats(x, eps=eps)  # rebuilt: 1 per token
        dx, grads[name + ".weight"] = rms_norm_backward(d_y, x, w, rrms)
    return dx


def mlp_backward(config, d_out, h, p, g):
    """The MLP's backward (GELU tanh: gpt2, SwiGLU: llama) from its input h."""
    if family_of(config).parts["ffn"] == "gelu_mlp":
        pre = h @ p["mlp.W_in"] + p["mlp.b_in"]  # (batch, n, d_ff), rebuilt
        act = gelu(pre, approximate="tanh")
        d_act, g["mlp.W_out"], g["mlp.b_out"] = linear_backward(
            d_out, act, p["mlp.W_out"])
        d_pre = gelu_backward(d_act, pre, approximate="tanh")
        dh, g["mlp.W_in"], g["mlp.b_in"] = linear_backward(
            d_pre, h, p["mlp.W_in"])
        return dh
    # SwiGLU: out = (silu(h W_gate) * (h W_up)) W_down, no biases
    z, up = h @ p["mlp.W_gate"], h @ p["mlp.W_up"]  # (batch, n, d_ff) each
    sig = 1.0 / (1.0 + np.exp(-z))  # σ(z); silu(z) = z σ(z)
    gate = silu(z)
    d_mid, g["mlp.W_down"], _ = linear_backward(d_out, gate * up,
                                                p["mlp.W_down"])
    d_z = d_mid * up * sig * (1.0 + z * (1.0 - sig))  # silu'(z) = σ(1+z(1-σ))
    dh, g["mlp.W_gate"], _ = linear_backward(d_z, h, p["mlp.W_gate"])
    dh_up, g["mlp.W_up"], _ = linear_backward(d_mid * gate, h, p["mlp.W_up"])
    return dh + dh_up


def attention_layer_backward(config, d_out, h, t, p, positions, g, *,
                             dropout=None):
    """attention_layer's backward from its input h and trace t; returns dh.

    dropout: the mask the forward applied to the attention weights."""
    biases = "attn.b_o" in p  # gpt2's
    d_heads, g["attn.W_o"], db_o = linear_backward(d_out, t["heads"],
                                                   p["attn.W_o"])
    d_o = split_heads(d_heads, config.n_heads)  # (batch, n_heads, n, d_head)
    dq, dk, dv = attention_backward(  # GQA: dk, dv summed over each group
        d_o, t["q"], t["k"], t["v"], causal=True, weights=t["weights"],
        dropout=dropout)
    if family_of(config).parts["positions"] == "rope":
        # undo RoPE: rotating by -θ is the transpose of θ
        angle = -positions if positions.ndim == 1 else -positions[:, None, :]
        dq, dk = (rope(d, angle, base=config.rope_base,
                       layout=config.rope_layout) for d in (dq, dk))
    dh = np.zeros_like(h)  # (batch, n, d_model)
    for name, d in (("q", dq), ("k", dk), ("v", dv)):
        d_lin = merge_heads(d)  # (batch, n, heads * d_head)
        dh_part, g[f"attn.W_{name}"], db = linear_backward(
            d_lin, h, p[f"attn.W_{name}"])
        dh += dh_part
        if biases:
            g[f"attn.b_{name}"] = db
    if biases:
        g["attn.b_o"] = db_o
    return dh
# --8<-- [end:sublayers_backward]


# --8<-- [start:model_backward]
def model_backward(params, config, token_ids, d_logits, trace, *,
                   positions=None, dropout=None):
    """∂L/∂(every parameter) from d_logits = ∂L/∂logits and the trace that
    ``forward(params, config, token_ids, trace=trace)`` filled.

    token_ids (batch, n) or (n,); d_logits shaped like the logits;
    positions, dropout: the forward's, if it was given any. Returns a dict
    with the names and shapes of ``params``.
    """
    unsupported = [name for name, off in (
        ("rope_scaling", None), ("sliding_window", None),
        ("attn_bias", False), ("attn_sinks", False), ("head_dim", None),
        ("qk_norm", None), ("attn_scale", None), ("attn_softcap", None),
        ("final_softcap", None), ("moe", None))
        if getattr(config, name) != off]
    parts = family_of(config).parts  # those with a backward here
    if not (parts["norm"] in ("layer_norm", "rms_norm")
            and parts["ffn"] in ("gelu_mlp", "swiglu")
            and (parts["mixer"], parts["wiring"]) == ("attention", "pre_norm")):
        unsupported.append("arch")
    if unsupported:  # chapters 8 and 9's parts have no backward here
        raise ValueError(f"model_backward: {unsupported} are not supported "
                         f"(the chapter-6 backward covers GPT-2 and Llama)")
    ids = np.asarray(token_ids)
    if ids.ndim == 1:  # one sequence: a batch of one
        ids, d_logits = ids[None], d_logits[None]  # (1, n), (1, n, vocab)
    if d_logits.shape != ids.shape + (config.vocab_size,):
        raise ValueError(f"model_backward: d_logits must have shape "
                         f"{ids.shape + (config.vocab_size,)}, got "
                         f"{d_logits.shape}")
    kept = trace.get("final_norm.out")
    if kept is None or kept.shape[:-1] != ids.shape:
        raise ValueError("model_backward: trace must be the dict that "
                         "forward(params, config, token_ids, trace=trace) "
                         "filled, for these token_ids")
    # the forward's positions: (n,) or (batch, n); by default 0 .. n - 1
    positions = np.arange(ids.shape[-1]) if positions is None else (
        np.asarray(positions))
    grads = {}
    # logits = h @ W_head, with W_head = embed.tokensᵀ when tied
    tied = config.tie_embeddings
    W_head = params["embed.tokens"].T if tied else params["lm_head.W"]
    h = trace["final_norm.out"]  # (batch, n, d_model)
    dh, dW_head, _ = linear_backward(d_logits, h, W_head)
    if not tied:
        grads["lm_head.W"] = dW_head
    dx = norm_backward(config, dh, trace["final_norm.in"], params,
                       "final_norm", grads)  # (batch, n, d_model)

    drop = dropout or {}
    for i in reversed(range(config.n_layers)):  # the last block first
        prefix = f"blocks.{i}."
        t = {k[len(prefix):]: v for k, v in trace.items()
             if k.startswith(prefix)}
        p, g, m = block_params(params, i), {}, block_params(drop, i)
        # out = x_mid + mlp(norm2(x_mid)): the residual passes dx through
        d_norm2 = mlp_backward(config, dropped(dx, m.get("mlp.out")),
                               t["norm2"], p, g)
        d_mid = dx + norm_backward(config, d_norm2, t["x_mid"], p, "norm2", g)
        # x_mid = x + attention(norm1(x))
        d_norm1 = attention_layer_backward(
            config, dropped(d_mid, m.get("attn.out")), t["norm1"], t, p,
            positions, g, dropout=m.get("attn.weights"))
        dx = d_mid + norm_backward(config, d_norm1, t["x"], p, "norm1", g)
        grads |= {prefix + k: v for k, v in g.items()}

    # x = dropout(embed.tokens[ids] (+ embed.positions[positions] for gpt2))
    dx = dropped(dx, drop.get("embed"))
    d_tokens = embedding_backward(dx, ids, config.vocab_size)
    grads["embed.tokens"] = d_tokens + dW_head.T if tied else d_tokens
    if "embed.positions" in params:  # gpt2's learned positions
        d_pos = np.zeros_like(params["embed.positions"])
        rows = np.broadcast_to(positions, ids.shape).reshape(-1)  # (tokens,)
        np.add.at(d_pos, rows, dx.reshape(-1, dx.shape[-1]))  # repeats add
        grads["embed.positions"] = d_pos
    return {name: grads[name] for name in params}  # the parameters' order


def loss_and_grads(params, config, token_ids, targets, *,
                   ignore_index=-100, dropout=None):
    """A training step's work: forward with a trace, loss, backward.

    Returns (loss, grads, logits); targets (batch, n), -100: not scored.
    dropout: masks by name (``forward``), the same in both passes.
    """
    trace = {}
    logits = forward(params, config, token_ids, trace=trace, dropout=dropout)
    loss = cross_entropy(logits, targets, ignore_index=ignore_index)
    d_logits = cross_entropy_backward(logits, targets,
                                      ignore_index=ignore_index)
    grads = model_backward(params, config, token_ids, d_logits, trace,
                           dropout=dropout)
    return loss, grads, logits
# --8<-- [end:model_backward]
