"""The mixture-of-experts feed-forward: n_experts SwiGLU MLPs, k of them per token.

Shazeer et al. (2017), "Outrageously Large Neural Networks" (the sparsely-gated layer);
Lepikhin et al., "GShard" (2020) and Fedus et al., "Switch Transformers" (2021) (experts in
a transformer); Jiang et al., "Mixtral of Experts" (2024); Qwen Team, "Qwen3 Technical
Report" (2025); DeepSeek-AI, "DeepSeekMoE" (2024) and "DeepSeek-V3 Technical Report"
(2024), section 2.1.2 (shared experts, fine-grained experts, the first layers dense);
OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (2025).

A token's output is sum over its k chosen experts e of weight_e * expert_e(x), plus the
shared experts' SwiGLU (DeepSeek-V3), which every token goes through. Two ways to compute
it, equal in float64:
- ``moe_dense``: the reference: every expert on every token, weighted by a gate matrix
  (tokens, n_experts) that is zero off the chosen experts: n_experts times the work;
- ``moe_sparse``: what a real implementation does: gather each expert's tokens, run the
  expert on them alone, scatter the weighted rows back.

The parameters of a mixture layer, in the flat dict of ``attention.model``:

    mlp.router.W                (d_model, n_experts)
    mlp.router.bias             (n_experts,)            gpt-oss: added to the logits
    mlp.router.select_bias      (n_experts,)            DeepSeek-V3: used to choose only
    mlp.experts.W_gate, W_up    (n_experts, d_model, d_ff)
    mlp.experts.W_down          (n_experts, d_ff, d_model)
    mlp.experts.b_gate, b_up    (n_experts, d_ff)       gpt-oss
    mlp.experts.b_down          (n_experts, d_model)    gpt-oss
    mlp.shared.W_gate, W_up     (d_model, n_shared * d_ff)   DeepSeek-V3
    mlp.shared.W_down           (n_shared * d_ff, d_model)
"""

# --8<-- [start:imports]
import dataclasses
from dataclasses import dataclass

import numpy as np

from attention.families.gpt_oss import clamped_glu
from attention.families.routing import (sigmoid, sigmoid_top_k, softmax_top_k,
                                        top_k_softmax)
from attention.feed_forward import silu, swiglu
# --8<-- [end:imports]

# --8<-- [start:checks]
ROUTERS = ("softmax", "top_k_softmax", "sigmoid")


def _whole(value):
    return (isinstance(value, (int, np.integer))
            and not isinstance(value, (bool, np.bool_)))


# --8<-- [start:moe_config]
@dataclass(frozen=True)
class MoE:
    """A mixture-of-experts feed-forward, as ModelConfig.moe."""
    n_experts: int              # routed experts per mixture layer
    top_k: int                  # experts each token is sent to
    d_ff: int                   # each expert's hidden width
    router: str = "softmax"     # "softmax" (Mixtral, Qwen3-MoE),
    #                   "top_k_softmax" (gpt-oss), "sigmoid" (DeepSeek)
    renormalise: bool = True    # divide the k weights by their sum
    scale: float = 1.0          # times the routed weights (DeepSeek-V3: 2.5)
    n_group: int = 1            # expert groups (DeepSeek-V3: 8)
    topk_group: int = 1         # groups a token may use (DeepSeek-V3: 4)
    n_shared: int = 0           # shared experts, every token (DeepSeek-V3: 1)
    first_dense: int = 0        # leading layers with a dense MLP of d_ff
    #                             ModelConfig.d_ff (DeepSeek-V3: 3)
    dense_layers: tuple = ()    # more layers with that dense MLP, by
    #                             index (Qwen3-MoE's layouts, chapter 12)
    bias: bool = False          # router and expert biases (gpt-oss)
    swiglu_limit: float | None = None  # clamped SwiGLU (gpt-oss: 7.0)
    swiglu_alpha: float = 1.702  # the clamped SwiGLU's sigmoid slope
    d_shared: int | None = None  # the shared experts' width; None:
    #                              n_shared * d_ff (Qwen3-Next: its own)
    shared_gate: bool = False    # sigmoid(x w) times the shared output
    #                              (Qwen3-Next: mlp.shared.gate (d_model,))

    def __post_init__(self):
        _check_moe(self)
# --8<-- [end:moe_config]


