"""Chapter 12's whole DeepSeek-V4 model against Hugging Face's, in float64.

A tiny random ``DeepseekV4ForCausalLM`` of odd sizes with every feature on: three
residual streams (hyper-connections, 4 Sinkhorn-Knopp iterations), a heavily compressed
layer (blocks of 5), a compressed sparse layer (blocks of 3, its indexer keeping 2
entries), a sliding layer (window 6), a hash-routed first layer, experts whose SwiGLU
clamp bites (limit 1), order-one gate biases and selection biases. It loads through
``config_from_hf`` and equals Hugging Face: logits within 1e-10 of their largest value
(``float64_hf`` swaps Hugging Face's float32 internals and moves its logits only at
float32 rounding), prefill then decode equal to one forward, cached greedy generation
token for token; with YaRN on the compressed layers' RoPE too. Switching each feature
off in Hugging Face changes its logits.
"""

import functools
from unittest import mock

import numpy as np
import pytest
import torch
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as hf_v4

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.families.hyper_connections import hyper_branch, hyper_weights
from attention.generation import generate
from attention.kv_cache import KVCache
from attention.model import forward
from attention.parameters import count_parameters
from tests.package.test_long_context_models import build, float64_hf

TOL = 1e-10
YARN = {"rope_type": "yarn", "factor": 4.0,
        "original_max_position_embeddings": 8}
VOCAB = 41
IDS = np.random.default_rng(3).integers(0, VOCAB, size=(2, 17))
SIZES = dict(
    vocab_size=VOCAB, hidden_size=24, moe_intermediate_size=10,
    num_hidden_layers=3, num_attention_heads=4, head_dim=16, q_lora_rank=6,
    num_experts_per_tok=2, n_routed_experts=5, hc_mult=3, hc_sinkhorn_iters=4,
    layer_types=["heavily_compressed_attention", "compressed_sparse_attention",
                 "sliding_attention"],
    mlp_layer_types=["hash_moe", "moe", "moe"],
    compress_rates={"compressed_sparse_attention": 3,
                    "heavily_compressed_attention": 5},
    sliding_window=6, o_groups=2, o_lora_rank=5, index_n_heads=3,
    index_head_dim=8, index_topk=2, swiglu_limit=1.0,
    partial_rotary_factor=0.25, rope_theta=1000.0, compress_rope_theta=1600.0,
    max_position_embeddings=64, bos_token_id=1, eos_token_id=None,
    pad_token_id=0)


def v4_config(**kw):
    config = DeepseekV4Config(**(SIZES | kw))
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    return config


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@functools.cache
def loaded(yarn=False):
    hf_config = v4_config(**({"rope_parameters": YARN} if yarn else {}))
    model = build(DeepseekV4ForCausalLM, hf_config, 0)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():  # the buffers and gate biases `build` leaves at 0
        for name, b in model.named_buffers():
            if name.endswith("tid2eid"):  # two distinct experts per token
                b.copy_(torch.stack([torch.randperm(5, generator=gen)[:2]
                                     for _ in range(VOCAB)]))
            elif name.endswith("e_score_correction_bias"):
                b.normal_(0.0, 0.5, generator=gen)
        for name, p in model.named_parameters():
            if name.endswith("position_bias"):
                p.normal_(generator=gen)
    config = config_from_hf(hf_config)
    params = from_hf_state_dict(
        {k: v.detach().numpy() for k, v in model.state_dict().items()},
        config)
    return model, config, params


def hf_logits(model, ids=IDS):
    with torch.no_grad(), float64_hf():
        return model(torch.tensor(ids)).logits.numpy()


@functools.cache
def hf_reference():
    return hf_logits(loaded()[0])


def test_whole_model_equals_hugging_face():
    model, config, params = loaded()
    assert config.linear.kinds == ("hca", "csa", "sliding")
    assert config.linear.hashed == (True, False, False)
    ref = hf_reference()
    assert rel(forward(params, config, IDS), ref) < TOL
    with torch.no_grad():  # float32 inside, nothing more
        as_is = model(torch.tensor(IDS)).logits.numpy()
    assert 1e-10 < rel(as_is, ref) < 1e-5
    # the hash table and the selection biases are buffers there
    hf_count = sum(t.numel() for t in model.state_dict().values())
    assert count_parameters(config)["total"] == hf_count


def test_a_yarn_scaled_compressed_rope_equals_hugging_face():
    # DeepSeek-V4's released configurations stretch the compressed layers'
    # RoPE with YaRN (Hugging Face then fixes its attention factor at 1)
    model, config, params = loaded(yarn=True)
    assert config.linear.compress_scaling.rope_type == "yarn"
    ref = hf_logits(model)
    assert rel(forward(params, config, IDS), ref) < TOL
    assert rel(ref, hf_reference()) > 1e-3


def test_prefill_then_decode_equals_one_forward():
    _, config, params = loaded()
    whole = forward(params, config, IDS)
    cache = KVCache(config.n_layers, window=config.sliding_window)
    steps = [forward(params, config, IDS[:, :7], cache=cache)]
    steps += [forward(params, config, IDS[:, t:t + 1], cache=cache)
              for t in range(7, IDS.shape[1])]
    assert rel(np.concatenate(steps, axis=1), whole) < 1e-12
    # a window of 5 keys per layer (the key is the value), 17 // 5 HCA
    # entries, 17 // 3 CSA entries and as many indexer keys, and the
    # tokens of the unfinished blocks (CSA: and the last whole block)
    assert [k.shape for k in cache.keys] == [(2, 1, 5, 16)] * 3
    assert cache.values[0].shape == (2, 1, 5, 0)
    hca, csa = cache.states[0]["compress"], cache.states[1]
    assert hca["entries"].shape == (2, 3, 16) and hca["kv"].shape[1] == 2
    assert csa["compress"]["entries"].shape == (2, 5, 16)
    assert csa["index"]["entries"].shape == (2, 5, 8)
    assert csa["compress"]["kv"].shape[1] == 3 + 2
    assert cache.states[2] is None  # a sliding layer compresses nothing


