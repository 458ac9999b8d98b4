"""DeepSeek-V4: compressed attention, hyper-connections and hash-routed experts.

DeepSeek-AI, "DeepSeek-V4" (2026), as Hugging Face's ``DeepseekV4ForCausalLM`` has it.
Three parts differ from DeepSeek-V3:

- the residual stream is ``hc_mult`` streams (manifold-constrained hyper-connections,
  Xie et al. 2026): before each branch a learned, token-dependent mix collapses them
  into the branch's input ("pre"), after it the output is spread back ("post") and the
  streams mix through a doubly stochastic matrix ("comb", Sinkhorn-Knopp iterations);
  a last mix ("the head") collapses them before the final norm
  (``attention.families.hyper_connections``);
- attention: one key-value head whose key is also its value, low-rank queries with a
  norm per head, partial RoPE on each head's last features (interleaved), a learned
  sink per head, the output rotated back by its query's position, a grouped low-rank
  output projection; each layer reads a sliding window of keys, and a compressed
  layer also reads its compressed entries (``attention.sparse.compressed``: "hca" all
  the entries complete so far, "csa" those its lightning indexer picks);
- experts scored by sqrt(softplus) with a clamped SwiGLU; the first layers route by a
  fixed table of token ids (hash routing), so their blocks take the token ids.

Its sizes live in ``ModelConfig.linear`` (a ``V4Sizes``) and ``sliding_window``, the
window of keys every layer reads. Each layer keeps that window of keys in the KV cache
(a ``KVCache(window=sliding_window)`` forgets the rest) and its compressors' state (the
unfinished block, the entries so far) in the cache's ``states``: the layers are
"recurrent" to ``attention.kv_cache``, whose ``RecurrentSlot`` hands over both. Left
padding is refused by name.
"""

# --8<-- [start:imports]
from dataclasses import dataclass
from functools import partial

import numpy as np

from attention.blocks import attend, record
from attention.families.hyper_connections import (hyper_branch, hyper_head,
                                                  sigmoid, unit_rms)
from attention.family import Family, register
from attention.kv_cache import window_mask
from attention.multi_head import split_heads
from attention.norms import rms_norm
from attention.positions import rope
from attention.sparse.compressed import compress, csa_select, visible_entries
# --8<-- [end:imports]

KINDS = ("sliding", "csa", "hca")
SCORES = ("sqrtsoftplus", "sigmoid")


@dataclass(frozen=True)
class V4Sizes:
    """DeepSeek-V4's own sizes (ModelConfig.linear of arch "deepseek_v4")."""
    kinds: tuple            # per layer: "sliding", "csa" or "hca"
    hashed: tuple           # per layer: routes by token id (hash_moe)
    q_lora_rank: int        # the low-rank queries' width
    o_groups: int           # groups of heads of the output projection
    o_lora_rank: int        # each group's low-rank width
    index_heads: int        # the indexer's heads,
    index_dim: int          # their size,
    index_topk: int         # and the entries each query keeps
    hc_mult: int            # residual streams
    n_experts: int          # routed experts (one shared expert beside)
    top_k: int              # routed experts per token
    # the rest: Hugging Face's defaults (DeepseekV4Config)
    m_csa: int = 4          # tokens per CSA entry
    m_hca: int = 128        # tokens per HCA entry
    compress_base: float = 160000.0  # RoPE base of the compressed layers
    compress_scaling: object = None  # and their RopeScaling (YaRN), or None
    hc_iters: int = 20      # Sinkhorn-Knopp iterations
    hc_eps: float = 1e-6    # their floor
    score: str = "sqrtsoftplus"  # the router: or "sigmoid"
    routed_scale: float = 1.5    # multiplies the routed experts' weights
    swiglu_limit: float = 10.0   # clamps the SwiGLU's gate and up

    def __post_init__(self):
        if not set(self.kinds) <= set(KINDS):
            raise ValueError(f"V4Sizes: kinds must be among {KINDS}, got "
                             f"{self.kinds!r}")
        if self.score not in SCORES:
            raise ValueError(f"V4Sizes: score must be one of {SCORES}, got "
                             f"{self.score!r}")


