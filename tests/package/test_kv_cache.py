"""The KV cache at the attention level: sizes, window masks, rolling cache, chunked prefill.

Reference: full attention (attention.attention) over the whole sequence with the causal,
banded (sliding window) or sink-plus-window mask; float64, <= 1e-12. The model-level
tests (cached logits == recomputed logits, greedy ids == Hugging Face) are in
test_generation.py.
"""

import numpy as np
import pytest

from attention import attention
from attention.kv_cache import (
    KVCache,
    cached_attention,
    kv_cache_bytes,
    kv_cache_bytes_for,
    sliding_window_mask,
    window_mask,
)
from attention.long_context.cache_size import (PUBLISHED, CacheShape,
                                               windowed_cache_bytes)

TOL = 1e-12
KiB, GiB = 2**10, 2**30


def test_llama3_8b_bf16_is_128_kib_per_token_and_1_gib_at_8192():
    assert kv_cache_bytes(32, 8, 128, bytes_per_value=2) == 128 * KiB
    assert kv_cache_bytes(32, 8, 128, 8192, bytes_per_value=2) == 1 * GiB


def test_gqa_saves_the_ratio_of_heads():
    mha = kv_cache_bytes(80, 64, 128, 131072)  # Llama 3 70B as if multi-head
    gqa = kv_cache_bytes(80, 8, 128, 131072)
    assert mha == 8 * gqa and gqa == 40 * GiB


def test_size_from_a_config_object():
    class Config:  # the fields a ModelConfig has
        n_layers, n_heads, n_kv_heads, d_model = 32, 32, 8, 4096
    assert kv_cache_bytes_for(Config(), 8192) == 1 * GiB
    assert kv_cache_bytes_for(Config(), 10, batch=3, bytes_per_value=4) == 3 * 10 * 256 * KiB


def test_bad_size_argument_is_named():
    with pytest.raises(ValueError, match="n_kv_heads must be a non-negative integer"):
        kv_cache_bytes(32, 8.0, 128)


@pytest.mark.parametrize("call, match", [
    (lambda: windowed_cache_bytes(8, 64, "full", 10),
     "layer_windows must be a list .* got 'full'"),
    (lambda: windowed_cache_bytes(8, 64, [], 10), "layer_windows must be a list"),
    (lambda: windowed_cache_bytes(8, 64, [None, "4"], 10),
     r"layer_windows\[1\] must be a positive integer or None, got '4'"),
    (lambda: windowed_cache_bytes(8, 64, [4, 0], 10), r"layer_windows\[1\]"),
    (lambda: windowed_cache_bytes(8, 64, [4], "10"),
     "n_tokens must be a non-negative integer, got '10'"),
    (lambda: CacheShape(32, 8, 128, 4096, "slidng"),
     "pattern must be one of .* got 'slidng'"),
    (lambda: CacheShape(32, 8, 128, None, "sliding"),
     "'sliding' pattern needs a window"),
    (lambda: CacheShape(32, 8, 128, 4096, "full"), "'full' pattern has no window"),
    (lambda: CacheShape(0, 8, 128, None, "full"), "n_layers must be a positive"),
])
def test_cache_sizes_with_windows_name_a_pattern_or_window_they_cannot_count(
        call, match):
    with pytest.raises(ValueError, match=match):
        call()
    # the released shapes still build, and a window caps what a layer keeps
    assert windowed_cache_bytes(8, 64, (None, 4), 10) == kv_cache_bytes(
        1, 8, 64, 14)
    assert PUBLISHED["Gemma 2 9B"].layer_windows[:2] == [4096, None]


def test_window_mask_is_banded_and_sinks_add_columns():
    m = sliding_window_mask(6, 3)
    assert m.sum(axis=1).tolist() == [1, 2, 3, 3, 3, 3]
    assert not m[5, 2] and m[5, 3]
    s = sliding_window_mask(6, 2, n_sinks=1)
    assert s[:, 0].all() and s.sum(axis=1).tolist() == [1, 2, 3, 3, 3, 3]
    np.testing.assert_array_equal(window_mask(np.arange(4), np.arange(4)), np.tril(np.ones((4, 4), bool)))


def run_in_chunks(q, k, v, chunks, cache):
    """Feed q, k, v (batch, h, n, d) to one layer of the cache in chunks; concat outputs."""
    outs, start = [], 0
    for size in chunks:
        sl = slice(start, start + size)
        outs.append(cached_attention(q[..., sl, :], k[..., sl, :], v[..., sl, :], cache, 0))
        cache.advance(size)
        start += size
    return np.concatenate(outs, axis=-2)


def qkv(seed, n, n_heads=4, n_kv_heads=2, d=8, batch=2):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(batch, n_heads, n, d))
    k = rng.normal(size=(batch, n_kv_heads, n, d))
    v = rng.normal(size=(batch, n_kv_heads, n, d))
    return q, k, v


def full(q, k, v, mask):
    group = q.shape[1] // k.shape[1]
    return attention(q, np.repeat(k, group, 1), np.repeat(v, group, 1), mask=mask)