def test_cached_greedy_generation_equals_hugging_face():
    model, config, params = loaded()
    prompt = IDS[:, :4]
    with torch.no_grad(), float64_hf():
        ref = model.generate(torch.tensor(prompt), max_new_tokens=14,
                             do_sample=False).numpy()
    np.testing.assert_array_equal(
        generate(params, config, prompt, max_new_tokens=14), ref)


def _no_entries(self, hidden_states, *args):
    entries, bias = HCA_FORWARD(self, hidden_states, *args)
    return entries[:, :, :0], None if bias is None else bias[..., :0]


HCA_FORWARD = hf_v4.DeepseekV4HCACompressor.forward


def _plain_residual(self, streams):
    post, comb, collapsed = HC_FORWARD(self, streams)
    return post, torch.eye(comb.shape[-1], dtype=comb.dtype).expand_as(
        comb), collapsed


HC_FORWARD = hf_v4.DeepseekV4HyperConnection.forward


@pytest.mark.parametrize("switch", [
    # the HCA layer reads no compressed entry
    lambda m: mock.patch.object(hf_v4.DeepseekV4HCACompressor, "forward",
                                _no_entries),
    # the indexer keeps every entry
    lambda m: mock.patch.object(m.model.layers[1].self_attn.compressor.indexer,
                                "index_topk", 100),
    # the streams pass unmixed (comb = identity)
    lambda m: mock.patch.object(hf_v4.DeepseekV4HyperConnection, "forward",
                                _plain_residual),
    # the hashed layer routes each token by the next id's row
    lambda m: mock.patch.object(
        m.model.layers[0].mlp.gate, "tid2eid",
        m.model.layers[0].mlp.gate.tid2eid.roll(1, 0)),
    # the SwiGLU unclamped
    lambda m: mock.patch.object(m.model.layers[1].mlp.experts, "limit", 1e9),
], ids=["hca_entries", "csa_selection", "stream_mixing", "hash_routing",
        "swiglu_clamp"])
def test_each_feature_changes_hugging_faces_logits(switch):
    model = loaded()[0]
    with switch(model):
        off = hf_logits(model)
    assert rel(off, hf_reference()) > 1e-3


@pytest.mark.parametrize("kw, match", [
    (dict(rope_parameters={"rope_type": "linear", "factor": 4.0}),
     r"rope_parameters\['compress'\] = .* is not implemented \(only "
     r"default or yarn RoPE\)"),
    (dict(rope_parameters={
        "main": {"rope_type": "default", "rope_theta": 1e3,
                 "partial_rotary_factor": 0.25},
        "compress": {"rope_type": "default", "rope_theta": 1e3,
                     "partial_rotary_factor": 0.5}}),
     r"partial_rotary_factor \[0.25, 0.5\] differ"),
    (dict(norm_topk_prob=False), "norm_topk_prob = False"),
    (dict(n_shared_experts=2), "n_shared_experts = 2"),
    (dict(scoring_func="softmax"), "scoring_func = 'softmax'"),
])
def test_what_is_not_implemented_is_refused_by_name(kw, match):
    with pytest.raises(ValueError, match=match):
        config_from_hf(v4_config(**kw))


def test_padding_and_a_float_hash_table_are_refused_by_name():
    _, config, params = loaded()
    valid = np.ones(IDS.shape, bool)
    valid[0, 0] = False
    with pytest.raises(ValueError, match="padding .* is not implemented"):
        forward(params, config, IDS, valid=valid)
    floats = params | {"blocks.0.mlp.router.hash":
                       params["blocks.0.mlp.router.hash"].astype(float)}
    with pytest.raises(ValueError, match="integer expert ids"):
        forward(floats, config, IDS)


def test_sinkhorn_makes_the_stream_mix_doubly_stochastic():
    rng = np.random.default_rng(4)
    streams = rng.normal(size=(2, 5, 3, 8))
    p = {"fn": 0.2 * rng.normal(size=(24, 15)), "base": rng.normal(size=15),
         "scale": np.ones(3)}
    one, many = (hyper_weights(streams, p, iters=k, hc_eps=1e-6, eps=1e-6)[2]
                 for k in (1, 20))
    assert np.abs(one.sum(axis=-2) - 1).max() < 1e-5  # columns only
    assert np.abs(one.sum(axis=-1) - 1).max() > 0.1
    assert np.abs(many.sum(axis=-1) - 1).max() < 1e-5  # and rows
    with pytest.raises(ValueError, match=r"streams must be \(batch, n, N, "
                                         r"d\), got shape \(5, 3, 8\)"):
        hyper_branch(streams[0], p, lambda h: h, iters=1, hc_eps=0, eps=0)


def test_the_published_configuration_loads():
    # DeepSeek-V4-Flash's defaults in transformers 5.23: 43 layers, two
    # heavily compressed then alternating, three hashed, 4 streams
    config = config_from_hf(DeepseekV4Config())
    s = config.linear
    assert s.kinds[:4] == ("hca", "hca", "hca", "csa") and sum(s.hashed) == 3
    assert (s.m_csa, s.m_hca, s.hc_mult, config.sliding_window) == (
        4, 128, 4, 128)
