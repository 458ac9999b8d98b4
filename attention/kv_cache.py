"""The KV cache: each layer's keys and values, kept for the tokens to come.

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

from attention.blocks import attend, scores_to_output
# --8<-- [end:imports]


# --8<-- [start:kv_cache_bytes]
def kv_cache_bytes(n_layers, n_kv_heads, d_head, n_tokens=1, *, batch=1,
                   bytes_per_value=2):
    """Bytes of keys and values a decoder keeps: 2 (K and V) x layers x
    kv heads x d_head x bytes per value, per token of every sequence."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads),
                        ("d_head", d_head), ("n_tokens", n_tokens),
                        ("batch", batch), ("bytes_per_value", bytes_per_value)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < 0):
            raise ValueError(f"kv_cache_bytes: {name} must be a non-negative "
                             f"integer, got {value!r}")
    per_token = 2 * n_layers * n_kv_heads * d_head * bytes_per_value
    return int(per_token) * int(n_tokens) * int(batch)


def kv_cache_bytes_for(config, n_tokens=1, *, batch=1, bytes_per_value=2):
    """``kv_cache_bytes`` for a model configuration (``n_layers``,
    ``n_kv_heads``, and ``d_head`` or ``d_model // n_heads``)."""
    d_head = getattr(config, "d_head", None) or config.d_model // config.n_heads
    return kv_cache_bytes(config.n_layers, config.n_kv_heads, d_head, n_tokens,
                          batch=batch, bytes_per_value=bytes_per_value)
# --8<-- [end:kv_cache_bytes]


# --8<-- [start:window_mask]
def window_mask(query_positions, key_positions, *, window=None, n_sinks=0):
    """Which keys each query may see: (n_q, n_k) booleans, True = may attend.

    Causal (key position <= query position) and, with a ``window``, only
    the last ``window`` positions (query - key < window) or one of the
    first ``n_sinks``. With window=None it is the causal mask, aligned by
    position (bottom-right when the queries are the last positions).
    """
    if window is not None and (isinstance(window, bool) or not isinstance(
            window, (int, np.integer)) or window < 1):
        raise ValueError(f"window must be a positive integer or None, "
                         f"got {window!r}")
    if (isinstance(n_sinks, bool) or not isinstance(n_sinks, (int, np.integer))
            or n_sinks < 0):
        raise ValueError(f"n_sinks must be a non-negative integer, "
                         f"got {n_sinks!r}")
    qp = np.asarray(query_positions)[:, None]  # (n_q, 1)
    kp = np.asarray(key_positions)[None, :]    # (1, n_k)
    allowed = kp <= qp
    if window is not None:
        allowed &= (qp - kp < window) | (kp < n_sinks)
    return allowed  # (n_q, n_k)


def sliding_window_mask(n, window, *, n_sinks=0):
    """The banded (n, n) mask of full attention under a window (+ sinks)."""
    positions = np.arange(n)
    return window_mask(positions, positions, window=window, n_sinks=n_sinks)
# --8<-- [end:window_mask]


# --8<-- [start:checks]
def _check_cache_args(n_layers, window, n_sinks):
    """KVCache's arguments, or a ValueError naming the one at fault."""
    if (isinstance(n_layers, bool)
            or not isinstance(n_layers, (int, np.integer)) or n_layers < 1):
        raise ValueError(f"KVCache: n_layers must be a positive integer, "
                         f"got {n_layers!r}")
    window_mask([0], [0], window=window, n_sinks=n_sinks)  # checks both