def _rotate_tail(a, positions, d_rope, base, scaling=None):
    """RoPE (interleaved pairs) on the last d_rope features of a."""
    tail = rope(a[..., -d_rope:], positions, base=base, layout="interleaved",
                scaling=scaling)
    return np.concatenate([a[..., :-d_rope], tail], axis=-1)


# --8<-- [start:attention]
def v4_attention(h, p, config, positions, slot, kind):
    """One V4 attention layer over h (batch, n, d_model); slot: its
    RecurrentSlot (the cache's window of keys and compressor state)."""
    s, D, eps = config.linear, config.d_head, config.norm_eps
    rd = int(D * config.rope_fraction)
    base, scaling = ((config.rope_base, None) if kind == "sliding"
                     else (s.compress_base, s.compress_scaling))
    q_res = rms_norm(h @ p["attn.W_qa"], p["attn.q_norm.weight"], eps=eps)
    q = unit_rms(split_heads(q_res @ p["attn.W_qb"], config.n_heads), eps)
    q = _rotate_tail(q, positions, rd, base, scaling)   # (batch, H, n, D)
    kv = rms_norm(h @ p["attn.W_kv"], p["attn.kv_norm.weight"], eps=eps)
    kv = _rotate_tail(kv[:, None], positions, rd, base, scaling)
    cache = slot.cache
    if cache is None:
        keys, key_positions, state = kv, positions, {}
    else:  # the key is the value: nothing stored as values
        keys, _, key_positions, _ = cache.update(slot.layer, kv, kv[..., :0])
        state = slot.state or {}
    mask = window_mask(positions, key_positions, window=config.sliding_window)
    mask = np.broadcast_to(mask, (h.shape[0], *mask.shape))
    if kind != "sliding":
        entries, chosen = _compressed(h, q_res, p, config, positions, kind,
                                      state)
        keys = np.concatenate([keys, entries[:, None]], axis=2)
        mask = np.concatenate([mask, chosen], axis=-1)
        slot.save(state)
    out, weights = attend(q, keys, keys, causal=False, mask=mask[:, None],
                          sinks=p["attn.sinks"])
    out = _rotate_tail(out, -positions, rd, base, scaling)  # undo v's RoPE
    groups = np.swapaxes(out, 1, 2).reshape(*h.shape[:2], s.o_groups, -1)
    low = np.einsum("bngi,gio->bngo", groups, p["attn.W_oa"])
    return low.reshape(*h.shape[:2], -1) @ p["attn.W_ob"], weights


def _compressed(h, q_res, p, config, positions, kind, state):
    """A compressed layer's entries (batch, T, D) and which of them each
    query reads (batch, n, T): HCA every complete one, CSA its indexer's
    top k."""
    s, eps = config.linear, config.norm_eps
    rd = int(config.d_head * config.rope_fraction)
    m = s.m_csa if kind == "csa" else s.m_hca
    rules = dict(m=m, overlapping=kind == "csa", d_rope=rd,
                 rope_base=s.compress_base, eps=eps,
                 rope_scaling=s.compress_scaling)
    entries = compress(h, _part(p, "attn.compress."), **rules,
                       state=state.setdefault("compress", {}))
    T = entries.shape[1]
    if kind == "hca":
        chosen = visible_entries(positions, T, m)
        return entries, np.broadcast_to(chosen, (h.shape[0], *chosen.shape))
    ix = _part(p, "attn.index.")
    keys = compress(h, ix, **rules, state=state.setdefault("index", {}))
    q = (q_res @ ix["W_q"]).reshape(*h.shape[:2], s.index_heads, -1)
    q = np.swapaxes(_rotate_tail(np.swapaxes(q, 1, 2), positions, rd,
                                 s.compress_base, s.compress_scaling), 1, 2)
    w = (h @ ix["W_w"]) * s.index_heads ** -0.5        # (batch, n, heads)
    if T == 0:
        return entries, np.zeros((*h.shape[:2], 0), bool)
    return entries, csa_select(q, w, keys, positions, m, s.index_topk)


def _part(p, prefix):
    """The parameters under prefix, without it (norm.weight -> norm)."""
    return {k[len(prefix):].removesuffix(".weight"): v
            for k, v in p.items() if k.startswith(prefix)}
