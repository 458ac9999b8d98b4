"""softmax, log_softmax, logsumexp: stable, any axis, dtype kept, equal to PyTorch's.

Tolerances: float64 <= 1e-12 absolute against torch.softmax, torch.log_softmax and
torch.logsumexp (measured: a few 1e-16 on ordinary inputs); float32 <= 1e-5. On extreme
inputs the nan and infinity positions must be identical to PyTorch's, and the finite
entries within the same 1e-12.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import log_softmax, logsumexp, softmax

ATOL64, ATOL32 = 1e-12, 1e-5
inf = np.inf


def assert_same(ours, theirs, atol):
    """Equal nan and ±inf positions, and finite entries within atol."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(theirs))
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs))
    finite = np.isfinite(ours)
    if finite.any():
        assert np.abs(ours[finite] - theirs[finite]).max() <= atol


def torch_of(name, x, axis):
    t = torch.from_numpy(np.ascontiguousarray(x))
    if name == "softmax":
        return torch.softmax(t, dim=axis).numpy()
    if name == "log_softmax":
        return torch.log_softmax(t, dim=axis).numpy()
    return torch.logsumexp(t, dim=axis).numpy()


OURS = {"softmax": softmax, "log_softmax": log_softmax, "logsumexp": logsumexp}


# The basics -------------------------------------------------------------------------

def test_rows_are_positive_and_sum_to_one():
    x = np.random.default_rng(0).normal(size=(4, 7))
    w = softmax(x)
    assert (w > 0).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_matches_torch_softmax_on_any_axis_to_1e_15(axis):
    x = np.random.default_rng(1).normal(scale=5, size=(3, 4, 5))
    expected = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    assert np.abs(softmax(x, axis=axis) - expected).max() <= 1e-15


def test_large_scores_do_not_overflow():
    w = softmax(np.array([1000.0, 999.0, -1000.0]))
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, softmax(np.array([0.0, -1.0, -2000.0])))


def test_float32_stays_float32():
    x = np.ones((2, 3), dtype=np.float32)
    assert softmax(x).dtype == np.float32


def test_integers_are_computed_in_float64():
    assert softmax(np.array([1, 2, 3])).dtype == np.float64


# Against PyTorch, ordinary inputs, every axis ------------------------------------------

