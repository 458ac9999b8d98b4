"""What a mixture of experts costs: total and active parameters, FLOPs per token, memory.

Every count comes from ``attention.model.parameter_shapes`` of a ModelConfig, so it is the
model the package builds. ``MOE_CONFIGS`` holds five released models, typed from their
config.json files on the Hugging Face Hub (mistralai/Mixtral-8x7B-v0.1,
Qwen/Qwen3-30B-A3B, deepseek-ai/DeepSeek-V3, openai/gpt-oss-20b, openai/gpt-oss-120b);
``CARD_COUNTS`` the totals and active counts their papers and model cards state (Jiang et
al. 2024, abstract; the Qwen3-30B-A3B model card; DeepSeek-AI 2024, abstract; OpenAI's
gpt-oss model card, 2025, table 1), for the page to compare with.

Active parameters: those a token's forward pass multiplies by: every weight but the
experts it was not routed to. The input embedding is a lookup, not a product; cards
differ on counting it, so ``parameter_counts`` gives both.
"""

# --8<-- [start:imports]
import math
from dataclasses import replace

from attention.families.costs import latent_cache_bytes, mla_attention_flops
from attention.families.moe import MoE
from attention.family import family_of
from attention.kv_cache import kv_cache_bytes_for
from attention.model import ModelConfig, parameter_shapes
# --8<-- [end:imports]


# --8<-- [start:published]
MOE_CONFIGS = {
    "Mixtral 8x7B": ModelConfig(
        arch="llama", vocab_size=32000, d_model=4096, n_layers=32,
        n_heads=32, n_kv_heads=8, d_ff=14336, max_positions=32768,
        tie_embeddings=False, moe=MoE(8, 2, 14336)),
    "Qwen3-30B-A3B": ModelConfig(
        arch="llama", vocab_size=151936, d_model=2048, n_layers=48,
        n_heads=32, n_kv_heads=4, head_dim=128, d_ff=6144,
        max_positions=40960, tie_embeddings=False, qk_norm="head",
        moe=MoE(128, 8, 768, renormalise=True)),
    "DeepSeek-V3": ModelConfig(
        arch="deepseek_v3", vocab_size=129280, d_model=7168, n_layers=61,
        n_heads=128, d_ff=18432, max_positions=163840,
        tie_embeddings=False, q_lora_rank=1536, kv_lora_rank=512,
        qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
        moe=MoE(256, 8, 2048, router="sigmoid", scale=2.5, n_group=8,
                topk_group=4, n_shared=1, first_dense=3)),
    "gpt-oss-20b": ModelConfig(
        arch="llama", vocab_size=201088, d_model=2880, n_layers=24,
        n_heads=64, n_kv_heads=8, head_dim=64, d_ff=2880,
        max_positions=131072, tie_embeddings=False, attn_bias=True,
        attn_sinks=True, sliding_window=128,
        layer_types=("sliding", "full") * 12,
        moe=MoE(32, 4, 2880, router="top_k_softmax", bias=True,
                swiglu_limit=7.0)),
}
# gpt-oss-120b: the 20b's layer, 36 of them, with 128 experts instead of 32
_small = MOE_CONFIGS["gpt-oss-20b"]
MOE_CONFIGS["gpt-oss-120b"] = replace(
    _small, n_layers=36, layer_types=("sliding", "full") * 18,
    moe=replace(_small.moe, n_experts=128))
# (total, active) in billions, as each paper or model card states them.
CARD_COUNTS = {"Mixtral 8x7B": (47, 13), "Qwen3-30B-A3B": (30.5, 3.3),
               "DeepSeek-V3": (671, 37), "gpt-oss-20b": (20.9, 3.6),
               "gpt-oss-120b": (116.8, 5.1)}
# --8<-- [end:published]


# --8<-- [start:parameter_counts]
def parameter_counts(config):
    """{"total", "active", "active_no_embedding"}: parameters in all, and
    those one token multiplies by (its top_k of n_experts experts per
    mixture layer), with and without the input embedding table."""
    shapes = parameter_shapes(config)
    total = sum(math.prod(s) for s in shapes.values())
    idle = 0  # the experts a token skips: (n_experts - top_k) of each
    if config.moe is not None:
        m = config.moe
        skipped = m.n_experts - m.top_k
        for name, shape in shapes.items():
            if ".mlp.experts." in name:  # (n_experts, ...): exact division
                idle += math.prod(shape) * skipped // m.n_experts
    active = total - idle
    embedding = math.prod(shapes["embed.tokens"])
    return {"total": total, "active": active,
            "active_no_embedding": active - embedding}
# --8<-- [end:parameter_counts]


# --8<-- [start:flops]
def flops_per_token(config, n_context):
    """FLOPs (2 per multiply-add) to decode one token over n_context
    cached tokens: every active weight but the embedding lookup, plus the
    scores and the weighted values, layer by layer (a sliding layer reads
    at most its window). MLA in section 9.3's absorbed form, as decoding
    runs it: scores and values over the cached latent and rotated key."""
    if isinstance(n_context, bool) or not isinstance(n_context, int) or (
            n_context < 0):
        raise ValueError(f"flops_per_token: n_context must be an integer "
                         f">= 0, got {n_context!r}")
    c = config
    weights = 2 * parameter_counts(c)["active_no_embedding"]
    keys = [n_context if w is None else min(n_context, w)
            for w in c.layer_windows]
    if family_of(c).parts["mixer"] != "latent":  # keys and values
        return weights + sum(2 * c.n_heads * 2 * c.d_head * n for n in keys)
    sizes = dict(n_heads=c.n_heads, kv_lora_rank=c.kv_lora_rank,
                 qk_nope_head_dim=c.qk_nope_head_dim,
                 qk_rope_head_dim=c.qk_rope_head_dim,
                 v_head_dim=c.v_head_dim, absorbed=True)
    # The absorbed core also folds q through W_uk and the output through
    # W_uv: products by weights that `weights` already counts. Add only the
    # part that reads the cache (the core at n keys minus the core at 0).
    return weights + sum(mla_attention_flops(1, n, **sizes)
                         - mla_attention_flops(1, 0, **sizes) for n in keys)


def cache_bytes_per_token(config, *, bytes_per_value=2):
    """Bytes the KV cache adds per token, over every layer (windows aside):
    chapter 4's keys and values, or MLA's latent and rotated key. A hybrid's
    recurrent layers (chapter 12) keep a state of fixed size: they add
    nothing per token."""
    family = family_of(config)
    if family.parts["mixer"] == "latent":  # MLA
        every = latent_cache_bytes(config, bytes_per_value=bytes_per_value)
    else:
        every = kv_cache_bytes_for(config, bytes_per_value=bytes_per_value)
    attending = sum(family.layer_mixer(config, i) == "attention"
                    for i in range(config.n_layers))
    return every // config.n_layers * attending  # the same bytes per layer
# --8<-- [end:flops]
