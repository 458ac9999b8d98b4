"""Positions: sinusoidal encodings, RoPE in both layouts against Hugging Face's
apply_rotary_pos_emb, the layout conversion, and RoPE's relative-position property."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from attention.positions import (
    rope, rope_angles, rope_permutation, rope_weights_to_layout, sinusoidal_positions)

TOL = 1e-12


def test_sinusoidal_matches_the_formula_of_vaswani_et_al():
    n, d = 50, 16
    pe = sinusoidal_positions(n, d)
    pos, i = 37, 3
    assert pe.shape == (n, d)
    assert pe[pos, 2 * i] == pytest.approx(np.sin(pos / 10000 ** (2 * i / d)), abs=1e-15)
    assert pe[pos, 2 * i + 1] == pytest.approx(np.cos(pos / 10000 ** (2 * i / d)), abs=1e-15)


def test_sinusoidal_offset_is_a_rotation_of_each_frequency_pair():
    # PE[p + k] = R(k) PE[p], pair by pair, with R depending on k only (section 3.5).
    d, k = 16, 5
    pe = sinusoidal_positions(40, d)
    w = 10000.0 ** (-np.arange(0, d, 2) / d)
    for p in (0, 7, 30):
        s, c = pe[p, 0::2], pe[p, 1::2]
        s_k = s * np.cos(k * w) + c * np.sin(k * w)
        c_k = c * np.cos(k * w) - s * np.sin(k * w)
        assert np.abs(pe[p + k, 0::2] - s_k).max() < TOL
        assert np.abs(pe[p + k, 1::2] - c_k).max() < TOL


def hf_cos_sin(d_head, base, positions):
    """Hugging Face's rotary tables (LlamaRotaryEmbedding's formula), built in float64:
    the module itself computes them in float32 (see test_model.py)."""
    inv_freq = 1.0 / base ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    freqs = torch.from_numpy(np.asarray(positions, np.float64))[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)          # (n, d_head)
    return emb.cos()[None], emb.sin()[None]          # (1, n, d_head)


@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize("d_head", [2, 8, 64])
def test_rope_halves_matches_hugging_face_apply_rotary_pos_emb(d_head, base):
    rng = np.random.default_rng(d_head)
    q, k = rng.normal(size=(2, 4, 9, d_head)), rng.normal(size=(2, 4, 9, d_head))
    positions = np.array([0, 1, 2, 3, 5, 8, 100, 1000, 8191])
    cos, sin = hf_cos_sin(d_head, base, positions)
    q_ref, k_ref = apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos, sin)
    assert np.abs(rope(q, positions, base=base) - q_ref.numpy()).max() <= TOL
    assert np.abs(rope(k, positions, base=base) - k_ref.numpy()).max() <= TOL


def test_rope_angles_match_hugging_face_inverse_frequencies():
    cos, _ = hf_cos_sin(16, 10000.0, np.arange(12))
    ours = np.cos(rope_angles(np.arange(12), 16))
    assert np.abs(ours - cos[0, :, :8].numpy()).max() <= TOL


def test_interleaved_rope_rotates_adjacent_pairs():
    x = np.zeros((1, 4))
    x[0, 2] = 1.0  # pair 1 = features (2, 3), frequency 10000 ** (-2/4) = 0.01
    y = rope(x, np.array([50]), layout="interleaved")
    np.testing.assert_allclose(y[0], [0, 0, np.cos(0.5), np.sin(0.5)], atol=1e-15)


def test_layouts_agree_after_permuting_the_features():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 10, 16))
    positions = np.arange(10) * 7
    perm = rope_permutation(16)
    halves = rope(x[..., perm], positions, layout="halves")
    interleaved = rope(x, positions, layout="interleaved")
    assert np.abs(halves - interleaved[..., perm]).max() <= TOL


def test_converted_weights_give_the_same_attention_scores():
    # A model trained with interleaved RoPE (Meta) and its W_q, W_k converted to halves
    # (Hugging Face) compute the same q_m . k_n for every pair of positions.
    rng = np.random.default_rng(1)
    n_heads, d_head, d_model, n = 3, 8, 12, 6
    x = rng.normal(size=(n, d_model))
    W_q, W_k = rng.normal(size=(d_model, n_heads * d_head)), rng.normal(size=(d_model, n_heads * d_head))
    positions = np.arange(n)

    def scores(W_q, W_k, layout):
        q = (x @ W_q).reshape(n, n_heads, d_head).swapaxes(0, 1)  # (h, n, d_head)
        k = (x @ W_k).reshape(n, n_heads, d_head).swapaxes(0, 1)  # (h, n, d_head)
        q, k = rope(q, positions, layout=layout), rope(k, positions, layout=layout)
        return q @ k.swapaxes(-1, -2)                             # (h, n, n)

    meta = scores(W_q, W_k, "interleaved")
    hf = scores(rope_weights_to_layout(W_q, n_heads), rope_weights_to_layout(W_k, n_heads), "halves")
    assert np.abs(meta - hf).max() <= TOL
    # Forgetting the conversion changes the scores: the permutation is not optional.
    assert np.abs(meta - scores(W_q, W_k, "halves")).max() > 1e-2
    # And converting back gives the original weights exactly.
    back = rope_weights_to_layout(rope_weights_to_layout(W_q, n_heads), n_heads, to="interleaved")
    np.testing.assert_array_equal(back, W_q)


def test_rope_permutation_matches_the_hf_llama_converter():
    # transformers' convert_llama_weights_to_hf permutes the rows of each head of the
    # (d_out, d_in) weight with view(h, d_head // 2, 2, d_in).transpose(1, 2).
    h, d_head, d_in = 2, 8, 3
    w = torch.arange(h * d_head * d_in, dtype=torch.float64).reshape(h * d_head, d_in)
    hf = w.view(h, d_head // 2, 2, d_in).transpose(1, 2).reshape(h * d_head, d_in)
    ours = rope_weights_to_layout(w.numpy().T, h).T   # our W is (d_in, d_out)
    np.testing.assert_array_equal(ours, hf.numpy())


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 5000), n=st.integers(0, 5000),
       shift=st.integers(-4000, 4000), d_head=st.sampled_from([2, 4, 16, 64]),
       layout=st.sampled_from(["halves", "interleaved"]))
def test_rope_scores_depend_only_on_the_offset(seed, m, n, shift, d_head, layout):
    # q_m . k_n == q_(m+s) . k_(n+s): RoPE scores see m - n, never m or n alone.
    if min(m + shift, n + shift) < 0:
        shift = -min(m, n)
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, d_head)), rng.normal(size=(1, d_head))

    def score(i, j):
        qi = rope(q, np.array([i]), layout=layout)
        kj = rope(k, np.array([j]), layout=layout)
        return float(qi[0] @ kj[0])

    assert abs(score(m, n) - score(m + shift, n + shift)) <= 1e-9 * (1 + abs(score(m, n)))


def test_rope_keeps_the_norm_and_float32():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 32)).astype(np.float32)
    y = rope(x, np.arange(5) * 1000)
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-5)


def test_rope_errors_name_the_problem():
    with pytest.raises(ValueError, match="layout must be one of"):
        rope(np.ones((2, 4)), np.arange(2), layout="pairs")
    with pytest.raises(ValueError, match=r"positions \(n,\).*\(2, 4\).*\(3,\)"):
        rope(np.ones((2, 4)), np.arange(3))
    with pytest.raises(ValueError, match="even integer"):
        rope(np.ones((2, 5)), np.arange(2))


# --- Issue 24: a base that is no frequency ---

@pytest.mark.parametrize("base", [0.0, -10000.0, np.nan, np.inf])
def test_rope_and_sinusoidal_refuse_a_base_that_is_not_positive(base):
    from attention.positions import rope, sinusoidal_positions
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        rope(np.ones((3, 4)), np.arange(3), base=base)
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        sinusoidal_positions(3, 4, base=base)
