"""Encoder blocks == torch.nn.TransformerEncoderLayer (post-LN and pre-LN, ReLU and GELU),
float64, dropout 0, eval mode, batch_first, with PyTorch's fused fast path switched off so
that the reference is the documented math (<= 1e-12). The decoder blocks are checked whole,
inside GPT-2 and Llama, in test_model.py."""

import numpy as np
import pytest
import torch

from attention.blocks import attend, attention_layer, encoder_block
from attention.masks import padding_mask
from attention.multi_head import grouped_query_attention, multi_head_attention

TOL = 1e-12
D_MODEL, N_HEADS, D_FF = 16, 4, 48


def random_encoder_params(rng, d=D_MODEL, d_ff=D_FF):
    p = {}
    for name in ("W_q", "W_k", "W_v", "W_o"):
        p[f"attn.{name}"] = rng.normal(size=(d, d)) / np.sqrt(d)
        p[f"attn.b_{name[-1]}"] = 0.1 * rng.normal(size=d)
    p["mlp.W_in"] = rng.normal(size=(d, d_ff)) / np.sqrt(d)
    p["mlp.b_in"] = 0.1 * rng.normal(size=d_ff)
    p["mlp.W_out"] = rng.normal(size=(d_ff, d)) / np.sqrt(d_ff)
    p["mlp.b_out"] = 0.1 * rng.normal(size=d)
    for i in (1, 2):
        p[f"norm{i}.weight"] = 1 + 0.2 * rng.normal(size=d)
        p[f"norm{i}.bias"] = 0.2 * rng.normal(size=d)
    return p


def torch_encoder_layer(p, *, norm_first, activation):
    """nn.TransformerEncoderLayer holding our weights (nn.Linear stores W.T)."""
    layer = torch.nn.TransformerEncoderLayer(
        D_MODEL, N_HEADS, dim_feedforward=D_FF, dropout=0.0, activation=activation,
        layer_norm_eps=1e-5, batch_first=True, norm_first=norm_first, dtype=torch.float64)
    t = torch.from_numpy
    with torch.no_grad():
        sa = layer.self_attn
        sa.in_proj_weight.copy_(t(np.concatenate([p["attn.W_q"].T, p["attn.W_k"].T, p["attn.W_v"].T])))
        sa.in_proj_bias.copy_(t(np.concatenate([p["attn.b_q"], p["attn.b_k"], p["attn.b_v"]])))
        sa.out_proj.weight.copy_(t(p["attn.W_o"].T))
        sa.out_proj.bias.copy_(t(p["attn.b_o"]))
        layer.linear1.weight.copy_(t(p["mlp.W_in"].T))
        layer.linear1.bias.copy_(t(p["mlp.b_in"]))
        layer.linear2.weight.copy_(t(p["mlp.W_out"].T))
        layer.linear2.bias.copy_(t(p["mlp.b_out"]))
        for i in (1, 2):
            getattr(layer, f"norm{i}").weight.copy_(t(p[f"norm{i}.weight"]))
            getattr(layer, f"norm{i}").bias.copy_(t(p[f"norm{i}.bias"]))
    return layer.eval()


