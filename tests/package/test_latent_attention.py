"""Chapter 9's multi-head latent attention against Hugging Face's DeepSeek-V3, float64.

Dense layers only (first_k_dense_replace >= num_hidden_layers; the mixture-of-experts
layers are tests/package/test_mixture_of_experts.py's), with and without
low-rank queries (q_lora_rank), with plain RoPE and with YaRN whose mscale_all_dim changes
the softmax scale. Hugging Face's float32 internals swapped for float64 as in chapter 8
(``float64_hf``). Logits <= 1e-10 relative to their largest value; the absorbed path
(W_uk folded into the queries, W_uv into W_o) equals the unabsorbed one <= 1e-12; the
latent cache holds kv_lora_rank + qk_rope_head_dim numbers per token and layer; greedy
generation with it, and serving from it paged (chapter 11), equal Hugging Face's token for
token.
"""

import dataclasses

import numpy as np
import pytest
import torch
from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

from attention.checkpoints import config_from_hf
from attention.families.mla import absorb_key, absorb_value
from attention.generation import generate
from attention.kv_cache import KVCache
from attention.model import ModelConfig, forward, init_params
from attention.serving.batching import Request, serve
from tests.package.test_families import COMMON, VOCAB, eager
from tests.package.test_long_context_models import (build, hf_greedy,
                                                    hf_logits, ours, relative)

TOL = 1e-10
ROPES = {
    "plain": {"rope_theta": 1000.0, "rope_type": "default"},
    "yarn mscale": {"rope_theta": 1000.0, "rope_type": "yarn", "factor": 4.0,
                    "original_max_position_embeddings": 16, "mscale": 0.8,
                    "mscale_all_dim": 0.7, "beta_fast": 32.0,
                    "beta_slow": 1.0},
}


def deepseek(q_lora_rank, rope="plain", **kw):
    # odd sizes: 5 heads, latent 7, rotated 4, not rotated 6, values 5
    return eager(DeepseekV3Config(**(COMMON | dict(
        hidden_size=30, intermediate_size=44, num_attention_heads=5,
        num_key_value_heads=5, num_hidden_layers=2, first_k_dense_replace=2,
        num_mtp_layers=0, q_lora_rank=q_lora_rank, kv_lora_rank=7,
        qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=5,
        rope_parameters=ROPES[rope]) | kw)))


CASES = {f"q_lora {q} {rope}": (q, rope) for q in (None, 6) for rope in ROPES}


@pytest.fixture(scope="module", params=list(CASES))
def reference(request):
    q, rope = CASES[request.param]
    model = build(DeepseekV3ForCausalLM, deepseek(q, rope), seed=len(request.param))
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_mla_and_its_softmax_scale(reference):
    model, _, config = reference
    c = model.config
    assert (config.q_lora_rank, config.kv_lora_rank) == (c.q_lora_rank, 7)
    assert config.rope_layout == "interleaved"  # rope_interleave=True
    plain = (6 + 4) ** -0.5
    if c.rope_parameters["rope_type"] == "yarn":  # mscale(4, 0.7) squared
        assert config.attn_scale == pytest.approx(
            plain * (0.07 * np.log(4.0) + 1.0) ** 2, rel=1e-15)
    else:
        assert config.attn_scale == plain


def test_logits_equal_hugging_face(reference):
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_the_default_multi_token_prediction_module_leaves_the_logits_alone():
    # DeepSeek-V3's default num_mtp_layers = 1: Hugging Face's forward never
    # runs that module, so the converted model is the same model
    mtp = DeepseekV3Config().num_mtp_layers
    assert mtp == 1
    model = build(DeepseekV3ForCausalLM, deepseek(6, num_mtp_layers=mtp),
                  seed=4)
    params, config = ours(model)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(2, 23))
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_the_absorbed_path_equals_the_unabsorbed_one(reference):
    _, params, config = reference
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(2, 19))
    always = dataclasses.replace(config, mla_absorb="always")
    never = dataclasses.replace(config, mla_absorb="never")
    assert relative(forward(params, always, ids),
                    forward(params, never, ids)) <= 1e-12