def check_update(cache, layer, k, v, valid):
    """update's arguments against the cache; returns valid (batch, n_new)."""
    n_layers = len(cache.keys)
    if (isinstance(layer, bool) or not isinstance(layer, (int, np.integer))
            or not 0 <= layer < n_layers):
        raise ValueError(f"KVCache.update: layer must be an integer in "
                         f"0..{n_layers - 1}, got {layer!r}")
    k, v = np.asarray(k), np.asarray(v)
    if k.ndim != 4 or v.shape[:-1] != k.shape[:-1]:
        raise ValueError(f"KVCache.update: k and v must be (batch, "
                         f"n_kv_heads, n_new, d_head), got k {k.shape} and "
                         f"v {v.shape}")
    kept = cache.keys[layer]
    if kept is not None and (kept.shape[:2] != k.shape[:2]
                             or kept.shape[-1] != k.shape[-1]
                             or cache.values[layer].shape[-1] != v.shape[-1]):
        raise ValueError(f"KVCache.update: layer {layer} holds keys "
                         f"{kept.shape} and values "
                         f"{cache.values[layer].shape}; new k {k.shape} and "
                         f"v {v.shape} do not fit (batch, heads, d_head)")
    if cache.valid is not None and cache.valid.shape[0] != k.shape[0]:
        raise ValueError(f"KVCache.update: the cache holds a batch of "
                         f"{cache.valid.shape[0]}, got k {k.shape}")
    n_new = k.shape[-2]
    if valid is None:
        return np.ones((k.shape[0], n_new), bool)
    valid = np.asarray(valid)
    if valid.shape != (k.shape[0], n_new) or valid.dtype != np.bool_:
        raise ValueError(f"KVCache.update: valid must be booleans of shape "
                         f"{(k.shape[0], n_new)}, got dtype {valid.dtype} "
                         f"and shape {valid.shape}")
    return valid


def _check_advance(cache, n_new):
    """advance(n_new) must follow update() with the same n_new."""
    pending = getattr(cache, "_pending", None)
    if pending is None:
        raise ValueError("KVCache.advance: no update() since the last "
                         "advance(); call update() for every layer first")
    if isinstance(n_new, bool) or n_new != pending[-1]:
        raise ValueError(f"KVCache.advance: update() was given "
                         f"{pending[-1]} new tokens, got n_new={n_new!r}")
# --8<-- [end:checks]


