"""Chapter 13's cross-attention: forward against PyTorch, its cache, its backward.

The forward equals ``torch.nn.functional.scaled_dot_product_attention`` on the same
projections with a padding mask, and chapter 2's ``multi_head_attention(x, kv=memory)``;
the decoder cache projects the memory once per layer; the backward by hand equals
autograd in float64 (<= 1e-12) for every input and parameter, biases and padding
included.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.encoders.cross_attention import (DecoderCache,
                                                causal_self_attention,
                                                cross_attention,
                                                cross_attention_backward,
                                                cross_cache_bytes, memory_kv,
                                                random_params)
from attention.kv_cache import KVCache
from attention.multi_head import multi_head_attention

D, HEADS = 12, 3


def layer(rng, *, biases=True):
    p = {f"W_{n}": rng.normal(size=(D, D)) / D ** 0.5 for n in "qkvo"}
    if biases:  # Whisper's: none on the keys
        p |= {f"b_{n}": rng.normal(size=D) for n in "qvo"}
    return p


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 5, D))         # 5 target tokens
    memory = rng.normal(size=(2, 9, D))    # 9 source tokens
    valid = np.ones((2, 9), bool)
    valid[1, 6:] = False                   # the second source is padded
    return rng, x, memory, valid


def torch_cross_attention(x, memory, p, valid, scale=None):
    t = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    tx = torch.tensor(x, requires_grad=True)
    tm = torch.tensor(memory, requires_grad=True)

    def proj(a, n):
        y = a @ t["W_" + n]
        return y + t["b_" + n] if "b_" + n in t else y

    def heads(a):  # (batch, n, d) -> (batch, h, n, d / h)
        return a.reshape(*a.shape[:2], HEADS, -1).transpose(1, 2)
    out = F.scaled_dot_product_attention(
        heads(proj(tx, "q")), heads(proj(tm, "k")), heads(proj(tm, "v")),
        attn_mask=torch.from_numpy(valid[:, None, None, :]), scale=scale)
    out = proj(out.transpose(1, 2).reshape(x.shape), "o")
    return out, tx, tm, t


@pytest.mark.parametrize("scale", [None, 1.0])
def test_forward_equals_pytorch_with_a_padding_mask(scale):
    rng, x, memory, valid = inputs()
    p = layer(rng)
    mine = cross_attention(x, memory_kv(memory, p, HEADS), p, HEADS,
                           memory_valid=valid, scale=scale)
    theirs, *_ = torch_cross_attention(x, memory, p, valid, scale)
    assert np.abs(mine - theirs.detach().numpy()).max() < 1e-12


def test_it_is_chapter_2s_multi_head_attention_with_another_kv():
    rng, x, memory, _ = inputs()
    p = layer(rng, biases=False)
    mine = cross_attention(x, memory_kv(memory, p, HEADS), p, HEADS)
    chapter2 = multi_head_attention(x, p["W_q"], p["W_k"], p["W_v"], p["W_o"],
                                    HEADS, kv=memory)
    assert np.abs(mine - chapter2).max() < 1e-12


def test_padded_source_tokens_change_nothing():
    rng, x, memory, valid = inputs()
    p = layer(rng)
    padded = cross_attention(x, memory_kv(memory, p, HEADS), p, HEADS,
                             memory_valid=valid)
    memory[1, 6:] = 1e3  # whatever sits behind the mask
    again = cross_attention(x, memory_kv(memory, p, HEADS), p, HEADS,
                            memory_valid=valid)
    short = cross_attention(x[1:], memory_kv(memory[1:, :6], p, HEADS), p,
                            HEADS)
    assert np.abs(padded - again).max() == 0
    assert np.abs(padded[1:] - short).max() < 1e-12


def test_the_cache_projects_the_memory_once_per_layer():
    rng, _, memory, _ = inputs()
    layers = [layer(rng), layer(rng)]
    cache = DecoderCache(2)
    for _ in range(4):  # four decoding steps
        for i, p in enumerate(layers):
            k, v = cache.cross_kv(i, memory, p, HEADS)
    assert cache.projections == 2
    # what it holds: every source position's keys and values, per layer
    assert k.shape == v.shape == (2, HEADS, 9, D // HEADS)
    np.testing.assert_array_equal(k, memory_kv(memory, layers[1], HEADS)[0])


def test_causal_self_attention_through_the_cache_equals_the_full_pass():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(2, HEADS, 7, 4)) for _ in range(3))
    bias = rng.normal(size=(1, HEADS, 7, 7))
    full = causal_self_attention(q, k, v, bias=bias, scale=1.0)
    cache = KVCache(1)
    parts = []
    for a, b in ((0, 3), (3, 4), (4, 7)):
        parts.append(causal_self_attention(
            q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache=cache,
            bias=bias[:, :, a:b, :b], scale=1.0))
        cache.advance(b - a)
    assert np.abs(np.concatenate(parts, axis=2) - full).max() < 1e-12


@pytest.mark.parametrize("biases", [True, False])
def test_backward_equals_autograd(biases):
    rng, x, memory, valid = inputs(seed=1)
    p = layer(rng, biases=biases)
    d_out = rng.normal(size=x.shape)
    grads = cross_attention_backward(d_out, x, memory, p, HEADS,
                                     memory_valid=valid)
    out, tx, tm, t = torch_cross_attention(x, memory, p, valid)
    out.backward(torch.from_numpy(d_out))
    theirs = {"x": tx.grad, "memory": tm.grad} | {k: v.grad
                                                   for k, v in t.items()}
    assert sorted(grads) == sorted(theirs)
    for name, g in theirs.items():
        assert np.abs(grads[name] - g.numpy()).max() < 1e-12, name
    # padded source positions receive no gradient
    assert np.abs(grads["memory"][1, 6:]).max() == 0


def test_the_cross_cache_of_whisper_large():
    # Whisper large (Radford et al. 2022, table 1): 32 decoder layers, width
    # 1280 (20 heads of 64); 1,500 audio tokens; two bytes a value.
    assert cross_cache_bytes(32, 20, 64, 1500) == 245_760_000


@pytest.mark.parametrize("call, words", [
    (lambda x, m, p, v: memory_kv(m[0], p, HEADS),
     r"memory must be real numbers of shape \(batch, n, d_model\)"),
    (lambda x, m, p, v: memory_kv(m, p, 5), "n_heads must be a positive"),
    (lambda x, m, p, v: memory_kv(m, p | {"W_k": p["W_k"][:4]}, HEADS),
     r"W_k must have shape \(12, 12\)"),
    (lambda x, m, p, v: memory_kv(m, {"W_q": p["W_q"]}, HEADS),
     r"lack \['W_k', 'W_v', 'W_o'\]"),
    (lambda x, m, p, v: cross_attention(x, memory_kv(m, p, HEADS), p, HEADS,
                                        memory_valid=v[:, :4]),
     r"memory_valid must be booleans of shape \(2, 9\)"),
    (lambda x, m, p, v: cross_attention(x[:1], memory_kv(m, p, HEADS), p,
                                        HEADS),
     "kv must be memory_kv's keys and values"),
    (lambda x, m, p, v: cross_attention_backward(x[:, :2], x, m, p, HEADS),
     r"d_out must have x's shape \(2, 5, 12\)"),
    (lambda x, m, p, v: cross_cache_bytes(2, 3, 4, -1),
     "n_src must be a non-negative integer"),
])
def test_bad_inputs_are_named(call, words):
    rng, x, memory, valid = inputs()
    with pytest.raises(ValueError, match=words):
        call(x, memory, layer(rng), valid)


def test_random_params_sets_gains_biases_and_weights():
    shapes = {"a.norm1.weight": (3,), "a.attn.b_q": (3,), "a.conv1.b": (3,),
              "a.norm1.bias": (3,), "a.attn.W_q": (3, 3)}
    p = random_params(shapes, np.random.default_rng(0), std=0.5)
    assert p["a.norm1.weight"].tolist() == [1.0] * 3
    assert all(not p[k].any() for k in ("a.attn.b_q", "a.conv1.b",
                                        "a.norm1.bias"))
    assert 0.1 < p["a.attn.W_q"].std() < 1.5
