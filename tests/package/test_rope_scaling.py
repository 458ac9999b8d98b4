"""RoPE scaling: each rule's inverse frequencies and attention factor against Hugging
Face's ``ROPE_INIT_FUNCTIONS``.

Hugging Face computes them in float32 (``dtype=torch.float``), even for a float64 model.
The comparison at 1e-12 runs its functions with ``torch.float`` and ``torch.float32``
standing for float64 (the same formulas, in float64); a second test shows that this swap
moves Hugging Face's own values only at float32 rounding.
"""

import math
from unittest import mock

import numpy as np
import pytest
import torch
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from attention.long_context.rope_scaling import (
    RopeScaling, default_inv_freq, dynamic_ntk_inv_freq, linear_inv_freq,
    llama3_inv_freq, rope_parameters, yarn_attention_factor, yarn_inv_freq)

TOL = 1e-12          # relative, float64 against float64
FLOAT32 = 2e-7       # relative, float64 against Hugging Face's float32 values

# (rope_parameters of a Hugging Face config, our RopeScaling): the same setting.
CASES = {
    "linear": ({"rope_type": "linear", "factor": 4.0},
               RopeScaling("linear", factor=4.0)),
    "dynamic": ({"rope_type": "dynamic", "factor": 2.5},
                RopeScaling("dynamic", factor=2.5, original_max_positions=256)),
    "yarn": ({"rope_type": "yarn", "factor": 8.0,
              "original_max_position_embeddings": 24},
             RopeScaling("yarn", factor=8.0, original_max_positions=24)),
    "yarn-betas": ({"rope_type": "yarn", "factor": 3.0, "beta_fast": 16,
                    "beta_slow": 2, "original_max_position_embeddings": 40,
                    "truncate": False},
                   RopeScaling("yarn", factor=3.0, original_max_positions=40,
                               beta_fast=16, beta_slow=2, truncate=False)),
    "yarn-mscale": ({"rope_type": "yarn", "factor": 40.0, "mscale": 1.0,
                     "mscale_all_dim": 0.707,
                     "original_max_position_embeddings": 16},
                    RopeScaling("yarn", factor=40.0, original_max_positions=16,
                                mscale=1.0, mscale_all_dim=0.707)),
    "yarn-attention-factor": ({"rope_type": "yarn", "factor": 2.0,
                               "attention_factor": 1.3,
                               "original_max_position_embeddings": 64},
                              RopeScaling("yarn", factor=2.0,
                                          original_max_positions=64,
                                          attention_factor=1.3)),
    "llama3": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
               RopeScaling("llama3", factor=8.0, original_max_positions=32)),
    "llama3-bands": ({"rope_type": "llama3", "factor": 3.0,
                      "low_freq_factor": 0.5, "high_freq_factor": 6.0,
                      "original_max_position_embeddings": 100},
                     RopeScaling("llama3", factor=3.0, original_max_positions=100,
                                 low_freq_factor=0.5, high_freq_factor=6.0)),
}


def hf_config(rope, d_head, base, max_positions=256):
    n_heads = 3
    return LlamaConfig(
        hidden_size=n_heads * d_head, num_attention_heads=n_heads,
        num_key_value_heads=1, intermediate_size=8, num_hidden_layers=1,
        vocab_size=11, max_position_embeddings=max_positions,
        rope_parameters={"rope_theta": base, **rope})


def hf_rope(rope, d_head, base, seq_len=None, *, float64):
    """Hugging Face's (inv_freq, attention_factor) for this setting."""
    config = hf_config(rope, d_head, base)
    fn = ROPE_INIT_FUNCTIONS[rope["rope_type"]]
    if not float64:
        inv_freq, factor = fn(config, None, seq_len=seq_len)
        return inv_freq.double().numpy(), factor
    with mock.patch.object(torch, "float", torch.float64), \
            mock.patch.object(torch, "float32", torch.float64):
        inv_freq, factor = fn(config, None, seq_len=seq_len)
    assert inv_freq.dtype == torch.float64
    return inv_freq.numpy(), factor


def relative(a, b):
    return float(np.max(np.abs(a - b) / np.abs(b)))


