"""Reading Hugging Face configurations and state dicts (the equivalence of the loaded
models is tested in test_model.py)."""

import dataclasses

import numpy as np
import pytest
from transformers import GPT2Config, LlamaConfig

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.model import ModelConfig, parameter_shapes


def test_gpt2_config_is_read_field_by_field():
    c = config_from_hf(GPT2Config(n_embd=48, n_layer=3, n_head=6, vocab_size=99,
                                  n_positions=40, n_inner=100, layer_norm_epsilon=1e-6))
    assert c == ModelConfig(arch="gpt2", vocab_size=99, d_model=48, n_layers=3, n_heads=6,
                            d_ff=100, max_positions=40, norm_eps=1e-6, tie_embeddings=True)


def test_llama_config_is_read_field_by_field():
    c = config_from_hf(LlamaConfig(hidden_size=64, intermediate_size=96,
                                   num_attention_heads=8, num_key_value_heads=2,
                                   num_hidden_layers=2, vocab_size=77, rms_norm_eps=1e-5,
                                   rope_theta=500000.0, max_position_embeddings=128))
    assert c == ModelConfig(arch="llama", vocab_size=77, d_model=64, n_layers=2, n_heads=8,
                            n_kv_heads=2, d_ff=96, max_positions=128, norm_eps=1e-5,
                            rope_base=500000.0, tie_embeddings=False)


@pytest.mark.parametrize("hf_config,match", [
    (GPT2Config(activation_function="relu"), "activation_function = 'relu'"),
    (LlamaConfig(mlp_bias=True), "mlp_bias = True"),
    (LlamaConfig(hidden_size=64, num_attention_heads=4, head_dim=8), "head_dim = 8"),
])
def test_unsupported_configs_are_refused(hf_config, match):
    with pytest.raises(ValueError, match=match):
        config_from_hf(hf_config)


def fake_gpt2_state(config, rng):
    d, n = config.d_model, config.n_layers
    sd = {"transformer.wte.weight": rng.normal(size=(config.vocab_size, d)),
          "transformer.wpe.weight": rng.normal(size=(config.max_positions, d)),
          "transformer.ln_f.weight": rng.normal(size=d),
          "transformer.ln_f.bias": rng.normal(size=d)}
    for i in range(n):
        h = f"transformer.h.{i}."
        sd |= {h + "ln_1.weight": rng.normal(size=d), h + "ln_1.bias": rng.normal(size=d),
               h + "ln_2.weight": rng.normal(size=d), h + "ln_2.bias": rng.normal(size=d),
               h + "attn.c_attn.weight": rng.normal(size=(d, 3 * d)),
               h + "attn.c_attn.bias": rng.normal(size=3 * d),
               h + "attn.c_proj.weight": rng.normal(size=(d, d)),
               h + "attn.c_proj.bias": rng.normal(size=d),
               h + "mlp.c_fc.weight": rng.normal(size=(d, config.d_ff)),
               h + "mlp.c_fc.bias": rng.normal(size=config.d_ff),
               h + "mlp.c_proj.weight": rng.normal(size=(config.d_ff, d)),
               h + "mlp.c_proj.bias": rng.normal(size=d)}
    return sd


CONFIG = ModelConfig(vocab_size=20, d_model=8, n_layers=2, n_heads=2, max_positions=6)


def test_gpt2_c_attn_is_split_into_q_k_v_columns():
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    params = from_hf_state_dict(sd, CONFIG)
    packed = sd["transformer.h.1.attn.c_attn.weight"]
    np.testing.assert_array_equal(params["blocks.1.attn.W_k"], packed[:, 8:16])
    np.testing.assert_array_equal(params["blocks.1.attn.b_v"],
                                  sd["transformer.h.1.attn.c_attn.bias"][16:])
    assert {k: v.shape for k, v in params.items()} == parameter_shapes(CONFIG)
    assert all(v.flags.c_contiguous for v in params.values())


def test_missing_and_misshapen_weights_are_named():
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    del sd["transformer.h.1.mlp.c_fc.bias"]
    with pytest.raises(ValueError, match="transformer.h.1.mlp.c_fc.bias"):
        from_hf_state_dict(sd, CONFIG)
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    sd["transformer.wpe.weight"] = np.zeros((5, 8))
    with pytest.raises(ValueError, match=r"embed.positions should have shape \(6, 8\).*\(5, 8\)"):
        from_hf_state_dict(sd, CONFIG)


