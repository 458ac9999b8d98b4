"""Chapter 12's DeepSeek-V3.2 (DeepSeek Sparse Attention) against Hugging Face, float64.

A tiny random ``DeepseekV32ForCausalLM`` of odd sizes with every feature on: MLA with
low-rank queries, a lightning indexer of 7 heads of size 8 choosing 5 keys per query
(sequences of up to 23 tokens, so the choice matters), DeepSeek-V3's mixture of experts
(sigmoid routing with a random selection bias, groups, shared experts) after one dense
layer, and YaRN with mscale_all_dim. Hugging Face's float32 internals (RMSNorm, RoPE, the
indexer's ``.float()`` scores and weights, the router) are swapped for float64
(``float64_hf``). Logits <= 1e-10 relative to their largest value; greedy generation with
the cache equal token for token; prefill + decode equal to one forward. Hugging Face's
``topk`` orders ties as it likes: the inputs here have no tie at the k-th key (checked).
"""

import dataclasses

import numpy as np
import pytest
import torch
from transformers import (DeepseekV3Config, DeepseekV32Config,
                          DeepseekV32ForCausalLM, GlmMoeDsaConfig,
                          GlmMoeDsaForCausalLM)

from attention.checkpoints import config_from_hf
from attention.generation import generate
from attention.kv_cache import KVCache
from attention.model import block_params, forward
from attention.norms import rms_norm
from attention.sparse.indexer import (Indexer, index_scores, indexer_inputs,
                                      top_k_keys)
from attention.masks import causal_mask
from tests.package.test_families import COMMON, VOCAB
from tests.package.test_long_context_models import (build, hf_greedy,
                                                    hf_logits, ours, relative)

TOL = 1e-10
YARN = {"rope_theta": 1000.0, "rope_type": "yarn", "factor": 4.0,
        "original_max_position_embeddings": 16, "mscale": 0.8,
        "mscale_all_dim": 0.7, "beta_fast": 32.0, "beta_slow": 1.0}


def deepseek_v32(cls=DeepseekV32Config, **kw):
    config = cls(**(COMMON | dict(
        hidden_size=30, intermediate_size=44, moe_intermediate_size=9,
        num_attention_heads=5, num_key_value_heads=5, num_hidden_layers=2,
        first_k_dense_replace=1, q_lora_rank=6, kv_lora_rank=7,
        qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=5,
        n_routed_experts=6, num_experts_per_tok=3, n_group=3, topk_group=2,
        n_shared_experts=2, routed_scaling_factor=2.5, index_n_heads=7,
        index_head_dim=8, index_topk=5, rope_parameters=YARN) | kw))
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"  # float64 experts
    return config


def randomised_bias(model, seed=7):
    """DeepSeek's selection bias is a buffer (zeros): draw it."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in model.model.layers:
            gate = getattr(layer.mlp, "gate", None)
            if gate is not None:
                bias = gate.e_score_correction_bias
                bias.copy_(0.3 * torch.randn(bias.shape, generator=gen,
                                             dtype=bias.dtype))
    return model


@pytest.fixture(scope="module")
def reference():
    model = randomised_bias(build(DeepseekV32ForCausalLM, deepseek_v32(),
                                  seed=32))
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_the_indexer(reference):
    _, _, config = reference
    assert config.indexer == Indexer(n_heads=7, head_dim=8, top_k=5)
    assert config.rope_layout == "interleaved"  # MLA's; the indexer: halves
    assert config.moe.first_dense == 1


def index_scores_per_layer(params, config, ids):
    """Each layer's indexer scores (batch, n, n), from our own forward."""
    trace = {}
    forward(params, config, ids, trace=trace)
    n = ids.shape[-1]
    out = []
    for i in range(config.n_layers):
        p, h = block_params(params, i), trace[f"blocks.{i}.norm1"]
        c_q = rms_norm(h @ p["attn.W_dq"], p["attn.dq_norm.weight"],
                       eps=config.norm_eps)
        q, w, k = indexer_inputs(h, c_q, p, config, np.arange(n))
        out.append(index_scores(q, w, k))
    return out