# --8<-- [start:kv_cache]
class KVCache:
    """Keys and values of every layer, (batch, n_kv_heads, n, d_head) each.

    ``update(layer, k, v)`` appends one layer's new keys and values and
    returns what attention needs: the keys and values to attend to and
    their slots. ``advance(n_new)`` is called once per forward pass, after
    the last layer. With a ``window``, the cache then forgets every key no
    future query can see (keeping the first ``n_sinks`` slots).

    np.concatenate copies the cache at every step, which keeps the code
    plain; serving code preallocates the buffers and writes into them
    (Hugging Face's StaticCache, vLLM's paged blocks).
    """

    def __init__(self, n_layers, *, window=None, n_sinks=0):
        _check_cache_args(n_layers, window, n_sinks)
        self.window, self.n_sinks = window, n_sinks
        # Per layer: (batch, n_kv_heads, kept, d_head), None before the first.
        self.keys = [None] * n_layers
        self.values = [None] * n_layers
        # Chapter 12: a recurrent layer's state (fixed in size), None before.
        self.states = [None] * n_layers
        self.positions = np.zeros(0, dtype=np.int64)  # (kept,) slots kept
        self.valid = None   # (batch, kept): True on real tokens, False on <pad>
        self.length = 0     # slots seen so far: the next token's slot
        self.n_real = 0     # (batch,) real tokens seen so far per sequence
        self._pending = None  # what advance() commits: set by update()

    def new_positions(self, n_new):
        """The slots of the next n_new tokens: length .. length + n_new - 1."""
        return np.arange(self.length, self.length + n_new)

    def update(self, layer, k, v, valid=None):
        """Append k, v (batch, n_kv_heads, n_new, d_head) to ``layer``.

        Returns (keys, values, key_positions, key_valid): the kept slots
        and the new ones. valid (batch, n_new): False on <pad> tokens.
        """
        valid = check_update(self, layer, k, v, valid)  # (batch, n_new)
        n_new = k.shape[-2]
        if self.keys[layer] is None:  # first call: nothing kept yet
            self.keys[layer], self.values[layer] = k[..., :0, :], v[..., :0, :]
            if self.valid is None:
                self.valid = np.zeros((k.shape[0], 0), bool)
        keys = np.concatenate([self.keys[layer], k], axis=-2)
        values = np.concatenate([self.values[layer], v], axis=-2)
        # keys, values: (batch, n_kv_heads, kept + n_new, d_head)
        positions = np.concatenate([self.positions, self.new_positions(n_new)])
        key_valid = np.concatenate([self.valid, valid], axis=-1)  # (batch, ...)
        keep = self._keep(positions, self.length + n_new)
        self.keys[layer] = keys[..., keep, :]
        self.values[layer] = values[..., keep, :]
        self._pending = (positions[keep], key_valid[:, keep], valid.sum(-1),
                         n_new)
        return keys, values, positions, key_valid

    def advance(self, n_new):
        """After the last layer: the n_new tokens are now in the cache."""
        _check_advance(self, n_new)
        self.positions, self.valid, n_real_new, _ = self._pending
        self.n_real = self.n_real + n_real_new
        self.length += n_new
        self._pending = None

    def crop(self, n):
        """Forget every slot from n on: the cache holds the first n tokens.

        Speculative decoding (chapter 11) caches drafted tokens that the
        target then rejects. A windowed cache has already forgotten old
        slots it could not give back, so only a full cache can be cropped.
        """
        if self.window is not None:
            raise ValueError(f"KVCache.crop: a cache with window="
                             f"{self.window} cannot be cropped")
        if any(state is not None for state in self.states):
            raise ValueError("KVCache.crop: a recurrent layer's state holds "
                             "every token at once and cannot be cropped")
        if (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                or not 0 <= n <= self.length):
            raise ValueError(f"KVCache.crop: n must be an integer in "
                             f"0..{self.length}, got {n!r}")
        for layer, keys in enumerate(self.keys):
            if keys is not None:
                self.keys[layer] = keys[..., :n, :]
                self.values[layer] = self.values[layer][..., :n, :]
        self.positions = self.positions[:n]
        if self.valid is not None:
            self.valid = self.valid[:, :n]  # (batch, n)
            self.n_real = self.valid.sum(axis=-1)
        self.length = int(n)

    def _keep(self, positions, next_slot):
        """Which slots a query at next_slot or later can still see."""
        if self.window is None:
            return np.ones(positions.shape, bool)
        # A query at slot s >= next_slot sees s - window + 1 .. s, so the
        # oldest any of them needs is next_slot - window + 1: the last
        # window - 1 slots, and the sinks.
        recent = positions > next_slot - self.window
        return recent | (positions < self.n_sinks)

    def __len__(self):
        return self.length
# --8<-- [end:kv_cache]


# --8<-- [start:cached_attention]
def cached_attention(q, k, v, cache, layer, *, valid=None, window=None,
                     return_weights=False, scale=None, expand=None, **rule):
    """The new queries q (batch, n_heads, n_new, d_head) attend to the cached
    and the new keys/values k, v (batch, n_kv_heads, n_new, d_head) of
    ``layer``: causal (and window) mask by slot, aligned bottom-right,
    <pad> keys masked. valid (batch, n_new): False on <pad>. window: this
    layer's own window, on top of the cache's; scale, expand: as for
    ``attend`` (chapter 9: MLA caches a latent and expands it here); rule:
    a score rule by name, as for ``attend``: sinks=(n_heads,) learned sink
    logits (chapter 8), softcap (9), select (12's chosen keys)."""
    n_new = q.shape[-2]
    keys, values, key_positions, key_valid = cache.update(layer, k, v, valid)
    if expand is not None:  # MLA (chapter 9): the cache holds a latent
        keys, values = expand(keys, values)
    group = q.shape[-3] // keys.shape[-3]  # query heads per key/value head
    keys = np.repeat(keys, group, axis=-3)      # (batch, n_heads, n_k, d_head)
    values = np.repeat(values, group, axis=-3)  # (batch, n_heads, n_k, d_head)
    query_positions = cache.new_positions(n_new)
    allowed = window_mask(query_positions, key_positions,
                          window=cache.window, n_sinks=cache.n_sinks)
    if window is not None:  # a layer's window (alternating layers)
        allowed &= window_mask(query_positions, key_positions, window=window)
    mask = allowed & key_valid[:, None, None, :]  # (batch, 1, n_new, n_k)
    out, weights = scores_to_output(q, keys, values, mask=mask, scale=scale,
                                    **rule)
    return (out, weights) if return_weights else out
