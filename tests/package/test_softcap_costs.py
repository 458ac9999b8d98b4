"""Chapter 9's soft-capping against PyTorch (forward, and its backward against autograd,
float64, <= 1e-12), and the cache and FLOP counts of attention.families.costs."""

import numpy as np
import pytest
import torch

from attention.families.softcap_backward import capped_softmax_backward, softcap_backward
from attention.families.costs import (PUBLISHED, latent_cache_bytes,
                                      mla_attention_flops)
from attention.families.softcap import capped_attention, softcap
from attention.model import ModelConfig

TOL = 1e-12


def test_capped_attention_equals_gemma_2s_eager_formula():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 3, n, 6)) * 3 for n in (5, 7, 7))
    cap, scale = 2.0, 0.4
    mask = rng.random((5, 7)) < 0.8
    mask[:, 0] = True
    t = [torch.from_numpy(a) for a in (q, k, v)]
    s = torch.tanh(t[0] @ t[1].transpose(-1, -2) * scale / cap) * cap
    s = s.masked_fill(~torch.from_numpy(mask), -torch.inf)
    theirs = torch.softmax(s, -1) @ t[2]
    mine = capped_attention(q, k, v, cap=cap, mask=mask, scale=scale)
    assert np.abs(mine - theirs.numpy()).max() <= TOL


def test_capped_attention_keeps_float32_and_empty_rows():
    q = np.ones((1, 2, 4), np.float32)
    out, w = capped_attention(q, q, q, cap=5.0, mask=np.zeros((2, 2), bool),
                              return_weights=True)
    assert out.dtype == np.float32 and not w.any() and not out.any()


@pytest.mark.parametrize("cap", [0.5, 3.0, 50.0])
def test_the_capped_softmax_backward_equals_autograd(cap):
    rng = np.random.default_rng(1)
    s, d_p = rng.normal(size=(3, 4, 9)) * 4, rng.normal(size=(3, 4, 9))
    st = torch.from_numpy(s).requires_grad_()
    p = torch.softmax(cap * torch.tanh(st / cap), -1)
    p.backward(torch.from_numpy(d_p))
    assert np.abs(capped_softmax_backward(d_p, s, cap) - st.grad.numpy()).max() <= TOL
    y = torch.from_numpy(s).requires_grad_()
    (cap * torch.tanh(y / cap)).backward(torch.from_numpy(d_p))
    assert np.abs(softcap_backward(d_p, s, cap) - y.grad.numpy()).max() <= TOL


@pytest.mark.parametrize("call, match", [
    (lambda: softcap(np.ones(3), 0.0), "cap must be a positive finite"),
    (lambda: softcap(np.ones(3), True), "cap must be a positive finite"),
    (lambda: softcap_backward(np.ones(3), np.ones(4), 1.0), "same shape"),
    (lambda: capped_softmax_backward(np.ones(3), np.ones(4), 1.0),
     "same shape"),
    (lambda: capped_attention(np.ones((2, 3)), np.ones((2, 4)),
                              np.ones((2, 4)), cap=1.0), "share their last"),
    (lambda: mla_attention_flops(1, -1, n_heads=1, kv_lora_rank=1,
                                 qk_nope_head_dim=1, qk_rope_head_dim=1,
                                 v_head_dim=1, absorbed=True), "n_k must be"),
    (lambda: latent_cache_bytes(ModelConfig()), "deepseek_v3"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cache_bytes_per_token_of_the_published_models():
    per_token = {name: 2 * card.cache_values_per_token()
                 for name, card in PUBLISHED.items()}  # bfloat16
    assert per_token["Llama 3.1 8B"] == 128 * 1024       # chapter 8's table
    assert per_token["DeepSeek-V3"] == 61 * 576 * 2
    assert PUBLISHED["DeepSeek-V3"].attention == "MLA"
    assert PUBLISHED["GPT-2"].attention == "MHA"


def test_latent_cache_bytes_counts_the_latent_and_the_rotated_key():
    config = ModelConfig(arch="deepseek_v3", vocab_size=11, d_model=8,
                         n_layers=3, n_heads=2, kv_lora_rank=5,
                         qk_rope_head_dim=2, qk_nope_head_dim=2, v_head_dim=2)
    assert latent_cache_bytes(config, 10, batch=2) == 3 * 7 * 10 * 2 * 2


def test_absorption_is_cheaper_for_decoding_and_dearer_for_prefill():
    v3 = dict(n_heads=128, kv_lora_rank=512, qk_nope_head_dim=128,
              qk_rope_head_dim=64, v_head_dim=128)
    decode = [mla_attention_flops(1, 4096, absorbed=a, **v3)
              for a in (True, False)]
    prefill = [mla_attention_flops(4096, 4096, absorbed=a, **v3)
               for a in (True, False)]
    assert decode[0] < decode[1] and prefill[0] > prefill[1]
