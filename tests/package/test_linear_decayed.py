"""The decayed linear attention of chapter 10 (S <- a S + k^T v): the recurrent and
chunked forms equal each other (every chunk size, <= 1e-12 relative, float64) and the
sum o_i = sum_{j<=i} exp(G_i - G_j) (q_i . k_j) v_j written out term by term; with no
decay they are chapter 10's additive linear attention without its normaliser; a state
handed over continues the sequence; bad decays are named."""

import numpy as np
import pytest

from attention.linear.decayed import decayed_chunked, decayed_recurrent
from attention.linear.linear_attention import linear_attention_recurrent


def inputs(seed=0, lead=(2, 3), n=11, d_k=4, d_v=5):
    rng = np.random.default_rng(seed)
    q, k = (rng.normal(size=(*lead, n, d_k)) for _ in range(2))
    v = rng.normal(size=(*lead, n, d_v))
    g = -rng.uniform(0, 1, size=(*lead, n))
    return q, k, v, g


def test_recurrent_equals_the_sum_written_out():
    q, k, v, g = inputs(lead=(2,))
    G = np.cumsum(g, axis=-1)
    want = np.zeros_like(v)
    for b in range(2):
        for i in range(v.shape[-2]):
            for j in range(i + 1):
                want[b, i] += (np.exp(G[b, i] - G[b, j]) * (q[b, i] @ k[b, j])
                               * v[b, j])
    out, _ = decayed_recurrent(q, k, v, g)
    assert np.abs(out - want).max() <= 1e-12 * np.abs(want).max()


@pytest.mark.parametrize("C", range(1, 14))
def test_chunked_equals_recurrent_for_every_chunk_size(C):
    q, k, v, g = inputs()
    S0 = np.random.default_rng(1).normal(size=(2, 3, 4, 5))
    out, S = decayed_recurrent(q, k, v, g, initial_state=S0)
    got, got_S = decayed_chunked(q, k, v, g, chunk_size=C, initial_state=S0)
    assert np.abs(got - out).max() <= 1e-12 * np.abs(out).max()
    assert np.abs(got_S - S).max() <= 1e-12 * np.abs(S).max()


def test_no_decay_is_additive_linear_attention_and_a_state_continues():
    q, k, v, g = inputs()
    out, S = decayed_recurrent(q, k, v, np.zeros_like(g))
    plain, plain_S = linear_attention_recurrent(q, k, v, normalize=False)
    assert np.allclose(out, plain, rtol=0, atol=1e-12)
    assert np.allclose(S, plain_S, rtol=0, atol=1e-12)
    whole, _ = decayed_recurrent(q, k, v, g)
    first, S5 = decayed_chunked(q[..., :5, :], k[..., :5, :], v[..., :5, :],
                                g[..., :5], chunk_size=2)
    rest, _ = decayed_chunked(q[..., 5:, :], k[..., 5:, :], v[..., 5:, :],
                              g[..., 5:], chunk_size=4, initial_state=S5)
    both = np.concatenate([first, rest], axis=-2)
    assert np.abs(both - whole).max() <= 1e-12 * np.abs(whole).max()


@pytest.mark.parametrize("g, words", [
    (np.full((2, 3, 11), 0.5), "must be finite and <= 0"),
    (np.zeros((2, 3, 10)), "g must have shape"),
])
def test_bad_decays_are_named(g, words):
    q, k, v, _ = inputs()
    for f in (decayed_recurrent,
              lambda *a: decayed_chunked(*a, chunk_size=3)):
        with pytest.raises(ValueError, match=words):
            f(q, k, v, g)
