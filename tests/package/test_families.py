"""Chapter 9's families against Hugging Face, float64, through the chapter-3 converter:
Qwen3 (QK-norm per head, a head size of its own) and Gemma 2 (soft-capped scores and
logits, query_pre_attn_scalar, (1 + weight) RMSNorm before and after each branch,
GeGLU, sqrt(d_model) embeddings, alternating sliding windows), Mistral with a head_dim
that is not hidden / heads, and OLMo 2's QK-norm over the whole projection at the layer
level.

Hugging Face's float32 internals are swapped for float64 as in chapter 8
(``float64_hf``, ``Tensor.float()`` included: Gemma 2's RMSNorm calls it); a test shows
that the swap moves Gemma 2's logits only at float32 rounding. Eager attention
throughout: Gemma 2 soft-caps only there. Logits <= 1e-10 relative to their largest value, generated tokens
equal, cached decoding equal to the full forward.
"""

import dataclasses

import numpy as np
import pytest
import torch
from transformers import (Gemma2Config, Gemma2ForCausalLM, MistralConfig,
                          MistralForCausalLM, Olmo2Config, Qwen3Config,
                          Qwen3ForCausalLM)
from transformers.models.olmo2.modeling_olmo2 import (Olmo2Attention,
                                                      Olmo2RotaryEmbedding)

from attention.blocks import attention_layer
from attention.checkpoints import config_from_hf
from attention.generation import generate
from attention.kv_cache import KVCache
from attention.model import ModelConfig, forward
from tests.package.test_long_context_models import (build, float64_hf,
                                                    hf_greedy, hf_logits, ours,
                                                    randomise, relative)

TOL = 1e-10
VOCAB = 67
COMMON = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=None,
              pad_token_id=0, max_position_embeddings=64)


def qwen3():
    # head_dim 8 with hidden 30 and 5 heads: q is 40 wide, not 30
    return Qwen3Config(**COMMON, hidden_size=30, intermediate_size=44,
                       num_attention_heads=5, num_key_value_heads=1,
                       head_dim=8, num_hidden_layers=2,
                       rope_parameters={"rope_theta": 1000.0,
                                        "rope_type": "default"})


def gemma2(**kw):
    # head_dim 8 != 30 / 5; caps small enough to bend order-one scores
    return Gemma2Config(**(COMMON | dict(
        hidden_size=30, intermediate_size=44, num_attention_heads=5,
        num_key_value_heads=1, head_dim=8, num_hidden_layers=3,
        query_pre_attn_scalar=12, attn_logit_softcapping=1.5,
        final_logit_softcapping=2.5, sliding_window=4,
        rope_parameters={"rope_theta": 1000.0, "rope_type": "default"}) | kw))


def mistral():
    # Mistral with head_dim 8 != 30 / 5, as Hugging Face's Mistral honours
    return MistralConfig(**COMMON, hidden_size=30, intermediate_size=44,
                         num_attention_heads=5, num_key_value_heads=1,
                         head_dim=8, num_hidden_layers=2, sliding_window=4,
                         rope_parameters={"rope_theta": 1000.0,
                                          "rope_type": "default"})


MODELS = {"qwen3": (Qwen3ForCausalLM, qwen3),
          "gemma2": (Gemma2ForCausalLM, gemma2),
          "mistral head_dim": (MistralForCausalLM, mistral)}


def eager(config):
    config._attn_implementation = "eager"  # soft-capping is eager-only
    return config


@pytest.fixture(scope="module", params=list(MODELS))
def reference(request):
    cls, make = MODELS[request.param]
    model = build(cls, eager(make()), seed=len(request.param))
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_each_family_setting(reference):
    model, _, config = reference
    c = model.config
    assert config.d_head == c.head_dim != c.hidden_size // c.num_attention_heads
    if c.model_type == "qwen3":
        assert config.qk_norm == "head" and config.layer_windows == [None] * 2
    elif c.model_type == "mistral":
        assert config.qk_norm is None and config.layer_windows == [4] * 2
    else:
        assert (config.arch, config.qk_norm) == ("gemma2", None)
        assert config.attn_scale == c.query_pre_attn_scalar ** -0.5
        assert (config.attn_softcap, config.final_softcap) == (1.5, 2.5)
        assert config.layer_windows == [4, None, 4]  # local first


def test_logits_equal_hugging_face(reference):
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_the_caps_bind_in_this_test():
    """The caps are small enough to change the logits, so the equality
    above checks them."""
    model = build(Gemma2ForCausalLM, eager(gemma2()), seed=6)
    params, config = ours(model)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 12))
    capped = forward(params, config, ids)
    for field in ("attn_softcap", "final_softcap"):
        loose = dataclasses.replace(config, **{field: None})
        assert relative(forward(params, loose, ids), capped) > 1e-3
    assert np.abs(capped).max() < 2.5


