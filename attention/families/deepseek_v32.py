"""DeepSeek-V3.2: DeepSeek-V3 whose attention reads only the keys an indexer picks.

DeepSeek-AI, "DeepSeek-V3.2: Pushing the Frontier of Open Large Language Models" (2025),
section 2.1; Hugging Face's ``DeepseekV32ForCausalLM``. Everything is DeepSeek-V3's
(``attention.families.mla``: MLA, the mixture of experts, Llama's wiring) except the
token mixer: a lightning indexer (``attention.sparse.indexer``) scores every earlier
token for each query, and MLA attends over the top ``indexer.top_k`` only
(``attention.sparse.dsa``, the score rule ``"select"``).

The cache: each token adds MLA's latent c_kv and rotated key k_rope, and the indexer's
key. The package's ``KVCache`` keeps the indexer's key in the same slot as k_rope,
side by side on the last axis, so that one cache (and its crop, its padding, its
positions) serves both; ``expand`` splits them again before attention.
"""

# --8<-- [start:imports]
import dataclasses
from functools import partial

import numpy as np

from attention.blocks import attend, llama_block
from attention.families.mla import DEEPSEEK_V3, deepseek_v3_weights, mla_attention
from attention.families.moe import feed_forward
from attention.family import register
from attention.norms import rms_norm
from attention.sparse.dsa import Selection
from attention.sparse.indexer import Indexer, indexer_inputs
# --8<-- [end:imports]


# --8<-- [start:sparse_mla]
def sparse_latent_attention(h, p, config, positions, *, trace=None,
                            attend_fn=None, dropout=None):
    """MLA whose queries each read the indexer's top_k keys (a token
    mixer for ``llama_block``). dropout: not applied, as for MLA."""
    c_q = rms_norm(h @ p["attn.W_dq"], p["attn.dq_norm.weight"],
                   eps=config.norm_eps)  # MLA's low-rank query, shared
    q_index, w, k_index = indexer_inputs(h, c_q, p, config, positions)
    selection = Selection(q_index, w, config.indexer.top_k)
    d_rope = config.qk_rope_head_dim

    def sparse_attend(q, c_kv, k_rope, sinks, *, expand, **score):
        # The indexer's key rides in k_rope's slot of the cache.
        packed = np.concatenate([k_rope, k_index[:, None]], axis=-1)

        def split(c_kv, packed):  # every cached token's, with the new ones
            selection.keys = packed[:, 0, :, d_rope:]  # (batch, n_k, d_index)
            return expand(c_kv, packed[..., :d_rope])
        if attend_fn is None:
            return attend(q, c_kv, packed, expand=split, select=selection,
                          **score)
        return attend_fn(q, c_kv, packed, None, expand=split,
                         select=selection, **score)

    absorbed = {"always": True, "never": False,
                "decode": h.shape[-2] == 1}[config.mla_absorb]
    return mla_attention(h, p, config, positions, absorbed=absorbed,
                         attend_fn=sparse_attend, trace=trace)
# --8<-- [end:sparse_mla]


def indexer_shapes(c):
    """The indexer's parameters, short names."""
    ix = c.indexer
    return {"attn.indexer.W_q": (c.q_lora_rank, ix.n_heads * ix.head_dim),
            "attn.indexer.W_k": (c.d_model, ix.head_dim),
            "attn.indexer.k_norm.weight": (ix.head_dim,),
            "attn.indexer.k_norm.bias": (ix.head_dim,),
            "attn.indexer.W_w": (c.d_model, ix.n_heads)}


def _check(c):
    """DeepSeek-V3's rules, an Indexer, low-rank queries (the indexer
    reads them) and an indexer head wider than the rotated part."""
    DEEPSEEK_V3.check(c)
    if not isinstance(c.indexer, Indexer):
        raise ValueError(f"ModelConfig: deepseek_v32 needs indexer=Indexer("
                         f"...), got {c.indexer!r}")
    if c.q_lora_rank is None:
        raise ValueError("ModelConfig: deepseek_v32's indexer reads the "
                         "low-rank query: q_lora_rank must be set, got None")
    if c.indexer.head_dim < c.qk_rope_head_dim:
        raise ValueError(f"ModelConfig: the indexer rotates its first "
                         f"qk_rope_head_dim = {c.qk_rope_head_dim} features: "
                         f"indexer.head_dim must be at least that, got "
                         f"{c.indexer.head_dim}")


def deepseek_v32_weights(sd, i, config):
    """Block i: DeepSeek-V3's weights and the indexer's (nn.Linear weights
    are (d_out, d_in): transposed)."""
    a = f"model.layers.{i}.self_attn.indexer."
    return deepseek_v3_weights(sd, i, config) | {
        "attn.indexer.W_q": sd[a + "wq_b.weight"].T,
        "attn.indexer.W_k": sd[a + "wk.weight"].T,
        "attn.indexer.k_norm.weight": sd[a + "k_norm.weight"],
        "attn.indexer.k_norm.bias": sd[a + "k_norm.bias"],
        "attn.indexer.W_w": sd[a + "weights_proj.weight"].T}


DEEPSEEK_V32 = register(dataclasses.replace(
    DEEPSEEK_V3,
    name="deepseek_v32",
    parts=DEEPSEEK_V3.parts | {"indexer": "lightning"},
    block=lambda config, i: partial(llama_block,
                                    mixer=sparse_latent_attention,
                                    ffn=feed_forward),
    layer_shapes=lambda c, i: (DEEPSEEK_V3.layer_shapes(c, i)
                               | indexer_shapes(c)),
    hf_layer=deepseek_v32_weights,
    check=_check,
))
