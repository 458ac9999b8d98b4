"""Temperature, top-k, top-p and min-p against Hugging Face's logits warpers.

Reference: transformers' TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper and
MinPLogitsWarper, fed the same float64 logits. We compare the filtered logits (which
tokens are -inf) and the renormalised probability vectors (<= 1e-15), never sampled
tokens: the two libraries' random generators differ.

Ties: PyTorch's CPU sort is stable only up to 16 entries and its topk (which min-p's
min_tokens_to_keep uses) breaks ties in no documented order. Where tied tokens straddle
a cut, we compare top-p vectors exactly for vocabularies of at most 16 and otherwise
the sorted probabilities: which of the tied tokens survives is then the sort's choice.
"""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from attention.sampling import (
    apply_temperature,
    filter_min_p,
    filter_top_k,
    filter_top_p,
    probabilities,
    process_logits,
    sample_next,
)

TOL = 1e-15


def hf(warper, logits):
    scores = torch.from_numpy(np.atleast_2d(np.asarray(logits, dtype=np.float64)))
    return warper(None, scores).numpy().reshape(np.shape(logits))


def assert_same_filter(ours, theirs, logits, *, stable_up_to=16):
    """Same tokens removed, same probabilities; where tied tokens straddle the cut and
    the reference's order among them is undefined, the same probabilities sorted."""
    ours, theirs = np.atleast_2d(ours), np.atleast_2d(theirs)
    for row_ours, row_theirs, row in zip(ours, theirs, np.atleast_2d(logits)):
        p_ours, p_theirs = probabilities(row_ours), probabilities(row_theirs)
        kept = np.isfinite(row_ours)
        probs = probabilities(row)  # logits that differ can still round to equal probabilities
        straddle = np.isin(probs[kept], probs[~kept & np.isfinite(row)]).any()
        if not straddle or row.size <= stable_up_to:
            np.testing.assert_array_equal(kept, np.isfinite(row_theirs))
            np.testing.assert_allclose(p_ours, p_theirs, rtol=0, atol=TOL)
        else:
            assert kept.sum() == np.isfinite(row_theirs).sum()
            np.testing.assert_allclose(np.sort(p_ours), np.sort(p_theirs), rtol=0, atol=TOL)


LOGITS = np.array([[2.0, 1.0, 0.5, 0.5, -1.0, -3.0, 0.0, 4.0],
                   [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                   [10.0, -10.0, 3.0, 3.0, 3.0, 2.9, -np.inf, 1.0]])


@pytest.mark.parametrize("temperature", [0.1, 0.7, 1.0, 1.5, 100.0])
def test_temperature_equals_hf(temperature):
    np.testing.assert_array_equal(apply_temperature(LOGITS, temperature),
                                  hf(TemperatureLogitsWarper(temperature), LOGITS))


def test_temperature_zero_is_rejected_and_sample_next_treats_it_as_greedy():
    with pytest.raises(ValueError, match="greedy"):
        apply_temperature(LOGITS, 0.0)
    np.testing.assert_array_equal(sample_next(LOGITS, temperature=0), [7, 0, 0])


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 20])
@pytest.mark.parametrize("keep", [1, 3])
def test_top_k_equals_hf_including_ties_at_the_boundary(k, keep):
    ours = filter_top_k(LOGITS, k, min_tokens_to_keep=keep)
    theirs = hf(TopKLogitsWarper(k, min_tokens_to_keep=keep), LOGITS)
    np.testing.assert_array_equal(ours, theirs)


def test_top_k_keeps_every_token_tied_with_the_kth():
    # Row 2: the three 3.0s tie for places 2-4, so k = 2 keeps all three and the 10.
    assert np.isfinite(filter_top_k(LOGITS[2], 2)).sum() == 4


@pytest.mark.parametrize("p", [0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 0.9, 0.95, 1.0])
@pytest.mark.parametrize("keep", [1, 2, 5])
def test_top_p_equals_hf(p, keep):
    ours = filter_top_p(LOGITS, p, min_tokens_to_keep=keep)
    theirs = hf(TopPLogitsWarper(p, min_tokens_to_keep=keep), LOGITS)
    assert_same_filter(ours, theirs, LOGITS)


def test_top_p_reaching_a_cumulative_sum_exactly():
    # Four equal logits: probabilities exactly 0.25, cumulative sums 0.25, 0.5, 0.75, 1.
    # With p = 0.5 the two most likely already reach p: Hugging Face removes the tokens
    # whose ascending cumulative sum is <= 1 - p = 0.5, i.e. two, and keeps two.
    logits = np.zeros(4)
    for p, n_kept in [(0.5, 2), (0.75, 3), (0.25, 1), (0.5000001, 3), (0.2499999, 1)]:
        ours = filter_top_p(logits, p)
        np.testing.assert_array_equal(ours, hf(TopPLogitsWarper(p), logits))
        assert np.isfinite(ours).sum() == n_kept, (p, ours)
    # Ties at the cut: the larger ids survive (stable ascending sort), as in HF.
    np.testing.assert_array_equal(np.isfinite(filter_top_p(logits, 0.5)), [0, 0, 1, 1])


