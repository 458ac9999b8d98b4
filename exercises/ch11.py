"""Practice exercises of chapter 11: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention.practice.ch11 import (check_accept_rule, check_expected_tokens,
                                     check_paged_decode, check_reusable_blocks,
                                     check_schedule_step, check_write_slots)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def accept_rule(p, q, drafted):
    """The verification rule of speculative sampling.

    p (k + 1, vocab): the target's distributions; q (k, vocab): the
    draft's; drafted (k,): the drafted ids. Returns (accept (k,): the
    probability of keeping each drafted token, residual (k, vocab): what
    a rejection at row i is drawn from).
    """
    # Your code: this keeps every drafted token and resamples from p.
    return np.ones(len(drafted)), p[:-1]
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def accept_rule(p, q, drafted):
    """The verification rule of speculative sampling.

    p (k + 1, vocab): the target's distributions; q (k, vocab): the
    draft's; drafted (k,): the drafted ids. Returns (accept (k,): the
    probability of keeping each drafted token, residual (k, vocab): what
    a rejection at row i is drawn from).
    """
    rows = np.arange(len(drafted))
    accept = np.minimum(1.0, p[rows, drafted] / q[rows, drafted])
    extra = np.maximum(p[:-1] - q, 0.0)            # (k, vocab)
    total = extra.sum(axis=-1, keepdims=True)      # (k, 1)
    # p = q on a row: nothing is ever rejected there; give p.
    safe = np.where(total > 0, total, 1.0)
    residual = np.where(total > 0, extra / safe, p[:-1])
    return accept, residual
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-no-min]
# rejected with: cannot exceed 1
def accept_rule(p, q, drafted):
    rows = np.arange(len(drafted))
    extra = np.maximum(p[:-1] - q, 0.0)
    total = extra.sum(axis=-1, keepdims=True)
    residual = np.where(total > 0, extra / np.where(total > 0, total, 1), p[:-1])
    return p[rows, drafted] / q[rows, drafted], residual
# --8<-- [end:ex1-wrong-no-min]


# --8<-- [start:ex1-wrong-resample-p]
# rejected with: biased towards tokens the draft
def accept_rule(p, q, drafted):
    rows = np.arange(len(drafted))
    return np.minimum(1.0, p[rows, drafted] / q[rows, drafted]), p[:-1]
# --8<-- [end:ex1-wrong-resample-p]


# --8<-- [start:ex1-wrong-q-minus-p]
# rejected with: not q - p
def accept_rule(p, q, drafted):
    rows = np.arange(len(drafted))
    extra = np.maximum(q - p[:-1], 0.0)
    return (np.minimum(1.0, p[rows, drafted] / q[rows, drafted]),
            extra / extra.sum(axis=-1, keepdims=True))
# --8<-- [end:ex1-wrong-q-minus-p]


# --8<-- [start:ex1-wrong-unnormalised]
# rejected with: to sum to 1
def accept_rule(p, q, drafted):
    rows = np.arange(len(drafted))
    return (np.minimum(1.0, p[rows, drafted] / q[rows, drafted]),
            np.maximum(p[:-1] - q, 0.0))
# --8<-- [end:ex1-wrong-unnormalised]


# --8<-- [start:ex2-starter]
def write_slots(blocks, table, start, new):
    """The pool after writing one sequence's new keys through its table.

    blocks (n_blocks, n_kv_heads, block_size, d_head): the pool; table
    (n_used,): the sequence's block ids, in order; new (n_kv_heads, n_new,
    d_head): the keys of its slots start .. start + n_new - 1. Slot j is
    in block table[j // block_size] at offset j % block_size. Returns a
    new pool; blocks is left as it is."""
    # Your code: this writes nothing.
    return blocks.copy()
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def write_slots(blocks, table, start, new):
    """The pool after writing one sequence's new keys through its table.

    blocks (n_blocks, n_kv_heads, block_size, d_head): the pool; table
    (n_used,): the sequence's block ids, in order; new (n_kv_heads, n_new,
    d_head): the keys of its slots start .. start + n_new - 1. Slot j is
    in block table[j // block_size] at offset j % block_size. Returns a
    new pool; blocks is left as it is."""
    pool = blocks.copy()
    slots = np.arange(start, start + new.shape[1])
    ids = np.asarray(table)[slots // blocks.shape[2]]  # each slot's block
    offsets = slots % blocks.shape[2]
    # pool[ids[t], :, offsets[t]] = new[:, t] for every t, at once:
    pool[ids, :, offsets] = np.swapaxes(new, 0, 1)  # (n_new, heads, d_head)
    return pool
# --8<-- [end:ex2-solution]

# --8<-- [start:ex2-wrong-from-slot-zero]
# rejected with: from slot start
def write_slots(blocks, table, start, new):
    pool = blocks.copy()
    slots = np.arange(new.shape[1])  # as if the sequence were empty
    ids = np.asarray(table)[slots // blocks.shape[2]]  # each slot's block
    offsets = slots % blocks.shape[2]
    # pool[ids[t], :, offsets[t]] = new[:, t] for every t, at once:
    pool[ids, :, offsets] = np.swapaxes(new, 0, 1)  # (n_new, heads, d_head)
    return pool
# --8<-- [end:ex2-wrong-from-slot-zero]

# --8<-- [start:ex2-wrong-table-index]
# rejected with: the block the table names
def write_slots(blocks, table, start, new):
    pool = blocks.copy()
    slots = np.arange(start, start + new.shape[1])
    ids = slots // blocks.shape[2]  # the table's index, not its block
    offsets = slots % blocks.shape[2]
    # pool[ids[t], :, offsets[t]] = new[:, t] for every t, at once:
    pool[ids, :, offsets] = np.swapaxes(new, 0, 1)  # (n_new, heads, d_head)
    return pool
# --8<-- [end:ex2-wrong-table-index]

# --8<-- [start:ex2-wrong-heads-mixed]
# rejected with: heads
def write_slots(blocks, table, start, new):
    pool = blocks.copy()
    slots = np.arange(start, start + new.shape[1])
    ids = np.asarray(table)[slots // blocks.shape[2]]  # each slot's block
    offsets = slots % blocks.shape[2]
    # pool[ids[t], :, offsets[t]] = new[:, t] for every t, at once:
    pool[ids, :, offsets] = new.reshape(new.shape[1], new.shape[0], -1)
    return pool
# --8<-- [end:ex2-wrong-heads-mixed]

# --8<-- [start:ex2-wrong-in-place]
# rejected with: in place
def write_slots(blocks, table, start, new):
    slots = np.arange(start, start + new.shape[1])
    ids = np.asarray(table)[slots // blocks.shape[2]]
    blocks[ids, :, slots % blocks.shape[2]] = np.swapaxes(new, 0, 1)
    return blocks
# --8<-- [end:ex2-wrong-in-place]

# --8<-- [start:ex2-wrong-sorted-table]
# rejected with: Not yet
def write_slots(blocks, table, start, new):
    pool = blocks.copy()
    slots = np.arange(start, start + new.shape[1])
    ids = np.sort(table)[slots // blocks.shape[2]]
    offsets = slots % blocks.shape[2]
    # pool[ids[t], :, offsets[t]] = new[:, t] for every t, at once:
    pool[ids, :, offsets] = np.swapaxes(new, 0, 1)  # (n_new, heads, d_head)
    return pool
# --8<-- [end:ex2-wrong-sorted-table]

# --8<-- [start:ex3-starter]
def reusable_blocks(prompt, cached, block_size):
    """How many blocks of prompt's KV cache a prefix cache can hand back:
    cached holds earlier token lists whose full blocks were kept, each
    block found by its tokens and all the tokens before it. The prompt's
    last token is always computed (its logits give the next token)."""
    # Your code: this finds nothing in the cache.
    return 0
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def reusable_blocks(prompt, cached, block_size):
    """How many blocks of prompt's KV cache a prefix cache can hand back:
    cached holds earlier token lists whose full blocks were kept, each
    block found by its tokens and all the tokens before it. The prompt's
    last token is always computed (its logits give the next token)."""
    best = 0
    for earlier in cached:
        same = 0  # the length of the common prefix
        for a, b in zip(prompt, earlier):
            if a != b:
                break
            same += 1
        usable = min(same, len(prompt) - 1)  # leave the last token
        best = max(best, usable // block_size)  # full blocks only
    return best
# --8<-- [end:ex3-solution]

# --8<-- [start:ex3-wrong-last-token]
# rejected with: last token
def reusable_blocks(prompt, cached, block_size):
    best = 0
    for earlier in cached:
        same = 0  # the length of the common prefix
        for a, b in zip(prompt, earlier):
            if a != b:
                break
            same += 1
        usable = same
        best = max(best, usable // block_size)  # full blocks only
    return best
# --8<-- [end:ex3-wrong-last-token]

# --8<-- [start:ex3-wrong-partial-block]
# rejected with: full blocks
def reusable_blocks(prompt, cached, block_size):
    best = 0
    for earlier in cached:
        same = 0  # the length of the common prefix
        for a, b in zip(prompt, earlier):
            if a != b:
                break
            same += 1
        usable = min(same, len(prompt) - 1)  # leave the last token
        best = max(best, -(-usable // block_size))  # a part-filled block too
    return best
# --8<-- [end:ex3-wrong-partial-block]

# --8<-- [start:ex3-wrong-any-matching-block]
# rejected with: can be reused
def reusable_blocks(prompt, cached, block_size):
    best = 0
    n_blocks = (len(prompt) - 1) // block_size
    for earlier in cached:
        found = 0
        for i in range(n_blocks):  # blocks equal at the same place, anywhere
            piece = slice(i * block_size, (i + 1) * block_size)
            if list(prompt[piece]) == list(earlier[piece]):
                found += 1
        best = max(best, found)
    return best
# --8<-- [end:ex3-wrong-any-matching-block]

# --8<-- [start:ex3-wrong-last-cached-only]
# rejected with: Not yet
def reusable_blocks(prompt, cached, block_size):
    best = 0
    for earlier in cached[-1:]:  # the latest only
        same = 0  # the length of the common prefix
        for a, b in zip(prompt, earlier):
            if a != b:
                break
            same += 1
        usable = min(same, len(prompt) - 1)  # leave the last token
        best = max(best, usable // block_size)  # full blocks only
    return best
# --8<-- [end:ex3-wrong-last-cached-only]

# --8<-- [start:ex3-wrong-blocks-from-several]
# rejected with: and all the tokens before it
def reusable_blocks(prompt, cached, block_size):
    n_blocks = (len(prompt) - 1) // block_size
    found = 0
    for i in range(n_blocks):  # found by its own tokens, not its prefix's
        piece = slice(i * block_size, (i + 1) * block_size)
        if not any(list(prompt[piece]) == list(e[piece]) for e in cached):
            break
        found += 1
    return found
# --8<-- [end:ex3-wrong-blocks-from-several]


# --8<-- [start:ex1-wrong-residual-of-row-0]
# rejected with: q equal to p on row 2
def accept_rule(p, q, drafted):
    """The verification rule of speculative sampling.

    p (k + 1, vocab): the target's distributions; q (k, vocab): the
    draft's; drafted (k,): the drafted ids. Returns (accept (k,): the
    probability of keeping each drafted token, residual (k, vocab): what
    a rejection at row i is drawn from).
    """
    rows = np.arange(len(drafted))
    accept = np.minimum(1.0, p[rows, drafted] / q[rows, drafted])
    extra = np.maximum(p[:-1] - q, 0.0)            # (k, vocab)
    total = extra.sum(axis=-1, keepdims=True)      # (k, 1)
    # p = q on a row: nothing is ever rejected there; give p.
    safe = np.where(total > 0, total, 1.0)
    residual = np.where(total > 0, extra / safe, p[:1])
    return accept, residual
# --8<-- [end:ex1-wrong-residual-of-row-0]


# --8<-- [start:ex4-starter]
def paged_decode(q, k_blocks, v_blocks, table, length):
    """One decode step of attention, read through a block table.

    q (n_heads, d_head): the new token's query heads; k_blocks, v_blocks
    (n_blocks, n_kv_heads, block_size, d_head): the pool; table (n_used,):
    the sequence's block ids, in order; length: its slots, the new
    token's own included. Query head h reads key head h // group, group =
    n_heads / n_kv_heads. Returns (n_heads, d_head).
    """
    # Your code: this reads the pool's first blocks, every slot of them,
    # and gives each query head the key head of the same number.
    n_used = len(table)
    k = k_blocks[:n_used].transpose(1, 0, 2, 3).reshape(-1, q.shape[-1])
    v = v_blocks[:n_used].transpose(1, 0, 2, 3).reshape(-1, q.shape[-1])
    scores = q @ k.T / q.shape[-1] ** 0.5         # (n_heads, n_kv * slots)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True) @ v
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def paged_decode(q, k_blocks, v_blocks, table, length):
    """One decode step of attention, read through a block table.

    q (n_heads, d_head): the new token's query heads; k_blocks, v_blocks
    (n_blocks, n_kv_heads, block_size, d_head): the pool; table (n_used,):
    the sequence's block ids, in order; length: its slots, the new
    token's own included. Query head h reads key head h // group, group =
    n_heads / n_kv_heads. Returns (n_heads, d_head).
    """
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = np.asarray(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k) / d_head ** 0.5
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-whole-blocks]
# rejected with: only its first length slots
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(len(table) * size)  # every slot of every block
    block, offset = np.asarray(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k) / d_head ** 0.5
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-whole-blocks]


# --8<-- [start:ex4-wrong-first-blocks]
# rejected with: the blocks the table names
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = slots // size, slots % size  # blocks 0, 1, 2, ...
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k) / d_head ** 0.5
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-first-blocks]


# --8<-- [start:ex4-wrong-interleaved-groups]
# rejected with: h // group
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = np.asarray(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_heads // n_kv, n_kv, d_head)  # heads h % n_kv
    scores = np.einsum("ghd,nhd->hgn", grouped, k) / d_head ** 0.5
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->ghd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-interleaved-groups]


# --8<-- [start:ex4-wrong-no-max-shift]
# rejected with: overflows
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = np.asarray(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k) / d_head ** 0.5
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-no-max-shift]


# --8<-- [start:ex4-wrong-unscaled]
# rejected with: square root of d_head
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = np.asarray(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-unscaled]


# --8<-- [start:ex4-wrong-float64-constant]
# rejected with: float32 inputs
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = np.asarray(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k) / np.sqrt(d_head)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-float64-constant]


# --8<-- [start:ex4-wrong-sorted-table]
# rejected with: sorted order
def paged_decode(q, k_blocks, v_blocks, table, length):
    n_heads, d_head = q.shape
    n_kv, size = k_blocks.shape[1], k_blocks.shape[2]
    slots = np.arange(length)
    block, offset = np.sort(table)[slots // size], slots % size
    k = k_blocks[block, :, offset]                # (length, n_kv, d_head)
    v = v_blocks[block, :, offset]
    grouped = q.reshape(n_kv, n_heads // n_kv, d_head)  # heads h // group
    scores = np.einsum("hgd,nhd->hgn", grouped, k) / d_head ** 0.5
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hgn,nhd->hgd", weights, v).reshape(n_heads, d_head)
# --8<-- [end:ex4-wrong-sorted-table]


# --8<-- [start:ex5-starter]
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    """One step of continuous batching over a paged cache. running and
    waiting: lists of (request_id, length) in arrival order; a running
    request holds ceil(length / block_size) blocks. Returns (running,
    waiting, free_blocks) after the step."""
    # Your code: every request grows by a token, nothing else happens.
    return ([(rid, length + 1) for rid, length in running], list(waiting),
            free_blocks)
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    """One step of continuous batching over a paged cache. running and
    waiting: lists of (request_id, length) in arrival order; a running
    request holds ceil(length / block_size) blocks. Returns (running,
    waiting, free_blocks) after the step."""
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum(length % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop()
        free_blocks += blocks(request[1])
        need -= request[1] % block_size == 0
        preempted.insert(0, request)  # arrival order, at the queue's head
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    if preempted:  # no room to spare: admit nobody this step
        return running, preempted + waiting, free_blocks
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):  # in order, no skipping
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-earliest-first]
# rejected with: running should be
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum(length % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop(0)  # the earliest arrival
        free_blocks += blocks(request[1])
        need -= request[1] % block_size == 0
        preempted.insert(0, request)  # arrival order, at the queue's head
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    if preempted:  # no room to spare: admit nobody this step
        return running, preempted + waiting, free_blocks
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):  # in order, no skipping
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-wrong-earliest-first]


# --8<-- [start:ex5-wrong-to-the-back]
# rejected with: waiting should be
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum(length % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop()
        free_blocks += blocks(request[1])
        need -= request[1] % block_size == 0
        preempted.insert(0, request)  # arrival order, at the queue's head
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    if preempted:  # no room to spare: admit nobody this step
        return running, waiting + preempted, free_blocks
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):  # in order, no skipping
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-wrong-to-the-back]


# --8<-- [start:ex5-wrong-reversed]
# rejected with: waiting should be
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum(length % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop()
        free_blocks += blocks(request[1])
        need -= request[1] % block_size == 0
        preempted.append(request)
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    if preempted:  # no room to spare: admit nobody this step
        return running, preempted + waiting, free_blocks
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):  # in order, no skipping
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-wrong-reversed]


# --8<-- [start:ex5-wrong-skips-the-head]
# rejected with: running should be
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum(length % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop()
        free_blocks += blocks(request[1])
        need -= request[1] % block_size == 0
        preempted.insert(0, request)  # arrival order, at the queue's head
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    if preempted:  # no room to spare: admit nobody this step
        return running, preempted + waiting, free_blocks
    for request in list(waiting):  # any request that fits, in order
        if len(running) < max_batch and blocks(request[1]) <= free_blocks:
            waiting.remove(request)
            free_blocks -= blocks(request[1])
            running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-wrong-skips-the-head]


# --8<-- [start:ex5-wrong-edge-off-by-one]
# rejected with: Not yet
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum((length + 1) % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop()
        free_blocks += blocks(request[1])
        need -= (request[1] + 1) % block_size == 0
        preempted.insert(0, request)  # arrival order, at the queue's head
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    if preempted:  # no room to spare: admit nobody this step
        return running, preempted + waiting, free_blocks
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):  # in order, no skipping
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-wrong-edge-off-by-one]


# --8<-- [start:ex5-wrong-admits-after-preempting]
# rejected with: Not yet
def schedule_step(running, waiting, free_blocks, block_size, max_batch):
    def blocks(length):
        return -(-length // block_size)  # ceil: a part-filled block counts

    running, waiting = list(running), list(waiting)
    preempted = []
    need = sum(length % block_size == 0 for _, length in running)
    while need > free_blocks:  # the latest arrival gives its blocks back
        request = running.pop()
        free_blocks += blocks(request[1])
        need -= request[1] % block_size == 0
        preempted.insert(0, request)  # arrival order, at the queue's head
    free_blocks -= need
    running = [(rid, length + 1) for rid, length in running]
    waiting = preempted + waiting
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):  # in order, no skipping
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks
# --8<-- [end:ex5-wrong-admits-after-preempting]


# --8<-- [start:ex6-starter]
def expected_tokens(p, q):
    """Expected tokens that one speculative round emits. p (..., k + 1, V):
    the target's distributions at the k drafted positions and the one
    after; q (..., k, V): the draft's, from which token i was drawn. Each
    position's distributions are taken as fixed, whatever came before.
    Returns (...,), in p's dtype."""
    # Your code: this assumes every drafted token is kept.
    return np.full(p.shape[:-2], p.shape[-2], dtype=p.dtype)
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def expected_tokens(p, q):
    """Expected tokens that one speculative round emits. p (..., k + 1, V):
    the target's distributions at the k drafted positions and the one
    after; q (..., k, V): the draft's, from which token i was drawn. Each
    position's distributions are taken as fixed, whatever came before.
    Returns (...,), in p's dtype."""
    alpha = np.minimum(p[..., :-1, :], q).sum(axis=-1)  # (..., k): kept
    reach = np.cumprod(alpha, axis=-1)  # drafts 1..i all kept
    return 1 + reach.sum(axis=-1)  # 1: the replacement or the bonus
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-no-bonus]
# rejected with: adds the bonus token
def expected_tokens(p, q):
    alpha = np.minimum(p[..., :-1, :], q).sum(axis=-1)
    reach = np.cumprod(alpha, axis=-1)
    return 1 + reach.sum(axis=-1) - reach[..., -1] if reach.shape[-1] else (
        np.ones(p.shape[:-2], p.dtype))