# --8<-- [end:attention]


# --8<-- [start:experts]
def clamped_swiglu(x, W_gate, W_up, W_down, limit):
    """SwiGLU with the gate clamped above and up clamped both ways."""
    gate = np.minimum(x @ W_gate, limit)
    up = np.clip(x @ W_up, -limit, limit)
    return (gate * sigmoid(gate) * up) @ W_down


def v4_experts(h, p, config, token_ids, hashed):
    """The routed experts (a fixed table of token ids picks them in a
    hashed layer, the top k scores plus a bias otherwise) and the shared
    one. h: (batch, n, d_model)."""
    s = config.linear
    logits = h @ p["mlp.router.W"]                        # (batch, n, E)
    scores = (np.sqrt(np.logaddexp(0.0, logits)) if s.score == "sqrtsoftplus"
              else sigmoid(logits))
    if hashed:
        table = p["mlp.router.hash"]
        if np.asarray(table).dtype.kind not in "iu":
            raise ValueError(f"deepseek_v4: mlp.router.hash must hold "
                             f"integer expert ids (tid2eid), got dtype "
                             f"{np.asarray(table).dtype}")
        chosen = table[token_ids]                         # (batch, n, k)
    else:
        biased = scores + p["mlp.router.bias"]
        chosen = np.argsort(-biased, axis=-1, kind="stable")[..., :s.top_k]
    w = np.take_along_axis(scores, chosen, axis=-1)
    w = w / (w.sum(axis=-1, keepdims=True) + 1e-20) * s.routed_scale
    out = np.zeros_like(h)
    for e in range(s.n_experts):
        weight = (w * (chosen == e)).sum(axis=-1)         # (batch, n)
        rows = weight != 0
        if rows.any():
            y = clamped_swiglu(h[rows], p["mlp.experts.W_gate"][e],
                               p["mlp.experts.W_up"][e],
                               p["mlp.experts.W_down"][e], s.swiglu_limit)
            out[rows] += weight[rows, None] * y
    shared = clamped_swiglu(h, p["mlp.shared.W_gate"], p["mlp.shared.W_up"],
                            p["mlp.shared.W_down"], s.swiglu_limit)
    return out + shared
# --8<-- [end:experts]


# --8<-- [start:block]
def v4_block(x, p, config, positions, *, trace=None, attend_fn=None,
             dropout=None, token_ids=None, kind="sliding", hashed=False):
    """One layer over the streams x (batch, n, hc_mult, d_model)."""
    slot, eps = attend_fn, config.norm_eps
    if dropout:
        raise ValueError("deepseek_v4: dropout is not implemented")
    if slot.valid is not None and not np.all(slot.valid):
        raise ValueError("deepseek_v4: padding (valid with False entries) "
                         "is not implemented")
    positions = np.asarray(positions)
    if positions.ndim == 2:  # (batch, n) from a cache: alike without <pad>
        if (positions != positions[:1]).any():
            raise ValueError("deepseek_v4: positions must be the same in "
                             "every sequence of the batch")
        positions = positions[0]
    kept = {}

    def attn(h):
        out, kept["weights"] = v4_attention(
            rms_norm(h, p["norm1.weight"], eps=eps), p, config, positions,
            slot, kind)
        return out

    def ffn(h):
        return v4_experts(rms_norm(h, p["norm2.weight"], eps=eps), p, config,
                          token_ids, hashed)

    s = config.linear
    hc = dict(iters=s.hc_iters, hc_eps=s.hc_eps, eps=eps)
    x_mid = hyper_branch(x, _part(p, "hc1."), attn, **hc)
    out = hyper_branch(x_mid, _part(p, "hc2."), ffn, **hc)
    record(trace, x=x, x_mid=x_mid, out=out, **kept)
    return out


def _streams(x, params, positions, config):
    """The embedding, copied into every stream: (batch, n, hc_mult, d)."""
    return np.repeat(x[..., None, :], config.linear.hc_mult, axis=-2)


