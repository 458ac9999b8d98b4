"""What a hybrid model keeps per sequence: fixed states against a growing KV cache.

A softmax layer caches a key and a value per key/value head for every token: 2 n_kv_heads
d_head numbers per token, growing with the context. A Gated DeltaNet layer keeps, whatever
the context, one d_k x d_v state per value head and the last K - 1 inputs of its short
convolution. ``QWEN3_NEXT_80B`` holds the sizes of Qwen3-Next-80B-A3B from its released
config.json (Qwen/Qwen3-Next-80B-A3B-Instruct on the Hugging Face Hub, also the defaults
of transformers' ``Qwen3NextConfig``): 48 layers, every fourth a softmax ("gated
attention") layer, the other three Gated DeltaNet.
"""

# --8<-- [start:imports]
from dataclasses import dataclass
# --8<-- [end:imports]


# --8<-- [start:hybrid_card]
@dataclass(frozen=True)
class HybridCard:
    """A hybrid model's layers, as its config.json states them."""
    n_layers: int               # num_hidden_layers
    full_every: int             # full_attention_interval: 1 softmax in so many
    n_kv_heads: int             # softmax layers: num_key_value_heads
    d_head: int                 # softmax layers: head_dim
    n_qk_heads: int             # linear layers: linear_num_key_heads
    n_v_heads: int              # linear layers: linear_num_value_heads
    d_k: int                    # linear_key_head_dim
    d_v: int                    # linear_value_head_dim
    conv_kernel: int            # linear_conv_kernel_dim

    @property
    def full_layers(self) -> int:
        return self.n_layers // self.full_every

    @property
    def linear_layers(self) -> int:
        return self.n_layers - self.full_layers

    def state_values(self) -> int:
        """Numbers one linear layer keeps, whatever the context: the states
        S (n_v_heads x d_k x d_v) and K - 1 inputs of q, k and v."""
        conv = (self.conv_kernel - 1) * (2 * self.n_qk_heads * self.d_k
                                         + self.n_v_heads * self.d_v)
        return self.n_v_heads * self.d_k * self.d_v + conv

    def kv_values(self, n_tokens) -> int:
        """Numbers one softmax layer caches for n_tokens tokens."""
        return 2 * self.n_kv_heads * self.d_head * n_tokens


# Qwen/Qwen3-Next-80B-A3B-Instruct, config.json
QWEN3_NEXT_80B = HybridCard(n_layers=48, full_every=4, n_kv_heads=2,
                            d_head=256, n_qk_heads=16, n_v_heads=32,
                            d_k=128, d_v=128, conv_kernel=4)
# --8<-- [end:hybrid_card]


# --8<-- [start:sequence_bytes]
def sequence_bytes(card, n_tokens, *, bytes_per_value=2):
    """Bytes one sequence of n_tokens keeps, by kind of layer: the linear
    layers' states, the softmax layers' KV cache, and what the KV cache
    would be if every layer were softmax."""
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) \
            or n_tokens < 0:
        raise ValueError(f"sequence_bytes: n_tokens must be an integer >= 0, "
                         f"got {n_tokens!r}")
    b, kv = bytes_per_value, card.kv_values(n_tokens)
    return {"linear states": card.linear_layers * card.state_values() * b,
            "softmax KV cache": card.full_layers * kv * b,
            "all-softmax KV cache": card.n_layers * kv * b}
# --8<-- [end:sequence_bytes]
