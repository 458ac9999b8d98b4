"""Chapter 12's OLMo 2 as a whole model against Hugging Face, float64, through the
chapter-3 converter (chapter 9 checks its QK-norm at the layer level): a tiny random model
of odd sizes (hidden 30, 5 query heads over 1 key/value head, 3 layers, biases on the
projections), order-one weights and norm gains.

Hugging Face's float32 internals are swapped for float64 (``float64_hf``; a test shows the
swap moves the logits only at float32 rounding). Logits <= 1e-10 relative to their
largest value, greedy generation with the cache equal to Hugging Face's ``generate`` with
its cache, cached decoding equal to one full forward. Sensitivity: with the norms after
each branch or the QK-norm taken out of Hugging Face's model, its logits move by far more
than 1e-10.
"""

import numpy as np
import pytest
import torch
from transformers import Olmo2Config, Olmo2ForCausalLM

from attention.checkpoints import config_from_hf
from attention.generation import generate
from attention.kv_cache import KVCache
from attention.model import ModelConfig, forward
from tests.package.test_families import COMMON, VOCAB
from tests.package.test_long_context_models import (build, hf_greedy,
                                                    hf_logits, ours, relative)

TOL = 1e-10


def olmo2(**kw):
    config = Olmo2Config(**(COMMON | dict(
        hidden_size=30, intermediate_size=44, num_attention_heads=5,
        num_key_value_heads=1, num_hidden_layers=3, attention_bias=True,
        rope_parameters={"rope_theta": 1000.0, "rope_type": "default"}) | kw))
    config._attn_implementation = "eager"
    return config


@pytest.fixture(scope="module")
def reference():
    model = build(Olmo2ForCausalLM, olmo2(), seed=5)
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_olmo2(reference):
    _, params, config = reference
    assert (config.arch, config.qk_norm, config.attn_bias) == (
        "olmo2", "projection", True)
    assert params["blocks.0.attn.q_norm.weight"].shape == (30,)
    assert params["blocks.0.attn.k_norm.weight"].shape == (6,)
    assert "blocks.0.norm1.weight" not in params  # no norm on the way in


def test_logits_equal_hugging_face(reference):
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_cached_greedy_generation_equals_hugging_face(reference):
    model, params, config = reference
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    theirs = hf_greedy(model, prompt, 12, use_cache=True)
    assert np.array_equal(generate(params, config, prompt, max_new_tokens=12),
                          theirs)


def test_cached_decoding_equals_the_full_forward(reference):
    _, params, config = reference
    ids = np.random.default_rng(6).integers(0, VOCAB, size=(2, 13))
    full = forward(params, config, ids)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, ids[:, :5], cache=cache)]
    steps += [forward(params, config, ids[:, i:i + 1], cache=cache)
              for i in range(5, 13)]
    assert relative(np.concatenate(steps, axis=1), full) <= TOL


@pytest.mark.parametrize("modules", [
    ("post_attention_layernorm", "post_feedforward_layernorm"),
    ("self_attn.q_norm", "self_attn.k_norm")])
def test_taking_a_norm_out_of_hugging_face_changes_its_logits(reference,
                                                              modules):
    model, _, _ = reference
    off = build(Olmo2ForCausalLM, olmo2(), seed=5)
    for layer in off.model.layers:
        for name in modules:
            owner, _, attr = name.rpartition(".")
            target = layer.get_submodule(owner) if owner else layer
            setattr(target, attr, torch.nn.Identity())
    ids = np.random.default_rng(4).integers(0, VOCAB, size=(1, 15))
    assert relative(hf_logits(off, ids), hf_logits(model, ids)) > 1e-3


def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding():
    swapped = build(Olmo2ForCausalLM, olmo2(), seed=3)
    shipped = build(Olmo2ForCausalLM, olmo2(), seed=3, float64=False)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 20))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    gap = relative(as_shipped, hf_logits(swapped, ids))
    assert 1e-9 < gap < 1e-5


def test_unimplemented_settings_are_refused():
    with pytest.raises(ValueError, match="hidden_act = 'gelu'"):
        config_from_hf(olmo2(hidden_act="gelu"))


@pytest.mark.parametrize("kw, match", [
    (dict(qk_norm="head"), "qk_norm must be 'projection', got 'head'"),
    (dict(qk_norm=None), "qk_norm must be 'projection', got None"),
])
def test_bad_olmo2_configs_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**({"arch": "olmo2", "vocab_size": 11, "d_model": 8,
                        "n_layers": 2, "n_heads": 2} | kw))