def test_the_inputs_have_no_tie_at_the_k_th_key(reference):
    _, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    k = config.indexer.top_k
    for scores in index_scores_per_layer(params, config, ids):
        for s in range(k, ids.shape[-1]):  # rows with more than k keys
            row = np.sort(scores[:, s, :s + 1], axis=-1)[:, ::-1]
            assert np.all(row[:, k - 1] != row[:, k])


def test_logits_equal_hugging_face(reference):
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_the_indexer_changes_hugging_face_logits(reference):
    """Sensitivity: with index_topk past the sequence Hugging Face attends
    to every key (plain MLA), and its logits move; so do ours, alike."""
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    sparse = hf_logits(model, ids)
    indexers = [layer.self_attn.indexer for layer in model.model.layers]
    for ix in indexers:
        ix.index_topk = 64
    try:
        dense = hf_logits(model, ids)
    finally:
        for ix in indexers:
            ix.index_topk = 5
    assert relative(sparse, dense) > 1e-2
    everything = dataclasses.replace(config, indexer=Indexer(7, 8, 64))
    assert relative(forward(params, everything, ids), dense) <= TOL


def test_cached_greedy_generation_equals_hugging_face(reference):
    """Both with their caches (the uncached path is the forward above)."""
    model, params, config = reference
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    new = 14  # 18 tokens: each later query chooses 5 of up to 18 keys
    theirs = hf_greedy(model, prompt, new, True)
    mine = generate(params, config, prompt, max_new_tokens=new)
    assert np.array_equal(mine, theirs)


def test_prefill_then_decode_equals_one_forward(reference):
    _, params, config = reference
    ids = np.random.default_rng(6).integers(0, VOCAB, size=(2, 17))
    full = forward(params, config, ids)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, ids[:, :6], cache=cache)]
    steps += [forward(params, config, ids[:, i:i + 1], cache=cache)
              for i in range(6, 17)]  # absorbed MLA, one token at a time
    assert relative(np.concatenate(steps, axis=1), full) <= TOL
    # per token and layer: latent 7, then rotated key 4 + indexer key 8
    assert cache.keys[0].shape == (2, 1, 17, 7)
    assert cache.values[0].shape == (2, 1, 17, 4 + 8)


def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding():
    config = deepseek_v32()
    swapped = randomised_bias(build(DeepseekV32ForCausalLM, config, seed=3))
    shipped = randomised_bias(build(DeepseekV32ForCausalLM, config, seed=3,
                                    float64=False))
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 20))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    gap = relative(as_shipped, hf_logits(swapped, ids))
    assert 1e-9 < gap < 1e-5


@pytest.mark.parametrize("kw, match", [
    (dict(mlp_layer_types=["sparse", "dense"]), "mlp_layer_types"),
    (dict(layer_types=["indexed_attention", "full_attention"]),
     "layer_types"),
    (dict(mlp_bias=True), "mlp_bias = True"),
    (dict(attention_bias=True), "attention_bias = True"),
])
def test_settings_the_package_cannot_reproduce_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        config_from_hf(deepseek_v32(**kw))


def test_the_ranking_keeps_the_causal_mask():
    scores = np.arange(16.0).reshape(1, 4, 4)  # later keys score higher
    indices, kept = top_k_keys(scores, 2, causal_mask(4, 4))
    assert indices[0].tolist() == [[0, 1], [1, 0], [2, 1], [3, 2]]
    assert kept[0].tolist() == [[True, False]] + [[True, True]] * 3


def test_left_padding_changes_no_real_token(reference):
    """<pad> keys are never chosen: a left-padded row computes what the
    sequence computes alone (the selection sees the padding mask)."""
    _, params, config = reference
    ids = np.random.default_rng(8).integers(2, VOCAB, size=(1, 15))
    padded = np.concatenate([np.zeros((1, 4), ids.dtype), ids], axis=1)
    valid = np.arange(19)[None] >= 4
    alone = forward(params, config, ids)
    together = forward(params, config, padded, valid=valid)
    assert relative(together[:, 4:], alone) <= 1e-12


