"""The decoding loop: predict the next token, append it, repeat.

A decoder-only model gives logits for every position; generation uses only the last
one. With a KV cache (``attention.kv_cache``) the prompt is processed once (prefill)
and every later step feeds one new token per sequence (decode), which attends to the
cached keys and values. Without it, every step runs the whole sequence again: the same
logits, much more work. Greedy decoding (temperature 0) matches Hugging Face's
``generate(do_sample=False)`` token for token (tests/package/test_generation.py).

Batches of prompts of different lengths are left-padded: the <pad> tokens come first,
so every sequence's next token lands in the same column. ``valid`` marks the real
tokens; padded keys are masked, and positions count real tokens only.
"""

# --8<-- [start:imports]
import numpy as np

from attention.kv_cache import KVCache
from attention.model import forward
from attention.sampling import sample_next
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_prompts(prompts):
    """left_pad's prompts: a non-empty list of sequences of integer ids."""
    if isinstance(prompts, np.ndarray) and prompts.ndim == 2:
        prompts = list(prompts)
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError(f"left_pad: prompts must be a non-empty list of "
                         f"token id sequences, got {prompts!r}")
    for b, prompt in enumerate(prompts):
        p = np.asarray(prompt)
        if p.ndim != 1 or (p.size and p.dtype.kind not in "iu"):
            raise ValueError(f"left_pad: prompt {b} must be a sequence of "
                             f"integer ids, got {prompt!r}")


def check_generate(config, ids, max_new_tokens, stop_token):
    """generate's token ids (batch, n), or a ValueError naming the fault."""
    if (isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, (int, np.integer))
            or max_new_tokens < 0):
        raise ValueError(f"generate: max_new_tokens must be a non-negative "
                         f"integer, got {max_new_tokens!r}")
    if stop_token is not None and (
            isinstance(stop_token, bool)
            or not isinstance(stop_token, (int, np.integer))
            or not 0 <= stop_token < config.vocab_size):
        raise ValueError(f"generate: stop_token must be None or a token id "
                         f"in 0..{config.vocab_size - 1}, got {stop_token!r}")
    ids = np.asarray(ids)
    if ids.ndim not in (1, 2) or ids.size == 0:
        raise ValueError(f"generate: token_ids must be a prompt of at least "
                         f"one token, shape (n,) or (batch, n), got shape "
                         f"{ids.shape}")
    return np.atleast_2d(ids)  # (batch, n)
# --8<-- [end:checks]


# --8<-- [start:left_pad]
def left_pad(prompts, pad_id=0):
    """Prompts of different lengths -> token_ids, valid, both (batch, n)."""
    _check_prompts(prompts)
    n = max(len(p) for p in prompts)
    ids = np.full((len(prompts), n), pad_id, dtype=np.int64)
    valid = np.zeros((len(prompts), n), dtype=bool)
    for b, prompt in enumerate(prompts):
        if len(prompt):
            ids[b, -len(prompt):] = prompt  # the real tokens sit at the right
            valid[b, -len(prompt):] = True
    return ids, valid
# --8<-- [end:left_pad]


# --8<-- [start:generate]
def generate(params, config, token_ids, *, max_new_tokens, valid=None,
             temperature=0.0, top_k=None, top_p=None, min_p=None, rng=None,
             stop_token=None, use_cache=True, window=None, n_sinks=0,
             on_step=None, cache_type=KVCache):
    """Extend token_ids (batch, n) by up to max_new_tokens tokens each.

    temperature=0: greedy; otherwise sample with ``rng`` (a seeded
    np.random.Generator) after top-k / top-p / min-p. A sequence that emits
    stop_token is finished: it gets stop_token from then on, and the loop
    ends when all are finished. on_step(step, logits (batch, vocab)) sees
    the logits each token was chosen from. cache_type: the cache's class
    (chapter 11's Int8KVCache). Returns (batch, n + new) ids.
    """
    ids = check_generate(config, token_ids, max_new_tokens, stop_token)
    valid = np.ones(ids.shape, bool) if valid is None else np.atleast_2d(valid)
    windows = set(config.layer_windows)
    if window is None and len(windows) == 1:  # all layers alike (Mistral):
        (window,) = windows                   # the cache can forget too
    cache = cache_type(config.n_layers, window=window, n_sinks=n_sinks)
    if use_cache:  # prefill: the whole prompt at once
        logits = forward(params, config, ids, valid=valid, cache=cache)
    finished = np.zeros(len(ids), bool)
    for step in range(max_new_tokens):
        if not use_cache:  # recompute it all: what the cache must equal
            logits = forward(params, config, ids, valid=valid, window=window,
                             n_sinks=n_sinks)
        last = logits[:, -1]                               # (batch, vocab)
        if on_step is not None:
            on_step(step, last)
        new = sample_next(last, rng, temperature=temperature, top_k=top_k,
                          top_p=top_p, min_p=min_p)        # (batch,)
        if stop_token is not None:
            new = np.where(finished, stop_token, new)
            finished |= new == stop_token
        ids = np.concatenate([ids, new[:, None]], axis=1)  # (batch, n + 1)
        valid = np.concatenate([valid, np.ones((len(ids), 1), bool)], axis=1)
        if finished.all() or step == max_new_tokens - 1:
            break
        if use_cache:  # decode: one new token per sequence
            logits = forward(params, config, new[:, None], cache=cache)
    return ids
# --8<-- [end:generate]
