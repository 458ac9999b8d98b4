"""What each attention design costs: cache bytes per token, and MLA's FLOPs per step.

The cache per token and layer is 2 * n_kv_heads * d_head numbers for MHA, GQA and MQA
(a key and a value per key/value head) and kv_lora_rank + qk_rope_head_dim for MLA (the
latent and the shared rotated key), whatever the number of heads. ``PUBLISHED`` holds the
shapes of seven released models, typed from their configuration files (cited on the
chapter-9 page and below); every number computed from them is computed here.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

from attention.family import FAMILIES
# --8<-- [end:imports]


# --8<-- [start:model_card]
@dataclass(frozen=True)
class ModelCard:
    """The attention of one released model, as its config.json states it."""
    n_layers: int               # decoder layers (num_hidden_layers)
    n_heads: int                # query heads
    n_kv_heads: int             # key/value heads (MLA: n_heads, expanded)
    d_head: int                 # query/key head size (MLA: nope + rope)
    positions: str              # how positions enter
    window: int | None = None   # sliding layers' window
    pattern: str = "full"       # "full", "sliding" or "alternating"
    caps: tuple | None = None   # (attention, final) soft-caps
    kv_lora_rank: int | None = None      # MLA: the cached latent's width
    qk_rope_head_dim: int | None = None  # MLA: the shared rotated key

    @property
    def attention(self) -> str:
        if self.kv_lora_rank is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def cache_values_per_token(self) -> int:
        """Numbers cached per token over all layers, windows aside."""
        if self.kv_lora_rank is not None:
            per_layer = self.kv_lora_rank + self.qk_rope_head_dim
        else:
            per_layer = 2 * self.n_kv_heads * self.d_head
        return self.n_layers * per_layer
# --8<-- [end:model_card]


# --8<-- [start:published]
# From each model's released config.json on the Hugging Face Hub:
# openai-community/gpt2, meta-llama/Llama-3.1-8B, mistralai/Mistral-7B-v0.1,
# Qwen/Qwen3-8B, google/gemma-2-9b, deepseek-ai/DeepSeek-V3,
# openai/gpt-oss-20b.
PUBLISHED = {
    "GPT-2": ModelCard(12, 12, 12, 64, "learned"),
    "Llama 3.1 8B": ModelCard(32, 32, 8, 128, "RoPE llama3"),
    "Mistral 7B": ModelCard(32, 32, 8, 128, "RoPE", 4096, "sliding"),
    "Qwen3-8B": ModelCard(36, 32, 8, 128, "RoPE, QK-norm"),
    "Gemma 2 9B": ModelCard(42, 16, 8, 256, "RoPE", 4096, "alternating",
                            (50.0, 30.0)),
    "DeepSeek-V3": ModelCard(61, 128, 128, 192, "RoPE YaRN", None, "full",
                             None, 512, 64),
    "gpt-oss-20b": ModelCard(24, 64, 8, 64, "RoPE YaRN", 128, "alternating"),
}
# --8<-- [end:published]


# --8<-- [start:mla_flops]
def mla_attention_flops(n_q, n_k, *, n_heads, kv_lora_rank, qk_nope_head_dim,
                        qk_rope_head_dim, v_head_dim, absorbed):
    """FLOPs (2 per multiply-add) of MLA's attention core for n_q new queries
    over n_k keys read from a latent cache, before W_o.

    Unabsorbed: expand the n_k latents into every head's keys and values,
    then attend at head size d_nope + d_rope. Absorbed: fold W_uk into the
    n_q queries and W_uv after, and attend at size r + d_rope over the
    latent itself. The projections of x into q, c_kv and k_rope are the
    same in both and not counted.
    """
    sizes = dict(n_q=n_q, n_k=n_k, n_heads=n_heads, kv_lora_rank=kv_lora_rank,
                 qk_nope_head_dim=qk_nope_head_dim,
                 qk_rope_head_dim=qk_rope_head_dim, v_head_dim=v_head_dim)
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"mla_attention_flops: {name} must be an integer "
                             f">= 0, got {value!r}")
    H, r = n_heads, kv_lora_rank
    d_nope, d_rope, d_v = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
    if absorbed:
        fold = 2 * n_q * H * r * (d_nope + d_v)      # q W_ukᵀ, out W_uv
        return fold + 2 * n_q * n_k * H * (r + d_rope + r)
    expand = 2 * n_k * H * r * (d_nope + d_v)        # c_kv W_uk, c_kv W_uv
    return expand + 2 * n_q * n_k * H * (d_nope + d_rope + d_v)
# --8<-- [end:mla_flops]


# --8<-- [start:latent_cache_bytes]
def latent_cache_bytes(config, n_tokens=1, *, batch=1, bytes_per_value=2):
    """Bytes of MLA's latent cache for a ModelConfig whose family's token
    mixer is latent (deepseek_v3): per token and layer, kv_lora_rank +
    qk_rope_head_dim values."""
    family = FAMILIES.get(getattr(config, "arch", None))
    if family is None or family.parts["mixer"] != "latent":
        raise ValueError(f"latent_cache_bytes: config must be a deepseek_v3 "
                         f"ModelConfig, got arch {getattr(config, 'arch', None)!r}")
    per_token = config.n_layers * (config.kv_lora_rank
                                   + config.qk_rope_head_dim)
    return per_token * n_tokens * batch * bytes_per_value
# --8<-- [end:latent_cache_bytes]
