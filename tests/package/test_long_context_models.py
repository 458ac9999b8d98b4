"""Chapter 8's models against Hugging Face, float64, through the chapter-3 converter:
Llama with each RoPE scaling type (read past original_max_position_embeddings; linear
also as an older config.json spells it, ``rope_scaling`` with ``type``), Mistral
with a sliding window shorter than the sequence, Ministral's alternating sliding and full
layers, and gpt-oss's attention layer (biases, YaRN, window, learned sinks).

Hugging Face computes RMSNorm, the RoPE tables, the RoPE frequencies and the eager
softmax in float32 even in a float64 model. The float64 reference runs the very same
code with ``torch.float`` and ``torch.float32`` standing for float64 (``float64_hf``), so
every formula stays Hugging Face's; a test shows that this moves Hugging Face's logits
only at float32 rounding. Tiny odd sizes, no downloads: logits <= 1e-10 relative to
their largest value, generated tokens equal.
"""

import contextlib
from unittest import mock

import numpy as np
import pytest
import torch
from transformers import (
    GptOssConfig, LlamaConfig, LlamaForCausalLM, MinistralConfig,
    MinistralForCausalLM, MistralConfig, MistralForCausalLM)
from transformers.models.gpt_oss.modeling_gpt_oss import (
    GptOssAttention, GptOssRotaryEmbedding)

from attention.blocks import attention_layer
from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.generation import generate
from attention.long_context.rope_scaling import RopeScaling
from attention.model import ModelConfig, forward

TOL = 1e-10
VOCAB = 67


@contextlib.contextmanager
def float64_hf():
    """Hugging Face's float32 internals, computed in float64 (same formulas):
    torch.float and torch.float32 name float64, and so does the default dtype
    (dynamic NTK multiplies an integer tensor by a Python float); Tensor.float()
    (Gemma 2's norms call it) casts to float64."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with mock.patch.object(torch, "float", torch.float64), \
                mock.patch.object(torch, "float32", torch.float64), \
                mock.patch.object(torch.Tensor, "float",
                                  lambda t: t.to(torch.float64)):
            yield
    finally:
        torch.set_default_dtype(default)


def randomise(model, seed):
    """Order-one weights, so that a wrong piece shows in the logits."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if p.ndim == 1 and name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif p.ndim == 1:  # biases, sinks
                p.copy_(0.5 * noise)
            else:
                p.copy_(noise / p.shape[-1] ** 0.5)
    return model


SMALL = dict(hidden_size=30, intermediate_size=44, num_attention_heads=5,
             num_key_value_heads=5, num_hidden_layers=2, vocab_size=VOCAB,
             bos_token_id=1, eos_token_id=None, pad_token_id=0)

ROPES = {
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 3.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0,
             "original_max_position_embeddings": 8},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
}


def build(cls, config, seed, *, float64=True):
    torch.manual_seed(seed)
    with float64_hf() if float64 else contextlib.nullcontext():
        model = cls(config)
    return randomise(model.double().eval(), seed)


def llama(rope_type, seed=0, **kw):
    # max_position_embeddings 32: yarn and llama3 were "trained" on 8; dynamic
    # on 32 and read past it below.
    config = LlamaConfig(**(SMALL | dict(num_key_value_heads=1,
                                         max_position_embeddings=32) | kw),
                         rope_parameters={"rope_theta": 1000.0,
                                          **ROPES[rope_type]})
    config._attn_implementation = "eager"
    return config


def llama_legacy_linear(seed=0):
    """Linear scaling as an older config.json writes it: ``rope_scaling``
    with ``type``, read by from_dict (what from_pretrained calls), which
    keeps ``type`` beside the ``rope_type`` it adds."""
    config = LlamaConfig.from_dict(SMALL | dict(
        num_key_value_heads=1, max_position_embeddings=32, rope_theta=1000.0,
        rope_scaling={"type": "linear", "factor": 4.0}))
    assert config.rope_parameters["type"] == "linear"
    config._attn_implementation = "eager"
    return config


def mistral(seed=0):
    config = MistralConfig(**(SMALL | dict(num_hidden_layers=3,
                                           max_position_embeddings=64,
                                           sliding_window=5)))
    config._attn_implementation = "eager"
    return config