def _check_moe(m):
    """The MoE's fields, or a ValueError that names the one at fault."""
    for name, low in (("n_experts", 1), ("top_k", 1), ("d_ff", 1),
                      ("n_group", 1), ("topk_group", 1), ("n_shared", 0),
                      ("first_dense", 0)):
        value = getattr(m, name)
        if not _whole(value) or value < low:
            raise ValueError(f"MoE: {name} must be an integer >= {low}, "
                             f"got {value!r}")
        object.__setattr__(m, name, int(value))
    if m.top_k > m.n_experts:
        raise ValueError(f"MoE: top_k = {m.top_k} is larger than n_experts "
                         f"= {m.n_experts}")
    if m.router not in ROUTERS:
        raise ValueError(f"MoE: router must be one of {ROUTERS}, "
                         f"got {m.router!r}")
    per_group, rem = divmod(m.n_experts, m.n_group)
    if m.n_group > 1 and (m.router != "sigmoid" or rem or per_group < 2
                          or m.topk_group > m.n_group
                          or m.top_k > m.topk_group * per_group):
        raise ValueError(
            f"MoE: n_group = {m.n_group} groups need the sigmoid router, "
            f"n_experts = {m.n_experts} divisible into groups of at least 2, "
            f"topk_group = {m.topk_group} <= n_group, and top_k = {m.top_k} "
            f"<= topk_group * n_experts / n_group")
    if m.d_shared is not None and (not _whole(m.d_shared) or m.d_shared < 1
                                   or not m.n_shared):
        raise ValueError(f"MoE: d_shared must be None or, with shared "
                         f"experts (n_shared >= 1), an integer >= 1, got "
                         f"{m.d_shared!r}")
    if m.shared_gate and not m.n_shared:
        raise ValueError("MoE: shared_gate gates the shared experts: it "
                         "needs n_shared >= 1")
    layers = m.dense_layers
    if not isinstance(layers, (tuple, list)) or not all(
            _whole(i) and i >= 0 for i in layers):
        raise ValueError(f"MoE: dense_layers must be a tuple of layer "
                         f"indices >= 0, got {layers!r}")
    object.__setattr__(m, "dense_layers", tuple(sorted({int(i)
                                                         for i in layers})))
    for name in ("renormalise", "bias", "shared_gate"):
        if not isinstance(getattr(m, name), (bool, np.bool_)):
            raise ValueError(f"MoE: {name} must be True or False, "
                             f"got {getattr(m, name)!r}")
    for name in ("scale", "swiglu_alpha", "swiglu_limit"):
        value = getattr(m, name)
        if name == "swiglu_limit" and value is None:
            continue
        if (isinstance(value, (bool, np.bool_))
                or not isinstance(value, (int, float, np.integer, np.floating))
                or not 0 < value < np.inf):
            raise ValueError(f"MoE: {name} must be a positive finite number, "
                             f"got {value!r}")
        object.__setattr__(m, name, float(value))
# --8<-- [end:checks]


# --8<-- [start:shapes]
def moe_shapes(moe, d_model):
    """Name -> shape of one mixture layer's parameters (short names)."""
    E, d, f = moe.n_experts, d_model, moe.d_ff
    shapes = {"mlp.router.W": (d, E)}
    if moe.bias:
        shapes["mlp.router.bias"] = (E,)
    if moe.router == "sigmoid":
        shapes["mlp.router.select_bias"] = (E,)
    shapes |= {"mlp.experts.W_gate": (E, d, f), "mlp.experts.W_up": (E, d, f),
               "mlp.experts.W_down": (E, f, d)}
    if moe.bias:
        shapes |= {"mlp.experts.b_gate": (E, f), "mlp.experts.b_up": (E, f),
                   "mlp.experts.b_down": (E, d)}
    if moe.n_shared:
        s = moe.d_shared or moe.n_shared * f
        shapes |= {"mlp.shared.W_gate": (d, s), "mlp.shared.W_up": (d, s),
                   "mlp.shared.W_down": (s, d)}
    if moe.shared_gate:
        shapes["mlp.shared.gate"] = (d,)
    return shapes


def check_moe_params(p, moe, d_model):
    """A ValueError naming the first mixture parameter of the wrong shape
    (the router against n_experts, the experts against each other)."""
    for name, shape in moe_shapes(moe, d_model).items():
        got = np.shape(p[name]) if name in p else None
        if got != shape:
            raise ValueError(
                f"route: {name} must have shape {shape} for n_experts="
                f"{moe.n_experts}, d_model={d_model}, d_ff={moe.d_ff}, got "
                f"{got} (the router is (d_model, n_experts); every expert "
                f"matrix holds n_experts matrices of one shape)")


def _check_choices(x, indices, weights, moe, what):
    """route's output for x: (tokens, top_k) expert indices and weights."""
    shape = (np.shape(x)[0], moe.top_k)
    indices = np.asarray(indices)
    if (np.shape(indices) != shape or np.shape(weights) != shape
            or indices.dtype.kind not in "iu" or (indices.size and (
                indices.min() < 0 or indices.max() >= moe.n_experts))):
        raise ValueError(f"{what}: indices and weights must have shape "
                         f"(tokens, top_k) = {shape}, the indices integers in "
                         f"0..{moe.n_experts - 1}; got {np.shape(indices)} "
                         f"({indices.dtype}) and {np.shape(weights)}")
