"""Chapter 12's hybrid models against Hugging Face, float64, through ``config_from_hf``:
whole Qwen3-Next (Gated DeltaNet and gated attention layers, a mixture of experts with a
gated shared expert) and Qwen3.5 text models (the same layers, DeltaNet projections
apart; a dense SwiGLU, or Qwen3-Next's experts in Qwen3.5-MoE), tiny and odd-sized,
built offline.

Each layer's token mixer comes from ``layer_types``: the "linear" layers keep a
recurrent state in the cache beside the "full" layers' keys and values. Hugging Face
computes norms, the decay, the delta rule, the softmaxes and the router in float32
inside a float64 model; ``float64_hf`` runs the same formulas in float64, and moves
Hugging Face's logits only at float32 rounding. Logits within 1e-10 of their largest
value; greedy generation with the cache equals Hugging Face's ``generate`` token for
token (a left-padded batch too); prefill then decode equals one full forward; switching
Hugging Face's output gate off changes its logits, and equals ours with the gate off.
"""

import dataclasses
import functools
from unittest import mock

import numpy as np
import pytest
import torch
from transformers import Qwen3_5MoeTextConfig, Qwen3_5TextConfig, Qwen3NextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5ForCausalLM
from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import (
    Qwen3_5MoeForCausalLM)
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextForCausalLM)

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.families.moe import MoE
from attention.families.moe_costs import cache_bytes_per_token
from attention.generation import generate, left_pad
from attention.kv_cache import KVCache
from attention.model import ModelConfig, forward
from attention.parameters import count_parameters
from attention.sparse.gated_output import output_gate, sigmoid
from tests.package.test_long_context_models import build, float64_hf

TOL = 1e-10
VOCAB = 41
SIZES = dict(
    hidden_size=24, intermediate_size=20, num_hidden_layers=3,
    num_attention_heads=3, num_key_value_heads=1, head_dim=8,
    layer_types=["linear_attention", "full_attention", "linear_attention"],
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=5,
    linear_value_head_dim=3, linear_conv_kernel_dim=3, vocab_size=VOCAB,
    max_position_embeddings=64, bos_token_id=1, eos_token_id=None,
    pad_token_id=0)
ROPE = {"rope_type": "default", "rope_theta": 1000.0,
        "partial_rotary_factor": 0.5}


def qwen3_next_config(**kw):
    config = Qwen3NextConfig(**(SIZES | dict(
        num_experts=5, num_experts_per_tok=2, moe_intermediate_size=7,
        shared_expert_intermediate_size=9) | kw), rope_parameters=ROPE)
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    return config


def qwen3_5_config(**kw):
    config = Qwen3_5TextConfig(**(SIZES | kw), rope_parameters=ROPE | {
        "mrope_section": [1, 1, 0], "mrope_interleaved": True})
    config._attn_implementation = "eager"
    return config


@functools.cache
def qwen3_5_moe_config(**kw):
    sizes = {k: v for k, v in SIZES.items() if k != "intermediate_size"}
    config = Qwen3_5MoeTextConfig(**(sizes | dict(
        num_experts=5, num_experts_per_tok=2, moe_intermediate_size=7,
        shared_expert_intermediate_size=9) | kw), rope_parameters=ROPE | {
        "mrope_section": [1, 1, 0], "mrope_interleaved": True})
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    return config


def load(name):
    """Hugging Face's model, our config and our parameters, built once."""
    cls, hf_config = {
        "qwen3_next": (Qwen3NextForCausalLM, qwen3_next_config),
        "qwen3_5": (Qwen3_5ForCausalLM, qwen3_5_config),
        "qwen3_5_moe": (Qwen3_5MoeForCausalLM, qwen3_5_moe_config)}[name]
    hf_config = hf_config()
    model = build(cls, hf_config, 0)
    config = config_from_hf(hf_config)
    params = from_hf_state_dict(
        {k: v.detach().numpy() for k, v in model.state_dict().items()},
        config)
    return model, config, params


@pytest.fixture(scope="module", params=["qwen3_next", "qwen3_5", "qwen3_5_moe"])
def hybrid(request):
    return load(request.param)


IDS = np.random.default_rng(3).integers(0, VOCAB, size=(2, 13))


def hf_logits(model, ids, **kw):
    with torch.no_grad(), float64_hf():
        return model(torch.tensor(ids), **kw).logits.numpy()


@functools.cache
def hf_reference(model):
    """Hugging Face's float64 logits on IDS, computed once per model."""
    return hf_logits(model, IDS)


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def test_whole_model_equals_hugging_face(hybrid):
    model, config, params = hybrid
    assert config.layer_types == ("linear", "full", "linear")
    assert config.rope_fraction == 0.5 and config.attn_gate
    ref = hf_reference(model)
    assert rel(forward(params, config, IDS), ref) < TOL
    with torch.no_grad():  # float32 inside, nothing more: its rounding,
        as_is = model(torch.tensor(IDS)).logits.numpy()  # through 3 layers
    assert 1e-10 < rel(as_is, ref) < 1e-4
    hf_count = sum(p.numel() for p in model.parameters())
    assert count_parameters(config)["total"] == hf_count


def test_cached_greedy_generation_equals_hugging_face(hybrid):
    # a batch of a whole prompt and a left-padded one: the linear layers read
    # a <pad> as zeros, so it writes nothing into their states
    model, config, params = hybrid
    ids, valid = left_pad([IDS[0, :6], IDS[1, :3]])
    with torch.no_grad(), float64_hf():
        ref = model.generate(torch.tensor(ids), max_new_tokens=5,
                             attention_mask=torch.tensor(valid.astype(int)),
                             do_sample=False).numpy()
    np.testing.assert_array_equal(
        generate(params, config, ids, valid=valid, max_new_tokens=5), ref)