def test_absorbing_the_key_and_value_projections_keeps_every_product():
    rng = np.random.default_rng(3)
    H, r, d_nope, d_v, d = 3, 5, 4, 2, 7
    q_nope = rng.normal(size=(2, H, 6, d_nope))
    c_kv = rng.normal(size=(2, 1, 8, r))
    W_uk, W_uv = rng.normal(size=(r, H * d_nope)), rng.normal(size=(r, H * d_v))
    W_o = rng.normal(size=(H * d_v, d))
    keys = (c_kv[:, 0] @ W_uk).reshape(2, 8, H, d_nope).transpose(0, 2, 1, 3)
    assert np.allclose(absorb_key(q_nope, W_uk) @ np.swapaxes(c_kv, -1, -2),
                       q_nope @ np.swapaxes(keys, -1, -2), rtol=1e-13)
    out_latent = rng.normal(size=(2, H, 6, r))       # (batch, H, n, r)
    values = (out_latent @ W_uv.reshape(r, H, d_v).transpose(1, 0, 2))
    heads = values.transpose(0, 2, 1, 3).reshape(2, 6, H * d_v)
    latent = out_latent.transpose(0, 2, 1, 3).reshape(2, 6, H * r)
    assert np.allclose(latent @ absorb_value(W_uv, W_o, H), heads @ W_o,
                       rtol=1e-13)


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_equals_hugging_face(reference, use_cache):
    model, params, config = reference
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    new = 16  # positions 4..19: past the original 16 of YaRN
    theirs = hf_greedy(model, prompt, new, use_cache)
    mine = generate(params, config, prompt, max_new_tokens=new,
                    use_cache=use_cache)
    assert np.array_equal(mine, theirs)


def test_serving_from_paged_latent_blocks_equals_hugging_face(reference):
    """serve() keeps MLA's latent cache in blocks (chapter 11): three requests of different
    lengths, two at a time, each get Hugging Face's greedy tokens and generate's."""
    model, params, config = reference
    rng = np.random.default_rng(7)
    batch = [Request(arrival, rng.integers(2, VOCAB, n), new)
             for arrival, n, new in ((0, 4, 16), (1, 7, 9), (2, 3, 12))]
    serve(params, config, batch, max_batch=2, n_blocks=12, block_size=4)
    for r in batch:
        theirs = hf_greedy(model, r.prompt[None], r.max_new_tokens, True)[0]
        mine = generate(params, config, r.prompt, max_new_tokens=r.max_new_tokens)[0]
        assert r.tokens == theirs[len(r.prompt):].tolist() == mine[len(r.prompt):].tolist()


def test_the_latent_cache_decodes_absorbed_as_the_full_forward(reference):
    _, params, config = reference
    ids = np.random.default_rng(6).integers(0, VOCAB, size=(1, 14))
    full = forward(params, dataclasses.replace(config, mla_absorb="never"),
                   ids)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, ids[:, :5], cache=cache)]
    steps += [forward(params, config, ids[:, i:i + 1], cache=cache)
              for i in range(5, 14)]  # one token each: the absorbed path
    assert relative(np.concatenate(steps, axis=1), full) <= TOL
    # per token and layer: the latent (7) and the shared rotated key (4)
    assert cache.keys[0].shape == (1, 1, 14, 7)
    assert cache.values[0].shape == (1, 1, 14, 4)


def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding():
    config = deepseek(6, "yarn mscale")
    swapped = build(DeepseekV3ForCausalLM, config, seed=3)
    shipped = build(DeepseekV3ForCausalLM, config, seed=3, float64=False)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 20))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    gap = relative(as_shipped, hf_logits(swapped, ids))
    assert 1e-9 < gap < 1e-5


@pytest.mark.parametrize("kw, match", [
    (dict(attention_bias=True), "attention_bias = True"),
    (dict(hidden_act="gelu"), "hidden_act = 'gelu'"),
    (dict(num_key_value_heads=1), "n_kv_heads must equal n_heads"),
])
def test_settings_the_package_cannot_reproduce_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        config_from_hf(deepseek(None, **kw))


MLA = dict(arch="deepseek_v3", vocab_size=11, d_model=8, n_layers=1,
           n_heads=2, kv_lora_rank=3, qk_rope_head_dim=2, qk_nope_head_dim=2,
           v_head_dim=2)


@pytest.mark.parametrize("kw, match", [
    (dict(kv_lora_rank=None), "kv_lora_rank must be a positive integer"),
    (dict(qk_rope_head_dim=3), "even qk_rope_head_dim"),
    (dict(q_lora_rank=0), "q_lora_rank must be a positive integer"),
    (dict(mla_absorb="sometimes"), "mla_absorb must be one of"),
    (dict(head_dim=4), "head_dim, qk_norm"),
    (dict(arch="llama"), r"\['kv_lora_rank', 'qk_rope_head_dim'"),
])
def test_inconsistent_mla_sizes_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**(MLA | kw))


def test_without_attn_scale_both_forms_scale_by_the_score_size():
    config = ModelConfig(**(MLA | dict(q_lora_rank=3, kv_lora_rank=9)))
    params = init_params(config, np.random.default_rng(0), std=0.5)
    assert params["blocks.0.attn.W_dq"].shape == (8, 3)
    ids = np.arange(7)
    never = forward(params, dataclasses.replace(config, mla_absorb="never"),
                    ids)
    scaled = dataclasses.replace(config, mla_absorb="never",
                                 attn_scale=(2 + 2) ** -0.5)
    assert relative(forward(params, scaled, ids), never) <= 1e-15
    always = dataclasses.replace(config, mla_absorb="always")
    assert relative(forward(params, always, ids), never) <= 1e-12
