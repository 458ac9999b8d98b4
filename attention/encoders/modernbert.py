"""ModernBERT: an encoder with a decoder's parts, and local layers between global ones.

Reference: Warner et al., "Smarter, Better, Faster, Longer: A Modern Bidirectional
Encoder for Fast, Memory Efficient, and Long Context Finetuning and Inference" (2024),
section 2.1: no biases in the linear layers or the norms, pre-LN blocks, GeGLU, RoPE in
place of learned positions; every third layer global, the others attending to a local
window of 128 tokens (64 on each side) with a smaller RoPE base; and unpadding, which
removes the <pad> tokens of a batch and runs its real tokens as one packed sequence.

Unpadding, here: the real tokens of every sequence, one after another, with their own
positions (each sequence starts again at 0) and a mask that lets a token see only the
tokens of its own sequence. That is the same computation as the padded batch with its
padding mask, without the pads. (Real kernels pass the sequences' boundaries instead of
a mask; we build the mask, which is what those boundaries mean.)
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.blocks import attention_layer
from attention.encoders.hf import StateReader, check_ids, check_real, refuse
from attention.feed_forward import gelu
from attention.model import block_params
from attention.norms import layer_norm
# --8<-- [end:imports]


# --8<-- [start:config]
@dataclass(frozen=True)
class ModernBertConfig:
    vocab_size: int = 50368
    d_model: int = 768
    n_layers: int = 22
    n_heads: int = 12
    d_ff: int = 1152              # GeGLU's width (each of its two halves)
    window: int = 128             # local layers see keys within window // 2
    global_every: int = 3         # layer i is global when i % global_every == 0
    rope_base_global: float = 160_000.0
    rope_base_local: float = 10_000.0
    norm_eps: float = 1e-5        # LayerNorm's eps (LayerNorm without bias)

    def is_global(self, i):
        return i % self.global_every == 0
# --8<-- [end:config]


# --8<-- [start:parts]
def geglu(x, W_in, W_out):
    """GeGLU (Shazeer 2020): gelu(x W_a) * (x W_b), then W_out; no biases.

    W_in: (d_model, 2 d_ff), its first d_ff columns W_a, the rest W_b.
    """
    if np.shape(W_in)[-1:] != (2 * np.shape(W_out)[0],):
        raise ValueError(f"geglu: W_in must be (d_model, 2 d_ff) for W_out "
                         f"(d_ff, d_model), got W_in {np.shape(W_in)} and "
                         f"W_out {np.shape(W_out)}")
    a, b = np.split(x @ W_in, 2, axis=-1)     # (..., d_ff) each
    return (gelu(a) * b) @ W_out              # (..., d_model)


def window_mask(positions, window):
    """True where two tokens are at most window // 2 positions apart, in
    both directions: (..., n) positions -> (..., n, n)."""
    positions = np.asarray(positions)
    if positions.ndim < 1 or positions.dtype.kind not in "iu":
        raise ValueError(f"window_mask: positions must be integers (..., n), "
                         f"got shape {positions.shape}, dtype "
                         f"{positions.dtype}")
    gap = np.abs(positions[..., :, None] - positions[..., None, :])
    return gap <= window // 2
# --8<-- [end:parts]


# --8<-- [start:encode]
def modernbert_layers(params, config, x, positions, allowed):
    """The embeddings, the layers and the final norm.

    x: (batch, n) token ids; positions: (n,) or (batch, n) (RoPE's);
    allowed: (batch, 1, n, n), which tokens may see which (padding, or
    the sequences of a packed batch), before the window.
    """
    eps = config.norm_eps
    x = layer_norm(params["embed.tokens"][x], params["embed.norm.weight"],
                   eps=eps)                              # (batch, n, d)
    local = allowed & window_mask(positions, config.window)[..., None, :, :]
    for i in range(config.n_layers):
        p = block_params(params, i)
        glob = config.is_global(i)
        # layer 0 has no norm before attention: the embeddings' norm is it
        h = x if i == 0 else layer_norm(x, p["norm1.weight"], eps=eps)
        x = x + attention_layer(
            h, p, n_heads=config.n_heads, causal=False,
            mask=allowed if glob else local, positions=positions,
            rope_base=(config.rope_base_global if glob
                       else config.rope_base_local))
        x = x + geglu(layer_norm(x, p["norm2.weight"], eps=eps),
                      p["mlp.W_in"], p["mlp.W_out"])
    return layer_norm(x, params["final_norm.weight"], eps=eps)


def modernbert_encode(params, config, token_ids, real=None):
    """The padded batch: (batch, n) ids, real (batch, n) boolean (False on
    <pad>). Returns (batch, n, d_model); the pads' rows mean nothing."""
    ids = check_ids("modernbert_encode", token_ids, config.vocab_size)
    real = check_real("modernbert_encode", real, ids.shape)
    return modernbert_layers(params, config, ids, np.arange(ids.shape[1]),
                             real[:, None, None, :])


def unpad(token_ids, real):
    """The real tokens of a padded batch, packed into one sequence.

    Returns (ids (total,), sequence (total,): which sequence each token
    came from, positions (total,): its position in that sequence).
    """
    ids = np.asarray(token_ids)
    real = check_real("unpad", real, ids.shape)
    sequence, positions = np.nonzero(real)   # row-major: sequence by sequence
    return ids[real], sequence, positions


def modernbert_encode_unpadded(params, config, token_ids, real):
    """The same batch unpadded: only its real tokens are computed.

    Returns (total, d_model), the real tokens' hidden states in order
    (sequence 0's, then sequence 1's, ...): hidden[real] of the padded
    ``modernbert_encode``.
    """
    check_ids("modernbert_encode_unpadded", token_ids, config.vocab_size)
    ids, sequence, positions = unpad(token_ids, real)
    same = sequence[:, None] == sequence[None, :]        # (total, total)
    out = modernbert_layers(params, config, ids[None], positions,
                            same[None, None])            # a batch of one
    return out[0]
# --8<-- [end:encode]


# --8<-- [start:from_hf]
def modernbert_config_from_hf(hf):
    """Our ModernBertConfig from a transformers ModernBertConfig; refuses,
    by name, the settings this module does not implement."""
    refuse("modernbert_config_from_hf", hf, {
        "hidden_activation": "gelu", "norm_bias": False,
        "attention_bias": False, "mlp_bias": False})
    types = list(hf.layer_types)
    glob = [i for i, t in enumerate(types) if t == "full_attention"]
    every = glob[1] if len(glob) > 1 else len(types)
    expected = ["full_attention" if i % every == 0 else "sliding_attention"
                for i in range(len(types))]
    if not glob or types != expected:
        raise ValueError(f"modernbert_config_from_hf: not implemented here: "
                         f"layer_types={types!r} (a global layer every k "
                         f"layers from layer 0 is)")
    rope = hf.rope_parameters
    for kind in ("full_attention", "sliding_attention"):
        if rope[kind].get("rope_type", "default") != "default":
            raise ValueError(f"modernbert_config_from_hf: not implemented "
                             f"here: rope_parameters[{kind!r}]="
                             f"{rope[kind]!r}")
    return ModernBertConfig(
        vocab_size=hf.vocab_size, d_model=hf.hidden_size,
        n_layers=hf.num_hidden_layers, n_heads=hf.num_attention_heads,
        d_ff=hf.intermediate_size, window=hf.local_attention,
        global_every=every,
        rope_base_global=rope["full_attention"]["rope_theta"],
        rope_base_local=rope["sliding_attention"]["rope_theta"],
        norm_eps=hf.norm_eps)


def modernbert_shapes(c):
    """{name: shape} of ModernBERT's parameters: no biases anywhere."""
    d = c.d_model
    shapes = {"embed.tokens": (c.vocab_size, d), "embed.norm.weight": (d,)}
    for i in range(c.n_layers):
        b = f"blocks.{i}."
        shapes |= {b + f"attn.W_{name}": (d, d) for name in "qkvo"}
        shapes |= {b + "mlp.W_in": (d, 2 * c.d_ff),
                   b + "mlp.W_out": (c.d_ff, d), b + "norm2.weight": (d,)}
        if i > 0:
            shapes[b + "norm1.weight"] = (d,)
    return shapes | {"final_norm.weight": (d,)}


def modernbert_from_hf(state, config):
    """Our parameters from a ModernBertModel state dict of NumPy arrays."""
    r = StateReader(state, "modernbert_from_hf")
    d = config.d_model
    p = {"embed.tokens": r["embeddings.tok_embeddings.weight"],
         "embed.norm.weight": r["embeddings.norm.weight"],
         "final_norm.weight": r["final_norm.weight"]}
    for i in range(config.n_layers):
        hf, b = f"layers.{i}.", f"blocks.{i}."
        qkv = r.linear(hf + "attn.Wqkv")   # (d, 3d): q's, k's, v's columns
        for j, name in enumerate("qkv"):
            p[b + f"attn.W_{name}"] = qkv[:, j * d:(j + 1) * d]
        p[b + "attn.W_o"] = r.linear(hf + "attn.Wo")
        p[b + "mlp.W_in"] = r.linear(hf + "mlp.Wi")
        p[b + "mlp.W_out"] = r.linear(hf + "mlp.Wo")
        p[b + "norm2.weight"] = r[hf + "mlp_norm.weight"]
        if i > 0:
            p[b + "norm1.weight"] = r[hf + "attn_norm.weight"]
    return r.done(p, modernbert_shapes(config))
# --8<-- [end:from_hf]
