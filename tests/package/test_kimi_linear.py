"""Chapter 12's Kimi Delta Attention and the whole Kimi Linear model against Hugging Face.

KDA (the gated delta rule with a decay per key channel): its recurrence and its chunked
form agree for every chunk size (1e-12), and equal Hugging Face's
``recurrent_kimi_delta_attention`` and ``chunk_kimi_delta_attention``; the layer equals
``KimiLinearDeltaAttention``; the whole ``KimiLinearForCausalLM`` (KDA layers, MLA layers
with no position encoding, low-rank queries, DeepSeek's grouped sigmoid experts after a
dense first layer) loads through ``config_from_hf`` and equals Hugging Face: logits within
1e-10 of their largest value in float64 (``float64_hf`` swaps Hugging Face's float32
internals and moves its logits only at float32 rounding), cached greedy generation token
for token (a left-padded batch too), prefill then decode equal to one forward. Giving
every channel of a head the same decay in Hugging Face changes its logits.
"""

import functools
from unittest import mock

import numpy as np
import pytest
import torch
from transformers import KimiLinearConfig, KimiLinearForCausalLM
from transformers.models.kimi_linear import modeling_kimi_linear as hf_kimi

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.families import kimi_linear
from attention.generation import generate, left_pad
from attention.kv_cache import KVCache
from attention.linear.kda import (KDAConfig, kda_layer, kda_step,
                                  kimi_delta_attention, params_from_hf)
from attention.model import forward
from attention.parameters import count_parameters
from tests.package.test_long_context_models import build, float64_hf

TOL = 1e-10
VOCAB = 41
IDS = np.random.default_rng(3).integers(0, VOCAB, size=(2, 13))


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def kda_inputs(n=37, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(3, 2, 3, n, 5))
    g = -np.exp(rng.normal(size=(2, 3, n, 5)))       # a decay per channel
    return q, k, v, g, rng.uniform(size=(2, 3, n))


