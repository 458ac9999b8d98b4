"""Chapter 10's gated delta rule against Hugging Face's Qwen3-Next reference functions,
``torch_recurrent_gated_delta_rule`` and ``torch_chunk_gated_delta_rule``, which take
(batch, n, heads, d) tensors and compute in float32 inside (PITFALLS): against them as
they are, <= 2e-5 relative to the largest output or state (float32 rounding over a few
dozen steps); with their float32 swapped for float64 (``float64_hf``), <= 1e-12. With and
without an initial state, with and without l2-normalised q and k, for n not a multiple
of the chunk size. Our recurrent and chunked forms agree in float64 to 1e-12 for every
chunk size from 1 to n. Bad input is refused by name."""

import numpy as np
import pytest
import torch
from transformers.models.qwen3_next.modeling_qwen3_next import (
    torch_chunk_gated_delta_rule, torch_recurrent_gated_delta_rule)

from attention.linear import gated_delta_rule
from attention.linear.chunked import ut_transform
from attention.linear.delta_rule import delta_rule_step
from tests.package.test_long_context_models import float64_hf

TOL64 = 1e-12
TOL32 = 2e-5


def inputs(seed, batch=2, heads=3, n=11, d_k=4, d_v=5, key_scale=0.5):
    """Our layout: q, k (batch, heads, n, d_k), v (..., d_v), g and beta
    (batch, heads, n), an initial state (batch, heads, d_k, d_v). Keys of
    norm about 1 keep the un-normalised rule a contraction."""
    rng = np.random.default_rng(seed)
    q, k = (key_scale * rng.normal(size=(batch, heads, n, d_k))
            for _ in range(2))
    v = rng.normal(size=(batch, heads, n, d_v))
    g = -rng.uniform(0.01, 1.0, size=(batch, heads, n))
    beta = rng.uniform(0, 1, size=(batch, heads, n))
    state = rng.normal(size=(batch, heads, d_k, d_v))
    return q, k, v, g, beta, state


def hf(fn, q, k, v, g, beta, state, qk_l2norm, **kw):
    """Hugging Face's function in its (batch, n, heads, d) layout."""
    t = lambda a: torch.from_numpy(np.swapaxes(a, 1, 2).copy())  # noqa: E731
    out, S = fn(t(q), t(k), t(v), t(g), t(beta),
                initial_state=None if state is None else torch.from_numpy(state),
                output_final_state=True, use_qk_l2norm_in_kernel=qk_l2norm, **kw)
    return np.swapaxes(out.numpy(), 1, 2), S.numpy()


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


REFERENCES = {"recurrent": (torch_recurrent_gated_delta_rule, {}, None),
              "chunk 4": (torch_chunk_gated_delta_rule, {"chunk_size": 4}, 4),
              "chunk 8": (torch_chunk_gated_delta_rule, {"chunk_size": 8}, 8)}


@pytest.mark.parametrize("with_state", [False, True], ids=["zero", "state"])
@pytest.mark.parametrize("qk_l2norm", [False, True], ids=["raw", "l2"])
@pytest.mark.parametrize("reference", REFERENCES)
def test_equals_hugging_face(reference, qk_l2norm, with_state):
    fn, kw, C = REFERENCES[reference]
    q, k, v, g, beta, state = inputs(0)
    state = state if with_state else None
    out, S = gated_delta_rule(q, k, v, g, beta, chunk_size=C,
                              initial_state=state, qk_l2norm=qk_l2norm)
    ref_out, ref_S = hf(fn, q, k, v, g, beta, state, qk_l2norm, **kw)
    assert ref_S.dtype == np.float32  # computed in float32 inside
    assert rel(out, ref_out) < TOL32 and rel(S, ref_S) < TOL32
    with float64_hf():
        ref64_out, ref64_S = hf(fn, q, k, v, g, beta, state, qk_l2norm, **kw)
    assert ref64_S.dtype == np.float64
    assert rel(out, ref64_out) < TOL64 and rel(S, ref64_S) < TOL64
    # the swap moves Hugging Face's result at float32 rounding, no more
    assert 1e-9 < rel(ref_out, ref64_out) < TOL32


