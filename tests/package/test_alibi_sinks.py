"""ALiBi against Bloom (its slopes, its bias tensor and its attention weights) and the
learned sink against gpt-oss's eager attention, in float64."""

from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
import torch
from transformers.models.bloom.modeling_bloom import (
    _get_alibi_slopes, build_alibi_tensor)
from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward

from attention import attention, softmax
from attention.long_context.alibi import alibi_bias, alibi_slopes
from attention.long_context.sinks import sink_attention

TOL = 1e-12


def bloom_slopes(n_heads):
    """Bloom's slopes with its float32 swapped for float64 (the same formula)."""
    with mock.patch.object(torch, "float32", torch.float64):
        return _get_alibi_slopes(n_heads, "cpu").numpy()


@pytest.mark.parametrize("n_heads", [1, 2, 3, 5, 6, 8, 12, 16, 24, 40, 96])
def test_slopes_equal_blooms_for_any_head_count(n_heads):
    ours = alibi_slopes(n_heads)
    assert ours.shape == (n_heads,)
    assert np.abs(ours - bloom_slopes(n_heads)).max() <= TOL
    # Bloom as shipped rounds the slopes to float32, and only that.
    shipped = _get_alibi_slopes(n_heads, "cpu").double().numpy()
    assert np.abs(ours - shipped).max() <= 6e-8 * ours.max()


def test_power_of_two_slopes_are_the_papers_geometric_sequence():
    np.testing.assert_allclose(alibi_slopes(8), 2.0 ** -np.arange(1, 9),
                               rtol=1e-15)


@pytest.mark.parametrize("n_heads", [3, 5, 8])
def test_bias_differs_from_blooms_tensor_by_a_constant_per_row(n_heads):
    n = 7
    ours = alibi_bias(n_heads, np.arange(n), np.arange(n))      # (h, n, n)
    with mock.patch.object(torch, "float32", torch.float64):
        bloom = build_alibi_tensor(torch.ones(1, n, dtype=torch.int64), n_heads,
                                   torch.float64).numpy()        # (h, 1, n)
    shift = bloom - ours                                         # (h, n, n)
    assert np.abs(shift - shift[..., :1]).max() <= TOL


@pytest.mark.parametrize("n_heads", [3, 6])
def test_causal_alibi_weights_equal_blooms_attention_weights(n_heads):
    rng = np.random.default_rng(n_heads)
    n, d = 9, 4
    q, k, v = (rng.normal(size=(n_heads, n, d)) for _ in range(3))
    bias = alibi_bias(n_heads, np.arange(n), np.arange(n))
    _, weights = attention(q, k, v, mask=bias, causal=True, return_weights=True)
    # Bloom: slope * j added to q k^T / sqrt(d), future keys at -inf.
    bloom = bloom_slopes(n_heads)[:, None, None] * np.arange(n)  # (h, 1, n)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(d) + bloom
    scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    assert np.abs(weights - softmax(scores, axis=-1)).max() <= TOL


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64, np.int8])
def test_unsigned_and_narrow_positions_give_the_signed_bias(dtype):
    # j - i of unsigned positions wraps (2**64 - 1 for 0 - 1), and of int8
    # ones overflows (-100 - 100), unless taken in a wider signed type.
    i = np.arange(5, 9) if dtype != np.int8 else np.array([100, 101])
    j = np.arange(9) if dtype != np.int8 else np.array([-100, 0, 100])
    want = alibi_bias(3, i, j)
    got = alibi_bias(3, i.astype(dtype), j.astype(dtype))
    assert np.array_equal(got, want)
    assert got.min() < 0


def gpt_oss_eager(q, k, v, sinks, mask):
    """Hugging Face's gpt-oss eager attention (the function GptOssAttention calls)."""
    module = SimpleNamespace(num_key_value_groups=1, training=False,
                             sinks=torch.from_numpy(sinks))
    t = [torch.from_numpy(a) for a in (q, k, v)]
    bias = torch.from_numpy(np.where(mask, 0.0, -np.inf))[None, None]
    out, weights = eager_attention_forward(module, *t, bias,
                                           scaling=q.shape[-1] ** -0.5)
    return out.transpose(1, 2).numpy(), weights.numpy()  # (b, h, n_q, d_v)


@pytest.mark.parametrize("window", [None, 3])
def test_sink_attention_equals_gpt_oss_eager_attention(window):
    rng = np.random.default_rng(7)
    batch, heads, n, d = 2, 5, 8, 6
    q, k, v = (rng.normal(size=(batch, heads, n, d)) for _ in range(3))
    sinks = rng.normal(size=heads) * 2
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = (j <= i) if window is None else (j <= i) & (i - j < window)
    out, weights = sink_attention(q, k, v, sinks, mask=mask,
                                  return_weights=True)
    ref_out, ref_weights = gpt_oss_eager(q, k, v, sinks, mask)
    assert np.abs(out - ref_out).max() <= TOL
    assert np.abs(weights - ref_weights).max() <= TOL


def test_a_sink_shrinks_each_row_and_a_huge_one_silences_the_head():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(2, 4, 3)) for _ in range(3))
    _, weights = sink_attention(q, k, v, np.array([0.0, 50.0]), causal=True,
                                return_weights=True)
    sums = weights.sum(axis=-1)                                  # (2, 4)
    assert np.all(sums[0] < 1) and np.all(sums[0] > 0)
    assert sums[1].max() < 1e-20
    # A sink at -inf would be plain attention; a very negative one nearly is.
    near = sink_attention(q, k, v, np.array([-800.0, -800.0]), causal=True)
    assert np.abs(near - attention(q, k, v, causal=True)).max() <= TOL


def test_sink_attention_keeps_float32():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 2, 4, 8)).astype(np.float32)
    out = sink_attention(q, q, q, np.zeros(2), causal=True)
    assert out.dtype == np.float32


@pytest.mark.parametrize("call, error, message", [
    (lambda: alibi_slopes(0), ValueError, "n_heads must be a positive integer"),
    (lambda: alibi_slopes(2.0), ValueError, "n_heads must be a positive integer"),
    (lambda: alibi_bias(2, [0.5], [0]), ValueError, "1-D integers"),
    (lambda: sink_attention(np.ones((2, 3, 4)), np.ones((2, 3, 4)),
                            np.ones((2, 3, 4)), [np.nan, 0]), ValueError,
     "sinks must be finite"),
    (lambda: sink_attention(np.ones((2, 3, 4)), np.ones((2, 3, 4)),
                            np.ones((2, 3, 4)), np.zeros(3)), ValueError,
     "do not broadcast"),
    (lambda: sink_attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 4)),
                            ["a"]), TypeError, "sinks must hold real numbers"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_sink_attention_names_a_mask_that_does_not_fit_and_a_1d_query():
    q = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="sink_attention: mask of shape"):
        sink_attention(q, q, q, np.zeros(2), mask=np.ones((5, 3, 3), bool))
    with pytest.raises(ValueError, match="sink_attention: q must have at least"):
        sink_attention(np.ones(4), q, q, np.zeros(2))