@pytest.fixture
def plain_math():
    """PyTorch's reference without its fused fast path (restored afterwards)."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(before)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_block_matches_torch_encoder_layer(plain_math, norm_first, activation):
    rng = np.random.default_rng(0)
    p = random_encoder_params(rng)
    x = rng.normal(size=(3, 7, D_MODEL))
    layer = torch_encoder_layer(p, norm_first=norm_first, activation=activation)
    with torch.no_grad():
        expected = layer(torch.from_numpy(x)).numpy()
    got = encoder_block(x, p, n_heads=N_HEADS, norm_first=norm_first, activation=activation)
    assert np.abs(got - expected).max() <= TOL


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_block_with_padding_matches_torch(plain_math, norm_first):
    rng = np.random.default_rng(1)
    p = random_encoder_params(rng)
    x = rng.normal(size=(2, 6, D_MODEL))
    lengths = np.array([6, 4])
    layer = torch_encoder_layer(p, norm_first=norm_first, activation="relu")
    # PyTorch's key padding mask is True where a key is BLOCKED; ours True = may attend.
    blocked = torch.from_numpy(~padding_mask(lengths, 6)[:, 0, 0])
    with torch.no_grad():
        expected = layer(torch.from_numpy(x), src_key_padding_mask=blocked).numpy()
    got = encoder_block(x, p, n_heads=N_HEADS, norm_first=norm_first,
                        mask=padding_mask(lengths, 6))
    assert np.abs(got - expected).max() <= TOL


def test_without_the_switch_the_reference_is_the_fused_fast_path(monkeypatch):
    # In eval mode, batch_first, without gradients, nn.TransformerEncoderLayer hands the
    # whole block to one fused kernel instead of the documented math. We count its calls.
    calls = []
    fused = torch._transformer_encoder_layer_fwd

    def counting(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(torch, "_transformer_encoder_layer_fwd", counting)
    rng = np.random.default_rng(2)
    p = random_encoder_params(rng)
    layer = torch_encoder_layer(p, norm_first=False, activation="relu")
    x = torch.from_numpy(rng.normal(size=(2, 5, D_MODEL)))
    before = torch.backends.mha.get_fastpath_enabled()
    try:
        torch.backends.mha.set_fastpath_enabled(True)
        with torch.no_grad():
            fast = layer(x).numpy()
        assert len(calls) == 1  # the fast path ran
        torch.backends.mha.set_fastpath_enabled(False)
        with torch.no_grad():
            math = layer(x).numpy()
        assert len(calls) == 1  # and now it did not
    finally:
        torch.backends.mha.set_fastpath_enabled(before)
    # Same function, other arithmetic: equal to rounding, not necessarily bit for bit.
    assert np.abs(fast - math).max() <= 1e-12
    ours = encoder_block(x.numpy(), p, n_heads=N_HEADS)
    assert np.abs(ours - math).max() <= TOL


def test_attention_layer_without_biases_is_the_packages_multi_head_attention():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 12))
    p = {f"attn.{n}": rng.normal(size=(12, 12)) for n in ("W_q", "W_k", "W_v", "W_o")}
    ours = attention_layer(x, p, n_heads=3, causal=True)
    ref = multi_head_attention(x, p["attn.W_q"], p["attn.W_k"], p["attn.W_v"],
                               p["attn.W_o"], 3, causal=True)
    assert np.abs(ours - ref).max() <= TOL


def test_attention_layer_with_fewer_kv_heads_is_grouped_query_attention():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 5, 16))
    p = {"attn.W_q": rng.normal(size=(16, 16)), "attn.W_k": rng.normal(size=(16, 4)),
         "attn.W_v": rng.normal(size=(16, 4)), "attn.W_o": rng.normal(size=(16, 16))}
    ours = attention_layer(x, p, n_heads=8, n_kv_heads=2, causal=True)
    ref = grouped_query_attention(x, p["attn.W_q"], p["attn.W_k"], p["attn.W_v"],
                                  p["attn.W_o"], 8, 2, causal=True)
    assert np.abs(ours - ref).max() <= TOL


def test_attend_aligns_fewer_queries_bottom_right_as_a_kv_cache_needs():
    # The last query of a full pass equals a one-query call against all keys.
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(1, 4, 6, 8)) for _ in range(3))
    full, _ = attend(q, k, v)
    last, _ = attend(q[:, :, -1:], k, v)
    assert np.abs(full[:, :, -1:] - last).max() <= TOL


def test_encoder_trace_keeps_the_attention_weights():
    rng = np.random.default_rng(6)
    p = random_encoder_params(rng)
    trace = {}
    encoder_block(rng.normal(size=(1, 4, D_MODEL)), p, n_heads=N_HEADS, trace=trace)
    assert trace["weights"].shape == (1, N_HEADS, 4, 4)
    np.testing.assert_allclose(trace["weights"].sum(-1), 1.0)