def test_top_p_with_exact_dyadic_probabilities():
    # Probabilities 1/2, 1/4, 1/8, 1/8 exactly (logits differ by ln 2, computed so).
    logits = np.log(np.array([0.5, 0.25, 0.125, 0.125]))
    probs = probabilities(logits)
    for p in (0.5, 0.75, 0.875, 1.0):
        ours = filter_top_p(logits, p)
        np.testing.assert_array_equal(np.isfinite(ours),
                                      np.isfinite(hf(TopPLogitsWarper(p), logits)))
        assert probs[np.isfinite(ours)].sum() >= p - 1e-15


@pytest.mark.parametrize("p", [0.0, 0.05, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("keep", [1, 2, 4])
def test_min_p_equals_hf(p, keep):
    ours = filter_min_p(LOGITS, p, min_tokens_to_keep=keep)
    theirs = hf(MinPLogitsWarper(p, min_tokens_to_keep=keep), LOGITS)
    assert_same_filter(ours, theirs, LOGITS, stable_up_to=0)  # topk: no defined tie order


def test_min_p_one_keeps_exactly_the_tied_top_tokens():
    logits = np.array([1.0, 3.0, 3.0, 2.0])
    ours = filter_min_p(logits, 1.0)
    np.testing.assert_array_equal(np.isfinite(ours), [0, 1, 1, 0])
    np.testing.assert_array_equal(ours, hf(MinPLogitsWarper(1.0), logits))


@pytest.mark.parametrize("settings_", [
    dict(temperature=0.7, top_k=5, top_p=0.9, min_p=0.05),
    dict(temperature=1.3, top_k=3),
    dict(temperature=0.5, top_p=0.5, min_p=0.2),
])
def test_the_chain_equals_hf_generate_order(settings_):
    from transformers.generation.logits_process import LogitsProcessorList

    warpers = [TemperatureLogitsWarper(settings_["temperature"])]
    if "top_k" in settings_:
        warpers.append(TopKLogitsWarper(settings_["top_k"]))
    if "top_p" in settings_:
        warpers.append(TopPLogitsWarper(settings_["top_p"]))
    if "min_p" in settings_:
        warpers.append(MinPLogitsWarper(settings_["min_p"]))
    theirs = LogitsProcessorList(warpers)(None, torch.from_numpy(LOGITS)).numpy()
    assert_same_filter(process_logits(LOGITS, **settings_), theirs, LOGITS, stable_up_to=0)


# Hypothesis: random logits, with repeated values so that ties are common -------------

vocab_sizes = st.integers(1, 40)
tied_values = st.sampled_from([-2.0, 0.0, 0.0, 0.5, 1.0, 3.0])
free_values = st.floats(-20, 20, allow_nan=False)


@st.composite
def logit_rows(draw):
    n = draw(vocab_sizes)
    values = st.one_of(tied_values, free_values)
    rows = draw(st.integers(1, 3))
    return np.array([[draw(values) for _ in range(n)] for _ in range(rows)])


prop = settings(max_examples=200, deadline=None)


@prop
@given(logits=logit_rows(), p=st.floats(0, 1), keep=st.integers(1, 4))
def test_top_p_equals_hf_on_random_logits(logits, p, keep):
    assert_same_filter(filter_top_p(logits, p, min_tokens_to_keep=keep),
                       hf(TopPLogitsWarper(p, min_tokens_to_keep=keep), logits), logits)


@prop
@given(logits=logit_rows(), k=st.integers(1, 45), keep=st.integers(1, 4))
def test_top_k_equals_hf_on_random_logits(logits, k, keep):
    np.testing.assert_array_equal(filter_top_k(logits, k, min_tokens_to_keep=keep),
                                  hf(TopKLogitsWarper(k, min_tokens_to_keep=keep), logits))


@prop
@given(logits=logit_rows(), p=st.floats(0, 1), keep=st.integers(1, 4))
def test_min_p_equals_hf_on_random_logits(logits, p, keep):
    assert_same_filter(filter_min_p(logits, p, min_tokens_to_keep=keep),
                       hf(MinPLogitsWarper(p, min_tokens_to_keep=keep), logits), logits,
                       stable_up_to=0)


@prop
@given(logits=logit_rows(), t=st.floats(0.05, 20))
def test_temperature_equals_hf_on_random_logits(logits, t):
    np.testing.assert_array_equal(apply_temperature(logits, t),
                                  hf(TemperatureLogitsWarper(t), logits))


# Sampling itself ------------------------------------------------------------------------

def test_seeded_sampling_is_reproducible_and_never_picks_a_filtered_token():
    logits = np.tile(LOGITS[0], (4000, 1))
    a = sample_next(logits, np.random.default_rng(7), top_k=3)
    b = sample_next(logits, np.random.default_rng(7), top_k=3)
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) == {0, 1, 7}


def test_sampling_frequencies_match_the_probabilities():
    probs = probabilities(LOGITS[0])
    ids = sample_next(np.tile(LOGITS[0], (200_000, 1)), np.random.default_rng(0))
    freq = np.bincount(ids, minlength=probs.size) / ids.size
    # Binomial standard error is at most 0.0012 here; allow 5 of them.
    np.testing.assert_allclose(freq, probs, atol=0.006)


def test_errors_name_the_bad_value():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        filter_top_k(LOGITS, 0)
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\], got 1.5"):
        filter_top_p(LOGITS, 1.5)
    with pytest.raises(ValueError, match="min_tokens_to_keep"):
        filter_min_p(LOGITS, 0.1, min_tokens_to_keep=0)
    with pytest.raises(TypeError, match="np.random.Generator"):
        sample_next(LOGITS, 42)