def _head_and_norm(streams, params, config):
    """The head's mix of the streams, then the final RMSNorm."""
    p = {k: params[f"final_norm.hc.{k}"] for k in ("fn", "base", "scale")}
    x = hyper_head(streams, p, config.linear.hc_eps, config.norm_eps)
    return rms_norm(x, params["final_norm.weight"], eps=config.norm_eps)
# --8<-- [end:block]


def _shapes(c, i):
    s, d, D, H, F, E = (c.linear, c.d_model, c.d_head, c.n_heads, c.d_ff,
                        c.linear.n_experts)
    N = s.hc_mult
    hc = {"fn": (N * d, (2 + N) * N), "base": ((2 + N) * N,), "scale": (3,)}
    shapes = {f"hc1.{k}": v for k, v in hc.items()}
    shapes |= {"norm1.weight": (d,), "attn.W_qa": (d, s.q_lora_rank),
               "attn.q_norm.weight": (s.q_lora_rank,),
               "attn.W_qb": (s.q_lora_rank, H * D), "attn.W_kv": (d, D),
               "attn.kv_norm.weight": (D,),
               "attn.W_oa": (s.o_groups, H * D // s.o_groups, s.o_lora_rank),
               "attn.W_ob": (s.o_groups * s.o_lora_rank, d),
               "attn.sinks": (H,)}
    kind = s.kinds[i]
    if kind != "sliding":
        m, w = (s.m_csa, 2) if kind == "csa" else (s.m_hca, 1)
        shapes |= {"attn.compress.W_kv": (d, w * D),
                   "attn.compress.W_gate": (d, w * D),
                   "attn.compress.bias": (m, w * D),
                   "attn.compress.norm.weight": (D,)}
    if kind == "csa":
        c_i = s.index_dim
        shapes |= {"attn.index.W_kv": (d, 2 * c_i),
                   "attn.index.W_gate": (d, 2 * c_i),
                   "attn.index.bias": (s.m_csa, 2 * c_i),
                   "attn.index.norm.weight": (c_i,),
                   "attn.index.W_q": (s.q_lora_rank, s.index_heads * c_i),
                   "attn.index.W_w": (d, s.index_heads)}
    shapes |= {f"hc2.{k}": v for k, v in hc.items()}
    shapes |= {"norm2.weight": (d,), "mlp.router.W": (d, E)}
    shapes |= ({"mlp.router.hash": (c.vocab_size, s.top_k)} if s.hashed[i]
               else {"mlp.router.bias": (E,)})
    return shapes | {"mlp.experts.W_gate": (E, d, F),
                     "mlp.experts.W_up": (E, d, F),
                     "mlp.experts.W_down": (E, F, d),
                     "mlp.shared.W_gate": (d, F), "mlp.shared.W_up": (d, F),
                     "mlp.shared.W_down": (F, d)}


def _check(c):
    s = c.linear
    if not isinstance(s, V4Sizes) or len(s.kinds) != c.n_layers or len(
            s.hashed) != c.n_layers:
        raise ValueError(f"ModelConfig: arch 'deepseek_v4' needs linear = a "
                         f"V4Sizes with kinds and hashed for each of the "
                         f"{c.n_layers} layers, got {s!r}")
    if c.sliding_window is None:
        raise ValueError("ModelConfig: deepseek_v4 needs sliding_window, the "
                         "window of keys every layer reads")
    if c.n_kv_heads != 1 or (c.n_heads * c.d_head) % s.o_groups:
        raise ValueError(f"ModelConfig: deepseek_v4 has one key-value head "
                         f"and o_groups = {s.o_groups} dividing n_heads * "
                         f"d_head; got n_kv_heads = {c.n_kv_heads}, n_heads "
                         f"* d_head = {c.n_heads * c.d_head}")


# --8<-- [start:hf_names]
def _linear(sd, key):
    return sd[key + ".weight"].T


def _hc(sd, prefix, ours):
    return {f"{ours}.fn": sd[prefix + ".fn"].T,
            f"{ours}.base": sd[prefix + ".base"],
            f"{ours}.scale": sd[prefix + ".scale"]}


def _compressor(sd, prefix, ours):
    return {f"{ours}.W_kv": _linear(sd, prefix + ".kv_proj"),
            f"{ours}.W_gate": _linear(sd, prefix + ".gate_proj"),
            f"{ours}.bias": sd[prefix + ".position_bias"],
            f"{ours}.norm.weight": sd[prefix + ".kv_norm.weight"]}


def deepseek_v4_weights(sd, i, config):
    """Layer i from Hugging Face's names (nn.Linear weights transposed;
    the grouped output projection one (in, out) matrix per group)."""
    s, h = config.linear, f"model.layers.{i}."
    a = h + "self_attn."
    W_oa = sd[a + "o_a_proj.weight"]                # (groups * r, in)
    layer = (_hc(sd, h + "attn_hc", "hc1") | _hc(sd, h + "ffn_hc", "hc2") | {
        "norm1.weight": sd[h + "input_layernorm.weight"],
        "norm2.weight": sd[h + "post_attention_layernorm.weight"],
        "attn.W_qa": _linear(sd, a + "q_a_proj"),
        "attn.q_norm.weight": sd[a + "q_a_norm.weight"],
        "attn.W_qb": _linear(sd, a + "q_b_proj"),
        "attn.W_kv": _linear(sd, a + "kv_proj"),
        "attn.kv_norm.weight": sd[a + "kv_norm.weight"],
        "attn.W_oa": W_oa.reshape(s.o_groups, s.o_lora_rank, -1).swapaxes(
            1, 2),
        "attn.W_ob": _linear(sd, a + "o_b_proj"),
        "attn.sinks": sd[a + "sinks"]})
    if s.kinds[i] != "sliding":
        layer |= _compressor(sd, a + "compressor", "attn.compress")
    if s.kinds[i] == "csa":
        ix = a + "compressor.indexer"
        layer |= _compressor(sd, ix, "attn.index") | {
            "attn.index.W_q": _linear(sd, ix + ".q_b_proj"),
            "attn.index.W_w": _linear(sd, ix + ".scorer.weights_proj")}
    g, e = h + "mlp.gate", h + "mlp.experts"
    gate_up = sd[e + ".gate_up_proj"]                # (E, 2 F, d)
    F = gate_up.shape[1] // 2
    layer |= {"mlp.router.W": _linear(sd, g),
              "mlp.experts.W_gate": gate_up[:, :F].swapaxes(1, 2),
              "mlp.experts.W_up": gate_up[:, F:].swapaxes(1, 2),
              "mlp.experts.W_down": sd[e + ".down_proj"].swapaxes(1, 2)}
    layer |= ({"mlp.router.hash": sd[g + ".tid2eid"]} if s.hashed[i]
              else {"mlp.router.bias": sd[g + ".e_score_correction_bias"]})
    return layer | {f"mlp.shared.W_{x}": _linear(
        sd, f"{h}mlp.shared_experts.{x}_proj") for x in ("gate", "up", "down")}


def _outer(sd):
    return {"embed.tokens": sd["model.embed_tokens.weight"],
            "final_norm.weight": sd["model.norm.weight"],
            "final_norm.hc.fn": sd["model.hc_head.hc_fn"].T,
            "final_norm.hc.base": sd["model.hc_head.hc_base"],
            "final_norm.hc.scale": sd["model.hc_head.hc_scale"]}
# --8<-- [end:hf_names]


DEEPSEEK_V4 = register(Family(
    name="deepseek_v4",
    parts={"norm": "rms_norm", "mixer": "compressed", "ffn": "moe",
           "wiring": "hyper_connections", "positions": "rope"},
    block=lambda c, i: partial(v4_block, kind=c.linear.kinds[i],
                               hashed=c.linear.hashed[i]),
    layer_shapes=_shapes,
    final_norm=_head_and_norm,
    norm_shapes=lambda c: {
        "weight": (c.d_model,),
        "hc.fn": (c.linear.hc_mult * c.d_model, c.linear.hc_mult),
        "hc.base": (c.linear.hc_mult,), "hc.scale": (1,)},
    embed=_streams,
    hf_outer=_outer,
    hf_layer=deepseek_v4_weights,
    check=_check,
    layer_mixer=lambda c, i: "recurrent",
    token_ids=True,
))
