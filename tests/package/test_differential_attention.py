"""Chapter 12's differential attention against Hugging Face's DiffLlama, float64, through
the chapter-3 converter: a tiny random model of odd sizes (8 query heads over 4
key/value heads, so that the pairing of heads and of value heads is tested; a head_dim of
4, not 30 / 8; biases on the projections; 3 layers, so λ_init takes three values).

Hugging Face's float32 internals (RMSNorm, RoPE, the eager softmax, and λ's dot products,
summed in float32) are swapped for float64 (``float64_hf``); a test shows the swap moves
the logits only at float32 rounding. Logits <= 1e-10 relative to their largest value,
greedy generation with the cache equal to Hugging Face's ``generate`` with its cache,
cached decoding equal to one full forward. Sensitivity: switching each piece off in
Hugging Face (λ set to 0, the per-pair norm, λ_init's depth) changes its logits by far
more than 1e-10.
"""

import numpy as np
import pytest
import torch
from transformers import DiffLlamaConfig, DiffLlamaForCausalLM

from attention.checkpoints import config_from_hf
from attention.generation import generate, left_pad
from attention.kv_cache import KVCache
from attention.model import ModelConfig, block_params, forward
from attention.norms import rms_norm
from attention.sparse.differential import (differential_attention,
                                           differential_lambda,
                                           differential_mixer, lambda_init)
from tests.package.test_families import COMMON, VOCAB
from tests.package.test_long_context_models import (build, hf_greedy,
                                                    hf_logits, ours, relative)

TOL = 1e-10


def diffllama(**kw):
    config = DiffLlamaConfig(**(COMMON | dict(
        hidden_size=30, intermediate_size=44, num_attention_heads=8,
        num_key_value_heads=4, head_dim=4, num_hidden_layers=3,
        attention_bias=True,
        rope_parameters={"rope_theta": 1000.0, "rope_type": "default"}) | kw))
    config._attn_implementation = "eager"
    return config


@pytest.fixture(scope="module")
def reference():
    model = build(DiffLlamaForCausalLM, diffllama(), seed=9)
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_diffllama(reference):
    _, _, config = reference
    assert (config.arch, config.d_head, config.attn_bias) == ("diffllama", 4,
                                                              True)
    assert (config.n_heads, config.n_kv_heads) == (8, 4)


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
    # the cache holds Llama's keys and values: n_kv_heads of d_head each
    assert cache.values[0].shape == (2, 4, 13, 4)


def test_left_padding_changes_nothing_but_the_pads(reference):
    _, params, config = reference
    short, long = [3, 7, 1], [5, 2, 8, 6, 4]
    ids, valid = left_pad([short, long], pad_id=0)
    batched = forward(params, config, ids, valid=valid)
    alone = forward(params, config, np.array(short))
    assert relative(batched[0, -3:], alone) <= 1e-12


