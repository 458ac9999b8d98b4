"""Chapter 12's lightning attention and the whole MiniMax model against Hugging Face.

Lightning attention (linear attention with a fixed decay per head, computed in blocks):
its blocks equal its recurrence, its slopes equal the buffers Hugging Face stores; the
whole ``MiniMaxForCausalLM`` (lightning and softmax layers, the scaled residual branches
alpha * norm(x) + beta * branch, a mixture of experts) loads through ``config_from_hf``:
logits within 1e-10 of their largest value in float64 (``float64_hf`` swaps Hugging
Face's float32 internals and moves its logits only at float32 rounding), cached greedy
generation token for token, prefill then decode equal to one forward. A left-padded batch
equals Hugging Face's generation without its cache: with a lightning layer first, its
``MiniMaxCache`` (built without the layer types, it reads its length from layer 0, which
holds no keys) gives the padded row other tokens than its own uncached generation, and
the test shows that too. Switching off the
lightning layers' output gate, or the branch scales, changes Hugging Face's logits.
"""

import dataclasses
import functools
from unittest import mock

import numpy as np
import pytest
import torch
from transformers import MiniMaxConfig, MiniMaxForCausalLM
from transformers.models.minimax.modeling_minimax import MiniMaxCache

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.generation import generate, left_pad
from attention.kv_cache import KVCache
from attention.linear.decayed import decayed_recurrent
from attention.linear.lightning import (LightningConfig, lightning_layer,
                                        slopes)
from attention.model import ModelConfig, forward
from attention.parameters import count_parameters
from tests.package.test_long_context_models import build, float64_hf

TOL = 1e-10
VOCAB = 41
IDS = np.random.default_rng(3).integers(0, VOCAB, size=(2, 13))
SCALES = dict(full_attn_alpha_factor=1.5, full_attn_beta_factor=0.7,
              linear_attn_alpha_factor=1.3, linear_attn_beta_factor=0.9,
              mlp_alpha_factor=1.2, mlp_beta_factor=0.8)


def minimax_config(**kw):
    config = MiniMaxConfig(**(dict(
        hidden_size=24, intermediate_size=10, num_hidden_layers=3,
        num_attention_heads=3, num_key_value_heads=1, head_dim=6,
        num_local_experts=4, num_experts_per_tok=2, block_size=4,
        layer_types=["linear_attention", "full_attention",
                     "linear_attention"],
        vocab_size=VOCAB, max_position_embeddings=64,
        rope_parameters={"rope_type": "default", "rope_theta": 1000.0},
        bos_token_id=1, eos_token_id=None, pad_token_id=0) | SCALES | kw))
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    return config


@functools.cache
def loaded():
    hf_config = minimax_config()
    model = build(MiniMaxForCausalLM, hf_config, 0)
    config = config_from_hf(hf_config)
    params = from_hf_state_dict(
        {k: v.detach().numpy() for k, v in model.state_dict().items()},
        config)
    return model, config, params


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def hf_logits(model, ids):
    with torch.no_grad(), float64_hf():
        return model(torch.tensor(ids)).logits.numpy()


@functools.cache
def hf_reference(model):
    """Hugging Face's float64 logits on IDS, computed once per model."""
    return hf_logits(model, IDS)


def test_blocks_equal_the_recurrence():
    c = LightningConfig(d_model=12, n_heads=2, d_head=3, block_size=4)
    rng = np.random.default_rng(0)
    p = {"W_qkv": rng.normal(size=(12, 18)) / 3,
         "norm.weight": 1 + 0.2 * rng.normal(size=6),
         "W_gate": rng.normal(size=(12, 6)), "W_o": rng.normal(size=(6, 12))}
    x, s = rng.normal(size=(2, 11, 12)), slopes(2, 0, 3)
    whole, S = lightning_layer(x, p, c, s)
    out, state = lightning_layer(x[:, :5], p, c, s)
    steps = [out]
    for t in range(5, 11):
        out, state = lightning_layer(x[:, t:t + 1], p, c, s, state)
        steps.append(out)
    assert rel(np.concatenate(steps, axis=1), whole) < 1e-12
    assert rel(state, S) < 1e-12
    # the state is decayed linear attention's: the same decay at every token
    q, k, v = np.ones((3, 1, 1, 4, 2))
    _, S1 = decayed_recurrent(q, k, v, -np.full((1, 1, 4), 0.5))
    assert np.allclose(S1, np.sum(np.exp(-0.5 * np.arange(4))), rtol=1e-15)


