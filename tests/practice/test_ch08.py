"""Chapter 8's practice references that the package does not provide itself."""

import itertools

import numpy as np

from attention.long_context.alibi import alibi_bias
from attention.practice.ch08 import alibi_decode_reference, blocks_reference
from attention.softmax import softmax


def test_the_blocks_to_read_are_those_of_the_visible_keys():
    """Brute force: every key a query of the chunk sees, by the definition."""
    for q_start, length, block, window, sinks in itertools.product(
            range(0, 20, 3), (1, 2, 5, 9), (1, 3, 4), (1, 2, 5, 30), (0, 1, 4)):
        q_end = q_start + length
        seen = {j // block for i in range(q_start, q_end) for j in range(i + 1)
                if i - window < j or j < sinks}
        assert blocks_reference(q_start, q_end, block, window, sinks).tolist() == sorted(seen)


def test_one_alibi_decode_step_is_the_last_row_of_full_alibi_attention():
    rng = np.random.default_rng(0)
    h, n, d = 6, 7, 4
    q, k, v = rng.normal(size=(h, n, d)), rng.normal(size=(h, n, d)), rng.normal(size=(h, n, d))
    positions = np.arange(n)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d) + alibi_bias(h, positions, positions)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    full = softmax(scores, axis=-1) @ v
    got = alibi_decode_reference(q[:, -1], k, v, positions, n - 1)
    assert np.max(np.abs(got - full[:, -1])) <= 1e-14
