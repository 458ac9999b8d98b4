"""Chapter 10's Gated DeltaNet layer against Hugging Face's ``Qwen3NextGatedDeltaNet``
(eager, no kernels: transformers falls back to its PyTorch reference functions) on a
tiny configuration built offline: two query/key heads serving four value heads, odd
head sizes, a kernel of 4. Hugging Face computes the gated norm, the decay g and the
delta rule in float32 inside a float64 module; with those swapped for float64
(``float64_hf``) the outputs agree within 1e-12 relative to their largest value, and the
swap moves Hugging Face's own output at float32 rounding only. Decoding one token at a
time from the cached convolution and recurrent state equals the whole sequence (1e-12),
and those states equal Hugging Face's cache. The published card equals the defaults of
``Qwen3NextConfig`` (Qwen3-Next-80B-A3B)."""

import numpy as np
import pytest
import torch
from transformers import DynamicCache, Qwen3NextConfig
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextGatedDeltaNet)

from attention.linear.costs import QWEN3_NEXT_80B, sequence_bytes
from attention.linear.gated_deltanet import GatedDeltaNetConfig, gated_deltanet
from attention.linear.qwen3_next import config_from_hf, params_from_hf
from tests.package.test_long_context_models import float64_hf

TOL = 1e-12
N = 11


def tiny_config():
    return Qwen3NextConfig(
        hidden_size=24, num_hidden_layers=1, layer_types=["linear_attention"],
        linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=5, linear_value_head_dim=3,
        linear_conv_kernel_dim=4, num_attention_heads=2,
        num_key_value_heads=1, head_dim=8, vocab_size=32, rms_norm_eps=1e-6)


@pytest.fixture(scope="module")
def setup():
    hf_config = tiny_config()
    torch.manual_seed(0)
    layer = Qwen3NextGatedDeltaNet(hf_config, 0).double().eval()
    with torch.no_grad():  # decays and gains that differ per head
        layer.A_log.copy_(0.5 * torch.randn(4, dtype=torch.float64))
        layer.dt_bias.copy_(0.5 * torch.randn(4, dtype=torch.float64))
        layer.norm.weight.copy_(1 + 0.2 * torch.randn(3, dtype=torch.float64))
    x = torch.randn(2, N, 24, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1))
    config = config_from_hf(hf_config, chunk_size=4)
    params = params_from_hf({name: t.detach().numpy()
                             for name, t in layer.state_dict().items()}, config)
    return hf_config, layer, x, config, params


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def test_layer_equals_hugging_face(setup):
    _, layer, x, config, params = setup
    with torch.no_grad():
        as_is = layer(x).numpy()
        with float64_hf():
            ref = layer(x).numpy()
    ours, _ = gated_deltanet(x.numpy(), params, config)
    assert rel(ours, ref) < TOL
    assert 1e-10 < rel(as_is, ref) < 1e-5  # float32 inside, nothing more


def test_recurrent_and_chunked_layer_agree(setup):
    _, _, x, config, params = setup
    chunked, _ = gated_deltanet(x.numpy(), params, config)
    for C in (1, 3, N, 64):
        other = GatedDeltaNetConfig(**{**config.__dict__, "chunk_size": C})
        assert rel(gated_deltanet(x.numpy(), params, other)[0], chunked) < TOL


def test_decoding_token_by_token_equals_the_whole_sequence(setup):
    _, layer, x, config, params = setup
    whole, end = gated_deltanet(x.numpy(), params, config)
    out, state = gated_deltanet(x.numpy()[:, :5], params, config)
    steps = [out]
    for t in range(5, N):
        out, state = gated_deltanet(x.numpy()[:, t:t + 1], params, config,
                                    state)
        steps.append(out)
    assert rel(np.concatenate(steps, axis=1), whole) < TOL
    assert state.conv.shape == (2, 3, config.conv_channels)
    assert state.recurrent.shape == (2, 4, 5, 3)
    assert rel(state.recurrent, end.recurrent) < TOL
    # Hugging Face's own cached decoding, prefill of 5 then one token at a time
    cache = DynamicCache(config=setup[0])
    with torch.no_grad(), float64_hf():
        hf_steps = [layer(x[:, :5], cache_params=cache)]
        hf_steps += [layer(x[:, t:t + 1], cache_params=cache)
                     for t in range(5, N)]
    assert rel(np.concatenate([s.numpy() for s in hf_steps], axis=1),
               whole) < TOL
    hf_conv = cache.layers[0].conv_states[0].numpy()  # (batch, channels, K)
    assert rel(state.conv, np.swapaxes(hf_conv, 1, 2)[:, 1:]) < TOL
    assert rel(state.recurrent,
               cache.layers[0].recurrent_states[0].numpy()) < TOL


def test_published_card_is_qwen3_next_80b():
    defaults = Qwen3NextConfig()  # the sizes of Qwen/Qwen3-Next-80B-A3B-Instruct
    card = QWEN3_NEXT_80B
    assert (card.n_layers, card.n_kv_heads, card.d_head) == (
        defaults.num_hidden_layers, defaults.num_key_value_heads,
        defaults.head_dim)
    assert (card.n_qk_heads, card.n_v_heads, card.d_k, card.d_v,
            card.conv_kernel) == (
        defaults.linear_num_key_heads, defaults.linear_num_value_heads,
        defaults.linear_key_head_dim, defaults.linear_value_head_dim,
        defaults.linear_conv_kernel_dim)
    assert defaults.layer_types.count("full_attention") == card.full_layers
    c = config_from_hf(defaults)
    assert card.state_values() == (c.n_v_heads * c.d_k * c.d_v
                                   + (c.conv_kernel - 1) * c.conv_channels)
    costs = sequence_bytes(card, 4096)
    assert costs["all-softmax KV cache"] == 4 * costs["softmax KV cache"]
    with pytest.raises(ValueError, match="n_tokens must be an integer >= 0"):
        sequence_bytes(card, -1)


@pytest.mark.parametrize("fields, message", [
    (dict(n_v_heads=3), r"n_v_heads \(3\) must be a multiple of n_qk_heads \(2\)"),
    (dict(conv_kernel=0), r"conv_kernel must be an integer >= 1, got 0"),
    (dict(chunk_size=0), r"chunk_size must be an integer >= 1, got 0"),
])
def test_bad_configuration_is_refused_by_name(setup, fields, message):
    config = setup[3]
    with pytest.raises(ValueError, match=message):
        GatedDeltaNetConfig(**{**config.__dict__, **fields})


def test_bad_input_is_refused_by_name(setup):
    _, _, x, config, params = setup
    with pytest.raises(ValueError, match=r"x must have shape \(batch, n, "
                                         r"d_model=24\), got \(2, 11, 23\)"):
        gated_deltanet(x.numpy()[..., :23], params, config)
