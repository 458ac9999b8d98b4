"""Chapter 10's linear attention: its parallel, recurrent and chunked forms are one
function (float64, <= 1e-12 relative to the largest output, for every chunk size from 1
to n and beyond), the non-causal form is Q (K^T V), a state carries a sequence across
calls, the normaliser is the weighted average of softmax's kind, and bad input is
refused by name. The causal conv is checked against torch's conv1d (float64, 1e-13)."""

import numpy as np
import pytest
import torch

from attention.linear.conv import causal_conv1d
from attention.linear.feature_maps import elu_plus_one, l2_normalize
from attention.linear.linear_attention import (linear_attention_chunked,
                                               linear_attention_parallel,
                                               linear_attention_recurrent)

TOL = 1e-12


def features(seed, lead=(2, 3), n=13, d_k=4, d_v=5):
    rng = np.random.default_rng(seed)
    q, k = (elu_plus_one(rng.normal(size=(*lead, n, d_k))) for _ in range(2))
    return q, k, rng.normal(size=(*lead, n, d_v))


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("normalize", [True, False])
def test_three_forms_are_equal_for_every_chunk_size(normalize):
    q, k, v = features(0)
    n = q.shape[-2]
    parallel = linear_attention_parallel(q, k, v, normalize=normalize)
    out, state = linear_attention_recurrent(q, k, v, normalize=normalize)
    assert rel(out, parallel) < TOL
    for C in range(1, n + 3):  # 1, ..., n, and chunks longer than the sequence
        got, got_state = linear_attention_chunked(q, k, v, chunk_size=C,
                                                  normalize=normalize)
        assert rel(got, parallel) < TOL, C
        assert rel(got_state, state) < TOL, C


def test_state_is_the_sum_of_key_value_outer_products():
    q, k, v = features(1)
    _, S = linear_attention_recurrent(q, k, v, normalize=False)
    assert rel(S, np.swapaxes(k, -1, -2) @ v) < TOL
    _, S = linear_attention_recurrent(q, k, v)  # last column: z = sum of keys
    assert rel(S[..., -1], k.sum(axis=-2)) < TOL


def test_last_row_is_the_non_causal_product_in_either_order():
    q, k, v = features(2)
    last = linear_attention_parallel(q, k, v, normalize=False)[..., -1, :]
    kt = np.swapaxes(k, -1, -2)
    assert rel((q @ kt @ v)[..., -1, :], last) < TOL      # (Q K^T) V
    assert rel((q @ (kt @ v))[..., -1, :], last) < TOL    # Q (K^T V)


@pytest.mark.parametrize("form", ["recurrent", "chunked"])
def test_a_state_carries_the_sequence_across_calls(form):
    q, k, v = features(3)
    run = (linear_attention_recurrent if form == "recurrent" else
           lambda *a, **kw: linear_attention_chunked(*a, chunk_size=3, **kw))
    whole, state = run(q, k, v)
    first, mid = run(q[..., :6, :], k[..., :6, :], v[..., :6, :])
    second, end = run(q[..., 6:, :], k[..., 6:, :], v[..., 6:, :],
                      initial_state=mid)
    assert rel(np.concatenate([first, second], axis=-2), whole) < TOL
    assert rel(end, state) < TOL


def test_normalised_output_is_a_weighted_average_of_the_values():
    q, k, v = features(4)
    weights = np.tril(q @ np.swapaxes(k, -1, -2))
    weights /= weights.sum(axis=-1, keepdims=True)
    assert (weights >= 0).all()
    assert rel(linear_attention_parallel(q, k, v), weights @ v) < TOL


def test_feature_maps():
    x = np.linspace(-30, 30, 61)
    phi = elu_plus_one(x)
    assert (phi > 0).all() and np.allclose(phi[x > 0], x[x > 0] + 1)
    assert np.allclose(phi[x <= 0], np.exp(x[x <= 0]))
    unit = l2_normalize(np.random.default_rng(5).normal(size=(4, 7)))
    assert np.allclose(np.linalg.norm(unit, axis=-1), 1, atol=1e-6)
    assert elu_plus_one(np.ones(3, np.float32)).dtype == np.float32


def test_float32_in_float32_out():
    q, k, v = (a.astype(np.float32) for a in features(6))
    out, S = linear_attention_chunked(q, k, v, chunk_size=4)
    assert out.dtype == S.dtype == np.float32
    assert rel(out, linear_attention_parallel(*features(6))) < 1e-5


def test_causal_conv_equals_torch_conv1d_and_carries_its_state():
    rng = np.random.default_rng(7)
    x, w = rng.normal(size=(2, 9, 6)), rng.normal(size=(6, 4))
    y, state = causal_conv1d(x, w)
    ref = torch.nn.functional.conv1d(
        torch.from_numpy(x).transpose(1, 2), torch.from_numpy(w)[:, None],
        padding=3, groups=6)[..., :9].transpose(1, 2).numpy()
    assert np.abs(y - ref).max() < 1e-13
    assert np.array_equal(state, x[:, -3:])
    first, mid = causal_conv1d(x[:, :5], w)
    steps = [first]
    for t in range(5, 9):
        out, mid = causal_conv1d(x[:, t:t + 1], w, state=mid)
        steps.append(out)
    assert np.abs(np.concatenate(steps, axis=1) - y).max() < 1e-13


BAD = {
    "q_and_k_shapes_differ": (
        lambda q, k, v: linear_attention_parallel(q, k[..., :3], v),
        r"q and k must have the same shape.*\(2, 3, 13, 4\).*\(2, 3, 13, 3\)"),
    "v_has_other_tokens": (
        lambda q, k, v: linear_attention_recurrent(q, k, v[..., :5, :]),
        r"v must have shape.*\(2, 3, 13, 4\).*\(2, 3, 5, 5\)"),
    "one_axis_only": (
        lambda q, k, v: linear_attention_parallel(q[0, 0, 0], k[0, 0, 0],
                                                  v[0, 0, 0]),
        r"q must have shape \(\.\.\., n, d\), got shape \(4,\)"),
    "chunk_size_zero": (
        lambda q, k, v: linear_attention_chunked(q, k, v, chunk_size=0),
        r"chunk_size must be an integer >= 1, got 0"),
    "chunk_size_float": (
        lambda q, k, v: linear_attention_chunked(q, k, v, chunk_size=2.0),
        r"chunk_size must be an integer >= 1, got 2.0"),
    "state_of_the_wrong_shape": (
        lambda q, k, v: linear_attention_recurrent(
            q, k, v, normalize=False, initial_state=np.zeros((2, 3, 5, 4))),
        r"initial_state must have shape \(2, 3, 4, 5\).*got \(2, 3, 5, 4\)"),
    "conv_weight_channels": (
        lambda q, k, v: causal_conv1d(v[0], np.ones((4, 3))),
        r"weight \(channels, K\), got x \(3, 13, 5\) and weight \(4, 3\)"),
    "conv_state_shape": (
        lambda q, k, v: causal_conv1d(v[0], np.ones((5, 3)),
                                      state=np.zeros((3, 3, 5))),
        r"state must be .*\(3, 2, 5\), got \(3, 3, 5\)"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_is_refused_by_name(case):
    fn, message = BAD[case]
    with pytest.raises(ValueError, match=message):
        fn(*features(8))