def test_slopes_equal_the_buffers_hugging_face_stores():
    model, config, _ = loaded()
    for i in (0, 2):
        stored = model.model.layers[i].self_attn.slope_rate.numpy().ravel()
        assert rel(slopes(3, i, 3), stored) < 1e-15
    assert slopes(8, 0, 2)[0] == 0.5 * (1 + 1e-5)  # 2^(-8/8), layer 0


def test_whole_model_equals_hugging_face():
    model, config, params = loaded()
    assert config.layer_types == ("linear", "full", "linear")
    assert config.branch_scales == ((1.5, 0.7), (1.3, 0.9), (1.2, 0.8))
    ref = hf_reference(model)
    assert rel(forward(params, config, IDS), ref) < TOL
    with torch.no_grad():  # float32 inside, nothing more
        as_is = model(torch.tensor(IDS)).logits.numpy()
    assert 1e-10 < rel(as_is, ref) < 1e-5
    hf_count = sum(p.numel() for p in model.parameters())
    assert count_parameters(config)["total"] == hf_count


def test_cached_greedy_generation_equals_hugging_face():
    model, config, params = loaded()
    prompt = IDS[:, :6]
    with torch.no_grad(), float64_hf():
        ref = model.generate(torch.tensor(prompt), max_new_tokens=5,
                             do_sample=False).numpy()
    np.testing.assert_array_equal(
        generate(params, config, prompt, max_new_tokens=5), ref)


def test_left_padded_generation_equals_hugging_face_without_its_cache():
    model, config, params = loaded()
    ids, valid = left_pad([IDS[0, :6], IDS[1, :3]])
    kw = dict(max_new_tokens=5, do_sample=False,
              attention_mask=torch.tensor(valid.astype(int)))
    with torch.no_grad(), float64_hf():
        uncached = model.generate(torch.tensor(ids), use_cache=False, **kw)
        cached = model.generate(torch.tensor(ids), **kw)
    ours = generate(params, config, ids, valid=valid, max_new_tokens=5)
    np.testing.assert_array_equal(ours, uncached.numpy())
    # Hugging Face's own cache disagrees with it on the padded row: built
    # without the layer types, it reads its length from layer 0, a
    # lightning layer that holds no keys
    assert (cached.numpy()[1] != uncached.numpy()[1]).any()
    assert (cached.numpy()[0] == uncached.numpy()[0]).all()
    cache = MiniMaxCache()
    with torch.no_grad():
        model(torch.tensor(IDS[:, :5]), past_key_values=cache, use_cache=True)
    assert (cache.get_seq_length(), cache.get_seq_length(1)) == (0, 5)


def test_prefill_then_decode_equals_one_forward():
    _, config, params = loaded()
    whole = forward(params, config, IDS)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, IDS[:, :7], cache=cache)]
    steps += [forward(params, config, IDS[:, t:t + 1], cache=cache)
              for t in range(7, IDS.shape[1])]
    assert rel(np.concatenate(steps, axis=1), whole) < 1e-12
    assert cache.states[0].shape == (2, 3, 6, 6)  # one d x d state per head


def test_switching_off_the_gate_or_the_scales_changes_the_logits():
    model, config, params = loaded()
    ref = hf_reference(model)
    # the lightning layers' gate is F.sigmoid (the router uses softmax)
    with mock.patch("torch.nn.functional.sigmoid", torch.ones_like):
        assert rel(hf_logits(model, IDS), ref) > 1e-2
    plain = dataclasses.replace(config, branch_scales=None)
    assert rel(forward(params, plain, IDS), ref) > 1e-2


@pytest.mark.parametrize("fields, message", [
    (dict(branch_scales=((1, 1), (1, 1))), "three \\(alpha, beta\\) pairs"),
    (dict(branch_scales=((1, 1),) * 3, arch="llama"),
     "branch_scales are for a scaled residual wiring"),
])
def test_bad_branch_scales_are_refused_by_name(fields, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**({"arch": "minimax"} | fields))


def test_what_is_not_implemented_is_refused_by_name():
    with pytest.raises(ValueError, match="sliding_window = 8 is not "
                                         "implemented"):
        config_from_hf(minimax_config(sliding_window=8))
    with pytest.raises(ValueError, match="n_heads must be an integer >= 1"):
        LightningConfig(d_model=8, n_heads=0, d_head=4)
