"""The KV cache: keep each layer's keys and values so a new token is scored against them.

A decoder computes the keys and values of a token once; every later token attends to
them unchanged (causal masking means a token never depends on what comes after it).
So generation keeps them, per layer, in arrays of shape (batch, n_kv_heads, n, d_head),
and each step computes q, k, v for the new tokens only. See Hugging Face's cache
documentation ("Caching", "KV cache strategies") for the same design in Transformers.

Long contexts: a sliding window (Beltagy et al., "Longformer", 2020; Mistral) lets a
query see only the last ``window`` positions, itself included, so the cache can drop
older keys; attention sinks (Xiao et al., "Efficient Streaming Language Models with
Attention Sinks", 2023) also keep the first ``n_sinks`` positions. A chunk of c new
queries needs the last window - 1 old keys: its first query reaches that far back, so
the attention call sees window + c - 1 keys (plus the sinks), not just ``window``.

Positions here are slots of the cache: slot j holds the j-th token given to it (a <pad>
of a left-padded batch included). ``valid`` marks which slots hold real tokens.
"""

# --8<-- [start:imports]
import numpy as np

from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:kv_cache_bytes]
def kv_cache_bytes(n_layers, n_kv_heads, d_head, n_tokens=1, *, batch=1,
                   bytes_per_value=2):
    """Bytes of keys and values a decoder keeps: 2 (K and V) x layers x kv heads x
    d_head x bytes per value, per token of every sequence in the batch."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads),
                        ("d_head", d_head), ("n_tokens", n_tokens), ("batch", batch),
                        ("bytes_per_value", bytes_per_value)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"kv_cache_bytes: {name} must be a non-negative integer, "
                             f"got {value!r}")
    per_token = 2 * n_layers * n_kv_heads * d_head * bytes_per_value
    return int(per_token) * int(n_tokens) * int(batch)


def kv_cache_bytes_for(config, n_tokens=1, *, batch=1, bytes_per_value=2):
    """``kv_cache_bytes`` for a model configuration (``n_layers``, ``n_kv_heads``,
    and ``d_head`` or ``d_model // n_heads``)."""
    d_head = getattr(config, "d_head", None) or config.d_model // config.n_heads
    return kv_cache_bytes(config.n_layers, config.n_kv_heads, d_head, n_tokens,
                          batch=batch, bytes_per_value=bytes_per_value)
# --8<-- [end:kv_cache_bytes]


# --8<-- [start:window_mask]
def window_mask(query_positions, key_positions, *, window=None, n_sinks=0):
    """Which keys each query may see: (n_q, n_k) booleans, True = may attend.

    Causal (key position <= query position) and, with a ``window``, only the last
    ``window`` positions (query - key < window) or one of the first ``n_sinks``.
    With window=None it is the causal mask, aligned by position (bottom-right when the
    queries are the last positions of the keys).
    """
    qp = np.asarray(query_positions)[:, None]  # (n_q, 1)
    kp = np.asarray(key_positions)[None, :]    # (1, n_k)
    allowed = kp <= qp
    if window is not None:
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise ValueError(f"window_mask: window must be a positive integer, got {window!r}")
        allowed &= (qp - kp < window) | (kp < n_sinks)
    return allowed  # (n_q, n_k)


def sliding_window_mask(n, window, *, n_sinks=0):
    """The banded (n, n) mask of full attention under a window, sinks beside it."""
    positions = np.arange(n)
    return window_mask(positions, positions, window=window, n_sinks=n_sinks)
# --8<-- [end:window_mask]


# --8<-- [start:kv_cache]
class KVCache:
    """Keys and values of every layer, (batch, n_kv_heads, n, d_head) each.

    ``update(layer, k, v)`` appends the new tokens' keys and values of one layer and
    returns what attention needs: all keys and values to attend to and their slot
    positions. ``advance(n)`` is called once per forward pass, after the last layer,
    with the number of new tokens. With a ``window``, the cache then forgets every key
    that no future query can see (keeping the first ``n_sinks`` slots).
    """

    def __init__(self, n_layers, *, window=None, n_sinks=0):
        if window is not None and (not isinstance(window, (int, np.integer)) or window < 1):
            raise ValueError(f"KVCache: window must be a positive integer, got {window!r}")
        self.window, self.n_sinks = window, n_sinks
        self.keys = [None] * n_layers    # per layer: (batch, n_kv_heads, kept, d_head)
        self.values = [None] * n_layers  # per layer: (batch, n_kv_heads, kept, d_head)
        self.positions = np.zeros(0, dtype=np.int64)  # (kept,) slot of each kept key
        self.valid = None   # (batch, kept) True on real tokens, False on <pad>
        self.length = 0     # slots seen so far: the next token's slot

    def new_positions(self, n_new):
        """The slots of the next n_new tokens: length .. length + n_new - 1."""
        return np.arange(self.length, self.length + n_new)

    def update(self, layer, k, v, valid=None):
        """Append k, v (batch, n_kv_heads, n_new, d_head) to ``layer``; return
        (keys, values, key_positions, key_valid) covering the kept and the new slots."""
        n_new = k.shape[-2]
        valid = np.ones((k.shape[0], n_new), bool) if valid is None else np.asarray(valid)
        if self.keys[layer] is None:  # first call: nothing kept yet
            self.keys[layer], self.values[layer] = k[..., :0, :], v[..., :0, :]
            if self.valid is None:
                self.valid = np.zeros((k.shape[0], 0), bool)
        keys = np.concatenate([self.keys[layer], k], axis=-2)      # (b, h_kv, kept+n_new, d)
        values = np.concatenate([self.values[layer], v], axis=-2)  # (b, h_kv, kept+n_new, d)
        positions = np.concatenate([self.positions, self.new_positions(n_new)])
        key_valid = np.concatenate([self.valid, valid], axis=-1)   # (b, kept+n_new)
        keep = self._keep(positions, self.length + n_new)
        self.keys[layer], self.values[layer] = keys[..., keep, :], values[..., keep, :]
        self._pending = positions[keep], key_valid[:, keep]
        return keys, values, positions, key_valid

    def advance(self, n_new):
        """After the last layer: the n_new tokens are now part of the cache."""
        self.positions, self.valid = self._pending
        self.length += n_new

    def _keep(self, positions, next_slot):
        """Which slots can still be seen by a query at next_slot or later."""
        if self.window is None:
            return np.ones(positions.shape, bool)
        # A query at slot s >= next_slot sees s - window + 1 .. s: the oldest any of
        # them needs is next_slot - window + 1, i.e. the last window - 1 slots.
        return (positions > next_slot - self.window) | (positions < self.n_sinks)

    def __len__(self):
        return self.length
# --8<-- [end:kv_cache]


# --8<-- [start:cached_attention]
def cached_attention(q, k, v, cache, layer, *, valid=None):
    """Attention of the new queries q (batch, n_heads, n_new, d_head) over the cached
    and new keys/values of ``layer``: bottom-right causal (and window) mask by slot,
    <pad> keys masked. Grouped-query: n_heads may be a multiple of k's n_kv_heads."""
    n_new = q.shape[-2]
    keys, values, key_positions, key_valid = cache.update(layer, k, v, valid)
    group = q.shape[-3] // keys.shape[-3]
    keys = np.repeat(keys, group, axis=-3)      # (batch, n_heads, n_k, d_head)
    values = np.repeat(values, group, axis=-3)  # (batch, n_heads, n_k, d_head)
    allowed = window_mask(cache.new_positions(n_new), key_positions,
                          window=cache.window, n_sinks=cache.n_sinks)  # (n_new, n_k)
    mask = allowed[None, None] & key_valid[:, None, None, :]  # (batch, 1, n_new, n_k)
    return attention(q, keys, values, mask=mask)
# --8<-- [end:cached_attention]
