"""What a long context costs: the KV cache when some layers slide a window.

A full-attention layer keeps the keys and values of every token; a sliding layer with a
window of W keeps the last W (a rolling cache, chapter 4). Models that alternate the two
(Gemma 2, gpt-oss) pay for full attention in half their layers only. Learned sinks
(gpt-oss) are parameters, not cached tokens: they cost nothing per token.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.kv_cache import kv_cache_bytes
# --8<-- [end:imports]


# --8<-- [start:checks]
def _is_count(value, low):
    whole = isinstance(value, (int, np.integer)) and not isinstance(value,
                                                                    bool)
    return whole and value >= low


def _check_windows(layer_windows, n_tokens):
    """A ValueError naming what ``windowed_cache_bytes`` cannot count: a
    layer_windows that is not a list of windows (None or a positive integer),
    one per layer, or an n_tokens that is not a non-negative integer."""
    if (isinstance(layer_windows, (str, bytes, dict, set))
            or not hasattr(layer_windows, "__len__")
            or not len(layer_windows)):
        raise ValueError(f"windowed_cache_bytes: layer_windows must be a list "
                         f"with a window (a positive integer, or None for "
                         f"full attention) per layer, got {layer_windows!r}")
    for i, w in enumerate(layer_windows):
        if w is not None and not _is_count(w, 1):
            raise ValueError(f"windowed_cache_bytes: layer_windows[{i}] must "
                             f"be a positive integer or None, got {w!r}")
    if not _is_count(n_tokens, 0):
        raise ValueError(f"windowed_cache_bytes: n_tokens must be a "
                         f"non-negative integer, got {n_tokens!r}")
# --8<-- [end:checks]


# --8<-- [start:cache_bytes]
def windowed_cache_bytes(n_kv_heads, d_head, layer_windows, n_tokens=1, *,
                         batch=1, bytes_per_value=2):
    """``kv_cache_bytes`` when each layer has its own window (None: full).

    A layer with window W holds min(n_tokens, W) tokens.
    """
    _check_windows(layer_windows, n_tokens)
    total = 0
    for w in layer_windows:
        kept = n_tokens if w is None else min(n_tokens, w)
        total += kv_cache_bytes(1, n_kv_heads, d_head, kept, batch=batch,
                                bytes_per_value=bytes_per_value)
    return total
# --8<-- [end:cache_bytes]


# --8<-- [start:published]
PATTERNS = ("full", "sliding", "alternating")


@dataclass(frozen=True)
class CacheShape:
    n_layers: int        # decoder layers
    n_kv_heads: int      # key/value heads per layer
    d_head: int          # size of one head
    window: int | None   # the sliding layers' window (None: no sliding)
    pattern: str         # one of PATTERNS ("alternating": sliding first)

    def __post_init__(self):
        for name in ("n_layers", "n_kv_heads", "d_head"):
            if not _is_count(getattr(self, name), 1):
                raise ValueError(f"CacheShape: {name} must be a positive "
                                 f"integer, got {getattr(self, name)!r}")
        if self.pattern not in PATTERNS:
            raise ValueError(f"CacheShape: pattern must be one of {PATTERNS}, "
                             f"got {self.pattern!r}")
        if self.pattern == "full" and self.window is not None:
            raise ValueError(f"CacheShape: the 'full' pattern has no window, "
                             f"got window={self.window!r}")
        if self.pattern != "full" and not _is_count(self.window, 1):
            raise ValueError(f"CacheShape: the {self.pattern!r} pattern needs "
                             f"a window, a positive integer, got "
                             f"{self.window!r}")

    @property
    def layer_windows(self):
        if self.pattern == "full":
            return [None] * self.n_layers
        if self.pattern == "sliding":
            return [self.window] * self.n_layers
        return [self.window if i % 2 == 0 else None
                for i in range(self.n_layers)]


# From each model's released config.json (num_hidden_layers,
# num_key_value_heads, head_dim, sliding_window, layer_types).
PUBLISHED = {
    "Llama 3.1 8B": CacheShape(32, 8, 128, None, "full"),
    "Mistral 7B v0.1": CacheShape(32, 8, 128, 4096, "sliding"),
    "Gemma 2 9B": CacheShape(42, 8, 256, 4096, "alternating"),
    "gpt-oss-20b": CacheShape(24, 8, 64, 128, "alternating"),
}
# --8<-- [end:published]
