"""Beam search against exhaustive search on a tiny vocabulary.

A beam wide enough to hold every sequence (vocab_size ** length) is exhaustive search,
so the two must agree exactly (same sequences, same scores, same order); a narrow beam
can miss the most probable sequence, and we find such a case.
"""

import numpy as np
import pytest

from attention.beam_search import beam_search, exhaustive_search
from attention.softmax import log_softmax


def random_model(seed, vocab_size, context=2):
    """A random 'language model' over the last `context` tokens: log-probs from a table."""
    rng = np.random.default_rng(seed)
    table = rng.normal(scale=2.0, size=(vocab_size,) * context + (vocab_size,))
    table = log_softmax(table, axis=-1)

    def next_log_probs(sequences):
        sequences = np.asarray(sequences)
        return table[tuple(sequences[:, -context + i] for i in range(context))]
    return next_log_probs


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("vocab_size, length", [(2, 5), (3, 4), (4, 3)])
def test_a_beam_that_holds_every_sequence_is_exhaustive_search(seed, vocab_size, length):
    model = random_model(seed, vocab_size)
    prompt = [0, 1 % vocab_size]
    seqs, scores = exhaustive_search(model, prompt, vocab_size=vocab_size, max_new_tokens=length)
    assert len(seqs) == vocab_size ** length
    beams, beam_scores = beam_search(model, prompt, beam_width=vocab_size ** length,
                                     max_new_tokens=length)
    # Same scores in the same order; the same set of sequences, each with its own score
    # (sequences made of the same transitions in another order tie, in any order).
    np.testing.assert_allclose(beam_scores, scores, rtol=0, atol=1e-12)
    exhaustive = {tuple(s): score for s, score in zip(seqs, scores)}
    assert {tuple(b) for b in beams} == set(exhaustive)
    for b, score in zip(beams, beam_scores):
        assert abs(exhaustive[tuple(b)] - score) <= 1e-12
    assert scores[0] > scores[1] + 1e-9 and tuple(beams[0]) == tuple(seqs[0])


def test_beam_scores_are_sums_of_log_probabilities_best_first():
    model = random_model(0, 3)
    beams, scores = beam_search(model, [0, 1], beam_width=4, max_new_tokens=3)
    assert np.all(np.diff(scores) <= 0)
    for seq, score in zip(beams, scores):
        total = sum(model(seq[None, :i])[0, seq[i]] for i in range(2, 5))
        assert abs(total - score) <= 1e-12


def first_narrow_beam_miss(vocab_size=3, length=4, width=2):
    for seed in range(100):
        model = random_model(seed, vocab_size)
        best, best_scores = exhaustive_search(model, [0, 1], vocab_size=vocab_size,
                                              max_new_tokens=length)
        beams, scores = beam_search(model, [0, 1], beam_width=width, max_new_tokens=length)
        if scores[0] < best_scores[0] - 1e-9:
            return seed, best[0], best_scores[0], beams[0], scores[0]
    return None


def test_a_narrow_beam_can_miss_the_most_probable_sequence():
    found = first_narrow_beam_miss()
    assert found is not None
    seed, best, best_score, beam_best, beam_score = found
    assert not np.array_equal(best, beam_best) and beam_score < best_score


def test_greedy_is_a_beam_of_one():
    model = random_model(3, 4)
    seq = np.array([0, 1])
    for _ in range(5):
        seq = np.append(seq, np.argmax(model(seq[None])[0]))
    beams, _ = beam_search(model, [0, 1], beam_width=1, max_new_tokens=5)
    np.testing.assert_array_equal(beams[0], seq)


def test_bad_width_is_named():
    with pytest.raises(ValueError, match="beam_width must be a positive integer, got 0"):
        beam_search(random_model(0, 2), [0], beam_width=0, max_new_tokens=2)


# --- Issue 24: what the model returns, and the prompt ---

@pytest.mark.parametrize("model,match", [
    (lambda beams: np.full((len(beams), 3), np.nan), "NaN for beam 0"),
    (lambda beams: np.zeros(3), r"shape \(1, vocab_size\).*\(3,\)"),
])
def test_beam_search_refuses_a_bad_model_output(model, match):
    with pytest.raises(ValueError, match=match):
        beam_search(model, [0], beam_width=2, max_new_tokens=2)


@pytest.mark.parametrize("prompt", [[0.5, 1.7], [[0, 1]]])
def test_beam_search_refuses_a_prompt_that_is_not_1d_integers(prompt):
    with pytest.raises(ValueError, match="prompt must be a 1-D sequence of integer"):
        beam_search(lambda b: np.zeros((len(b), 3)), prompt, beam_width=2, max_new_tokens=1)