def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding():
    config = eager(gemma2())
    swapped = build(Gemma2ForCausalLM, config, seed=3)
    shipped = build(Gemma2ForCausalLM, config, seed=3, float64=False)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 20))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    gap = relative(as_shipped, hf_logits(swapped, ids))
    assert 1e-9 < gap < 1e-5


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_equals_hugging_face(reference, use_cache):
    model, params, config = reference
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    new = 16  # positions 4..19: past every window
    theirs = hf_greedy(model, prompt, new, use_cache)
    mine = generate(params, config, prompt, max_new_tokens=new,
                    use_cache=use_cache)
    assert np.array_equal(mine, theirs)


def test_cached_decoding_equals_the_full_forward(reference):
    _, params, config = reference
    ids = np.random.default_rng(6).integers(0, VOCAB, size=(1, 14))
    full = forward(params, config, ids)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, ids[:, :5], cache=cache)]
    steps += [forward(params, config, ids[:, i:i + 1], cache=cache)
              for i in range(5, 14)]
    assert relative(np.concatenate(steps, axis=1), full) <= TOL


def test_olmo2_qk_norm_over_the_whole_projection_equals_hugging_face():
    hf = Olmo2Config(hidden_size=30, intermediate_size=44, num_attention_heads=5,
                     num_key_value_heads=1, num_hidden_layers=1,
                     vocab_size=VOCAB, max_position_embeddings=64,
                     rope_parameters={"rope_theta": 1000.0,
                                      "rope_type": "default"})
    eager(hf)
    torch.manual_seed(0)
    with float64_hf():
        layer = Olmo2Attention(hf, layer_idx=0)
        rotary = Olmo2RotaryEmbedding(hf)
    layer = randomise(layer.double().eval(), 0)
    x = np.random.default_rng(3).normal(size=(2, 11, 30))
    n = x.shape[1]
    causal = np.triu(np.full((n, n), -np.inf), 1)
    with torch.no_grad(), float64_hf():
        pos = torch.arange(n)[None].expand(2, -1)
        cos_sin = rotary.double()(torch.from_numpy(x), pos)
        theirs, _ = layer(torch.from_numpy(x), cos_sin,
                          torch.from_numpy(causal)[None, None])
    state = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    p = {f"attn.W_{x}": state[f"{x}_proj.weight"].T for x in "qkvo"}
    p |= {f"attn.{x}_norm.weight": state[f"{x}_norm.weight"] for x in "qk"}
    assert p["attn.k_norm.weight"].shape == (6,)  # n_kv_heads * d_head
    mine = attention_layer(x, p, n_heads=5, n_kv_heads=1,
                           positions=np.arange(n), rope_base=1000.0,
                           qk_norm="projection", norm_eps=hf.rms_norm_eps)
    assert relative(mine, theirs.numpy()) <= 1e-12


@pytest.mark.parametrize("make, field, value, match", [
    (qwen3, "use_sliding_window", True, "use_sliding_window = True"),
    (qwen3, "hidden_act", "gelu", "hidden_act = 'gelu'"),
    (gemma2, "hidden_activation", "relu", "hidden_activation = 'relu'"),
    (gemma2, "attention_bias", True, "attention_bias = True"),
    (gemma2, "use_bidirectional_attention", True,
     "use_bidirectional_attention = True"),
])
def test_settings_the_package_cannot_reproduce_are_refused(make, field, value,
                                                           match):
    config = make()
    setattr(config, field, value)
    with pytest.raises(ValueError, match=match):
        config_from_hf(config)


@pytest.mark.parametrize("kw, match", [
    (dict(head_dim=0), "head_dim must be a positive integer"),
    (dict(qk_norm="layer"), "qk_norm must be one of"),
    (dict(attn_softcap=-1.0), "attn_softcap must be a positive finite"),
    (dict(final_softcap=float("inf")), "final_softcap must be a positive"),
    (dict(attn_scale="0.1"), "attn_scale must be a positive finite"),
    (dict(arch="gpt2", qk_norm="head"), r"gpt2 has none of \['qk_norm'\]"),
    (dict(head_dim=5), "RoPE needs an even d_head"),
])
def test_bad_chapter_9_fields_are_named(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ModelConfig(**({"arch": "llama", "vocab_size": 11, "d_model": 8,
                        "n_layers": 2, "n_heads": 2} | kw))


def test_the_chapter_6_backward_refuses_chapter_9_models():
    from attention.backward.model import model_backward
    config = ModelConfig(arch="gemma2", vocab_size=11, d_model=8, n_layers=1,
                         n_heads=2, attn_softcap=5.0)
    with pytest.raises(ValueError, match=r"\['attn_softcap', 'arch'\]"):
        model_backward({}, config, np.zeros(3, int), np.zeros((3, 11)), {})
