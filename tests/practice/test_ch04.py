"""Chapter 4's practice: every check rejects plausible wrong answers with a one-line message
that says what is wrong, without raising. (Solutions and starters: test_practice_exercises.py.)"""

import numpy as np
import pytest

from attention import attention, softmax
from attention.practice import (check_decode_step, check_kv_cache_size, check_top_p_filter,
                                check_window_cache_step)
from tests.practice_support import run_check


# Exercise 1: top-p ----------------------------------------------------------------------

def top_p_ascending(logits, p):  # sorts the wrong way: keeps the least likely
    order = np.argsort(logits)
    before = np.cumsum(softmax(logits)[order]) - softmax(logits)[order]
    keep = np.zeros(logits.shape, bool)
    keep[order] = before < p
    return np.where(keep, logits, -np.inf)


def top_p_may_keep_nothing(logits, p):  # right rule, but p = 0 keeps no token at all
    order = np.argsort(logits)[::-1]
    probs = softmax(logits)[order]
    keep = np.zeros(logits.shape, bool)
    keep[order] = np.cumsum(probs) - probs < p
    return np.where(keep, logits, -np.inf)


def top_p_returning_probabilities(logits, p):  # renormalises in place of filtering
    order = np.argsort(logits)[::-1]
    probs = softmax(logits)[order]
    keep_sorted = np.cumsum(probs) - probs < p
    keep_sorted[0] = True
    keep = np.zeros(logits.shape, bool)
    keep[order] = keep_sorted
    return np.where(keep, softmax(np.where(keep, logits, -np.inf)), -np.inf)


# Exercise 2: one decode step ------------------------------------------------------------

def decode_step_top_left(q, k, v, k_cache, v_cache):  # PyTorch's is_causal alignment
    k_cache, v_cache = np.concatenate([k_cache, k], -2), np.concatenate([v_cache, v], -2)
    mask = np.tril(np.ones((1, k_cache.shape[-2]), bool))
    return attention(q, k_cache, v_cache, mask=mask), k_cache, v_cache


def decode_step_prepending(q, k, v, k_cache, v_cache):  # right output, cache out of order
    k_cache, v_cache = np.concatenate([k, k_cache], -2), np.concatenate([v, v_cache], -2)
    return attention(q, k_cache, v_cache), k_cache, v_cache


def decode_step_unscaled(q, k, v, k_cache, v_cache):  # forgets 1/sqrt(d_head)
    k_cache, v_cache = np.concatenate([k_cache, k], -2), np.concatenate([v_cache, v], -2)
    weights = softmax(q @ np.swapaxes(k_cache, -1, -2))
    return weights @ v_cache, k_cache, v_cache


# Exercise 3: KV-cache size --------------------------------------------------------------

def size_with_query_heads(config, n_tokens, bytes_per_value=2):  # ignores GQA
    d_head = config.d_model // config.n_heads
    return 2 * config.n_layers * config.n_heads * d_head * n_tokens * bytes_per_value


def size_with_d_model(config, n_tokens, bytes_per_value=2):  # d_model per KV head
    return 2 * config.n_layers * config.n_kv_heads * config.d_model * n_tokens * bytes_per_value


def size_of_one_layer(config, n_tokens, bytes_per_value=2):
    d_head = config.d_model // config.n_heads
    return 2 * config.n_kv_heads * d_head * n_tokens * bytes_per_value


# Exercise 4: rolling window cache -------------------------------------------------------

def window_cache_keeping_everything(k_kept, v_kept, k_new, v_new, window):
    keys, values = np.concatenate([k_kept, k_new]), np.concatenate([v_kept, v_new])
    return keys, values, keys, values


def window_cache_keeping_one_too_few(k_kept, v_kept, k_new, v_new, window):
    keys, values = np.concatenate([k_kept, k_new]), np.concatenate([v_kept, v_new])
    keep = window - 2
    return keys, values, keys[len(keys) - keep:], values[len(values) - keep:]


def window_cache_forgetting_the_chunk(k_kept, v_kept, k_new, v_new, window):
    keys, values = np.concatenate([k_kept, k_new]), np.concatenate([v_kept, v_new])
    return keys[-window:], values[-window:], keys[-window:], values[-window:]


def window_cache_that_raises(k_kept, v_kept, k_new, v_new, window):
    raise NotImplementedError("todo")


WRONG = [
    (check_top_p_filter, top_p_ascending, "most likely"),
    (check_top_p_filter, top_p_may_keep_nothing, "you keep 0 tokens"),
    (check_top_p_filter, top_p_returning_probabilities, "keep their logits unchanged"),
    (check_decode_step, decode_step_top_left, "attended to the first 1 of the 6 keys"),
    (check_decode_step, decode_step_prepending, "appended at the end"),
    (check_decode_step, decode_step_unscaled, "1/sqrt(d_head)"),
    (check_kv_cache_size, size_with_query_heads, "use n_kv_heads"),
    (check_kv_cache_size, size_with_d_model, "d_head"),
    (check_kv_cache_size, size_of_one_layer, "every layer"),
    (check_window_cache_step, window_cache_keeping_everything, "you keep 6 keys"),
    (check_window_cache_step, window_cache_keeping_one_too_few, "needs the last"),
    (check_window_cache_step, window_cache_forgetting_the_chunk, "window + chunk - 1"),
    (check_window_cache_step, window_cache_that_raises, "raised NotImplementedError"),
]


@pytest.mark.parametrize("check, answer, words", WRONG, ids=[w[1].__name__ for w in WRONG])
def test_check_rejects_a_plausible_wrong_answer_and_says_why(check, answer, words, capsys):
    ok, line = run_check(check, answer, capsys)
    assert not ok and line.startswith("✗ Not yet: ") and words in line, line
