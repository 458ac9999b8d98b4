"""Properties that hold for every shape: hypothesis draws the shapes, a seeded NumPy generator the values.

Each test runs EXAMPLES examples; the module takes a few seconds in all.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import attention, multi_head_attention, self_attention
from attention.softmax import softmax

EXAMPLES = 100
property_settings = settings(max_examples=EXAMPLES, deadline=None)

seeds = st.integers(0, 2**32 - 1)
sizes = st.integers(1, 8)
leading_dims = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@property_settings
@given(seed=seeds, lead=leading_dims, n_q=sizes, n_k=sizes, d=st.integers(1, 16), use_mask=st.booleans())
def test_weight_rows_sum_to_one_or_are_zero_when_fully_masked(seed, lead, n_q, n_k, d, use_mask):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(*lead, n, d)) for n in (n_q, n_k, n_k))
    mask = rng.random((*lead, n_q, n_k)) < 0.7 if use_mask else None
    out, w = attention(q, k, v, mask=mask, return_weights=True)
    assert out.shape == (*lead, n_q, d) and w.shape == (*lead, n_q, n_k)
    assert np.all(w >= 0) and np.all(np.isfinite(out))
    has_key = np.ones((*lead, n_q), bool) if mask is None else mask.any(axis=-1)
    np.testing.assert_allclose(w.sum(axis=-1)[has_key], 1.0, atol=1e-12)
    assert np.all(w[~has_key] == 0)


@property_settings
@given(seed=seeds, n=st.integers(2, 10), d_model=st.integers(1, 12), d_k=st.integers(1, 8), data=st.data())
def test_causal_output_ignores_future_tokens(seed, n, d_model, d_k, data):
    t = data.draw(st.integers(0, n - 2), label="last unchanged position")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d_model))
    W_q, W_k, W_v = (rng.normal(size=(d_model, d_k)) for _ in range(3))
    before = self_attention(X, W_q, W_k, W_v, causal=True)
    X2 = X.copy()
    X2[t + 1:] = rng.normal(size=(n - t - 1, d_model)) * 10  # rewrite the future
    after = self_attention(X2, W_q, W_k, W_v, causal=True)
    np.testing.assert_array_equal(after[: t + 1], before[: t + 1])


def test_future_perturbation_does_change_the_last_output():
    # Guard for the property above: the perturbation is strong enough to be seen.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 8))
    W = [rng.normal(size=(8, 4)) for _ in range(3)]
    X2 = X.copy()
    X2[3:] = rng.normal(size=(3, 8)) * 10
    before, after = self_attention(X, *W, causal=True), self_attention(X2, *W, causal=True)
    np.testing.assert_array_equal(after[:3], before[:3])
    assert not np.allclose(after[3:], before[3:])


@property_settings
@given(seed=seeds, n=st.integers(2, 10), d_model=st.integers(1, 12), d_k=st.integers(1, 8))
def test_without_mask_permuting_tokens_permutes_outputs(seed, n, d_model, d_k):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d_model))
    W_q, W_k, W_v = (rng.normal(size=(d_model, d_k)) for _ in range(3))
    perm = rng.permutation(n)
    out, w = self_attention(X, W_q, W_k, W_v, return_weights=True)
    out_p, w_p = self_attention(X[perm], W_q, W_k, W_v, return_weights=True)
    np.testing.assert_allclose(out_p, out[perm], rtol=0, atol=1e-12)
    np.testing.assert_allclose(w_p, w[np.ix_(perm, perm)], rtol=0, atol=1e-12)


# Multi-head attention must scale each head's scores by 1/sqrt(d_head), the length of the
# vectors that head compares. Dividing by sqrt(d_model) is a common bug: it runs, gives the
# right shapes and rows that sum to one, but every head's softmax is too flat.

def per_head_reference(x, W_q, W_k, W_v, W_o, n_heads, scale_dim):
    """Multi-head attention written as a loop over heads, scaled by 1/sqrt(scale_dim)."""
    d_head = x.shape[-1] // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        q, k, v = x @ W_q[:, cols], x @ W_k[:, cols], x @ W_v[:, cols]
        heads.append(softmax(q @ k.T / math.sqrt(scale_dim)) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def wrong_scale_multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    """The bug: scores divided by sqrt(d_model) instead of sqrt(d_head)."""
    return per_head_reference(x, W_q, W_k, W_v, W_o, n_heads, scale_dim=x.shape[-1])


def scales_by_sqrt_d_head(mha, x, W, n_heads):
    """The property: mha equals the per-head loop scaled by sqrt(d_head)."""
    expected = per_head_reference(x, *W, n_heads, scale_dim=x.shape[-1] // n_heads)
    return np.allclose(mha(x, *W, n_heads), expected, rtol=0, atol=1e-10)


def draw_mha_case(seed, n, d_head, n_heads):
    rng = np.random.default_rng(seed)
    d_model = d_head * n_heads
    x = rng.normal(size=(n, d_model))
    W = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
    return x, W


@property_settings
@given(seed=seeds, n=st.integers(1, 8), d_head=st.integers(1, 8), n_heads=st.integers(1, 4))
def test_multi_head_scales_by_sqrt_d_head_not_sqrt_d_model(seed, n, d_head, n_heads):
    x, W = draw_mha_case(seed, n, d_head, n_heads)
    assert scales_by_sqrt_d_head(multi_head_attention, x, W, n_heads)


def test_scale_property_rejects_the_sqrt_d_model_bug():
    # Same check as above, on a deliberately wrong implementation: it must fail.
    rejected = 0
    for seed in range(20):
        x, W = draw_mha_case(seed, n=5, d_head=4, n_heads=4)
        rejected += not scales_by_sqrt_d_head(wrong_scale_multi_head, x, W, 4)
    assert rejected == 20
    # With one head d_head == d_model, so the "bug" is no bug and passes.
    x, W = draw_mha_case(0, n=5, d_head=4, n_heads=1)
    assert scales_by_sqrt_d_head(wrong_scale_multi_head, x, W, 1)