# --8<-- [end:shapes]


# --8<-- [start:route]
def route(x, p, moe):
    """The router: x (tokens, d_model) -> (indices, weights), (tokens, k)."""
    check_moe_params(p, moe, np.shape(x)[-1])
    logits = x @ p["mlp.router.W"]                  # (tokens, n_experts)
    if moe.bias:                                    # gpt-oss
        logits = logits + p["mlp.router.bias"]
    if moe.router == "softmax":
        return softmax_top_k(logits, moe.top_k, renormalise=moe.renormalise)
    if moe.router == "top_k_softmax":
        return top_k_softmax(logits, moe.top_k)
    return sigmoid_top_k(logits, moe.top_k, bias=p["mlp.router.select_bias"],
                         n_group=moe.n_group, topk_group=moe.topk_group,
                         renormalise=moe.renormalise, scale=moe.scale)
# --8<-- [end:route]


# --8<-- [start:expert]
def expert(x, p, moe, e):
    """Expert e on the rows x (m, d_model) -> (m, d_model): SwiGLU, or
    gpt-oss's clamped form with its biases."""
    W = {name: p[f"mlp.experts.{name}"][e]
         for name in ("W_gate", "W_up", "W_down")}
    if moe.swiglu_limit is None and not moe.bias:
        return swiglu(x, W["W_gate"], W["W_up"], W["W_down"])
    b = {name: p[f"mlp.experts.{name}"][e] if moe.bias else 0.0
         for name in ("b_gate", "b_up", "b_down")}
    gate = x @ W["W_gate"] + b["b_gate"]            # (m, d_ff)
    up = x @ W["W_up"] + b["b_up"]                  # (m, d_ff)
    if moe.swiglu_limit is None:
        h = silu(gate) * up
    else:
        h = clamped_glu(gate, up, alpha=moe.swiglu_alpha,
                        limit=moe.swiglu_limit)
    return h @ W["W_down"] + b["b_down"]            # (m, d_model)
# --8<-- [end:expert]


# --8<-- [start:dense_sparse]
def moe_dense(x, p, moe, indices, weights):
    """The reference: every expert on every token, weighted by gates that
    are zero off the chosen experts. x (tokens, d_model); indices, weights
    (tokens, k) from ``route``."""
    _check_choices(x, indices, weights, moe, "moe_dense")
    gates = np.zeros((x.shape[0], moe.n_experts))   # (tokens, n_experts)
    np.put_along_axis(gates, indices, weights, axis=-1)
    return sum(gates[:, e, None] * expert(x, p, moe, e)
               for e in range(moe.n_experts))


def moe_sparse(x, p, moe, indices, weights):
    """The same sum, each expert run on its own tokens only: gather the
    tokens that chose it, run it, scatter its weighted rows back."""
    _check_choices(x, indices, weights, moe, "moe_sparse")
    out = np.zeros(x.shape, dtype=np.result_type(x, weights))
    for e in np.unique(indices):
        tokens, slot = np.nonzero(indices == e)     # who chose e, in which slot
        y = expert(x[tokens], p, moe, e)            # (m, d_model)
        # A token chooses an expert at most once: tokens has no repeats.
        out[tokens] += weights[tokens, slot, None] * y
    return out
# --8<-- [end:dense_sparse]


# --8<-- [start:moe_layer]
def moe_layer(x, p, moe, *, sparse=True, trace=None):
    """The mixture feed-forward: x (..., d_model) -> (..., d_model).

    Routes every token (``route``), sums its experts' outputs (sparse or
    dense: equal), adds the shared experts' SwiGLU. trace: a dict that gets
    the choices, "router.indices" and "router.weights" (..., k).
    """
    flat = x.reshape(-1, x.shape[-1])               # (tokens, d_model)
    indices, weights = route(flat, p, moe)          # (tokens, k) each
    out = (moe_sparse if sparse else moe_dense)(flat, p, moe, indices,
                                                weights)
    if moe.n_shared:                                # DeepSeek-V3
        shared = swiglu(flat, p["mlp.shared.W_gate"], p["mlp.shared.W_up"],
                        p["mlp.shared.W_down"])     # (tokens, d_model)
        if moe.shared_gate:                         # Qwen3-Next
            shared = sigmoid(flat @ p["mlp.shared.gate"])[:, None] * shared
        out = out + shared
    if trace is not None:
        lead = x.shape[:-1] + (moe.top_k,)
        trace.update({"router.indices": indices.reshape(lead),
                      "router.weights": weights.reshape(lead)})
    return out.reshape(x.shape)                     # (..., d_model)


