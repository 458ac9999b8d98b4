"""Speculative decoding: a small draft model proposes tokens, the target verifies them.

References: Y. Leviathan, M. Kalman and Y. Matias, "Fast Inference from Transformers via
Speculative Decoding" (ICML 2023), Algorithm 1 and Eq. 1 of section 3.1 (the expected
number of tokens per target call); C. Chen et al., "Accelerating Large Language Model Decoding
with Speculative Sampling" (2023), Algorithm 2 and Theorem 1 (the modified rejection
sampling gives the target's distribution exactly).

Each round the draft proposes k tokens x_1..x_k, one at a time, from its distributions
q_1..q_k; the target scores all of them in ONE forward pass, which gives its
distributions p_1..p_{k+1}. Token x_i is kept with probability min(1, p_i(x_i) /
q_i(x_i)); at the first rejection a replacement is drawn from norm(max(0, p_i - q_i))
and the round ends; when all k are kept, p_{k+1} gives one more token, the bonus. Every
emitted token is then distributed exactly as the target's own next token would be.

Greedy decoding is the case where p and q are one-hot at their argmax: a drafted token
is kept if and only if it is the target's argmax, and the replacement is that argmax,
so the output is the target's greedy output whatever the draft.
"""

# --8<-- [start:imports]
import numpy as np

from attention.kv_cache import KVCache
from attention.model import forward
from attention.sampling import probabilities, process_logits, sample_next
# --8<-- [end:imports]


# --8<-- [start:distribution]
def next_token_distribution(logits, *, temperature=0.0, top_k=None,
                            top_p=None):
    """The probabilities (..., vocab) a token is drawn from, for logits
    (..., vocab): one-hot at the argmax for temperature 0 (greedy), else
    the softmax after temperature, top-k and top-p (``sample_next``'s)."""
    logits = np.asarray(logits)
    if temperature == 0:
        one_hot = np.zeros(logits.shape)
        top = np.argmax(logits, axis=-1)[..., None]  # (..., 1)
        np.put_along_axis(one_hot, top, 1.0, axis=-1)
        return one_hot
    return probabilities(process_logits(logits, temperature=temperature,
                                        top_k=top_k, top_p=top_p))


def draw(probs, rng):
    """One token from probs (vocab,); all the mass on one token needs no
    randomness (greedy), else ``sample_next`` draws with rng."""
    if probs.max() == 1.0:
        return int(np.argmax(probs))
    with np.errstate(divide="ignore"):  # log(0) = -inf: a filtered token
        return int(sample_next(np.log(probs), rng))
# --8<-- [end:distribution]


# --8<-- [start:rule]
def acceptance(p, q, drafted):
    """min(1, p_i(x_i) / q_i(x_i)) for each drafted token x_i: the chance
    that the target keeps it. p, q (k, vocab); drafted (k,) ids."""
    rows = np.arange(len(drafted))
    with np.errstate(divide="ignore", invalid="ignore"):  # q = 0: undrawn
        ratio = p[rows, drafted] / q[rows, drafted]
    return np.minimum(1.0, ratio)  # (k,)


def residuals(p, q):
    """norm(max(0, p_i - q_i)) per row: where the target wants more than
    the draft offered, what a rejection is replaced from. (k, vocab).
    A row with nothing left (p = q) is never rejected; it gets p."""
    extra = np.maximum(p - q, 0.0)               # (k, vocab)
    total = extra.sum(axis=-1, keepdims=True)    # (k, 1)
    return np.where(total > 0, extra / np.where(total > 0, total, 1.0), p)
# --8<-- [end:rule]


# --8<-- [start:verify]
def accept_or_reject(p, q, drafted, rng):
    """One verification: target p (k + 1, vocab), draft q (k, vocab), the
    drafted ids (k,) -> the tokens emitted, 1 to k + 1 of them: the kept
    drafted tokens, then a replacement (at a rejection) or the bonus."""
    keep, replace = acceptance(p[:-1], q, drafted), residuals(p[:-1], q)
    for i, token in enumerate(drafted):
        # kept with probability keep[i]: 1 and 0 need no random number
        if keep[i] < 1 and (keep[i] == 0 or rng.random() >= keep[i]):
            return np.append(drafted[:i], draw(replace[i], rng))
    return np.append(drafted, draw(p[-1], rng))  # all kept: the bonus
# --8<-- [end:verify]