def test_one_step_is_the_rule_written_out():
    rng = np.random.default_rng(1)
    S, (q, k, g), v = (rng.normal(size=(4, 3)), rng.normal(size=(3, 4)),
                       rng.normal(size=3))
    g = -np.abs(g)
    out, new = kda_step(S, q, k, v, g, 0.7)
    decayed = np.diag(np.exp(g)) @ S
    expected = decayed + 0.7 * np.outer(k, v - k @ decayed)
    assert np.allclose(new, expected, rtol=1e-14, atol=1e-15)
    assert np.allclose(out, q @ expected, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("C", [1, 4, 16, 64])
def test_chunked_equals_recurrent(C):
    q, k, v, g, beta = kda_inputs()
    out, S = kimi_delta_attention(q, k, v, g, beta)
    out_c, S_c = kimi_delta_attention(q, k, v, g, beta, chunk_size=C)
    assert rel(out_c, out) < 1e-12 and rel(S_c, S) < 1e-12


def test_both_forms_equal_hugging_faces():
    q, k, v, g, beta = kda_inputs()
    S0 = np.random.default_rng(2).normal(size=(2, 3, 5, 5))
    out, S = kimi_delta_attention(q, k, v, g, beta, initial_state=S0)
    tq, tk, tv, tg = (torch.tensor(a).transpose(1, 2) for a in (q, k, v, g))
    tb = torch.tensor(beta).transpose(1, 2)          # (batch, n, heads)
    with float64_hf():
        rec, S_rec = hf_kimi.recurrent_kimi_delta_attention(
            tq, tk, tv, tg, tb, torch.tensor(S0), True,
            use_qk_l2norm_in_kernel=True)
        chunk, S_chunk = hf_kimi.chunk_kimi_delta_attention(
            tq, tk, tv, tg, tb, chunk_size=8, initial_state=torch.tensor(S0),
            output_final_state=True, use_qk_l2norm_in_kernel=True)
    for o, s in ((rec, S_rec), (chunk, S_chunk)):
        assert rel(o.transpose(1, 2).numpy(), out) < 1e-12
        assert rel(s.numpy(), S) < 1e-12


def test_bad_decay_is_refused_by_name():
    q, k, v, g, beta = kda_inputs(n=4)
    with pytest.raises(ValueError, match=r"g must have k's shape \(2, 3, 4, "
                                         r"5\) \(a decay per key channel\)"):
        kimi_delta_attention(q, k, v, g[..., 0], beta)
    with pytest.raises(ValueError, match=r"g is a log decay \(<= 0\)"):
        kimi_delta_attention(q, k, v, -g, beta)
    with pytest.raises(ValueError, match="chunk_size must be an integer"):
        kimi_delta_attention(q, k, v, g, beta, chunk_size=0)
    with pytest.raises(ValueError, match="n_heads must be an integer >= 1"):
        KDAConfig(d_model=8, n_heads=0, d_head=4)


SIZES = dict(
    hidden_size=24, intermediate_size=20, moe_intermediate_size=6,
    num_hidden_layers=3, num_attention_heads=3, num_key_value_heads=3,
    kv_lora_rank=7, q_lora_rank=6, qk_rope_head_dim=4, qk_nope_head_dim=5,
    v_head_dim=6, n_group=2, topk_group=1, num_local_experts=6,
    num_experts_per_tok=2, n_shared_experts=1, routed_scaling_factor=2.5,
    layer_types=["linear_attention", "full_attention", "linear_attention"],
    mlp_layer_types=["dense", "sparse", "sparse"], linear_num_heads=3,
    linear_head_dim=5, linear_conv_kernel_dim=3, vocab_size=VOCAB,
    max_position_embeddings=64, bos_token_id=1, eos_token_id=None,
    pad_token_id=0)


def kimi_config(**kw):
    config = KimiLinearConfig(**(SIZES | kw))
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    return config


@functools.cache
def loaded():
    hf_config = kimi_config()
    model = build(KimiLinearForCausalLM, hf_config, 0)
    config = config_from_hf(hf_config)
    params = from_hf_state_dict(
        {k: v.detach().numpy() for k, v in model.state_dict().items()},
        config)
    return model, config, params


def hf_logits(model, ids):
    with torch.no_grad(), float64_hf():
        return model(torch.tensor(ids)).logits.numpy()


@functools.cache
def hf_reference(model):
    """Hugging Face's float64 logits on IDS, computed once per model."""
    return hf_logits(model, IDS)


def test_the_kda_layer_equals_hugging_faces():
    model, config, params = loaded()
    layer = model.model.layers[0].self_attn  # a KimiLinearDeltaAttention
    x = torch.randn(2, 11, 24, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), float64_hf():
        ref = layer(x).numpy()
    p = params_from_hf({k: v.numpy() for k, v in layer.state_dict().items()},
                       config.linear)
    assert rel(kda_layer(x.numpy(), p, config.linear)[0], ref) < 1e-12


def test_whole_model_equals_hugging_face():
    model, config, params = loaded()
    assert config.layer_types == ("linear", "full", "linear")
    assert config.moe.first_dense == 1 and config.moe.router == "sigmoid"
    ref = hf_reference(model)
    assert rel(forward(params, config, IDS), ref) < TOL
    with torch.no_grad():  # float32 inside, nothing more
        as_is = model(torch.tensor(IDS)).logits.numpy()
    assert 1e-10 < rel(as_is, ref) < 1e-5
    # the experts' selection bias is a buffer there, not a parameter
    hf_count = sum(t.numel() for t in model.state_dict().values())
    assert count_parameters(config)["total"] == hf_count


def test_mlas_latent_norms_use_their_own_eps():
    # Hugging Face builds them with its RMSNorm's default eps, 1e-6; the
    # model's rms_norm_eps (1e-5 here) would move the logits
    model, config, params = loaded()
    assert config.norm_eps == 1e-5
    try:
        with mock.patch.object(kimi_linear, "LATENT_NORM_EPS", 1e-5):
            kimi_linear.latent_config.cache_clear()
            moved = forward(params, config, IDS)
    finally:
        kimi_linear.latent_config.cache_clear()
    assert rel(moved, hf_reference(model)) > 1e-8


def test_cached_greedy_generation_equals_hugging_face():
    # a batch of a whole prompt and a left-padded one: the linear layers read
    # a <pad> as zeros, so it writes nothing into their states
    model, config, params = loaded()
    ids, valid = left_pad([IDS[0, :6], IDS[1, :3]])
    with torch.no_grad(), float64_hf():
        ref = model.generate(torch.tensor(ids), max_new_tokens=5,
                             attention_mask=torch.tensor(valid.astype(int)),
                             do_sample=False).numpy()
    np.testing.assert_array_equal(
        generate(params, config, ids, valid=valid, max_new_tokens=5), ref)


def test_prefill_then_decode_equals_one_forward():
    _, config, params = loaded()
    whole = forward(params, config, IDS)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, IDS[:, :7], cache=cache)]
    steps += [forward(params, config, IDS[:, t:t + 1], cache=cache)
              for t in range(7, IDS.shape[1])]
    assert rel(np.concatenate(steps, axis=1), whole) < 1e-12
    # the KDA layers keep a state; the MLA layer its latent and shared key
    assert cache.states[0].recurrent.shape == (2, 3, 5, 5)
    assert cache.keys[1].shape == (2, 1, 13, 7)


def test_one_decay_per_head_changes_the_logits():
    model, _, _ = loaded()
    per_channel = hf_kimi.KimiLinearForgetGate.forward

    def per_head(self, hidden_states):
        g = per_channel(self, hidden_states)          # (batch, n, H, d)
        return g.mean(dim=-1, keepdim=True).expand_as(g)

    with mock.patch.object(hf_kimi.KimiLinearForgetGate, "forward",
                           per_head):
        off = hf_logits(model, IDS)
    assert rel(off, hf_reference(model)) > 1e-3


def test_what_is_not_implemented_is_refused_by_name():
    with pytest.raises(ValueError, match=r"mlp_layer_types \['sparse', "
                                         r"'dense', 'sparse'\] is not "
                                         r"implemented"):
        config_from_hf(kimi_config(
            mlp_layer_types=["sparse", "dense", "sparse"]))
    with pytest.raises(ValueError, match="attention_bias"):
        config_from_hf(kimi_config(attention_bias=True))