def test_each_pair_is_the_papers_two_maps_and_one_value(reference):
    """Pair i: query heads i and i + H/2 (keys g and g + G/2), the value
    heads g and g + G/2 side by side: the written-out form equals the
    layer's output heads."""
    _, params, config = reference
    ids = np.random.default_rng(3).integers(0, VOCAB, size=(1, 9))
    trace = {}
    forward(params, config, ids, trace=trace)
    layer, H, G = 1, config.n_heads, config.n_kv_heads
    q, k, v = (trace[f"blocks.{layer}.{x}"][0] for x in "qkv")
    heads = trace[f"blocks.{layer}.heads"][0]          # (n, H/2 * 2d)
    lam = differential_lambda(block_params(params, layer), layer)
    d, group = config.d_head, H // G
    for i in range(H // 2):
        g = i // group
        value = np.concatenate([v[g], v[g + G // 2]], axis=-1)  # (n, 2d)
        out, _ = differential_attention(q[i], k[g], q[i + H // 2],
                                        k[g + G // 2], value, lam)
        expected = (1 - lambda_init(layer)) * rms_norm(
            out, np.ones(2 * d), eps=config.norm_eps)
        assert np.abs(heads[:, 2 * d * i:2 * d * (i + 1)]
                      - expected).max() <= 1e-12


def test_the_simple_form_is_two_softmax_maps_and_their_difference():
    rng = np.random.default_rng(0)
    q1, k1, q2, k2 = rng.normal(size=(4, 5, 3))
    v = rng.normal(size=(5, 6))
    out, (a1, a2) = differential_attention(q1, k1, q2, k2, v, 0.4)
    assert np.allclose(a1.sum(-1), 1) and np.allclose(a2.sum(-1), 1)
    assert np.allclose((a1 - 0.4 * a2).sum(-1), 0.6)  # rows sum to 1 - λ
    assert np.all(a1[np.triu_indices(5, 1)] == 0)     # causal
    same, _ = differential_attention(q1, k1, q1, k1, v, 1.0)
    assert np.abs(same).max() == 0  # the same map twice cancels exactly


def test_lambda_init_grows_with_depth_from_0_2_towards_0_8():
    values = [lambda_init(layer) for layer in range(40)]
    assert values[0] == pytest.approx(0.2) and values[-1] < 0.8
    assert np.all(np.diff(values) > 0) and values[-1] > 0.79
    with pytest.raises(ValueError, match="layer must be a non-negative"):
        lambda_init(-1)


def test_lambda_is_exp_of_dot_products_plus_its_start(reference):
    _, params, _ = reference
    p = block_params(params, 2)
    first = np.exp(np.sum(p["attn.lambda_q1"] * p["attn.lambda_k1"]))
    second = np.exp(np.sum(p["attn.lambda_q2"] * p["attn.lambda_k2"]))
    expected = first - second + lambda_init(2)
    assert abs(differential_lambda(p, 2) - expected) <= 1e-15


def _switched(model, switch):
    """Hugging Face's model with one piece of differential attention off."""
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            attn = layer.self_attn
            if switch == "lambda 0":      # λ_init 0, the two exp terms equal
                attn.lambda_init = 0.0
                attn.lambda_q2.copy_(attn.lambda_q1)
                attn.lambda_k2.copy_(attn.lambda_k1)
            elif switch == "no pair norm":
                attn.groupnorm = torch.nn.Identity()
            elif switch == "lambda_init of layer 0":
                attn.lambda_init = lambda_init(0)
    return model


@pytest.mark.parametrize("switch", ["lambda 0", "no pair norm",
                                    "lambda_init of layer 0"])
def test_switching_a_piece_off_in_hugging_face_changes_its_logits(reference,
                                                                   switch):
    model, _, _ = reference
    ids = np.random.default_rng(4).integers(0, VOCAB, size=(1, 15))
    off = _switched(build(DiffLlamaForCausalLM, diffllama(), seed=9), switch)
    assert relative(hf_logits(off, ids), hf_logits(model, ids)) > 1e-3


def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding():
    swapped = build(DiffLlamaForCausalLM, diffllama(), seed=3)
    shipped = build(DiffLlamaForCausalLM, diffllama(), seed=3, float64=False)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 20))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    gap = relative(as_shipped, hf_logits(swapped, ids))
    assert 1e-9 < gap < 1e-5


def test_unimplemented_settings_are_refused_and_lambdas_init_is_inert():
    config = diffllama(hidden_act="gelu")
    with pytest.raises(ValueError, match="hidden_act = 'gelu'"):
        config_from_hf(config)
    assert config_from_hf(diffllama(lambda_std_dev=0.3)).arch == "diffllama"


@pytest.mark.parametrize("kw, match", [
    (dict(n_kv_heads=1), "n_kv_heads must be even, got 1"),
    (dict(attn_sinks=True), r"diffllama has none of \['attn_sinks'\]"),
    (dict(qk_norm="head"), r"diffllama has none of \['qk_norm'\]"),
])
def test_bad_diffllama_configs_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**({"arch": "diffllama", "vocab_size": 11, "d_model": 8,
                        "n_layers": 2, "n_heads": 4, "n_kv_heads": 2} | kw))


def test_dropout_and_mismatched_lambdas_are_named(reference):
    _, params, config = reference
    p = block_params(params, 0)
    x = np.zeros((1, 3, config.d_model))
    with pytest.raises(ValueError, match="pass dropout=None"):
        differential_mixer(x, p, config, np.arange(3), layer=0,
                           dropout=np.ones((1, 8, 3, 3)))
    bad = p | {"attn.lambda_k2": np.zeros(5)}
    with pytest.raises(ValueError, match=r"\(4,\), \(4,\), \(4,\), \(5,\)"):
        differential_lambda(bad, 0)
