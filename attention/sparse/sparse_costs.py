"""What a decoded token reads, and what a cache holds per token, for 2026's attention.

Dense attention reads every cached key and value at every step: at context n a decoded
token reads n times the cache's bytes per token (chapter 4's ``kv_cache_bytes_for``,
chapter 9's latent for MLA, through ``cache_bytes_per_token``). DeepSeek Sparse
Attention reads the latents of its top_k keys only, but its indexer reads the indexer's
key of every token, so its bytes still grow with n, by index_head_dim per layer instead
of MLA's kv_lora_rank + qk_rope_head_dim (DeepSeek-AI, "DeepSeek-V3.2", 2025, section
2.1: the indexer is O(n^2) over a sequence, like dense attention, but far cheaper).

``Cached`` and ``CARDS`` count the cache one sequence holds at context n for the designs
of chapters 4 to 12: full layers, sliding windows, latents, compressed entries (one per
``every`` tokens, DeepSeek-V4) and the fixed states of linear layers (chapter 10). The
model-card sizes are typed here from the package's own configurations (chapters 4, 9
and 10: ``attention.model.CONFIGS``, ``attention.families.moe_costs.MOE_CONFIGS``,
``attention.linear.costs``) and otherwise from the defaults of transformers 5.23's
configuration classes, each of which names the checkpoint it documents; the tests check
every typed number against its source. (This module imports no family: the families
import ``attention.sparse``.) ``shared_kv_card`` counts cross-layer KV sharing (Gemma
4's and Gemma 3n's ``num_kv_shared_layers``): only the layers that compute their own keys
and values cache them (``attention.sparse.kv_sharing``).
"""

# --8<-- [start:imports]
from dataclasses import dataclass

from attention.kv_cache import kv_cache_bytes_for
from attention.linear.costs import QWEN3_NEXT_80B, HybridCard
from attention.model import ModelConfig
from attention.sparse.indexer import Indexer
from attention.sparse.kv_sharing import kv_sources
# --8<-- [end:imports]

# DeepSeek-V3.2-Exp's attention (its config.json; transformers'
# DeepseekV32Config): DeepSeek-V3's MLA, 61 layers of 128 heads, and an
# indexer of 64 heads of 128 choosing 2048 keys. Its experts are left out:
# they cache nothing.
DEEPSEEK_V32 = ModelConfig(
    arch="deepseek_v32", vocab_size=129280, d_model=7168, n_layers=61,
    n_heads=128, d_ff=18432, max_positions=163840, tie_embeddings=False,
    q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64,
    qk_nope_head_dim=128, v_head_dim=128,
    indexer=Indexer(n_heads=64, head_dim=128, top_k=2048))


def cache_bytes_per_token(config, *, bytes_per_value=2):
    """What a token adds to the cache of every layer: MLA's latent and
    rotated key where the config has a latent (chapter 9), else a key
    and a value per key/value head (chapter 4); windows aside."""
    if config.kv_lora_rank is not None:
        per_layer = config.kv_lora_rank + config.qk_rope_head_dim
        return config.n_layers * per_layer * bytes_per_value
    return kv_cache_bytes_for(config, bytes_per_value=bytes_per_value)


def _context(fn, n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{fn}: n_context must be an integer >= 0, "
                         f"got {n!r}")


# --8<-- [start:read_bytes]
def index_key_bytes(config, *, bytes_per_value=2):
    """Bytes of the indexer's keys per token, over every layer."""
    return config.n_layers * config.indexer.head_dim * bytes_per_value


def decode_read_bytes(config, n_context, *, bytes_per_value=2,
                      index_bytes_per_value=None):
    """Bytes of cache one decoded token reads at context n_context.

    Dense: every token's keys and values (or latent). With an indexer
    (DeepSeek Sparse Attention): the latents of min(top_k, n) tokens and
    the indexer's key of all n. index_bytes_per_value: the indexer keys'
    size (None: bytes_per_value; DeepSeek-V3.2 keeps them in FP8, 1).
    """
    _context("decode_read_bytes", n_context)
    per_token = cache_bytes_per_token(config, bytes_per_value=bytes_per_value)
    if config.indexer is None:
        return per_token * n_context
    index = index_key_bytes(config, bytes_per_value=index_bytes_per_value
                            or bytes_per_value)
    return per_token * min(config.indexer.top_k, n_context) + index * n_context


def break_even_context(config, **sizes):
    """The shortest context at which the sparse read is smaller than the
    dense one (reading every latent): k P / (P - I) for top_k k, P the
    latent's bytes per token and I the indexer key's, rounded up."""
    P = cache_bytes_per_token(config, bytes_per_value=sizes.get(
        "bytes_per_value", 2))
    I = decode_read_bytes(config, 1, **sizes) - P  # one token's index key
    if I >= P:
        raise ValueError(f"break_even_context: the indexer's key ({I} bytes "
                         f"per token) is not smaller than the latent's ({P}): "
                         f"sparse never reads less")
    return config.indexer.top_k * P // (P - I) + 1
# --8<-- [end:read_bytes]


# --8<-- [start:cached]
@dataclass(frozen=True)
class Cached:
    """Layers that cache alike, and what each keeps at context n."""
    layers: int               # how many layers
    values: int               # numbers per cached entry, per layer
    window: int | None = None  # keeps the last `window` tokens only
    every: int = 1            # one entry per `every` tokens (compression)
    fixed: int = 0            # numbers kept whatever n (a linear state)

    def values_at(self, n):
        """Numbers these layers keep at context n."""
        entries = min(n, self.window) if self.window else n // self.every
        return self.layers * (entries * self.values + self.fixed)


