"""An attention-only transformer: embeddings, attention layers, an unembedding.

The package's model (chapter 3) always has an MLP and norms in each block;
the induction-head papers study models without them (Elhage et al. 2021,
section "Two-layer attention-only transformers"), because then every path
from a token to a logit is a product of a few matrices that can be read
directly. The residual stream x is the sum of what the embeddings and each
head wrote into it:

    x0 = W_E[ids] + W_pos[0 .. n - 1]                    (batch, n, d_model)
    x_{l+1} = x_l + Σ_h attention_h(x_l) W_O^h           (one layer per l)
    logits = x_L W_U                                    (batch, n, vocab)

No norm, no biases, and no MLP unless ``d_mlp`` > 0: then each layer adds,
after its heads, a GELU MLP (GPT-2's tanh form, no biases) of the stream,
y = x + Σ_h ..., x_{l+1} = y + gelu(y W_in) W_out, to compare the same
task with MLPs (Olsson et al. 2022 find induction heads in such models too).
The backward reuses chapter 6's pieces (the attention's backward, a linear
layer's, GELU's, the embedding's); ``ablate`` zeroes chosen heads' outputs
in both passes.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.backward.feed_forward import gelu_backward, linear_backward
from attention.backward.model import embedding_backward
from attention.backward.scaled_dot_product import attention_backward
from attention.feed_forward import gelu
from attention.loss import cross_entropy, cross_entropy_backward
from attention.multi_head import merge_heads, split_heads
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_config(c):
    for name in ("vocab_size", "d_model", "n_layers", "n_heads",
                 "max_positions"):
        value = getattr(c, name)
        if (isinstance(value, bool) or not isinstance(value, int)
                or value < 1):
            raise ValueError(f"CircuitConfig: {name} must be an int >= 1, got "
                             f"{value!r}")
    if (isinstance(c.d_mlp, bool) or not isinstance(c.d_mlp, int)
            or c.d_mlp < 0):
        raise ValueError(f"CircuitConfig: d_mlp must be an int >= 0 (0: no "
                         f"MLP), got {c.d_mlp!r}")
    if c.d_model % c.n_heads:
        raise ValueError(f"CircuitConfig: d_model={c.d_model} must be a "
                         f"multiple of n_heads={c.n_heads}")


def _kept(config, ablate, layer, dtype):
    """(heads, 1, 1): 0 for the ablated heads of this layer, 1 for the rest."""
    keep = np.ones((config.n_heads, 1, 1), dtype=dtype)
    for pair in ablate:
        if (not isinstance(pair, tuple) or len(pair) != 2
                or not 0 <= pair[0] < config.n_layers
                or not 0 <= pair[1] < config.n_heads):
            raise ValueError(f"ablate: each entry must be a (layer, head) "
                             f"pair within {config.n_layers} layers of "
                             f"{config.n_heads} heads, got {pair!r}")
        if pair[0] == layer:
            keep[pair[1]] = 0
    return keep


def _check_ids(config, ids):
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise ValueError(f"ids must be a (batch, n) integer array, got "
                         f"{ids.dtype} {ids.shape}")
    if ids.shape[1] > config.max_positions:
        raise ValueError(f"ids: {ids.shape[1]} positions, the model has "
                         f"{config.max_positions}")
    if ids.size and (ids.min() < 0 or ids.max() >= config.vocab_size):
        raise ValueError(f"ids must lie in 0..{config.vocab_size - 1}, got "
                         f"{ids.min()}..{ids.max()}")
    return ids
# --8<-- [end:checks]


# --8<-- [start:model]
@dataclass(frozen=True)
class CircuitConfig:
    vocab_size: int = 64    # distinct token ids
    d_model: int = 64       # width of the residual stream
    n_layers: int = 2       # attention layers
    n_heads: int = 2        # heads per layer
    max_positions: int = 64  # longest sequence (learned positions)
    d_mlp: int = 0          # hidden width of each layer's MLP; 0: no MLP

    @property
    def d_head(self):       # size of one head's queries, keys and values
        return self.d_model // self.n_heads

    def __post_init__(self):
        _check_config(self)


def init_params(config, rng, *, std=0.02, dtype=np.float32):
    """Normal(0, std) weights by name, W_U and W_E separate (not tied)."""
    c = config
    shapes = {"W_E": (c.vocab_size, c.d_model),
              "W_pos": (c.max_positions, c.d_model)}
    for i in range(c.n_layers):
        for name in ("W_Q", "W_K", "W_V"):
            shapes[f"{i}.{name}"] = (c.d_model, c.d_model)  # heads side by side
        shapes[f"{i}.W_O"] = (c.d_model, c.d_model)
        if c.d_mlp:
            shapes[f"{i}.W_in"] = (c.d_model, c.d_mlp)
            shapes[f"{i}.W_out"] = (c.d_mlp, c.d_model)
    shapes["W_U"] = (c.d_model, c.vocab_size)
    return {name: (std * rng.standard_normal(shape)).astype(dtype)
            for name, shape in shapes.items()}


def forward(params, config, ids, *, ablate=(), trace=None):
    """Logits (batch, n, vocab) of ids (batch, n).

    ablate: (layer, head) pairs whose output is zeroed. trace: a dict that
    receives what the backward needs, and each layer's weights as
    f"{layer}.weights" (batch, heads, n, n)."""
    ids = _check_ids(config, ids)
    n = ids.shape[1]
    x = params["W_E"][ids] + params["W_pos"][:n]  # (batch, n, d_model)
    for i in range(config.n_layers):
        q, k, v = (split_heads(x @ params[f"{i}.{W}"], config.n_heads)
                   for W in ("W_Q", "W_K", "W_V"))  # (batch, heads, n, d_head)
        o, w = attention(q, k, v, causal=True, return_weights=True)
        o = o * _kept(config, ablate, i, o.dtype)  # zero the ablated heads
        heads = merge_heads(o)  # (batch, n, d_model)
        if trace is not None:
            trace.update({f"{i}.x": x, f"{i}.q": q, f"{i}.k": k,
                          f"{i}.v": v, f"{i}.weights": w, f"{i}.heads": heads})
        x = x + heads @ params[f"{i}.W_O"]  # the residual stream
        if config.d_mlp:
            pre = x @ params[f"{i}.W_in"]  # (batch, n, d_mlp)
            act = gelu(pre, approximate="tanh")
            if trace is not None:
                trace.update({f"{i}.y": x, f"{i}.pre": pre, f"{i}.act": act})
            x = x + act @ params[f"{i}.W_out"]
    if trace is not None:
        trace["final"] = x
    return x @ params["W_U"]  # (batch, n, vocab)


def backward(params, config, ids, d_logits, trace, *, ablate=()):
    """The gradient of every parameter from ∂L/∂logits and forward's trace."""
    ids = _check_ids(config, ids)
    grads = {}
    dx, grads["W_U"], _ = linear_backward(d_logits, trace["final"],
                                          params["W_U"])
    for i in reversed(range(config.n_layers)):  # the last layer first
        if config.d_mlp:  # x_{i+1} = y + gelu(y W_in) W_out
            d_act, grads[f"{i}.W_out"], _ = linear_backward(
                dx, trace[f"{i}.act"], params[f"{i}.W_out"])
            d_pre = gelu_backward(d_act, trace[f"{i}.pre"],
                                  approximate="tanh")
            d_y, grads[f"{i}.W_in"], _ = linear_backward(
                d_pre, trace[f"{i}.y"], params[f"{i}.W_in"])
            dx = dx + d_y
        # x_{i+1} = x_i + heads W_O: the residual passes dx on unchanged
        d_heads, grads[f"{i}.W_O"], _ = linear_backward(
            dx, trace[f"{i}.heads"], params[f"{i}.W_O"])
        d_o = split_heads(d_heads, config.n_heads)  # (batch, heads, n, d_head)
        d_o = d_o * _kept(config, ablate, i, d_o.dtype)
        dq, dk, dv = attention_backward(
            d_o, trace[f"{i}.q"], trace[f"{i}.k"], trace[f"{i}.v"],
            causal=True, weights=trace[f"{i}.weights"])
        d_in = dx
        for name, d in (("W_Q", dq), ("W_K", dk), ("W_V", dv)):
            d_x, grads[f"{i}.{name}"], _ = linear_backward(
                merge_heads(d), trace[f"{i}.x"], params[f"{i}.{name}"])
            d_in = d_in + d_x
        dx = d_in
    grads["W_E"] = embedding_backward(dx, ids, config.vocab_size)
    grads["W_pos"] = np.zeros_like(params["W_pos"])
    grads["W_pos"][:ids.shape[1]] = dx.sum(axis=0)  # each row, every batch
    return {name: grads[name] for name in params}  # the parameters' order


def loss_and_grads(params, config, ids, *, ablate=()):
    """Next-token loss over every position, and its gradients."""
    trace = {}
    logits = forward(params, config, ids[:, :-1], ablate=ablate, trace=trace)
    targets = ids[:, 1:]
    loss = cross_entropy(logits, targets)
    d_logits = cross_entropy_backward(logits, targets)
    return loss, backward(params, config, ids[:, :-1], d_logits, trace,
                          ablate=ablate)
# --8<-- [end:model]