def test_import_attention_does_not_import_torch_or_transformers():
    import subprocess
    import sys
    code = ("import sys, attention, attention.model, attention.checkpoints, "
            "attention.parameters, attention.blocks, attention.positions; "
            "print(sorted(m for m in ('torch', 'transformers', 'matplotlib') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


# --- Every field of the configuration classes: refused by name, or the same model ---

# A non-default value for each field that a plain type rule cannot pick (HF must accept it).
SPECIAL_VALUES = {
    "activation_function": "relu", "hidden_act": "gelu", "summary_type": "last",
    "summary_activation": "tanh", "problem_type": "regression", "dtype": "float32",
    "architectures": ["X"], "id2label": {0: "a", 1: "b", 2: "c"},
    "label2id": {"a": 0, "b": 1, "c": 2}, "transformers_version": "0.0.1",
    "n_embd": 48, "hidden_size": 48, "n_head": 8, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 16,
    "n_inner": 48, "intermediate_size": 40, "pad_token_id": 0, "eos_token_id": 3,
    "bos_token_id": 4, "chunk_size_feed_forward": 2, "pretraining_tp": 2,
    "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
}


def non_default(field, base):
    if field.name in SPECIAL_VALUES:
        return SPECIAL_VALUES[field.name]
    default = base.get(field.name, field.default)
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default * 0.5 if default else 0.25
    raise AssertionError(f"pick a non-default value for {field.name} = {default!r}")


def field_cases():
    from tests.package.test_model import gpt2_reference, llama_reference
    cases = []
    for cls, build, base in (
            (GPT2Config, gpt2_reference, dict(n_embd=32, n_layer=2, n_head=4, vocab_size=64,
                                              n_positions=64, bos_token_id=1, eos_token_id=2)),
            (LlamaConfig, llama_reference, dict(hidden_size=32, intermediate_size=64,
                                                num_attention_heads=4, num_key_value_heads=2,
                                                num_hidden_layers=2, vocab_size=64,
                                                max_position_embeddings=64, bos_token_id=1,
                                                eos_token_id=2))):
        for field in dataclasses.fields(cls):
            cases.append(pytest.param(build, field.name, non_default(field, base),
                                      id=f"{cls.__name__}.{field.name}"))
    return cases


@pytest.mark.parametrize("build,name,value", field_cases())
def test_every_config_field_is_refused_by_name_or_converted_exactly(build, name, value):
    """Tolerance 1e-10 (float64, whole model). A field the converter does not implement
    must be refused with a ValueError that names it."""
    import torch

    from attention.model import forward
    from tests.package.test_model import ours

    import contextlib

    from tests.package.test_long_context_models import float64_hf

    # A scaled RoPE: Hugging Face's own rotary, its float32 computed in float64
    # (chapter 8's swap); every other field: test_model's float64 swap.
    scaled = name == "rope_parameters"
    in_float64 = float64_hf if scaled else contextlib.nullcontext
    try:
        with in_float64():
            model = build(**{name: value}, **({"float64": not scaled}
                                              if build.__name__ == "llama_reference" else {}))
    except (ValueError, TypeError) as error:  # Hugging Face refuses it itself
        pytest.skip(f"transformers refuses {name}={value!r}: {error}")
    try:
        params, config = ours(model)
    except ValueError as error:
        assert name in str(error), error
        return
    ids = np.random.default_rng(0).integers(0, config.vocab_size, size=(2, 7))
    model.config.return_dict = True  # converted; HF 5.23's own forward fails without
    with torch.no_grad(), in_float64():
        out = model(torch.from_numpy(ids))
    theirs = out.logits.double().numpy()
    np.testing.assert_allclose(forward(params, config, ids), theirs, rtol=0, atol=1e-10)


@pytest.mark.parametrize("flags", [{"scale_attn_weights": False},
                                   {"scale_attn_by_inverse_layer_idx": True},
                                   {"reorder_and_upcast_attn": True},
                                   {"add_cross_attention": True}])
def test_gpt2_attention_flags_that_change_the_logits_are_refused(flags):
    with pytest.raises(ValueError, match=next(iter(flags))):
        config_from_hf(GPT2Config(n_embd=32, n_layer=2, n_head=4, **flags))


def test_an_unknown_field_is_refused_unless_it_has_its_default():
    @dataclasses.dataclass
    class FutureGPT2Config(GPT2Config.__mro__[0]):  # noqa: D101 - a field added later
        attn_logit_softcapping: float | None = None

    assert config_from_hf(FutureGPT2Config(n_embd=32, n_layer=2, n_head=4)).d_model == 32
    with pytest.raises(ValueError, match="attn_logit_softcapping"):
        config_from_hf(FutureGPT2Config(n_embd=32, n_layer=2, n_head=4,
                                        attn_logit_softcapping=30.0))


# --- State dicts: nothing ignored, nothing but floats ---

def test_a_deeper_checkpoint_does_not_load_into_a_shallower_config():
    deeper = ModelConfig(vocab_size=20, d_model=8, n_layers=3, n_heads=2, max_positions=6)
    sd = fake_gpt2_state(deeper, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"keys have no place.*n_layers=2.*transformer\.h\.2\."):
        from_hf_state_dict(sd, CONFIG)


def test_an_extra_key_is_refused_by_name():
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    sd["transformer.h.0.crossattention.c_attn.weight"] = np.zeros((8, 24))
    with pytest.raises(ValueError, match="crossattention"):
        from_hf_state_dict(sd, CONFIG)


def test_a_tied_head_may_be_stored_but_must_be_the_embedding():
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    sd["lm_head.weight"] = sd["transformer.wte.weight"].copy()
    from_hf_state_dict(sd, CONFIG)
    sd["lm_head.weight"] = sd["lm_head.weight"] + 1.0
    with pytest.raises(ValueError, match="lm_head.weight differs"):
        from_hf_state_dict(sd, CONFIG)


@pytest.mark.parametrize("dtype", [np.int64, object, str])
def test_arrays_that_are_not_floats_are_refused(dtype):
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    sd["transformer.ln_f.bias"] = sd["transformer.ln_f.bias"].astype(dtype)
    with pytest.raises(ValueError, match=r"transformer\.ln_f\.bias must be an array of floats"):
        from_hf_state_dict(sd, CONFIG)


def test_a_c_attn_width_that_does_not_split_in_three_is_named():
    sd = fake_gpt2_state(CONFIG, np.random.default_rng(0))
    sd["transformer.h.1.attn.c_attn.weight"] = np.zeros((8, 23))
    with pytest.raises(ValueError, match=r"h\.1\.attn\.c_attn\.weight.*3 \* d_model = 24.*\(8, 23\)"):
        from_hf_state_dict(sd, CONFIG)
