"""Chapter 10's practice references that the package does not provide itself."""

import numpy as np

from attention.linear.decayed import decayed_recurrent
from attention.practice.ch10 import gla_recurrent


def test_gated_linear_attention_with_one_decay_for_all_channels_is_the_decayed_recurrence():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 3, 11, 4)), rng.normal(size=(2, 3, 11, 4))
    v = rng.normal(size=(2, 3, 11, 5))
    g = -rng.uniform(0, 2, size=(2, 3, 11))
    expected, _ = decayed_recurrent(q, k, v, g)
    got = gla_recurrent(q, k, v, np.repeat(g[..., None], 4, axis=-1))
    assert np.max(np.abs(got - expected)) <= 1e-12 * np.max(np.abs(expected))
