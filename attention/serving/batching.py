"""Continuous batching: a scheduler that admits and retires requests at every step.

References: G.-I. Yu et al., "Orca: A Distributed Serving System for Transformer-Based
Generative Models" (OSDI 2022), iteration-level scheduling; W. Kwon et al. (SOSP 2023),
section 4.5, scheduling on a paged cache.

Static batching takes a batch of requests and decodes it until its longest request is
done: a short request's slot idles and new arrivals wait. Continuous batching decides
again at every step: finished requests leave (their blocks go back to the pool) and
waiting ones join, each with a prefill of its prompt, as long as the pool has the blocks
that their whole length will need. Each request's tokens depend on its own prompt only:
its keys sit in its own blocks, and the other sequences' padding is masked.

Time is counted in steps, one model step per iteration (its prefills and one decoded
token per running request), so the simulation is deterministic: arrivals and lengths
come from a seed, and throughput and latency are read off in steps, not seconds.
"""

# --8<-- [start:imports]
from dataclasses import dataclass, field

import numpy as np

from attention.model import forward
from attention.serving.paged import PagedKVCache, PagedSequence, pool_for
# --8<-- [end:imports]


# --8<-- [start:request]
@dataclass(eq=False)  # requests are compared by identity
class Request:
    arrival: int                # the step it arrives at
    prompt: np.ndarray          # (n,) token ids
    max_new_tokens: int         # tokens to generate (greedy)
    tokens: list = field(default_factory=list)  # generated so far
    admitted: int | None = None  # the step it was prefilled at
    finished: int | None = None  # the step of its last token

    def blocks_needed(self, block_size):
        """Blocks its whole length needs (the last token is never cached)."""
        n = len(self.prompt) + self.max_new_tokens - 1
        return -(-n // block_size)  # ceil(n / block_size)
# --8<-- [end:request]


# --8<-- [start:serve]
def serve(params, config, requests, *, max_batch, n_blocks, block_size,
          policy="continuous"):
    """Decode every request greedily on one paged pool, step by step.

    policy "continuous": admit waiting requests (in order of arrival)
    whenever a slot and their blocks are free, retire each when done.
    "static": admit only into an empty batch, which runs until all of
    its requests are done. Returns the tokens emitted at each step (one
    per request served); each request's tokens, admission and finish
    are filled in.
    """
    _check_serve(config, requests, max_batch, n_blocks, block_size, policy)
    pool = pool_for(config, n_blocks, block_size)
    waiting = sorted(requests, key=lambda r: r.arrival)
    running, sequences, steps = [], {}, []
    while waiting or running:
        step, decoding, admitted = len(steps), list(running), 0
        held = sum(r.blocks_needed(block_size) for r in running)
        while (waiting and waiting[0].arrival <= step
               and len(running) < max_batch
               and held + waiting[0].blocks_needed(block_size) <= n_blocks
               and (policy == "continuous" or not decoding)):
            r = waiting.pop(0)
            sequences[id(r)] = PagedSequence(pool)
            held += r.blocks_needed(block_size)
            logits = forward(params, config, r.prompt[None],
                             cache=PagedKVCache([sequences[id(r)]]))
            r.tokens, r.admitted = [int(np.argmax(logits[0, -1]))], step
            running.append(r)
            admitted += 1
        decoding = [r for r in decoding if len(r.tokens) < r.max_new_tokens]
        if decoding:  # one token for every running request, in one call
            last = np.array([[r.tokens[-1]] for r in decoding])  # (batch, 1)
            cache = PagedKVCache([sequences[id(r)] for r in decoding])
            logits = forward(params, config, last, cache=cache)
            for r, row in zip(decoding, logits[:, -1]):
                r.tokens.append(int(np.argmax(row)))
        for r in running:
            if len(r.tokens) == r.max_new_tokens and r.finished is None:
                r.finished = step
        steps.append(admitted + len(decoding))
        if policy == "continuous" or all(r.finished is not None
                                         for r in running):
            for r in [r for r in running if r.finished is not None]:
                sequences.pop(id(r)).free()  # its blocks back to the pool
                running.remove(r)
    return steps
# --8<-- [end:serve]


# --8<-- [start:checks]
def _check_serve(config, requests, max_batch, n_blocks, block_size, policy):
    """serve's arguments, or a ValueError naming the one at fault."""
    for name, value in (("max_batch", max_batch), ("n_blocks", n_blocks),
                        ("block_size", block_size)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < 1):
            raise ValueError(f"serve: {name} must be a positive integer, "
                             f"got {value!r}")
    if policy not in ("continuous", "static"):
        raise ValueError(f"serve: policy must be 'continuous' or 'static', "
                         f"got {policy!r}")
    for i, r in enumerate(requests):
        if r.max_new_tokens < 1 or len(r.prompt) < 1:
            raise ValueError(f"serve: request {i} needs a prompt and "
                             f"max_new_tokens >= 1, got {len(r.prompt)} and "
                             f"{r.max_new_tokens}")
        total = len(r.prompt) + r.max_new_tokens
        blocks = r.blocks_needed(block_size)
        if blocks > n_blocks or total > config.max_positions:
            raise ValueError(
                f"serve: request {i} is longer than the cache: {total} "
                f"tokens need {blocks} blocks of "
                f"{block_size} (the pool has {n_blocks}) and at most "
                f"{config.max_positions} positions")
# --8<-- [end:checks]