def test_prefill_then_decode_equals_one_forward(hybrid):
    _, config, params = hybrid
    whole = forward(params, config, IDS)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, IDS[:, :7], cache=cache)]
    steps += [forward(params, config, IDS[:, t:t + 1], cache=cache)
              for t in range(7, IDS.shape[1])]
    assert rel(np.concatenate(steps, axis=1), whole) < 1e-12
    # the linear layers kept a state, the full layer keys and values
    assert cache.keys[0] is None and cache.keys[1].shape == (2, 1, 13, 8)
    assert cache.states[0].recurrent.shape == (2, 4, 5, 3)
    assert cache.states[1] is None
    with pytest.raises(ValueError, match="recurrent layer's state"):
        cache.crop(5)


def test_switching_the_output_gate_off_changes_the_logits(hybrid):
    # Hugging Face's gate is torch.sigmoid in its attention (the DeltaNet
    # and the shared expert call Tensor.sigmoid and F.sigmoid): make it 1.
    model, config, params = hybrid
    with mock.patch.object(torch, "sigmoid", torch.ones_like):
        off = hf_logits(model, IDS)
    assert rel(off, hf_reference(model)) > 1e-2
    ungated = dataclasses.replace(config, attn_gate=False)
    kept = {k: v for k, v in params.items() if not k.endswith("attn.W_gate")}
    assert rel(forward(kept, ungated, IDS), off) < TOL


def test_switching_the_shared_expert_gate_off_changes_the_logits():
    model, config, params = load("qwen3_next")
    with mock.patch("torch.nn.functional.sigmoid", torch.ones_like):
        off = hf_logits(model, IDS)
    assert rel(off, hf_reference(model)) > 1e-3
    moe = dataclasses.replace(config.moe, shared_gate=False)
    kept = {k: v for k, v in params.items()
            if not k.endswith("mlp.shared.gate")}
    ungated = dataclasses.replace(config, moe=moe)
    assert rel(forward(kept, ungated, IDS), off) < TOL


def test_output_gate_taught_simple():
    rng = np.random.default_rng(0)
    x, W = rng.normal(size=(4, 6)), rng.normal(size=(6, 10))
    heads = rng.normal(size=(4, 10))
    gated = output_gate(heads, x, W)
    assert np.allclose(gated, heads / (1 + np.exp(-x @ W)), rtol=1e-15)
    assert (np.abs(gated) < np.abs(heads)).all()  # a gate only shrinks
    assert sigmoid(np.array(-1e4)) == 0.0
    with pytest.raises(ValueError, match=r"output_gate: heads .* got heads "
                                         r"\(4, 9\), x \(4, 6\), W_gate"):
        output_gate(heads[:, :9], x, W)


@pytest.mark.parametrize("cls, fields, message", [
    (qwen3_next_config, dict(decoder_sparse_step=2), "decoder_sparse_step"),
    (qwen3_next_config, dict(mlp_only_layers=[1]), "mlp_only_layers"),
    (qwen3_next_config, dict(hidden_act="gelu"), "hidden_act"),
    (qwen3_5_config, dict(attention_bias=True), "attention_bias"),
    (qwen3_5_config, dict(layer_types=["linear_attention", "full_attention",
                                       "sliding_attention"]),
     r"layer_types \['sliding_attention'\] are not implemented"),
])
def test_what_is_not_implemented_is_refused_by_name(cls, fields, message):
    with pytest.raises(ValueError, match=message):
        config_from_hf(cls(**fields))


def test_a_family_without_a_recurrent_mixer_refuses_linear_layers():
    with pytest.raises(ValueError, match="layer 1 is 'linear' in layer_types,"
                                         " but the 'llama' family runs a "
                                         "'attention' mixer there"):
        ModelConfig(arch="llama", n_layers=2, layer_types=("full", "linear"))
    with pytest.raises(ValueError, match="linear layers need linear = a "
                                         "GatedDeltaNetConfig"):
        ModelConfig(arch="qwen3_next", n_layers=1, layer_types=("linear",))


@pytest.mark.parametrize("fields, message", [
    (dict(rope_fraction=0.0), r"rope_fraction must be in \(0, 1\]"),
    (dict(rope_fraction=0.3, head_dim=10), "an even number"),
    (dict(attn_gate=1), "attn_gate must be True or False"),
])
def test_bad_chapter_12_fields_are_refused_by_name(fields, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(arch="llama", **fields)


@pytest.mark.parametrize("fields, message", [
    (dict(d_shared=9), "d_shared must be None or, with shared experts"),
    (dict(shared_gate=True), "shared_gate gates the shared experts"),
])
def test_bad_shared_expert_fields_are_refused_by_name(fields, message):
    with pytest.raises(ValueError, match=message):
        MoE(4, 2, 8, **fields)


def test_only_the_attention_layers_add_cache_bytes_per_token(hybrid):
    # regression: every layer was counted as if it kept keys and values
    _, config, _ = hybrid
    per_layer = 2 * config.n_kv_heads * config.d_head * 2  # K and V, bf16
    assert cache_bytes_per_token(config) == per_layer  # one "full" layer of 3


class NoStates:
    """A cache of the right interface that keeps no recurrent states."""
    window, n_sinks, n_real = None, 0, 0

    def update(self, *args):
        raise AssertionError("not reached")

    advance = new_positions = update


def test_a_cache_without_states_is_refused_by_name(hybrid):
    _, config, params = hybrid
    with pytest.raises(TypeError, match="a NoStates keeps no recurrent states"):
        forward(params, config, IDS, cache=NoStates())