@pytest.mark.parametrize("name", ["log_softmax", "logsumexp"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_matches_torch_on_any_axis_in_float64(name, axis):
    x = np.random.default_rng(2).normal(scale=5, size=(3, 4, 5))
    assert_same(OURS[name](x, axis=axis), torch_of(name, x, axis), ATOL64)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_matches_torch_in_float32_and_keeps_float32(name):
    x = np.random.default_rng(3).normal(scale=5, size=(6, 9)).astype(np.float32)
    ours = OURS[name](x, axis=-1)
    assert ours.dtype == np.float32
    assert_same(ours, torch_of(name, x, -1), ATOL32)


# Against PyTorch, extreme inputs -------------------------------------------------------

# What each library returns on these rows is on chapter 1's page; here, that they agree.
EXTREME_ROWS = {
    "large": [1000.0, 999.0, 998.0],
    "very large": [1e6, 1e6 - 1.0, 1e6 - 30.0],
    "negative": [-1000.0, -999.0, -998.0],
    "far apart": [0.0, -800.0, -1000.0],  # softmax underflows to 0, log-softmax does not
    "-inf entries": [0.0, -inf, 1.0, -inf],
    "all -inf": [-inf, -inf, -inf],
    "one entry": [3.0],
    "nan": [0.0, np.nan, 1.0],
}


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("row", list(EXTREME_ROWS), ids=list(EXTREME_ROWS))
def test_matches_torch_on_extreme_rows_in_float64(name, row):
    x = np.array(EXTREME_ROWS[row])
    with np.errstate(invalid="ignore"):  # softmax of a row of -inf: nan, warned
        ours = OURS[name](x)
    assert_same(ours, torch_of(name, x, -1), ATOL64)


def test_all_minus_inf_row_gives_nan_weights_and_minus_inf_logsumexp():
    x = np.array([[0.0, 1.0], [-inf, -inf]])
    with np.errstate(invalid="ignore"):
        assert np.isnan(softmax(x)[1]).all()
    assert np.isnan(log_softmax(x)[1]).all()
    assert logsumexp(x)[1] == -inf
    assert np.isfinite(log_softmax(x)[0]).all()  # the other row is untouched


def test_plus_inf_entry_gives_plus_inf_logsumexp_as_torch():
    x = np.array([inf, 0.0, 1.0])
    assert logsumexp(x) == inf == torch.logsumexp(torch.from_numpy(x), 0).item()


def test_empty_axis_gives_minus_inf_logsumexp_and_empty_log_softmax():
    x = np.zeros((2, 0))
    assert_same(logsumexp(x), torch_of("logsumexp", x, -1), 0)
    assert log_softmax(x).shape == (2, 0)


def test_log_softmax_stays_finite_where_log_of_softmax_is_minus_inf():
    x = np.array([0.0, -800.0])
    with np.errstate(divide="ignore"):
        naive = np.log(softmax(x))
    assert naive[1] == -inf
    np.testing.assert_allclose(log_softmax(x), [0.0, -800.0], rtol=0, atol=1e-12)


# Properties ----------------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    shift=st.floats(-1e3, 1e3),
    data=st.data(),
)
def test_shift_invariance_and_consistency(seed, shape, shift, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x = np.random.default_rng(seed).normal(scale=10, size=shape)
    lse = logsumexp(x, axis=axis, keepdims=True)
    # log-sum-exp moves with a shift; log-softmax does not
    np.testing.assert_allclose(logsumexp(x + shift, axis=axis, keepdims=True),
                               lse + shift, rtol=0, atol=1e-9)
    np.testing.assert_allclose(log_softmax(x + shift, axis=axis),
                               log_softmax(x, axis=axis), rtol=0, atol=1e-9)
    # log_softmax = x - logsumexp, and exp(log_softmax) = softmax
    np.testing.assert_allclose(log_softmax(x, axis=axis), x - lse,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.exp(log_softmax(x, axis=axis)),
                               softmax(x, axis=axis), rtol=0, atol=1e-15)


# dtypes and keepdims -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", ["log_softmax", "logsumexp"])
def test_dtype_is_kept(dtype, name):
    assert OURS[name](np.ones((2, 3), dtype=dtype)).dtype == dtype


@pytest.mark.parametrize("x", [np.array([1, 2, 3]), np.array([True, False])])
@pytest.mark.parametrize("name", ["log_softmax", "logsumexp"])
def test_integers_and_booleans_are_computed_in_float64(x, name):
    assert OURS[name](x).dtype == np.float64


def test_float16_sum_of_many_terms_does_not_overflow():
    x = np.zeros(70_000, dtype=np.float16)  # the sum of exps, 70,000, is above 65,504
    assert logsumexp(x) == np.float16(np.log(70_000))
    assert np.isfinite(log_softmax(x)).all()


def test_keepdims_keeps_a_length_one_axis():
    x = np.random.default_rng(4).normal(size=(2, 3, 4))
    assert logsumexp(x, axis=1).shape == (2, 4)
    assert logsumexp(x, axis=1, keepdims=True).shape == (2, 1, 4)
    assert np.ndim(logsumexp(x[0, 0])) == 0


def test_accepts_lists():
    np.testing.assert_allclose(logsumexp([0.0, 0.0]), np.log(2), rtol=0, atol=0)


# Clear errors --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["log_softmax", "logsumexp"])
@pytest.mark.parametrize(
    "x, what",
    [(np.array([1 + 2j, 0j]), "complex128"), (np.array(["a", "b"]), "<U1"),
     (np.array([None, 1.0], dtype=object), "object")],
)
def test_non_real_input_raises_type_error_naming_the_dtype(name, x, what):
    with pytest.raises(TypeError, match=f"{name}: x must hold real numbers, got dtype {what}"):
        OURS[name](x)


@pytest.mark.parametrize("name", ["log_softmax", "logsumexp"])
def test_missing_axis_raises_value_error_naming_the_shape(name):
    with pytest.raises(ValueError, match=r"axis 2 is out of range for x of shape \(3, 4\)"):
        OURS[name](np.zeros((3, 4)), axis=2)


@pytest.mark.parametrize("name", ["log_softmax", "logsumexp"])
@pytest.mark.parametrize("axis", [None, 1.0, True, (0, 1)])
def test_axis_that_is_not_an_int_raises_type_error(name, axis):
    with pytest.raises(TypeError, match="axis must be an int"):
        OURS[name](np.zeros((3, 4)), axis=axis)


# --- float16, empty, complex and string input (issue 24) ---

def test_float16_softmax_sums_in_float32_and_matches_pytorch():
    import torch
    p = softmax(np.zeros(70000, np.float16))
    assert p.dtype == np.float16
    assert abs(float(p.astype(np.float64).sum()) - 1) < 2e-3
    grid = np.array([[0, 1, 1, -np.inf], [3e4, 3e4, 0, 1], [-np.inf] * 4, [0, np.nan, 1, 2]],
                    np.float16)
    with np.errstate(invalid="ignore"):
        ours = softmax(grid)
    theirs = torch.softmax(torch.from_numpy(grid).float(), -1).half().numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_softmax_of_an_empty_axis_is_empty():
    assert softmax(np.zeros((3, 0))).shape == (3, 0)
    assert softmax(np.zeros((0, 3))).shape == (0, 3)


@pytest.mark.parametrize("x", [np.array([1 + 1j]), np.array(["a", "b"]), np.array([None])])
def test_softmax_refuses_what_is_not_real(x):
    with pytest.raises(TypeError, match="softmax: x must hold real numbers"):
        softmax(x)
