"""Parameter counts from a configuration alone == Hugging Face's count of the same
configuration built on PyTorch's meta device (no memory) == the published figures."""

import math

import numpy as np
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from attention.checkpoints import config_from_hf
from attention.model import CONFIGS, ModelConfig, init_params
from attention.parameters import count_parameters

# Exact totals of the released checkpoints (Hugging Face's safetensors metadata; the
# GPT-2 paper's Table 2 rounds them differently: 117M, 345M, 762M, 1542M).
PUBLISHED = {
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
}

HF_CONFIGS = {
    "gpt2": lambda: GPT2Config(),
    "gpt2-medium": lambda: GPT2Config(n_embd=1024, n_layer=24, n_head=16),
    "gpt2-large": lambda: GPT2Config(n_embd=1280, n_layer=36, n_head=20),
    "gpt2-xl": lambda: GPT2Config(n_embd=1600, n_layer=48, n_head=25),
    "llama-3-8b": lambda: LlamaConfig(
        hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
        num_key_value_heads=8, num_hidden_layers=32, vocab_size=128256,
        max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
        tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001),
    "llama-3-70b": lambda: LlamaConfig(
        hidden_size=8192, intermediate_size=28672, num_attention_heads=64,
        num_key_value_heads=8, num_hidden_layers=80, vocab_size=128256,
        max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
        tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001),
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_count_equals_the_published_figure(name):
    assert count_parameters(CONFIGS[name])["total"] == PUBLISHED[name]


@pytest.mark.parametrize("name", list(HF_CONFIGS))
def test_count_equals_hugging_face_on_the_meta_device(name):
    hf_config = HF_CONFIGS[name]()
    assert config_from_hf(hf_config) == CONFIGS[name]
    cls = GPT2LMHeadModel if name.startswith("gpt2") else LlamaForCausalLM
    with torch.device("meta"):  # shapes only: nothing is allocated
        model = cls(hf_config)
    # model.parameters() yields a tied weight once, as count_parameters counts it.
    assert sum(p.numel() for p in model.parameters()) == count_parameters(CONFIGS[name])["total"]


@pytest.mark.parametrize("arch,tie", [("gpt2", True), ("gpt2", False), ("llama", False),
                                      ("llama", True)])
def test_count_equals_the_allocated_parameters(arch, tie):
    config = ModelConfig(arch=arch, vocab_size=37, d_model=24, n_layers=3, n_heads=6,
                         n_kv_heads=2 if arch == "llama" else None, d_ff=40,
                         max_positions=11, tie_embeddings=tie)
    params = init_params(config, np.random.default_rng(0))
    assert count_parameters(config)["total"] == sum(p.size for p in params.values())


def test_groups_add_up_and_follow_the_formulas():
    c = CONFIGS["llama-3-8b"]
    counts = count_parameters(c)
    assert sum(v for k, v in counts.items() if k != "total") == counts["total"]
    d, kv = c.d_model, c.n_kv_heads * c.d_head
    assert counts["attention"] == c.n_layers * (2 * d * d + 2 * d * kv)
    assert counts["mlp"] == c.n_layers * 3 * d * c.d_ff
    assert counts["norms"] == (2 * c.n_layers + 1) * d
    assert counts["embeddings"] == counts["lm_head"] == c.vocab_size * d
    g = count_parameters(CONFIGS["gpt2"])
    assert g["lm_head"] == 0  # tied: the embedding is the head
    assert g["mlp"] == 12 * (2 * 768 * 3072 + 3072 + 768)


def test_counting_allocates_nothing():
    # A 70B model counted in well under a millisecond per block: no arrays exist.
    import tracemalloc
    tracemalloc.start()
    count_parameters(CONFIGS["llama-3-70b"])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000
    assert math.prod((128256, 8192)) * 2 > 2e9  # what one bf16 embedding alone would take