def ministral(seed=0):
    config = MinistralConfig(**(SMALL | dict(
        num_hidden_layers=3, max_position_embeddings=64, sliding_window=3,
        head_dim=6,
        layer_types=["sliding_attention", "full_attention",
                     "sliding_attention"],
        rope_parameters={"rope_theta": 1000.0, "rope_type": "default"})))
    config._attn_implementation = "eager"
    return config


MODELS = {
    **{f"llama {t}": (LlamaForCausalLM, lambda t=t: llama(t)) for t in ROPES},
    "llama legacy linear": (LlamaForCausalLM, llama_legacy_linear),
    "mistral window 5": (MistralForCausalLM, mistral),
    "ministral alternating window 3": (MinistralForCausalLM, ministral),
}
DYNAMIC = "llama dynamic"


def hf_logits(model, ids):
    with torch.no_grad(), float64_hf():
        return model(torch.from_numpy(ids)).logits.numpy()


def hf_greedy(model, prompt, new, use_cache):
    """Hugging Face's greedy continuation of prompt (batch, n) by new tokens."""
    with torch.no_grad(), float64_hf():
        return model.generate(torch.from_numpy(prompt), max_new_tokens=new,
                              min_new_tokens=new, do_sample=False,
                              use_cache=use_cache).numpy()


def ours(model):
    config = config_from_hf(model.config)
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return from_hf_state_dict(state, config), config


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module", params=list(MODELS))
def reference(request):
    cls, make = MODELS[request.param]
    model = build(cls, make(), seed=len(request.param))
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_each_long_context_setting(reference):
    model, _, config = reference
    c = model.config
    rope_type = c.rope_parameters.get("rope_type", "default")
    assert (config.rope_scaling is None) == (rope_type == "default")
    if config.rope_scaling is not None:
        assert config.rope_scaling.rope_type == rope_type
    window = getattr(c, "sliding_window", None)
    types = getattr(c, "layer_types", None) or ["sliding_attention"] * 3
    expected = [window if t == "sliding_attention" else None
                for t in types[:c.num_hidden_layers]]
    assert config.layer_windows == expected


def test_logits_equal_hugging_face_past_the_original_length(reference):
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 40))
    if config.rope_scaling is None or config.rope_scaling.rope_type != "dynamic":
        ids = ids[:, :32]  # within max_position_embeddings, past the original
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding():
    config = llama("yarn")
    swapped = build(LlamaForCausalLM, config, seed=3)
    shipped = build(LlamaForCausalLM, config, seed=3, float64=False)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 30))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    gap = relative(as_shipped, hf_logits(swapped, ids))
    assert 1e-9 < gap < 1e-5


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_equals_hugging_face(reference, use_cache):
    model, params, config = reference
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    new = 20  # positions 4..23: past every window and original length
    theirs = hf_greedy(model, prompt, new, use_cache)
    mine = generate(params, config, prompt, max_new_tokens=new,
                    use_cache=use_cache)
    assert np.array_equal(mine, theirs)


def test_cached_decoding_equals_the_full_forward_across_the_window(reference):
    model, params, config = reference
    if config.rope_scaling is not None and config.rope_scaling.rope_type == "dynamic":
        pytest.skip("dynamic NTK: cached keys keep the base they were rotated with")
    ids = np.random.default_rng(6).integers(0, VOCAB, size=(1, 14))
    full = forward(params, config, ids)
    from attention.kv_cache import KVCache
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, ids[:, :5], cache=cache)]
    steps += [forward(params, config, ids[:, i:i + 1], cache=cache)
              for i in range(5, 14)]
    assert relative(np.concatenate(steps, axis=1), full) <= TOL


def gpt_oss_layer(window, seed=0):
    config = GptOssConfig(
        hidden_size=30, num_attention_heads=5, num_key_value_heads=1,
        head_dim=6, num_hidden_layers=2, vocab_size=VOCAB, sliding_window=window,
        max_position_embeddings=64, num_local_experts=2,
        rope_parameters={"rope_theta": 1000.0, "rope_type": "yarn",
                         "factor": 4.0, "beta_fast": 8.0, "beta_slow": 1.0,
                         "truncate": False,
                         "original_max_position_embeddings": 16})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    with float64_hf():
        layer = GptOssAttention(config, layer_idx=0)   # layer 0: sliding
        rotary = GptOssRotaryEmbedding(config)
    return config, randomise(layer.double().eval(), seed), rotary.double()


