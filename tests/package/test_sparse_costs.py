"""Chapter 12's counts: bytes a decoded token reads with and without DeepSeek Sparse
Attention, the break-even context, and the model cards' cache bytes, whose typed sizes
must be the defaults of transformers 5.23's configuration classes."""

import collections
import dataclasses

import pytest
from transformers import (DeepseekV32Config, DeepseekV4Config, GlmMoeDsaConfig,
                          KimiLinearConfig, Qwen3_5TextConfig)

from attention.families.moe_costs import MOE_CONFIGS
from attention.families.moe_costs import cache_bytes_per_token as chapter_9s
from attention.model import CONFIGS
from attention.sparse.sparse_costs import (CARDS, DEEPSEEK_V32, DEEPSEEK_V4_FLASH,
                                           KIMI_LINEAR, QWEN3_5, Cached,
                                           break_even_context,
                                           cache_bytes_per_token,
                                           cache_bytes_at, decode_read_bytes)


def test_deepseek_v32_is_hugging_faces_default_configuration():
    c = DeepseekV32Config()
    ours = DEEPSEEK_V32
    assert (ours.indexer.n_heads, ours.indexer.head_dim, ours.indexer.top_k) == (
        c.index_n_heads, c.index_head_dim, c.index_topk)
    assert (ours.n_layers, ours.kv_lora_rank, ours.qk_rope_head_dim) == (
        c.num_hidden_layers, c.kv_lora_rank, c.qk_rope_head_dim)


def test_the_other_cards_are_hugging_faces_defaults():
    v4 = DeepseekV4Config()
    kinds = collections.Counter(v4.layer_types)
    assert [(c.layers, c.values, c.window, c.every) for c in DEEPSEEK_V4_FLASH] == [
        (v4.num_hidden_layers, v4.head_dim, v4.sliding_window, 1),
        (kinds["compressed_sparse_attention"], v4.head_dim + v4.index_head_dim,
         None, v4.compress_rates["compressed_sparse_attention"]),
        (kinds["heavily_compressed_attention"], v4.head_dim, None,
         v4.compress_rates["heavily_compressed_attention"])]
    assert v4.num_key_value_heads == 1
    kimi = KimiLinearConfig()
    kinds = collections.Counter(kimi.layer_types)
    h, d, kernel = (kimi.linear_num_heads, kimi.linear_head_dim,
                    kimi.linear_conv_kernel_dim)
    assert KIMI_LINEAR == [
        Cached(kinds["full_attention"], kimi.kv_lora_rank + kimi.qk_rope_head_dim),
        Cached(kinds["linear_attention"], 0,
               fixed=h * d * d + (kernel - 1) * 3 * h * d)]
    q = Qwen3_5TextConfig()
    assert dataclasses.astuple(QWEN3_5) == (
        q.num_hidden_layers, q.layer_types.index("full_attention") + 1,
        q.num_key_value_heads, q.head_dim, q.linear_num_key_heads,
        q.linear_num_value_heads, q.linear_key_head_dim,
        q.linear_value_head_dim, q.linear_conv_kernel_dim)
    assert q.layer_types.count("full_attention") == QWEN3_5.full_layers


def test_sparse_reads_top_k_latents_and_every_index_key():
    dense = MOE_CONFIGS["DeepSeek-V3"]
    n = 131072
    latent = 61 * (512 + 64) * 2
    assert decode_read_bytes(dense, n) == latent * n
    assert decode_read_bytes(DEEPSEEK_V32, n) == latent * 2048 + 61 * 128 * 2 * n
    assert decode_read_bytes(DEEPSEEK_V32, n, index_bytes_per_value=1) == (
        latent * 2048 + 61 * 128 * n)
    # below top_k the indexer only adds: every latent is read anyway
    assert decode_read_bytes(DEEPSEEK_V32, 1000) > decode_read_bytes(dense, 1000)


@pytest.mark.parametrize("index_bytes", [None, 1])
def test_the_break_even_context_is_where_sparse_starts_to_read_less(index_bytes):
    sizes = dict(index_bytes_per_value=index_bytes)
    n = break_even_context(DEEPSEEK_V32, **sizes)
    dense = MOE_CONFIGS["DeepSeek-V3"]
    assert decode_read_bytes(DEEPSEEK_V32, n, **sizes) < decode_read_bytes(dense, n)
    assert decode_read_bytes(DEEPSEEK_V32, n - 1, **sizes) >= decode_read_bytes(
        dense, n - 1)


def test_cached_layers_count_windows_compression_and_states():
    card = [Cached(2, 10, window=4), Cached(3, 5, every=8), Cached(1, 0, fixed=7)]
    assert cache_bytes_at(card, 20, bytes_per_value=1) == 2 * 4 * 10 + 3 * 2 * 5 + 7
    assert cache_bytes_at(CARDS["Llama 3 8B"][1], 8192) == 2 ** 30  # chapter 4


def test_a_bad_context_is_named():
    with pytest.raises(ValueError, match="n_context must be an integer >= 0"):
        decode_read_bytes(DEEPSEEK_V32, -1)


def test_the_rows_typed_from_the_packages_configurations_match_them():
    for name, config in (("Llama 3 8B", CONFIGS["llama-3-8b"]),
                         ("gpt-oss-120b", MOE_CONFIGS["gpt-oss-120b"]),
                         ("DeepSeek-V3", MOE_CONFIGS["DeepSeek-V3"])):
        card = CARDS[name][1]
        windows = config.layer_windows
        assert {(c.layers, c.window) for c in card} == {
            (windows.count(w), w) for w in set(windows)}
        per_layer = chapter_9s(config, bytes_per_value=1) // config.n_layers
        assert all(c.values == per_layer for c in card)
    v3 = MOE_CONFIGS["DeepSeek-V3"]
    for field in ("n_layers", "n_heads", "d_model", "q_lora_rank",
                  "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                  "v_head_dim"):
        assert getattr(DEEPSEEK_V32, field) == getattr(v3, field)


@pytest.mark.parametrize("config", [CONFIGS["llama-3-8b"], DEEPSEEK_V32,
                                    MOE_CONFIGS["DeepSeek-V3"]])
def test_bytes_per_token_are_chapter_9s(config):
    assert cache_bytes_per_token(config) == chapter_9s(config)


def test_glm_5s_row_is_hugging_faces_default():
    g = GlmMoeDsaConfig()
    assert CARDS["GLM-5 (HF default)"][1] == [Cached(
        g.num_hidden_layers, g.kv_lora_rank + g.qk_rope_head_dim
        + g.index_head_dim)]