@pytest.mark.parametrize("seq_len", [None, 100, 1000])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize("d_head", [4, 10, 64])
@pytest.mark.parametrize("case", CASES)
def test_inverse_frequencies_equal_hugging_face_in_float64(case, d_head, base,
                                                           seq_len):
    rope, ours = CASES[case]
    ref, ref_factor = hf_rope(rope, d_head, base, seq_len, float64=True)
    inv_freq, factor = rope_parameters(d_head, base, ours, seq_len=seq_len)
    assert inv_freq.shape == (d_head // 2,) and inv_freq.dtype == np.float64
    assert relative(inv_freq, ref) <= TOL
    assert factor == pytest.approx(ref_factor, rel=TOL)


@pytest.mark.parametrize("case", CASES)
def test_the_float64_swap_moves_hugging_face_only_at_float32_rounding(case):
    rope, _ = CASES[case]
    as_shipped, factor32 = hf_rope(rope, 64, 500000.0, 1000, float64=False)
    swapped, factor64 = hf_rope(rope, 64, 500000.0, 1000, float64=True)
    assert 0 < relative(as_shipped, swapped) <= FLOAT32
    assert factor32 == pytest.approx(factor64, rel=TOL)


def test_dynamic_ntk_is_plain_rope_up_to_max_positions_then_grows_the_base():
    plain = default_inv_freq(16, 10000.0)
    for n in (1, 100, 256):
        assert np.array_equal(dynamic_ntk_inv_freq(16, 10000.0, 4.0, 256, n),
                              plain)
    longer = dynamic_ntk_inv_freq(16, 10000.0, 4.0, 256, 1024)
    assert longer[0] == plain[0]               # the fastest pair is unchanged
    assert np.all(longer[1:] < plain[1:])      # every other pair slows down


def test_yarn_keeps_fast_pairs_and_interpolates_slow_ones():
    d, base, factor, L = 64, 10000.0, 8.0, 64
    plain, yarn = default_inv_freq(d, base), yarn_inv_freq(d, base, factor, L)
    turns = L * plain / (2 * math.pi)          # turns of each pair over L
    assert np.array_equal(yarn[turns > 32], plain[turns > 32])
    np.testing.assert_allclose(yarn[turns < 1], plain[turns < 1] / factor,
                               rtol=1e-15)


def test_llama3_bands_keep_short_and_divide_long_wavelengths():
    d, base, factor, L = 128, 500000.0, 8.0, 8192
    plain = default_inv_freq(d, base)
    scaled = llama3_inv_freq(d, base, factor, L)
    wavelength = 2 * math.pi / plain
    short, long = wavelength < L / 4, wavelength > L / 1
    assert np.array_equal(scaled[short], plain[short])
    np.testing.assert_allclose(scaled[long], plain[long] / factor, rtol=1e-15)
    middle = ~short & ~long
    assert middle.any() and np.all((scaled[middle] <= plain[middle])
                                   & (scaled[middle] >= plain[middle] / factor))


def test_yarn_attention_factor_is_the_papers_formula():
    assert yarn_attention_factor(1.0) == 1.0
    assert yarn_attention_factor(16.0) == pytest.approx(0.1 * math.log(16) + 1)
    assert yarn_attention_factor(40.0, mscale=0.7, mscale_all_dim=0.7) == 1.0


def test_linear_divides_every_frequency():
    np.testing.assert_allclose(linear_inv_freq(8, 10000.0, 4.0),
                               default_inv_freq(8, 10000.0) / 4, rtol=1e-15)


@pytest.mark.parametrize("call, message", [
    (lambda: RopeScaling("longrope"), "rope_type must be one of"),
    (lambda: RopeScaling("linear", factor=0.5), "factor must be a number >= 1"),
    (lambda: RopeScaling("yarn", factor=2.0), "needs original_max_positions"),
    (lambda: RopeScaling("llama3", factor=2.0, original_max_positions=0),
     "needs original_max_positions"),
    (lambda: RopeScaling("yarn", factor=2.0, original_max_positions=8,
                         attention_factor=0.0), "attention_factor must be > 0"),
    (lambda: default_inv_freq(7, 10000.0), "d_head must be an even integer"),
    (lambda: default_inv_freq(8, 0.0), "base must be a number > 1"),
    (lambda: linear_inv_freq(8, 10000.0, float("nan")), "factor must be"),
    (lambda: dynamic_ntk_inv_freq(2, 10000.0, 2.0, 8, 8), "d_head must be >= 4"),
    (lambda: dynamic_ntk_inv_freq(8, 10000.0, 2.0, 8, 0), "seq_len must be"),
    (lambda: llama3_inv_freq(8, 1e4, 2.0, 8, low_freq_factor=4.0,
                             high_freq_factor=1.0), "high_freq_factor > low"),
    (lambda: RopeScaling("dynamic", factor=2.0), "needs original_max_positions"),
    (lambda: yarn_inv_freq(8, 1e4, 2.0, 0),
     "yarn_inv_freq: original_max_positions must be a positive integer, got 0"),
    (lambda: yarn_inv_freq(8, 1e4, 2.0, 16, beta_fast=float("nan")),
     "yarn_inv_freq: beta_fast must be a positive finite number .*got nan"),
    (lambda: yarn_inv_freq(8, 1e4, 2.0, 16, beta_slow=0.0),
     "yarn_inv_freq: beta_slow must be a positive finite number"),
    (lambda: yarn_inv_freq(7, 1e4, 2.0, 16),
     "yarn_inv_freq: d_head must be an even integer"),
])
def test_bad_settings_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()
