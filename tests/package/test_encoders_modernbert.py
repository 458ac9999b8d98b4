"""Chapter 13's ModernBERT against Hugging Face's ModernBertModel, float64.

Hugging Face computes RoPE's frequencies and angles, the rotation itself (``q.float()``)
and the eager softmax in float32 even in a float64 model; the reference runs the same
code in float64 (``float64_hf``), and a test shows that this moves its outputs only at
float32 rounding. A window of 4 (2 on each side) on sequences up to 9 tokens, global
layers 0 and 3 of 4: hidden states within 1e-10 of the largest, padded and unpadded.
"""

import numpy as np
import pytest
import torch
from transformers import ModernBertConfig as HFModernBertConfig
from transformers import ModernBertModel

from attention.encoders.modernbert import (geglu, modernbert_config_from_hf,
                                           modernbert_encode,
                                           modernbert_encode_unpadded,
                                           modernbert_from_hf, unpad,
                                           window_mask)
from tests.package.hf_encoders import (TOL, float64_hf, numpy_state,
                                       randomise, rel_err)

SMALL = dict(vocab_size=53, hidden_size=24, intermediate_size=20,
             num_hidden_layers=4, num_attention_heads=3, local_attention=4,
             pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
             sep_token_id=2)
LENGTHS = [9, 5, 2]


def build(swapped):
    """The model; swapped: built inside ``float64_hf``, so that RoPE's
    inverse frequencies (a buffer computed once, at construction) are
    float64 too. The same random weights either way."""
    torch.manual_seed(0)
    config = HFModernBertConfig(**SMALL)
    config._attn_implementation = "eager"
    if swapped:
        with float64_hf():
            model = ModernBertModel(config)
    else:
        model = ModernBertModel(config)
    return randomise(model.double().eval(), seed=1)


@pytest.fixture(scope="module")
def hf_modernbert():
    return build(swapped=True)


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    n = max(LENGTHS)
    real = np.arange(n)[None, :] < np.array(LENGTHS)[:, None]
    ids = np.where(real, rng.integers(3, SMALL["vocab_size"], (3, n)), 0)
    return ids, real


def run_hf(model, ids, real):
    with torch.no_grad():
        return model(torch.from_numpy(ids), attention_mask=torch.from_numpy(
            real.astype(np.int64))).last_hidden_state.numpy()


def test_modernbert_equals_hugging_face_padded_and_unpadded(hf_modernbert,
                                                            batch):
    ids, real = batch
    config = modernbert_config_from_hf(hf_modernbert.config)
    assert (config.global_every, config.window) == (3, 4)
    params = modernbert_from_hf(numpy_state(hf_modernbert), config)
    with float64_hf():
        theirs = run_hf(hf_modernbert, ids, real)[real]  # (16, 24)
    padded = modernbert_encode(params, config, ids, real)
    unpadded = modernbert_encode_unpadded(params, config, ids, real)
    assert unpadded.shape == (sum(LENGTHS), 24)
    assert rel_err(padded[real], theirs) < TOL
    assert rel_err(unpadded, theirs) < TOL
    assert np.abs(unpadded - padded[real]).max() < 1e-12


def test_the_float64_swap_moves_hf_only_at_float32_rounding(hf_modernbert,
                                                            batch):
    # No padding here: as it is, Hugging Face's float64 model adds float64's
    # most negative number to a blocked score and takes the softmax in
    # float32, where it is -inf; a <pad> query with no real key in its
    # window then gets NaN, which the next layer's values carry into the
    # real tokens (0 weight times NaN).
    ids = batch[0][:1]
    real = np.ones_like(ids, dtype=bool)
    as_is = run_hf(build(swapped=False), ids, real)
    with float64_hf():
        swapped = run_hf(hf_modernbert, ids, real)
    assert 0 < rel_err(as_is, swapped) < 1e-5


def test_local_layers_see_a_window_both_ways_and_global_layers_all():
    band = window_mask(np.arange(6), 4)
    assert band[3].tolist() == [False, True, True, True, True, True]
    assert band[0].tolist() == [True, True, True, False, False, False]
    ids, sequence, positions = unpad(np.array([[5, 6, 0], [7, 0, 0]]),
                                     np.array([[1, 1, 0], [1, 0, 0]], bool))
    assert ids.tolist() == [5, 6, 7] and sequence.tolist() == [0, 0, 1]
    assert positions.tolist() == [0, 1, 0]  # each sequence starts at 0


def test_geglu_gates_the_second_half_with_the_first():
    rng = np.random.default_rng(3)
    x, W_in, W_out = (rng.normal(size=s) for s in ((2, 4), (4, 6), (3, 4)))
    gelu_half = geglu(x, np.concatenate([W_in[:, :3], np.zeros((4, 3))], 1),
                      W_out)
    assert np.array_equal(gelu_half, np.zeros((2, 4)))  # gate 0: nothing


def test_modernbert_refuses_and_names_what_it_does_not_implement():
    for setting, name in ((dict(norm_bias=True), "norm_bias=True"),
                          (dict(mlp_bias=True), "mlp_bias=True"),
                          (dict(hidden_activation="silu"),
                           "hidden_activation='silu'"),
                          (dict(layer_types=["sliding_attention"] * 4),
                           "layer_types=")):
        with pytest.raises(ValueError, match=name):
            modernbert_config_from_hf(HFModernBertConfig(**SMALL | setting))
    config = modernbert_config_from_hf(HFModernBertConfig(**SMALL))
    with pytest.raises(ValueError, match="token_ids must lie in 0..52"):
        modernbert_encode({}, config, np.array([[60]]))
    with pytest.raises(ValueError, match="W_in must be \\(d_model, 2 d_ff\\)"):
        geglu(np.zeros((1, 4)), np.zeros((4, 5)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="positions must be integers"):
        window_mask(np.zeros(3), 4)
    with pytest.raises(ValueError, match="real must be a boolean array"):
        unpad(np.ones((2, 3), dtype=int), np.ones((2, 2), dtype=bool))