def cache_bytes_at(card, n_context, *, bytes_per_value=2):
    """Bytes one sequence's cache holds at context n_context: card is a
    list of ``Cached`` (one of ``CARDS``'s)."""
    _context("cache_bytes_at", n_context)
    return sum(c.values_at(n_context) for c in card) * bytes_per_value
# --8<-- [end:cached]


# --8<-- [start:cards]
def _hybrid(card):
    """A hybrid of softmax and linear layers (chapter 10's HybridCard)."""
    return [Cached(card.full_layers, card.kv_values(1)),
            Cached(card.linear_layers, 0, fixed=card.state_values())]


# transformers' Qwen3_5TextConfig (Qwen/Qwen3.5-27B): 1 softmax layer in 4.
QWEN3_5 = HybridCard(n_layers=32, full_every=4, n_kv_heads=4, d_head=256,
                     n_qk_heads=16, n_v_heads=32, d_k=128, d_v=128,
                     conv_kernel=4)
# transformers' KimiLinearConfig (moonshotai/Kimi-Linear-48B-A3B-Instruct):
# 6 MLA layers (latent 512 + rotated 64), 21 KDA layers of 32 heads of 128,
# each with a 128 x 128 state and the last 3 inputs of its q, k, v convs.
KIMI_LINEAR = [Cached(6, 512 + 64),
               Cached(21, 0, fixed=32 * 128 * 128 + 3 * 3 * 32 * 128)]
# transformers' DeepseekV4Config (deepseek-ai/DeepSeek-V4-Flash-Base): one
# shared key-value head of 512 (K = V), a window of the last 128 tokens in
# every layer; 20 layers also keep one compressed entry per 4 tokens and an
# indexer key of 128 per entry (CSA), 23 one entry per 128 tokens (HCA).
DEEPSEEK_V4_FLASH = [Cached(43, 512, window=128),
                     Cached(20, 512 + 128, every=4),
                     Cached(23, 512, every=128)]

CARDS = {  # name: (design, layers)
    # The package's configurations (the tests check each row against
    # them): Llama 3 8B (chapter 4), 32 layers of 8 key/value heads of 128;
    # gpt-oss-120b (chapter 9), 36 layers of 8 key/value heads of 64, every
    # other one a window of 128; DeepSeek-V3 (chapter 9), 61 latents.
    "Llama 3 8B": ("GQA, every layer full", [Cached(32, 2 * 8 * 128)]),
    "gpt-oss-120b": ("GQA, window 128 in half the layers", [
        Cached(18, 2 * 8 * 64, window=128), Cached(18, 2 * 8 * 64)]),
    "DeepSeek-V3": ("MLA", [Cached(61, 512 + 64)]),
    "DeepSeek-V3.2": ("MLA + DSA's indexer keys", [
        Cached(DEEPSEEK_V32.n_layers, DEEPSEEK_V32.kv_lora_rank
               + DEEPSEEK_V32.qk_rope_head_dim + DEEPSEEK_V32.indexer.head_dim)]),
    # transformers' GlmMoeDsaConfig (zai-org/GLM-5): 78 layers of MLA
    # (latent 512 + rotated 64) and an indexer key of 128
    "GLM-5 (HF default)": ("MLA + DSA's indexer keys",
                           [Cached(78, 512 + 64 + 128)]),
    "DeepSeek-V4 (HF default)": ("compressed (CSA, HCA) + window",
                                 DEEPSEEK_V4_FLASH),
    "Qwen3-Next-80B-A3B": ("gated DeltaNet 3 : 1 gated attention",
                           _hybrid(QWEN3_NEXT_80B)),
    "Qwen3.5 (HF default)": ("gated DeltaNet 3 : 1 gated attention",
                             _hybrid(QWEN3_5)),
    "Kimi Linear (HF default)": ("KDA 21 : 6 MLA", KIMI_LINEAR),
}
# --8<-- [end:cards]


# --8<-- [start:shared]
def shared_kv_card(layer_types, n_shared, values, window):
    """``Cached`` rows of a model whose last n_shared layers read an
    earlier layer's keys and values (``kv_sources``): only the layers
    that compute their own cache them. layer_types: "sliding" or "full"
    per layer; values: {kind: numbers per token per layer}; window: the
    sliding layers' window."""
    sources = kv_sources(layer_types, n_shared)
    unknown = set(layer_types) - {"sliding", "full"} | (
        set(layer_types) - set(values))
    if unknown:
        raise ValueError(f"shared_kv_card: each layer type must be "
                         f"'sliding' or 'full' and have values, got "
                         f"{sorted(unknown)} (values for {sorted(values)})")
    cached = [kind for i, kind in enumerate(layer_types) if sources[i] == i]
    return [Cached(cached.count(kind), values[kind],
                   window=window if kind == "sliding" else None)
            for kind in ("sliding", "full") if kind in cached]


# transformers' Gemma3nTextConfig (google/gemma-3n-E4B): 35 layers, every
# fifth full, the others a window of 512; 2 key/value heads of 256; the
# last 15 layers share. Gemma4TextConfig (google/gemma-4-e2b-it): 30
# layers, every sixth full; 4 key/value heads of 256 in sliding layers and
# of 512 (global_head_dim) in full ones, a window of 512; no layer shares
# by default (num_kv_shared_layers = 0).
GEMMA_3N_E4B = (["full" if (i + 1) % 5 == 0 else "sliding"
                 for i in range(35)], 15,
                {"sliding": 2 * 2 * 256, "full": 2 * 2 * 256}, 512)
GEMMA_4 = (["full" if (i + 1) % 6 == 0 else "sliding" for i in range(30)],
           0, {"sliding": 2 * 4 * 256, "full": 2 * 4 * 512}, 512)
# --8<-- [end:shared]