def test_recurrent_and_chunked_agree_for_every_chunk_size():
    q, k, v, g, beta, state = inputs(1, n=13)
    for qk_l2norm in (False, True):
        want = gated_delta_rule(q, k, v, g, beta, initial_state=state,
                                qk_l2norm=qk_l2norm)
        for C in range(1, 14):  # 1, ..., n
            got = gated_delta_rule(q, k, v, g, beta, chunk_size=C,
                                   initial_state=state, qk_l2norm=qk_l2norm)
            assert rel(got[0], want[0]) < TOL64, C
            assert rel(got[1], want[1]) < TOL64, C


def test_one_step_is_a_gradient_step_on_the_regression_loss():
    rng = np.random.default_rng(2)
    S, k, v = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=3)
    beta, g = 0.3, -0.2
    decayed = np.exp(g) * S
    gradient = np.outer(k, k @ decayed - v)  # d/dS of |k S - v|^2 / 2
    assert np.abs(delta_rule_step(S, k, v, beta, g)
                  - (decayed - beta * gradient)).max() < 1e-15
    # beta = 1 and |k| = 1: the state then recalls v for k exactly
    k = k / np.linalg.norm(k)
    assert np.abs(k @ delta_rule_step(S, k, v, 1.0) - v).max() < 1e-14


def test_wy_form_is_the_product_of_the_step_matrices():
    q, k, v, g, beta, _ = inputs(3, batch=1, heads=1, n=6)
    k, v, g, beta = k[0, 0], v[0, 0], g[0, 0], beta[0, 0]
    _, W, gamma, _ = ut_transform(k, v, g, beta)
    product = np.eye(4)
    for i in range(6):
        step = np.exp(g[i]) * (np.eye(4) - beta[i] * np.outer(k[i], k[i]))
        product = step @ product
    k_to_end = k * np.exp(gamma[-1] - gamma)[:, None]
    assert np.abs(np.exp(gamma[-1]) * np.eye(4) - k_to_end.T @ W
                  - product).max() < 1e-14


def test_float32_in_float32_out():
    q, k, v, g, beta, state = (a.astype(np.float32) for a in inputs(4))
    for C in (None, 4):
        out, S = gated_delta_rule(q, k, v, g, beta, chunk_size=C)
        assert out.dtype == S.dtype == np.float32


def call(**change):
    q, k, v, g, beta, state = inputs(5)
    args = dict(q=q, k=k, v=v, g=g, beta=beta) | change
    options = {key: args.pop(key) for key in ("chunk_size", "initial_state")
               if key in args}
    return gated_delta_rule(*args.values(), **options)


S = (2, 3, 11)  # batch, heads, n
BAD = {
    "k_other_d_k": (dict(k=np.zeros((*S, 3))),
                    r"q and k must have the same shape.*\(2, 3, 11, 4\).*"
                    r"\(2, 3, 11, 3\)"),
    "v_other_n": (dict(v=np.zeros((2, 3, 7, 5))),
                  r"v must have shape.*\(2, 3, 11, 4\).*\(2, 3, 7, 5\)"),
    "no_heads_axis": (dict(q=np.zeros((11, 4)), k=np.zeros((11, 4)),
                           v=np.zeros((11, 5))),
                      r"q must have shape \(\.\.\., heads, n, d_k\), got \(11, 4\)"),
    "g_wrong_shape": (dict(g=np.zeros((2, 3, 10))),
                      r"g must have shape \(\.\.\., heads, n\) = \(2, 3, 11\).*"
                      r"\(2, 3, 10\)"),
    "beta_wrong_shape": (dict(beta=np.zeros((3, 11))),
                         r"beta must have shape .*\(2, 3, 11\).*\(3, 11\)"),
    "beta_above_one": (dict(beta=np.full(S, 1.5)),
                       r"beta is a sigmoid output .* \[0, 1\].* 1.5 to 1.5"),
    "beta_negative": (dict(beta=np.full(S, -0.1)),
                      r"beta .* must lie in \[0, 1\].* -0.1"),
    "g_positive": (dict(g=np.full(S, 0.5)),
                   r"g is the log of the decay and must be <= 0.* 0.5"),
    "g_nan": (dict(g=np.full(S, np.nan)), r"g must be finite"),
    "chunk_size_zero": (dict(chunk_size=0),
                        r"chunk_size must be an integer >= 1, got 0"),
    "state_wrong_shape": (dict(initial_state=np.zeros((2, 3, 5, 4))),
                          r"initial_state must have shape \(2, 3, 4, 5\).*"
                          r"got \(2, 3, 5, 4\)"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_is_refused_by_name(case):
    change, message = BAD[case]
    with pytest.raises(ValueError, match=message):
        call(**change)