# --- Degenerate rows, +inf, float16 (issue 24) ---

@pytest.mark.parametrize("row,what", [([-np.inf] * 3, "only -inf"), ([0.0, np.nan, 1.0], "NaN")])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_sample_next_refuses_a_row_it_cannot_draw_from_naming_it(row, what, temperature):
    logits = np.array([[0.0, 1.0, 2.0], row])
    with pytest.raises(ValueError, match=rf"row \(1,\).*holds {what}"):
        sample_next(logits, np.random.default_rng(0), temperature=temperature)


@pytest.mark.parametrize("temperature", [0.0, 0.5, 1.0])
def test_a_positive_infinite_logit_wins(temperature):
    ids = sample_next(np.tile([0.0, np.inf, 1.0], (50, 1)), np.random.default_rng(0),
                      temperature=temperature)
    assert (ids == 1).all()
    np.testing.assert_array_equal(probabilities([0.0, np.inf, np.inf]), [0.0, 0.5, 0.5])


def test_float16_logits_at_a_low_temperature_do_not_overflow():
    logits = np.array([0.0, 10.0, 60000.0], np.float16)
    assert sample_next(logits, np.random.default_rng(0), temperature=0.1) == 2


def test_every_setting_is_checked_whether_or_not_its_filter_runs():
    for kwargs, match in [({"top_p": 1.5}, "top_p must lie in"), ({"top_p": np.nan}, "top_p"),
                          ({"min_p": -0.1}, "min_p"), ({"top_k": -1}, "k must be"),
                          ({"min_tokens_to_keep": 0}, "min_tokens_to_keep")]:
        with pytest.raises(ValueError, match=match):
            process_logits(np.zeros(4), **kwargs)
    with pytest.raises(ValueError, match="p must lie in"):
        filter_top_p(np.zeros(4), 1.5)


def test_top_k_zero_is_off_as_in_generate():
    logits = np.array([0.0, 1.0, 2.0])
    np.testing.assert_array_equal(process_logits(logits, top_k=0), logits)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        filter_top_k(logits, 0)


def tie_grid():
    """Rows of a few repeated values (ties everywhere), -inf included, lengths 2 to 7 and
    some long rows (where torch.topk selects with std::partial_sort)."""
    values = [-np.inf, -1.0, 0.0, 2.0]
    rows = [np.array(r) for n in range(2, 6) for r in itertools.product(values, repeat=n)]
    rng = np.random.default_rng(0)
    rows += [rng.choice(values, size=n) for n in (7, 16, 17, 129, 300) for _ in range(30)]
    return [r for r in rows if np.isfinite(r).any()]


@pytest.mark.parametrize("keep", [2, 3, 5])
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_min_p_keeps_the_tied_tokens_hugging_face_keeps(keep, p):
    """Same kept set as MinPLogitsWarper (torch.topk's choice among ties), every row."""
    for row in tie_grid():
        ours = filter_min_p(row, p, min_tokens_to_keep=keep)
        theirs = hf(MinPLogitsWarper(p, min_tokens_to_keep=keep), row)
        np.testing.assert_array_equal(np.isfinite(ours), np.isfinite(theirs), err_msg=str(row))
        np.testing.assert_allclose(probabilities(ours), probabilities(theirs), rtol=0, atol=TOL)


def test_the_issue_example_keeps_index_0_like_hugging_face():
    kept = np.isfinite(filter_min_p([-1.0, -1.0, 0.0], 0.5, min_tokens_to_keep=2))
    np.testing.assert_array_equal(kept, [True, False, True])