# --8<-- [end:ex6-wrong-no-bonus]


# --8<-- [start:ex6-wrong-one-alpha]
# rejected with: its own α_i
def expected_tokens(p, q):
    k = q.shape[-2]
    alpha = np.minimum(p[..., :-1, :], q).sum(axis=-1).mean(axis=-1)
    safe = np.where(alpha == 1, 0.5, alpha)
    return np.where(alpha == 1, k + 1, (1 - safe ** (k + 1)) / (1 - safe))
# --8<-- [end:ex6-wrong-one-alpha]


# --8<-- [start:ex6-wrong-same-token]
# rejected with: not the chance
def expected_tokens(p, q):
    alpha = (p[..., :-1, :] * q).sum(axis=-1)  # both draw the same token
    reach = np.cumprod(alpha, axis=-1)
    return 1 + reach.sum(axis=-1)
# --8<-- [end:ex6-wrong-same-token]


# --8<-- [start:ex6-wrong-rows-shifted]
# rejected with: row i of q goes with row i of p
def expected_tokens(p, q):
    alpha = np.minimum(p[..., 1:, :], q).sum(axis=-1)
    reach = np.cumprod(alpha, axis=-1)
    return 1 + reach.sum(axis=-1)
# --8<-- [end:ex6-wrong-rows-shifted]


# --8<-- [start:ex6-wrong-independent]
# rejected with: Not yet
def expected_tokens(p, q):
    alpha = np.minimum(p[..., :-1, :], q).sum(axis=-1)
    return 1 + alpha.sum(axis=-1)  # as if each position were reached
# --8<-- [end:ex6-wrong-independent]
