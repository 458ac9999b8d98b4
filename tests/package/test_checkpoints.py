"""Reading Hugging Face configurations and state dicts (the equivalence of the loaded
models is tested in test_model.py)."""

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
    (GPT2Config(activation_function="relu"), "only GELU tanh"),
    (LlamaConfig(mlp_bias=True), "only plain Llama"),
    (LlamaConfig(hidden_size=64, num_attention_heads=4, head_dim=8), "only plain Llama"),
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