CHUNKINGS = [[1] * 12, [5] + [1] * 7, [4, 4, 4], [3, 5, 1, 3], [12], [7, 5]]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_cache_without_window_equals_causal_attention(chunks):
    q, k, v = qkv(0, 12)
    out = run_in_chunks(q, k, v, chunks, KVCache(1))
    np.testing.assert_allclose(out, full(q, k, v, sliding_window_mask(12, None)), rtol=0, atol=TOL)


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("window, n_sinks", [(1, 0), (3, 0), (4, 0), (3, 2), (2, 1), (20, 0)])
def test_rolling_cache_equals_full_attention_with_the_banded_mask(chunks, window, n_sinks):
    q, k, v = qkv(1, 12)
    cache = KVCache(1, window=window, n_sinks=n_sinks)
    out = run_in_chunks(q, k, v, chunks, cache)
    reference = full(q, k, v, sliding_window_mask(12, window, n_sinks=n_sinks))
    np.testing.assert_allclose(out, reference, rtol=0, atol=TOL)
    # It keeps no more than it must: the sinks and the last window - 1 slots.
    assert cache.keys[0].shape[-2] <= min(12, n_sinks + window - 1)


def test_a_chunk_of_c_queries_sees_window_plus_c_minus_1_keys():
    q, k, v = qkv(2, 14)
    cache = KVCache(1, window=4)
    run_in_chunks(q, k, v, [6], cache)  # keeps slots 3, 4, 5 (window - 1 = 3)
    assert cache.positions.tolist() == [3, 4, 5]
    keys, *_ = cache.update(0, k[..., 6:11, :], v[..., 6:11, :])  # a chunk of c = 5
    assert keys.shape[-2] == 4 + 5 - 1


class OnlyWindowKeys(KVCache):
    """The tempting bug: hand attention only the last `window` keys of a chunk."""

    def update(self, layer, k, v, valid=None):
        keys, values, positions, key_valid = super().update(layer, k, v, valid)
        w = self.window
        return keys[..., -w:, :], values[..., -w:, :], positions[-w:], key_valid[:, -w:]


def test_keeping_only_window_keys_is_right_one_token_at_a_time_but_wrong_for_chunks():
    q, k, v = qkv(3, 12)
    reference = full(q, k, v, sliding_window_mask(12, 3))
    one_by_one = run_in_chunks(q, k, v, [1] * 12, OnlyWindowKeys(1, window=3))
    np.testing.assert_allclose(one_by_one, reference, rtol=0, atol=TOL)
    chunked = run_in_chunks(q, k, v, [4, 4, 4], OnlyWindowKeys(1, window=3))
    assert np.abs(chunked - reference).max() > 0.1


def test_left_padding_keys_are_masked_like_a_padding_mask():
    q, k, v = qkv(4, 6, batch=2)
    valid = np.array([[False, False, True, True, True, True], [True] * 6])
    cache = KVCache(1)
    out = cached_attention(q[..., :4, :], k[..., :4, :], v[..., :4, :], cache, 0,
                           valid=valid[:, :4])
    cache.advance(4)
    out2 = cached_attention(q[..., 4:, :], k[..., 4:, :], v[..., 4:, :], cache, 0,
                            valid=valid[:, 4:])
    mask = np.tril(np.ones((6, 6), bool))[None, None] & valid[:, None, None, :]
    reference = full(q, k, v, mask)
    np.testing.assert_allclose(np.concatenate([out, out2], -2)[0, :, 2:], reference[0, :, 2:],
                               rtol=0, atol=TOL)
    np.testing.assert_allclose(np.concatenate([out, out2], -2)[1], reference[1], rtol=0, atol=TOL)


# --- Issue 24: the cache's own checks ---

def test_kv_cache_checks_layers_counts_and_arguments():
    k = np.zeros((1, 2, 3, 4))
    cache = KVCache(2)
    for layer in (-1, 2, 1.0):
        with pytest.raises(ValueError, match=r"layer must be an integer in 0\.\.1"):
            cache.update(layer, k, k)
    with pytest.raises(ValueError, match=r"no update\(\)"):
        cache.advance(3)
    cache.update(0, k, k)
    cache.update(1, k, k)
    with pytest.raises(ValueError, match=r"given 3 new tokens, got n_new=2"):
        cache.advance(2)
    cache.advance(3)
    with pytest.raises(ValueError, match=r"holds keys \(1, 2, 3, 4\).*new k \(2, 2, 1, 4\)"):
        cache.update(0, np.zeros((2, 2, 1, 4)), np.zeros((2, 2, 1, 4)))
    with pytest.raises(ValueError, match=r"do not fit"):
        cache.update(0, np.zeros((1, 2, 1, 5)), np.zeros((1, 2, 1, 5)))
    for kwargs, match in [({"n_layers": 0}, "n_layers"), ({"n_layers": 1, "n_sinks": -1}, "n_sinks"),
                          ({"n_layers": 1, "n_sinks": 1.5}, "n_sinks")]:
        with pytest.raises(ValueError, match=match):
            KVCache(**kwargs)
