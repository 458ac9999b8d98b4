"""Timing the three forms of causal linear attention against softmax attention.

Times vary with the machine (its vector units, BLAS, the load), so the page prints them
marked as varying and asserts only what counting shows: the parallel form's work grows
as n^2, the recurrent and chunked forms' as n (``attention.practice.measure.Counted``
counts the multiply-adds of every matrix product). Each time is the least wall-clock time
of a few calls after an untimed one: the least is the call that other programs on a
shared machine disturbed least.
"""

# --8<-- [start:imports]
import time

import numpy as np

from attention.blocked import blocked_attention
from attention.linear.linear_attention import (linear_attention_chunked,
                                               linear_attention_parallel,
                                               linear_attention_recurrent)
# --8<-- [end:imports]


# --8<-- [start:forms]
def forms(chunk_size=64):
    """The four ways to mix n tokens compared here: name -> f(q, k, v)."""
    return {
        "softmax, blocked": lambda q, k, v: blocked_attention(q, k, v,
                                                              causal=True),
        "linear, parallel": lambda q, k, v: linear_attention_parallel(q, k, v),
        "linear, recurrent": lambda q, k, v: linear_attention_recurrent(
            q, k, v)[0],
        "linear, chunked": lambda q, k, v: linear_attention_chunked(
            q, k, v, chunk_size=chunk_size)[0],
    }


def best_seconds(fn, *args, repeats=3):
    """The least wall-clock time of ``repeats`` calls, after an untimed one."""
    fn(*args)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def time_forms(n, *, d=64, chunk_size=64, repeats=5, seed=0):
    """Seconds of each form on one head of n tokens, d features, float32
    (positive features, so every form divides by a positive normaliser)."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.random((1, n, d), dtype=np.float32) for _ in range(3))
    return {name: best_seconds(fn, q, k, v, repeats=repeats)
            for name, fn in forms(chunk_size).items()}
# --8<-- [end:forms]
