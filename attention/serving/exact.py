"""Exact distributions over short continuations, by enumeration: the claim that
speculative decoding samples from the target (proved by Chen et al. 2023, Theorem 1, and
Leviathan et al. 2023, Appendix A) computed for one small pair of models.

With a vocabulary of a few tokens every path of the sampler can be listed: every draft
proposal, every accept or reject outcome, every replacement and bonus token, each with
its probability. ``emitted_distribution`` adds them up into the probability of every
continuation of n_tokens tokens; ``target_distribution`` gives the same continuations'
probabilities under the target alone, p(t_1) p(t_2 | t_1) ... The two must be equal.
Both take the rule's replacement distribution as ``residual`` (default: the package's
``residuals``), so a page can pass a wrong rule in and watch the check reject it.
"""

# --8<-- [start:exact]
import functools
import itertools

import numpy as np

from attention.model import forward
from attention.serving.speculative import (acceptance,
                                           next_token_distribution, residuals)


def model_distribution(params, config, **settings):
    """prefix (tuple of ids) -> the model's next-token probabilities
    (vocab,) under the sampling settings; each prefix computed once."""
    @functools.cache
    def dist(prefix):
        logits = forward(params, config, np.array(prefix))[-1]  # (vocab,)
        return next_token_distribution(logits, **settings)
    return dist


def target_distribution(p, prefix, n_tokens):
    """{continuation (n_tokens ids): probability} under p alone."""
    out = {(): 1.0}
    for _ in range(n_tokens):
        out = {c + (t,): w * pt for c, w in out.items()
               for t, pt in enumerate(p(prefix + c)) if pt > 0}
    return out


def round_outcomes(p, q, prefix, k, *, residual=residuals):
    """{emitted block: probability} of one speculative round from prefix:
    every draft of k tokens, accepted up to a rejection (+ a replacement
    drawn from residual(p, q)) or all of them (+ bonus)."""
    out = {}
    for draft in itertools.product(range(len(p(prefix))), repeat=k):
        qs = np.array([q(prefix + draft[:i]) for i in range(k)])  # (k, V)
        ps = np.array([p(prefix + draft[:i]) for i in range(k + 1)])
        reach = np.prod(qs[np.arange(k), draft])  # P(the draft proposes it)
        if reach == 0:
            continue
        keep = acceptance(ps[:-1], qs, np.array(draft))
        replace = residual(ps[:-1], qs)
        for i in range(k + 1):  # reject at i (i = k: all kept, the bonus)
            last = ps[k] if i == k else replace[i]
            stop = 1.0 if i == k else 1.0 - keep[i]
            for t in np.flatnonzero(last) if reach * stop > 0 else ():
                block = draft[:i] + (int(t),)
                out[block] = out.get(block, 0.0) + reach * stop * last[t]
            if i < k:
                reach = reach * keep[i]
    return out


def emitted_distribution(p, q, prefix, n_tokens, k, *, residual=residuals):
    """{continuation (n_tokens ids): probability} under speculative
    decoding with draft q, k tokens a round, rounds until n_tokens."""
    out = {}
    for block, w in round_outcomes(p, q, prefix, k,
                                   residual=residual).items():
        rest = ({(): 1.0} if len(block) >= n_tokens else emitted_distribution(
            p, q, prefix + block, n_tokens - len(block), k,
            residual=residual))
        for tail, v in rest.items():
            c = (block + tail)[:n_tokens]
            out[c] = out.get(c, 0.0) + w * v
    return out
# --8<-- [end:exact]