@pytest.mark.parametrize("window", [3, 5])
def test_gpt_oss_attention_layer_equals_hugging_face(window):
    hf_config, layer, rotary = gpt_oss_layer(window)
    assert layer.sliding_window == window
    rng = np.random.default_rng(window)
    x = rng.normal(size=(2, 23, 30))
    positions = np.arange(23)
    i, j = positions[:, None], positions[None, :]
    bias = np.where((j <= i) & (i - j < window), 0.0, -np.inf)
    with torch.no_grad(), float64_hf():
        pos = torch.from_numpy(positions)[None].expand(2, -1)
        cos_sin = rotary(torch.from_numpy(x), pos)
        theirs, _ = layer(torch.from_numpy(x), cos_sin,
                          torch.from_numpy(bias)[None, None])
    state = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    p = {f"attn.{name}": state[f"{x}_proj.weight"].T
         for name, x in (("W_q", "q"), ("W_k", "k"), ("W_v", "v"), ("W_o", "o"))}
    p |= {f"attn.b_{x}": state[f"{x}_proj.bias"] for x in "qkvo"}
    p["attn.sinks"] = state["sinks"]
    scaling = RopeScaling("yarn", factor=4.0, original_max_positions=16,
                          beta_fast=8.0, truncate=False)
    config = ModelConfig(arch="llama", vocab_size=VOCAB, d_model=30, n_layers=2,
                         n_heads=5, n_kv_heads=1, rope_base=1000.0,
                         rope_scaling=scaling, sliding_window=window,
                         layer_types=("sliding", "full"), attn_bias=True,
                         attn_sinks=True, max_positions=64)
    from attention.kv_cache import attend_functions
    attend_fn = attend_functions(2, 23, layer_windows=config.layer_windows)[0]
    mine = attention_layer(x, p, n_heads=5, n_kv_heads=1, positions=positions,
                           rope_base=1000.0, rope_scaling=scaling,
                           attend_fn=attend_fn)
    assert relative(mine, theirs.numpy()) <= 1e-12


@pytest.mark.parametrize("field, value, match", [
    ("rope_parameters", {"rope_theta": 1e4, "rope_type": "longrope",
                         "short_factor": [1.0], "long_factor": [1.0],
                         "original_max_position_embeddings": 8},
     "'longrope' is not implemented"),
    ("rope_parameters", {"rope_theta": 1e4, "rope_type": "linear",
                         "factor": 2.0, "partial_rotary_factor": 0.5},
     r"\['partial_rotary_factor'\] are not implemented"),
])
def test_settings_the_package_cannot_reproduce_are_refused(field, value, match):
    config = LlamaConfig(**(SMALL | {"max_position_embeddings": 32}))
    setattr(config, field, value)
    with pytest.raises(ValueError, match=match):
        config_from_hf(config)


@pytest.mark.parametrize("kw, match", [
    (dict(sliding_window=0), "sliding_window must be a positive integer"),
    (dict(sliding_window=4, layer_types=("sliding",)), "for each of the 2"),
    (dict(layer_types=("sliding", "full")), "sliding_window is None"),
    (dict(rope_scaling={"rope_type": "linear"}), "must be a RopeScaling"),
    (dict(attn_sinks="yes"), "attn_sinks must be True or False"),
])
def test_bad_long_context_fields_are_named(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ModelConfig(arch="llama", vocab_size=11, d_model=8, n_layers=2,
                    n_heads=2, **kw)


def test_the_chapter_6_backward_refuses_chapter_8_models():
    from attention.backward.model import model_backward
    config = ModelConfig(arch="llama", vocab_size=11, d_model=8, n_layers=1,
                         n_heads=2, sliding_window=3, attn_sinks=True)
    with pytest.raises(ValueError, match=r"\['sliding_window', 'attn_sinks'\]"):
        model_backward({}, config, np.zeros(3, int), np.zeros((3, 11)), {})