# --8<-- [end:cached_attention]


# --8<-- [start:recurrent_slot]
class RecurrentSlot:
    """What a recurrent layer's token mixer gets where attention gets its
    attend function (chapter 12's hybrids): its state before the new tokens
    (None: an empty context), their padding mask ``valid`` (batch, n) or
    None, and ``save`` for its state after them (kept in the cache's
    ``states``, if there is a cache)."""

    def __init__(self, cache, layer, valid):
        if cache is not None and not hasattr(cache, "states"):
            raise TypeError(f"forward: a {type(cache).__name__} keeps no "
                            f"recurrent states; a hybrid model needs a "
                            f"KVCache")
        self.cache, self.layer, self.valid = cache, layer, valid

    @property
    def state(self):
        return None if self.cache is None else self.cache.states[self.layer]

    def save(self, state):
        if self.cache is not None:
            self.cache.states[self.layer] = state
# --8<-- [end:recurrent_slot]


# --8<-- [start:attend_functions]
def attend_functions(n_layers, n, *, cache=None, valid=None, window=None,
                     n_sinks=0, layer_windows=None, mixers=None):
    """What each block's attention calls in a forward pass over n tokens.

    None for every layer: plain causal attention (the blocks' default).
    With a cache, attention goes through it (the cache's window applies);
    without one, a padding mask (valid (batch, n), False on <pad>) and a
    window become one mask. layer_windows: a window (or None) per layer,
    from the model's configuration (chapter 8), on top of ``window``.
    mixers: each layer's mixer kind (``Family.layer_mixer``); a
    "recurrent" layer gets a ``RecurrentSlot`` instead (chapter 12).
    """
    fns = _attend_functions(n_layers, n, cache=cache, valid=valid,
                            window=window, n_sinks=n_sinks,
                            layer_windows=layer_windows)
    return [RecurrentSlot(cache, i, valid) if kind == "recurrent" else fn
            for i, (fn, kind) in enumerate(zip(
                fns, mixers or ["attention"] * n_layers))]


def _attend_functions(n_layers, n, *, cache, valid, window, n_sinks,
                      layer_windows):
    """attend_functions for layers that all attend."""
    layer_windows = layer_windows or [None] * n_layers
    if cache is not None:
        return [lambda q, k, v, sinks, i=i, **score: cached_attention(
                    q, k, v, cache, i, valid=valid, window=layer_windows[i],
                    sinks=sinks, return_weights=True, **score)
                for i in range(n_layers)]
    if valid is None and window is None and not any(layer_windows):
        return [None] * n_layers
    slots = np.arange(n)
    mask = window_mask(slots, slots, window=window, n_sinks=n_sinks)
    if valid is not None:
        mask = mask & np.asarray(valid)[:, None, None, :]  # (batch, 1, n, n)

    def masked(w):  # this layer's attention: the mask, and its own window
        m = mask if w is None else mask & window_mask(slots, slots, window=w)
        return lambda q, k, v, sinks, **score: attend(
            q, k, v, causal=False, mask=m, sinks=sinks, **score)
    return [masked(w) for w in layer_windows]


def positions_for(n, *, cache=None, valid=None):
    """Positions of n new tokens: the slots after the cache or, with <pad>
    tokens (valid (batch, n)), the number of real tokens before each one,
    as Hugging Face derives position_ids from the attention mask."""
    start = 0 if cache is None else cache.n_real  # () or (batch,)
    if valid is None:
        if np.ndim(start) == 0:
            return np.arange(start, start + n)
        return np.asarray(start)[:, None] + np.arange(n)  # (batch, n)
    valid = np.asarray(valid)
    counted = np.cumsum(valid, axis=-1) - 1 + np.reshape(start, (-1, 1))
    return np.where(valid, counted, 0)  # (batch, n); a <pad> gets 0
# --8<-- [end:attend_functions]
