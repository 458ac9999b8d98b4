"""Continuous batching: a scheduler that admits and retires requests at every step.

References: G.-I. Yu et al., "Orca: A Distributed Serving System for Transformer-Based
Generative Models" (OSDI 2022), iteration-level scheduling; W. Kwon et al. (SOSP 2023),
section 4.5, scheduling on a paged cache.

Static batching takes a batch of requests and decodes it until its longest request is
done: a short request's slot idles and new arrivals wait. Continuous batching decides
again at every step: finished requests leave (their blocks go back to the pool) and
waiting ones join, each with a prefill of its prompt. Blocks are given on demand, as
vLLM does: a request joins if the blocks its prompt needs are free and takes one more
whenever it fills one; when none is left, the latest arrival is preempted (its blocks go
back) and later prefilled again from its prompt and the tokens it had, so its output
does not change. The alternative, reserving each request's whole final length on
admission, never preempts but runs fewer requests at once. Each request's tokens depend
on its own prompt only: its keys sit in its own blocks, and the other sequences' padding
is masked.

Time is counted in steps, one model step per iteration (its prefills and one decoded
token per running request), so the simulation is deterministic: arrivals and lengths
come from a seed, and throughput and latency are read off in steps, not seconds.
"""

# --8<-- [start:imports]
from dataclasses import dataclass, field

import numpy as np

from attention.model import forward
from attention.serving.paged import PagedKVCache, PagedSequence, pool_for
from attention.serving.prefix import PrefixCache
# --8<-- [end:imports]