def feed_forward(h, p, config, *, trace=None):
    """A block's MLP: the mixture where the block has a router, else
    SwiGLU (the dense layers, and every layer of a model without MoE)."""
    if "mlp.router.W" in p:
        return moe_layer(h, p, config.moe, trace=trace)
    return swiglu(h, p["mlp.W_gate"], p["mlp.W_up"], p["mlp.W_down"])
# --8<-- [end:moe_layer]


def check_model_moe(c):
    """ModelConfig.moe for a family with a mixture feed-forward: a MoE (or
    a page's own copy of the class, chapter 9 shows it) or None."""
    if c.moe is None:
        return
    def fields(m):
        return [field.name for field in dataclasses.fields(m)]
    if not (dataclasses.is_dataclass(c.moe) and fields(c.moe) == fields(MoE)):
        raise TypeError(f"ModelConfig: moe must be a MoE or None, "
                        f"got {c.moe!r}")
    if c.moe.first_dense > c.n_layers:
        raise ValueError(f"ModelConfig: moe.first_dense = "
                         f"{c.moe.first_dense} is more than n_layers = "
                         f"{c.n_layers}")
    outside = [i for i in c.moe.dense_layers if i >= c.n_layers]
    if outside:
        raise ValueError(f"ModelConfig: moe.dense_layers {outside} are not "
                         f"layers of a model with n_layers = {c.n_layers}")


# --8<-- [start:layout]
def has_mixture(c, i):
    """Whether layer i of ModelConfig c runs the mixture of experts: from
    moe.first_dense on, except moe.dense_layers (else a SwiGLU of d_ff)."""
    return (c.moe is not None and i >= c.moe.first_dense
            and i not in c.moe.dense_layers)


def qwen3_moe_dense_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    """Qwen3-MoE's dense layers: those in mlp_only_layers, and those whose
    number (i + 1) is not a multiple of decoder_sparse_step."""
    step = decoder_sparse_step
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"qwen3_moe_dense_layers: decoder_sparse_step must "
                         f"be a positive integer, got {step!r}")
    return tuple(i for i in range(n_layers)
                 if i in mlp_only_layers or (i + 1) % step)
# --8<-- [end:layout]


def ffn_shapes(c, i):
    """Layer i's feed-forward parameters: the mixture's where the layer
    has one (``has_mixture``), else a SwiGLU of width d_ff (short names)."""
    if has_mixture(c, i):
        return moe_shapes(c.moe, c.d_model)
    return {"mlp.W_gate": (c.d_model, c.d_ff), "mlp.W_up": (c.d_model, c.d_ff),
            "mlp.W_down": (c.d_ff, c.d_model)}


# --8<-- [start:hf_names]
def experts_weights(sd, m):
    """A mixture layer. Mixtral, Qwen3-MoE and DeepSeek-V3 stack each
    expert's nn.Linear weights, gate above up, in gate_up_proj (E, 2 d_ff,
    d_model); gpt-oss stores (E, d_model, 2 d_ff), gate and up columns
    interleaved, with biases. DeepSeek-V3 adds the selection bias and the
    shared experts, an ordinary SwiGLU (chapter 9)."""
    gate_up = sd[m + "experts.gate_up_proj"]
    if m + "router.weight" in sd:  # gpt-oss: already (d_in, d_out)
        b = sd[m + "experts.gate_up_proj_bias"]       # (E, 2 d_ff)
        return {
            "mlp.router.W": sd[m + "router.weight"].T,
            "mlp.router.bias": sd[m + "router.bias"],
            "mlp.experts.W_gate": gate_up[..., ::2],  # (E, d_model, d_ff)
            "mlp.experts.W_up": gate_up[..., 1::2],
            "mlp.experts.W_down": sd[m + "experts.down_proj"],
            "mlp.experts.b_gate": b[:, ::2], "mlp.experts.b_up": b[:, 1::2],
            "mlp.experts.b_down": sd[m + "experts.down_proj_bias"]}
    d_ff = gate_up.shape[1] // 2
    gate_up = gate_up.transpose(0, 2, 1)              # (E, d_model, 2 d_ff)
    p = {"mlp.router.W": sd[m + "gate.weight"].T,     # (d_model, E)
         "mlp.experts.W_gate": gate_up[..., :d_ff],   # (E, d_model, d_ff)
         "mlp.experts.W_up": gate_up[..., d_ff:],
         "mlp.experts.W_down": sd[m + "experts.down_proj"].transpose(0, 2, 1)}
    if m + "gate.e_score_correction_bias" in sd:      # DeepSeek-V3
        p["mlp.router.select_bias"] = sd[m + "gate.e_score_correction_bias"]
    if m + "shared_experts.gate_proj.weight" in sd:
        p |= {f"mlp.shared.W_{x}": sd[f"{m}shared_experts.{x}_proj.weight"].T
              for x in ("gate", "up", "down")}
    return p
# --8<-- [end:hf_names]