# --8<-- [start:checks]
def _check_speculative(target_config, draft, token_ids, max_new_tokens,
                       n_draft, temperature, rng, fn="speculate"):
    """speculate's arguments; returns the prompt (n,)."""
    for name, value, low in (("max_new_tokens", max_new_tokens, 0),
                             ("n_draft", n_draft, 1)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < low):
            raise ValueError(f"{fn}: {name} must be an integer >= {low}, "
                             f"got {value!r}")
    if not all(hasattr(draft, name) for name in ("vocab_size",
                                                  "distribution", "rewind")):
        raise TypeError(f"{fn}: draft must have vocab_size, distribution() "
                        f"and rewind() (an NgramDraft), got "
                        f"{type(draft).__name__}")
    if draft.vocab_size != target_config.vocab_size:
        raise ValueError(f"{fn}: the draft's vocabulary "
                         f"({draft.vocab_size} tokens) must be the "
                         f"target's ({target_config.vocab_size} tokens)")
    if isinstance(temperature, bool) or not temperature >= 0:
        raise ValueError(f"{fn}: temperature must be a number >= 0, "
                         f"got {temperature!r}")
    if temperature > 0 and not isinstance(rng, np.random.Generator):
        raise TypeError(f"{fn}: sampling needs rng, a np.random.Generator, "
                        f"got {type(rng).__name__}")
    ids = np.asarray(token_ids)
    if (ids.ndim not in (1, 2) or ids.size == 0 or ids.dtype.kind not in "iu"
            or (ids.ndim == 2 and len(ids) != 1)):
        raise ValueError(f"{fn}: token_ids must be one prompt of integer "
                         f"ids, shape (n,) or (1, n), got shape {ids.shape}")
    return ids.reshape(-1)  # (n,)
# --8<-- [end:checks]


# --8<-- [start:speculative_generate]
def _next_logits(params, config, cache, ids):
    """Feed the tokens of ids (n,) the cache has not seen: their logits."""
    return forward(params, config, ids[None, len(cache):], cache=cache)[0]


class ModelDraft:
    """A draft model and its own KV cache. ``distribution(context)`` feeds
    the tokens of context (n,) its cache has not seen and returns its
    next-token probabilities; ``rewind(n)`` forgets all but the first n."""

    def __init__(self, params, config):
        self.params, self.config = params, config
        self.vocab_size = config.vocab_size
        self.cache = KVCache(config.n_layers)

    def distribution(self, context, **settings):
        logits = _next_logits(self.params, self.config, self.cache, context)
        return next_token_distribution(logits[-1], **settings)

    def rewind(self, n):
        self.cache.crop(min(len(self.cache), n))


def speculate(target_params, target_config, draft, token_ids, *,
              max_new_tokens, n_draft, temperature=0.0, top_k=None,
              top_p=None, rng=None):
    """Extend one prompt token_ids (n,) by max_new_tokens tokens, drafting
    n_draft at a time with draft (a ``ModelDraft``, an ``NgramDraft``:
    anything with vocab_size, distribution(context, **settings) and
    rewind(n)). The tokens are distributed as the target's own (greedy:
    equal to its greedy ``generate``). Returns (ids, stats): ids shaped
    like token_ids, stats the counts of target calls, drafted and
    accepted tokens, and rounds that ended in a rejection."""
    prompt = _check_speculative(target_config, draft, token_ids,
                                max_new_tokens, n_draft, temperature, rng)
    settings = dict(temperature=temperature, top_k=top_k, top_p=top_p)
    target_cache = KVCache(target_config.n_layers)
    stats = {"target_calls": 0, "drafted": 0, "accepted": 0, "rejected": 0}
    ids, end = prompt, len(prompt) + max_new_tokens
    while len(ids) < end:
        k = min(n_draft, end - len(ids) - 1)  # never past max_new_tokens
        drafted = np.zeros(0, np.int64)
        q = np.zeros((k, target_config.vocab_size))  # the draft's q_1..q_k
        for i in range(k):  # the draft: one token at a time
            q[i] = draft.distribution(np.append(ids, drafted), **settings)
            drafted = np.append(drafted, draw(q[i], rng))
        logits = _next_logits(target_params, target_config, target_cache,
                              np.append(ids, drafted))  # one call: k + 1 rows
        p = next_token_distribution(logits[-(k + 1):], **settings)
        emitted = accept_or_reject(p, q, drafted, rng)
        stats["target_calls"] += 1
        stats["drafted"] += k
        stats["accepted"] += len(emitted) - 1
        stats["rejected"] += len(emitted) - 1 < k  # a round cut short
        ids = np.concatenate([ids, emitted])
        # forget rejected tokens
        target_cache.crop(min(len(target_cache), len(ids) - 1))
        draft.rewind(len(ids) - 1)
    return ids.reshape(np.shape(token_ids)[:-1] + (-1,)), stats


def speculative_generate(target_params, target_config, draft_params,
                         draft_config, token_ids, *, max_new_tokens, n_draft,
                         temperature=0.0, top_k=None, top_p=None, rng=None):
    """``speculate`` with a draft model (draft_params, draft_config)."""
    return speculate(target_params, target_config,
                     ModelDraft(draft_params, draft_config), token_ids,
                     max_new_tokens=max_new_tokens, n_draft=n_draft,
                     temperature=temperature, top_k=top_k, top_p=top_p,
                     rng=rng)
# --8<-- [end:speculative_generate]