def test_serving_from_paged_blocks_equals_hugging_face(reference):
    """serve() keeps the latent and the indexer's keys in blocks (chapter 11):
    three requests of different lengths, two at a time, get Hugging Face's
    greedy tokens."""
    from attention.serving.batching import Request, serve
    model, params, config = reference
    rng = np.random.default_rng(7)
    batch = [Request(arrival, rng.integers(2, VOCAB, n), new)
             for arrival, n, new in ((0, 4, 12), (1, 7, 6), (2, 3, 9))]
    serve(params, config, batch, max_batch=2, n_blocks=12, block_size=4)
    for r in batch:
        theirs = hf_greedy(model, r.prompt[None], r.max_new_tokens, True)[0]
        assert r.tokens == theirs[len(r.prompt):].tolist()


MLA_SIZES = dict(vocab_size=61, d_model=30, n_layers=1, n_heads=5, d_ff=44,
                 kv_lora_rank=7, qk_rope_head_dim=4, qk_nope_head_dim=6,
                 v_head_dim=5)


@pytest.mark.parametrize("kw, match", [
    (dict(arch="deepseek_v3", q_lora_rank=6, indexer=Indexer(3, 8, 5)),
     "indexer .* is for arch='deepseek_v32', not 'deepseek_v3'"),
    (dict(arch="deepseek_v32", indexer=Indexer(3, 8, 5)),
     "q_lora_rank must be set"),
    (dict(arch="deepseek_v32", q_lora_rank=6), "needs indexer=Indexer"),
    (dict(arch="deepseek_v32", q_lora_rank=6, indexer=Indexer(3, 2, 5)),
     "indexer.head_dim must be at least that, got 2"),
])
def test_inconsistent_indexer_settings_are_named(kw, match):
    from attention.model import ModelConfig
    with pytest.raises(ValueError, match=match):
        ModelConfig(**MLA_SIZES, **kw)


@pytest.fixture(scope="module")
def glm():
    """GLM-5's design (glm_moe_dsa): the indexer rotates interleaved pairs;
    every layer runs its own indexer (indexer_types "full")."""
    model = randomised_bias(build(GlmMoeDsaForCausalLM, deepseek_v32(
        GlmMoeDsaConfig, rms_norm_eps=1e-6), seed=5))  # its default: 1e-5
    params, config = ours(model)
    return model, params, config


def test_glm_moe_dsa_equals_hugging_face(glm):
    model, params, config = glm
    assert config.arch == "deepseek_v32"
    assert config.indexer.rope_layout == "interleaved"
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    theirs = hf_logits(model, ids)
    assert relative(forward(params, config, ids), theirs) <= TOL
    halves = dataclasses.replace(config, indexer=dataclasses.replace(
        config.indexer, rope_layout="halves"))  # DeepSeek-V3.2's layout
    assert relative(forward(params, halves, ids), theirs) > 1e-3
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    assert np.array_equal(generate(params, config, prompt, max_new_tokens=10),
                          hf_greedy(model, prompt, 10, True))


def test_glm_layers_that_share_a_choice_are_refused():
    with pytest.raises(ValueError, match="indexer_types"):
        config_from_hf(deepseek_v32(GlmMoeDsaConfig, rms_norm_eps=1e-6,
                                    indexer_types=["full", "shared"]))


@pytest.mark.parametrize("cls", [DeepseekV3Config, DeepseekV32Config,
                                 GlmMoeDsaConfig])
def test_an_eps_the_latent_norms_do_not_share_is_refused(cls):
    """Hugging Face's MLA norms keep eps 1e-6 whatever rms_norm_eps says
    (GLM-5's default is 1e-5): a converter reading it for every norm was
    off by about 1e-5 of the largest logit; it refuses it now."""
    kw = dict(num_mtp_layers=0) if cls is DeepseekV3Config else {}
    with pytest.raises(ValueError, match=r"rms_norm_eps = 1e-05 is not "
                                         r"implemented; implemented: 1e-06"):
        config_from_hf(deepseek_v32(cls, rms_norm_eps=1e-5, **kw))