# --8<-- [start:request]
@dataclass(eq=False)  # requests are compared by identity
class Request:
    arrival: int                # the step it arrives at
    prompt: np.ndarray          # (n,) token ids
    max_new_tokens: int         # tokens to generate (greedy)
    tokens: list = field(default_factory=list)  # generated so far
    admitted: int | None = None  # the step it was first prefilled at
    finished: int | None = None  # the step of its last token
    preempted: int = 0           # times its blocks were taken back
    emitted: list = field(default_factory=list)  # the step of each token

    def blocks_needed(self, block_size):
        """Blocks its whole length needs (the last token is never cached)."""
        n = len(self.prompt) + self.max_new_tokens - 1
        return -(-n // block_size)  # ceil(n / block_size)

    def blocks_now(self, block_size):
        """Blocks its prefill needs: the prompt and any tokens generated
        before it was preempted."""
        return -(-(len(self.prompt) + len(self.tokens)) // block_size)
# --8<-- [end:request]


# --8<-- [start:serve]
def serve(params, config, requests, *, max_batch, n_blocks, block_size,
          policy="continuous", allocation="on_demand", prefill_chunk=None,
          prefix_cache=None, work=None):
    """Decode every request greedily on one paged pool, step by step.

    policy "continuous": admit waiting requests (in order of arrival)
    whenever a place and blocks are free, retire each when done.
    "static": admit only into an empty batch, which runs until all of
    its requests are done. allocation "on_demand" (vLLM's): admit a
    request if the blocks its prefill needs now are free, give it a block
    whenever it fills one, and when the pool runs out take every block
    back from the latest arrival, which waits and is prefilled again from
    its prompt and the tokens it has (recomputation). "reserve": admit a
    request only if the blocks of its whole final length are free of
    every running request's reservation; the pool never runs out.
    prefill_chunk: at most this many prompt tokens prefilled per step, in
    chunks, oldest request first (None: every admitted prompt whole);
    the running requests decode meanwhile. prefix_cache: a new
    ``PrefixCache``; a prompt's full blocks already cached are shared,
    not computed again. work: a list to which each step's count of tokens
    run through the model is appended (its prefill chunks and decoded
    tokens: the step's cost where compute sets it).
    Returns the tokens emitted at each step (one per request served);
    each request's tokens, the step of each, its admission and finish
    are filled in.
    """
    _check_serve(config, requests, max_batch, n_blocks, block_size, policy,
                 allocation, prefill_chunk, prefix_cache)
    pool = pool_for(config, n_blocks, block_size)
    if prefix_cache is not None:
        prefix_cache.pool = pool
    waiting = sorted(requests, key=lambda r: r.arrival)
    running, sequences, filled, steps = [], {}, {}, []
    while waiting or running:
        step, empty = len(steps), not running
        decoding = [r for r in running if id(r) not in filled
                    and len(r.tokens) < r.max_new_tokens]
        _make_room(pool, sequences, decoding, running, waiting, filled,
                   prefix_cache)
        while (waiting and waiting[0].arrival <= step
               and len(running) < max_batch
               and (policy == "continuous" or empty)
               and _fits(waiting[0], running, pool, allocation,
                         prefix_cache)):
            r = waiting.pop(0)
            sequences[id(r)] = _admitted(r, pool, prefix_cache)
            filled[id(r)] = sequences[id(r)].length  # cached tokens count
            r.admitted = step if r.admitted is None else r.admitted
            running.append(r)
        running.sort(key=lambda r: r.arrival)  # a recomputed one rejoins
        emitted, computed = 0, 0
        budget = np.inf if prefill_chunk is None else prefill_chunk
        for r in [r for r in running if id(r) in filled]:  # oldest first
            ids = np.concatenate([r.prompt, r.tokens]).astype(np.int64)
            n = int(min(len(ids) - filled[id(r)], budget))
            if n == 0:
                break
            logits = forward(params, config,
                             ids[None, filled[id(r)]:filled[id(r)] + n],
                             cache=PagedKVCache([sequences[id(r)]]))
            filled[id(r)] += n
            budget, computed = budget - n, computed + n
            if filled[id(r)] == len(ids):  # prefilled: its next token
                del filled[id(r)]
                r.tokens.append(int(np.argmax(logits[0, -1])))
                r.emitted.append(step)
                emitted += 1
                if prefix_cache is not None:
                    prefix_cache.insert(ids, sequences[id(r)].table)
        if decoding:  # one token for every decoding request, in one call
            last = np.array([[r.tokens[-1]] for r in decoding])  # (batch, 1)
            cache = PagedKVCache([sequences[id(r)] for r in decoding])
            logits = forward(params, config, last, cache=cache)
            for r, row in zip(decoding, logits[:, -1]):
                r.tokens.append(int(np.argmax(row)))
                r.emitted.append(step)
            emitted += len(decoding)
            computed += len(decoding)
        for r in running:
            if len(r.tokens) == r.max_new_tokens and r.finished is None:
                r.finished = step
                sequences.pop(id(r)).free()  # its blocks back to the pool
        steps.append(emitted)
        if work is not None:
            work.append(computed)
        if policy == "continuous" or all(r.finished is not None
                                         for r in running):
            running = [r for r in running if r.finished is None]
    return steps


def _admitted(r, pool, prefix_cache):
    """Request r's sequence: its cached prefix blocks shared, and blocks
    for the rest of its prompt (and the tokens it had) reserved."""
    ids = np.concatenate([r.prompt, r.tokens]).astype(np.int64)
    seq = PagedSequence(pool)
    if prefix_cache is not None:
        found = prefix_cache.match(ids)
        prefix_cache.count(ids, found)
        for block in found:
            pool.share(block)
        seq.table, seq.length = found, len(found) * pool.block_size
        _room(pool, prefix_cache, r.blocks_now(pool.block_size) - len(found))
    seq.reserve(len(ids) - seq.length)
    return seq


def _room(pool, prefix_cache, n, keep=()):
    """Whether n blocks are free, after giving back blocks that only the
    prefix cache holds (not those of keep) while fewer are."""
    while (len(pool.free) < n and prefix_cache is not None
           and prefix_cache.evict(keep)):
        pass
    return len(pool.free) >= n


def _fits(r, running, pool, allocation, prefix_cache):
    """Whether the pool can take request r now."""
    bs = pool.block_size
    found = []
    if prefix_cache is not None:
        ids = np.concatenate([r.prompt, r.tokens]).astype(np.int64)
        found = prefix_cache.match(ids)
    if allocation == "on_demand":
        return _room(pool, prefix_cache, r.blocks_now(bs) - len(found), found)
    held = sum(other.blocks_needed(bs) for other in running)
    return held + r.blocks_needed(bs) <= len(pool.refs)


def _make_room(pool, sequences, decoding, running, waiting, filled,
               prefix_cache):
    """A slot for the next token of every decoding request, oldest first.

    Blocks that only the prefix cache holds go back first. When the pool
    is still out of blocks, the latest arrival still running is
    preempted: its blocks go back, and it waits at the head of the queue
    to be prefilled again. The oldest request always fits alone (checked
    by serve), so it always advances. (With allocation "reserve" the
    reservations leave room: nobody is preempted.)
    """
    for r in list(decoding):
        if r not in decoding:  # preempted for an older one
            continue
        seq = sequences[id(r)]
        while (r in decoding
               and seq.length + 1 > len(seq.table) * pool.block_size
               and not _room(pool, prefix_cache, 1)):
            victim = [v for v in running if id(v) in sequences][-1]
            sequences.pop(id(victim)).free()
            filled.pop(id(victim), None)
            if victim in decoding:
                decoding.remove(victim)
            running.remove(victim)
            victim.preempted += 1
            at = next((i for i, w in enumerate(waiting)
                       if w.arrival >= victim.arrival), len(waiting))
            waiting.insert(at, victim)
        if r in decoding:
            seq.reserve(1)
# --8<-- [end:serve]


# --8<-- [start:checks]
def _check_serve(config, requests, max_batch, n_blocks, block_size, policy,
                 allocation, prefill_chunk, prefix_cache):
    """serve's arguments, or a ValueError naming the one at fault."""
    sizes = [("max_batch", max_batch), ("n_blocks", n_blocks),
             ("block_size", block_size)]
    for name, value in sizes + ([("prefill_chunk", prefill_chunk)]
                                if prefill_chunk is not None else []):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < 1):
            raise ValueError(f"serve: {name} must be a positive integer, "
                             f"got {value!r}")
    if prefix_cache is not None and (not isinstance(prefix_cache, PrefixCache)
                                     or prefix_cache.pool is not None):
        raise ValueError(f"serve: prefix_cache must be a new PrefixCache "
                         f"(its blocks live in one serve's pool), got "
                         f"{type(prefix_cache).__name__}"
                         + (" already used" if isinstance(
                             prefix_cache, PrefixCache) else ""))
    if policy not in ("continuous", "static"):
        raise ValueError(f"serve: policy must be 'continuous' or 'static', "
                         f"got {policy!r}")
    if allocation not in ("on_demand", "reserve"):
        raise ValueError(f"serve: allocation must be 'on_demand' or "
                         f"'reserve', got {allocation!r}")
    for i, r in enumerate(requests):
        if r.max_new_tokens < 1 or len(r.prompt) < 1:
            raise ValueError(f"serve: request {i} needs a prompt and "
                             f"max_new_tokens >= 1, got {len(r.prompt)} and "
                             f"{r.max_new_tokens}")
        if r.tokens or r.emitted or r.admitted is not None:
            raise ValueError(f"serve: request {i} was served before (it has "
                             f"{len(r.tokens)} tokens); pass a new Request")
        total = len(r.prompt) + r.max_new_tokens
        blocks = r.blocks_needed(block_size)
        if blocks > n_blocks or total > config.max_positions:
            raise ValueError(
                f"serve: request {i} is longer than the cache: {total} "
                f"tokens need {blocks} blocks of "
                f"{block_size} (the pool has {n_blocks}) and at most "
                f"{config.max_positions} positions")
# --8<-- [end:checks]
