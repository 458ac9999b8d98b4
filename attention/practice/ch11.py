"""Self-checks for the practice exercises of chapter 11 (serving).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.serving``.
"""

import numpy as np

from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, judge, matches, redrawable, shape_text)
from attention.practice.verdict import call, guard_checks, verdict
from attention.serving.paged import gather
from attention.softmax import softmax
from attention.serving.speculative import acceptance, residuals


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _rule_trial(rng, k, vocab, *, same_row=None, zeros=0):
    p = rng.dirichlet(np.ones(vocab), size=k + 1)
    q = rng.dirichlet(np.ones(vocab), size=k)
    if zeros:  # top-k filtered draft and target: some tokens impossible
        for dist in (p, q):
            for row in dist:
                row[rng.choice(vocab, zeros, replace=False)] = 0.0
                row /= row.sum()
    drafted = np.array([rng.choice(vocab, p=row) for row in q])
    # Not left to chance: with two or more drafts, the first is a token the target wants
    # more (p > q: the min caps its ratio at 1) and the last one the draft over-proposes
    # (q > p: it is sometimes rejected), so forgetting either part of the rule is caught.
    if k >= 2:
        drafted[0] = np.argmax(p[0] - q[0])
    drafted[-1] = np.argmax(q[-1] - p[-2])
    if same_row is not None:  # a draft that agrees with the target on that row
        q[same_row] = p[same_row]
    label = f"p {shape_text(p.shape)}, q {shape_text(q.shape)}"
    label += f", q equal to p on row {same_row}" if same_row is not None else ""
    label += f", {zeros} zero-probability tokens per row" if zeros else ""
    return Trial(label, (p, q, drafted))


def _rule(p, q, drafted):
    return acceptance(p[:-1], q, drafted), residuals(p[:-1], q)


def _rule_mistakes(p, q, drafted):
    """What plausible wrong answers return, with the message naming each mistake."""
    rows = np.arange(len(drafted))
    with np.errstate(all="ignore"):  # q / p at a token the target filtered out
        extra = np.maximum(q - p[:-1], 0)
        return {"accept": [
            (np.ones(len(drafted)), "every drafted token was kept; keep token x "
             "with probability min(1, p(x) / q(x))"),
            (p[rows, drafted] / q[rows, drafted],
             "a probability cannot exceed 1: accept with min(1, p/q)"),
            (np.minimum(1, q[rows, drafted] / p[rows, drafted]),
             "the ratio is upside down: min(1, p(x) / q(x)), target over draft")],
            "residual": [
            (p[:-1], "a rejection resampled from p is biased towards tokens the draft "
                     "already offered: resample from norm(max(0, p - q))"),
            (np.maximum(p[:-1] - q, 0), "normalise max(0, p - q) to sum to 1"),
            (extra / extra.sum(-1, keepdims=True),
             "the residual is where the target wants more: max(0, p - q), not q - p")]}


def _compare_rule(result, expected, trial):
    if not isinstance(result, tuple) or len(result) != 2:
        return "return a pair (accept, residual)"
    mistakes = _rule_mistakes(*trial.args)
    for name, got, want in zip(("accept", "residual"), result, expected):
        got, problem = as_array(got, name)
        if problem is None:
            problem = difference(got, want)
            for wrong, message in mistakes[name] if problem else ():
                if matches(got, wrong):
                    problem = message
                    break
        if problem is not None:
            return f"{name}: {problem}"
    return None


def check_accept_rule(your_function):
    """Exercise 1: your_function(p, q, drafted) = (min(1, p/q), norm(max(0, p - q)))."""
    rng = fresh_rng()
    trials = [_rule_trial(rng, 3, 6), _rule_trial(rng, 1, 4),
              _rule_trial(rng, 4, 8, zeros=3), _rule_trial(rng, 2, 5, same_row=0),
              _rule_trial(rng, 4, 5, same_row=2)]  # its residual: its own row of p
    return judge(your_function, trials, _rule, what="accept_rule", compare=_compare_rule,
                 success="your acceptance probabilities and residuals equal the rule "
                         "that keeps the target's distribution.")


# Exercise 2 ---------------------------------------------------------------------------

def write_reference(blocks, table, start, new, *, ids=None):
    """The pool with the new keys written slot by slot (``ids`` replaces the table's
    block ids, to name a mistake); ``gather`` of the result reads them back
    (tests/practice/test_ch11.py)."""
    pool = blocks.copy()
    table = np.asarray(table) if ids is None else ids
    for t in range(new.shape[1]):
        slot = start + t
        pool[table[slot // blocks.shape[2]], :, slot % blocks.shape[2]] = new[:, t]
    return pool


@redrawable
def _write_trial(rng, n_blocks, heads, block_size, d, start, n_new, dtype=np.float64):
    """A pool, a table out of order (never 0, 1, 2, ...: built, not drawn by luck),
    new keys for slots start .. start + n_new - 1."""
    blocks = rng.normal(size=(n_blocks, heads, block_size, d)).astype(dtype)
    n_used = -(-(start + n_new) // block_size)
    table = rng.choice(n_blocks, n_used, replace=False)
    while np.array_equal(np.sort(table), np.arange(n_used)) or (
            n_used > 1 and np.all(np.diff(table) > 0)):
        table = rng.choice(n_blocks, n_used, replace=False)
    new = rng.normal(size=(heads, n_new, d)).astype(dtype)
    return Trial(f"blocks {shape_text(blocks.shape)}, a table of {n_used} block"
                 f"{'s' * (n_used != 1)}, {n_new} new slot{'s' * (n_new != 1)} from "
                 f"slot {start}, {np.dtype(dtype).name}",
                 (blocks, table, start, new), {}, np.dtype(dtype))


def check_write_slots(your_function):
    """Exercise 2: your_function(blocks, table, start, new) = the pool with the new
    keys written through the table."""
    rng = fresh_rng()
    trials = [_write_trial(rng, 9, 2, 4, 3, 5, 6), _write_trial(rng, 6, 3, 2, 5, 0, 3),
              _write_trial(rng, 12, 2, 3, 2, 7, 1), _write_trial(rng, 8, 1, 4, 4, 4, 8),
              _write_trial(rng, 7, 2, 3, 2, 2, 5, np.float32)]
    hints = [
        (lambda b, t, s, n: write_reference(b, t, 0, n),
         "the new keys were written from slot 0; they go from slot start on, after "
         "what the sequence already holds"),
        (lambda b, t, s, n: write_reference(b, t, s, n, ids=np.arange(len(t))),
         "blocks 0, 1, 2, ... were written: slot j goes to the block the table names, "
         "table[j // block_size]"),
        (lambda b, t, s, n: write_reference(b, t, s, n.reshape(n.shape[1], n.shape[0],
                                                               -1).swapaxes(0, 1)),
         "the heads and the slots got mixed: new is (heads, n_new, d_head)")]
    return judge(your_function, trials, write_reference, what="write_slots",
                 hints=hints, success="your pool holds the new keys in their slots "
                                      "and every other slot as it was.")


# Exercise 3 ---------------------------------------------------------------------------

def reusable_reference(prompt, cached, block_size, *, keep_last=True, whole=True,
                       chained=True):
    """Blocks of prompt a prefix cache hands back: the longest common prefix with a
    cached token list, the last token left out, in full blocks (checked against the
    package's PrefixCache in tests/practice/test_ch11.py). The keywords make a
    mistake, to name it."""
    limit = len(prompt) - 1 if keep_last else len(prompt)
    if not chained:  # each block found by its own tokens, wherever the prefix differs
        found = 0
        for i in range(limit // block_size):
            piece = slice(i * block_size, (i + 1) * block_size)
            if not any(list(prompt[piece]) == list(c[piece]) for c in cached):
                break
            found += 1
        return found
    best = 0
    for earlier in cached:
        same = next((i for i, (a, b) in enumerate(zip(prompt, earlier)) if a != b),
                    min(len(prompt), len(earlier)))
        usable = min(same, limit)
        best = max(best, usable // block_size if whole else -(-usable // block_size))
    return best


def _prefix_cases(rng):
    """(prompt, cached, block_size, what it tests): each rule's edge built in."""
    def tokens(n):
        return [int(t) for t in rng.integers(0, 50_000, size=n)]

    a, b = tokens(13), tokens(13)
    cases = [(a[:11], [a[:6] + b[:5]], 4, "a prefix of a block and a half"),
             (a[:8], [a[:8]], 4, "the prompt asked again, 2 full blocks"),
             (a[:13], [b[:4] + a[4:13], a[:4] + b[:9]], 4,
              "blocks 1 and 2 cached after another block 0"),
             (a[:12], [a[:9] + b[:3], a[:4]], 3, "two cached lists, the longer match "
                                                "first"),
             (a[:10], [], 4, "an empty cache"),
             (a[:5], [a[:5] + b[:3]], 1, "blocks of one token"),
             (a[:9], [a[:9]], 3, "the prompt asked again, its last block full")]
    for _ in range(3):
        base = tokens(int(rng.integers(4, 20)))
        cached = [base[:int(rng.integers(0, len(base) + 1))] + tokens(3)
                  for _ in range(int(rng.integers(1, 4)))]
        cases.append((base, cached, int(rng.integers(1, 6)), "a random cache"))
    return cases


def check_reusable_blocks(your_function):
    """Exercise 3: your_function(prompt, cached, block_size) = the number of leading
    blocks of prompt a prefix cache can reuse."""
    rng = fresh_rng()
    hints = [(dict(keep_last=False), "the prompt's last token is always computed, so "
                                     "a block holding it is never reused"),
             (dict(whole=False), "only full blocks are cached: a part of a block "
                                 "counts for nothing"),
             (dict(chained=False), "a block is found by its tokens and all the tokens "
                                   "before it: never after a block that differs")]
    cases = _prefix_cases(rng)
    for prompt, cached, block_size, what in cases:
        want = reusable_reference(prompt, cached, block_size)
        got, problem = call(your_function, prompt, cached, block_size)
        where = (f"for a prompt of {len(prompt)} tokens, {len(cached)} cached list"
                 f"{'s' * (len(cached) != 1)} and blocks of {block_size} ({what})")
        if problem is None and (isinstance(got, bool)
                                or not isinstance(got, (int, np.integer))):
            problem = f"return a whole number of blocks, got {type(got).__name__}"
        if problem is None and got != want:
            problem = next((message for options, message in hints
                            if got == reusable_reference(prompt, cached, block_size,
                                                         **options)),
                           f"{want} block{'s' * (want != 1)} can be reused, you "
                           f"said {got}")
        if problem is not None:
            return verdict(False, f"{where}: {problem}")
    return verdict(True, f"on {len(cases)} prompts (7 chosen: a prompt asked again, "
                         "half blocks, a block cached after another prefix, several "
                         "cached lists, an empty cache, blocks of one token; 3 random) "
                         "your count equals the prefix cache's.")


# Exercise 4 ---------------------------------------------------------------------------

@redrawable
def _paged_trial(rng, n_blocks, n_heads, n_kv, size, d, n_used, length, *,
                 dtype=np.float64, near=0.0):
    """One decode query against a sequence of ``n_used`` blocks out of the pool's
    ``n_blocks``. Block 0 is never in the table and the table is neither sorted nor
    ends at its largest id, so that reading blocks 0, 1, 2, ... or in sorted order
    changes which slots are read. Every slot the sequence does not own (other blocks,
    the last block past ``length``) holds a key aligned with query head 0 and a value
    near 1000: reading one of them moves head 0's output far away."""
    q = rng.normal(size=(n_heads, d))
    k = rng.normal(size=(n_blocks, n_kv, size, d))
    v = rng.normal(size=(n_blocks, n_kv, size, d))
    table = rng.choice(np.arange(1, n_blocks), n_used, replace=False)
    if n_used > 1 and table[-1] == table.max():
        table[[0, -1]] = table[[-1, 0]]
    if n_used > 2 and np.all(np.diff(table) > 0):
        table[[0, 1]] = table[[1, 0]]
    if near:  # scores near +near (even heads) and -near (odd heads), and the
        # sequence's first slot twice as far: rows at levels far apart, each spread
        # over near (q along feature 0, keys with feature 0 near 1, that slot's 2)
        q = q * 0.01
        q[:, 0] += np.where(np.arange(n_heads) % 2 == 0, near, -near) * d ** 0.5
        k[..., 0] = 1.0 + 0.001 * k[..., 0]
        k[table[0], :, 0, 0] = 2.0
    owned = np.zeros((n_blocks, size), bool)
    owned[table.repeat(size), np.tile(np.arange(size), n_used)] = (
        np.arange(n_used * size) < length)
    by_slot = (0, 2, 1, 3)  # (n_blocks, size, n_kv, d): a view, written through
    k.transpose(by_slot)[~owned] = 10 * q[0] / max(np.linalg.norm(q[0]), 1e-9) * d ** 0.5
    v.transpose(by_slot)[~owned] += 1000.0
    label = (f"q ({n_heads}, {d}), pools ({n_blocks}, {n_kv}, {size}, {d}) in "
             f"{np.dtype(dtype).name}, a table of {n_used} block{'s' * (n_used > 1)}, "
             f"length {length}")
    label += (f", scores near +{near:g} and -{near:g} by head, spread over {near:g} in "
              "each row") if near else ""
    return Trial(label, (q.astype(dtype), k.astype(dtype), v.astype(dtype), table, length),
                 dtype=np.dtype(dtype))


def _random_paged_trial(rng):
    """Sizes drawn over the contract: any block size, any d_head, a last block used in
    part or in full."""
    size, n_used = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    n_kv = int(rng.choice([1, 2, 3]))
    return _paged_trial(rng, int(rng.integers(n_used + 1, 14)), n_kv * int(rng.integers(1, 4)),
                        n_kv, size, int(rng.integers(2, 9)), n_used,
                        int(rng.integers((n_used - 1) * size + 1, n_used * size + 1)))


def _paged_reference(q, k_blocks, v_blocks, table, length, *, groups="h // group",
                     scale=True, shift=True):
    """Attention of each query head over the sequence's slots (gather), key head h //
    group for query head h; the variants name the mistakes."""
    n_heads, d = q.shape
    n_kv = k_blocks.shape[1]
    heads = (np.arange(n_heads) // (n_heads // n_kv) if groups == "h // group"
             else np.arange(n_heads) % n_kv)
    k = gather(k_blocks, table, length)[heads]  # (n_heads, length, d)
    v = gather(v_blocks, table, length)[heads]
    scores = np.einsum("hd,hnd->hn", q, k) / (d ** 0.5 if scale else 1)
    if shift:
        weights = softmax(scores, axis=-1)
    else:
        with np.errstate(all="ignore"):
            weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v)


def check_paged_decode(your_function):
    """Exercise 4: your_function(q, k_blocks, v_blocks, table, length) = one decode
    step of grouped-query attention read through the block table."""
    rng = fresh_rng()
    trials = [_paged_trial(rng, 9, 4, 2, 4, 8, 3, 10),
              _paged_trial(rng, 7, 3, 3, 2, 5, 4, 8),       # whole blocks, multi-head
              _paged_trial(rng, 12, 4, 1, 3, 6, 3, 7),      # one key head for all
              _paged_trial(rng, 6, 6, 2, 5, 4, 1, 1),       # the first slot only
              _paged_trial(rng, 10, 8, 2, 4, 16, 4, 13, dtype=np.float32),
              _paged_trial(rng, 8, 4, 2, 3, 8, 3, 8, near=1000.0),
              _random_paged_trial(rng)]
    hints = [
        (lambda q, k, v, t, n: _paged_reference(q, k, v, t, len(t) * k.shape[2]),
         "you read every slot of the sequence's blocks; the last block holds more "
         "slots than the sequence: read only its first length slots"),
        (lambda q, k, v, t, n: _paged_reference(q, k, v, np.arange(len(t)), n),
         "you read blocks 0, 1, 2, ... of the pool; read the blocks the table names, "
         "in its order"),
        (lambda q, k, v, t, n: _paged_reference(q, k, v, np.sort(t), n),
         "you read the table's blocks in sorted order; the table's order is the "
         "sequence's"),
        (lambda q, k, v, t, n: _paged_reference(q, k, v, t, n, groups="h % n_kv"),
         "query head h reads key head h % n_kv_heads; consecutive query heads share "
         "a key head: h // group"),
        (lambda q, k, v, t, n: _paged_reference(q, k, v, t, n, shift=False),
         "exp of scores near +1000 overflows (inf / inf is nan): subtract each "
         "head's own largest score first"),
        (lambda q, k, v, t, n: _paged_reference(q, k, v, t, n, scale=False),
         "the scores are not divided by the square root of d_head"),
    ]

    def compare(result, expected, trial):
        got, problem = as_array(result, "paged_decode")
        if problem is not None:
            return problem
        problem = difference(got, expected, trial.dtype, kind=False)
        if problem is None:
            return None
        for wrong, message in hints:
            if matches(got, wrong(*trial.args), trial.dtype):
                return message
        if got.shape == expected.shape and np.any(np.abs(got[0]) > 500):
            return ("query head 0's output is near 1000, the values of the slots the "
                    "sequence does not own: you read blocks outside its table, or slots "
                    "past its length")
        return problem

    problem = first_failure(your_function, trials, _paged_reference, what="paged_decode",
                            compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random inputs (multi-head, grouped and "
                         "multi-query heads; tables out of order; a last block used in "
                         "part, in full, or for one slot; float32 and float64; scores "
                         "near ±1000 and spread over 1000; random sizes) your outputs "
                         "equal attention over the sequence's slots, read through its "
                         "table, each query head with its group's key head.")

# Exercise 5 ---------------------------------------------------------------------------

def schedule_reference(running, waiting, free_blocks, block_size, max_batch):
    """One scheduler step, written from the exercise's rules (tests/practice/
    test_ch11.py checks it on hand-worked cases): grow, preempting the latest
    arrivals until the growth fits; then, if nothing was preempted, admit from the
    head of the queue while the head fits."""
    def blocks(length):
        return -(-length // block_size)

    running, waiting = list(running), list(waiting)
    preempted = []
    while sum(length % block_size == 0 for _, length in running) > free_blocks:
        request = running.pop()  # the latest arrival gives its blocks back
        free_blocks += blocks(request[1])
        preempted.insert(0, request)
    free_blocks -= sum(length % block_size == 0 for _, length in running)
    running = [(rid, length + 1) for rid, length in running]
    if preempted:
        return running, preempted + waiting, free_blocks
    while (waiting and len(running) < max_batch
           and blocks(waiting[0][1]) <= free_blocks):
        request = waiting.pop(0)
        free_blocks -= blocks(request[1])
        running.append(request)
    return running, waiting, free_blocks


def _requests(rng, ids, low, high):
    return [(int(i), int(rng.integers(low, high))) for i in ids]


def _scheduler_cases(rng):
    """Chosen states (each rule's edge built in) and random ones:
    (running, waiting, free_blocks, block_size, max_batch, what it tests)."""
    B = int(rng.integers(2, 9))  # lengths at and beside a block's edge
    cases = [
        ([(1, 4), (2, 5), (3, 8)], [(4, 4)], 3, 4, 8,
         "two requests at a block's edge grow into new blocks"),
        ([(1, B), (2, 2 * B), (3, 3 * B)], [(4, 1)], 1, B, 8,
         "three need a block, one is free: preemption"),
        ([(1, 2 * B), (2, B), (3, 3 * B - 1)], [], 0, B, 8,
         "the latest arrival does not need a block but must go first"),
        ([(1, B), (2, B)], [(3, 1)], 1, B, 8,
         "one block short: the preempted request must not come straight back"),
        ([(1, 2 * B), (2, 2 * B), (3, B + 1), (4, 1)], [(5, 1)], 0, B, 8,
         "two preemptions before the growth fits"),
        ([(1, B + 1)], [(2, 3 * B), (3, 1)], 2, B, 8,
         "the head of the queue does not fit, a later one would"),
        ([(1, 3)], [(2, 1), (3, 2), (4, 1)], 50, B, 3,
         "room for every waiting request, a batch of at most 3"),
        ([], [(5, 2 * B), (6, B + 1)], 4, B, 4,
         "nothing running yet"),
        ([(1, 4), (2, 7), (3, 1)], [(4, 2)], 1, 1, 5,
         "blocks of one token: every request needs a block at every step"),
    ]
    for _ in range(4):
        n_run, n_wait = int(rng.integers(0, 6)), int(rng.integers(0, 4))
        running = _requests(rng, range(n_run), 1, 4 * B)
        waiting = _requests(rng, range(n_run, n_run + n_wait), 1, 3 * B)
        cases.append((running, waiting, int(rng.integers(0, 5)), B,
                      int(rng.integers(max(n_run, 1), 8)), "a random state"))
    return cases


def check_schedule_step(your_function):
    """Exercise 5: your_function(running, waiting, free_blocks, block_size, max_batch)
    = (running, waiting, free_blocks) after one step of continuous batching."""
    rng = fresh_rng()
    for running, waiting, free, block_size, max_batch, what in _scheduler_cases(rng):
        want = schedule_reference(running, waiting, free, block_size, max_batch)
        got, problem = call(your_function, running, waiting, free, block_size,
                            max_batch)
        where = (f"with running {running}, waiting {waiting}, {free} free "
                 f"block{'s' * (free != 1)} of {block_size}, max_batch {max_batch} "
                 f"({what})")
        if problem is None:
            problem = _schedule_problem(got, want)
        if problem is not None:
            return verdict(False, f"{where}: {problem}")
    return verdict(True, "on 13 states (9 chosen: growth at a block's edge, one and "
                         "several preemptions, a queue whose head does not fit, a full "
                         "batch, blocks of one token; 4 random) your step equals the "
                         "rules: the latest arrivals preempted to the head of the queue, "
                         "admission in order.")


def _schedule_problem(got, want):
    """None, or what differs between the reader's step and the rules'."""
    if not (isinstance(got, tuple) and len(got) == 3):
        return ("return three things (running, waiting, free_blocks), got "
                f"{type(got).__name__}")
    running, waiting, free = got
    try:
        running = [(int(r), int(n)) for r, n in running]
        waiting = [(int(r), int(n)) for r, n in waiting]
    except (TypeError, ValueError):
        return "running and waiting are lists of (request_id, length) pairs"
    if running != want[0]:
        return f"running should be {want[0]}, you gave {running}"
    if waiting != want[1]:
        return f"waiting should be {want[1]}, you gave {waiting}"
    if free != want[2]:
        return f"{want[2]} blocks should be free, you gave {free}"
    return None

# Exercise 6 ---------------------------------------------------------------------------

def expected_tokens_reference(p, q):
    """Expected tokens of one speculative round, each position's acceptance
    α_i = Σ_x min(p_i(x), q_i(x)): 1 + α_1 + α_1 α_2 + ... + α_1 ... α_k (the last
    term's round keeps every draft and adds the bonus). Checked against the exact
    enumeration ``round_outcomes`` in tests/practice/test_ch11.py."""
    alpha = np.minimum(p[..., :-1, :], q).sum(axis=-1, dtype=np.float64)  # (..., k)
    reach = np.cumprod(alpha, axis=-1)  # P(the first i drafts all kept)
    return (1 + reach.sum(axis=-1)).astype(p.dtype)


def _distributions(rng, shape, dtype, *, peaked=False):
    logits = rng.normal(size=shape) * (8.0 if peaked else 1.0)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(dtype)


@redrawable
def _round_trial(rng, lead, k, V, dtype=np.float64, *, draft="random"):
    """Target p (..., k + 1, V) and draft q (..., k, V): a "random" draft, a
    "perfect" one (q = p, α = 1), a "disjoint" one (no token both like, α = 0), or one
    "falling": good at the first positions, poor at the last."""
    p = _distributions(rng, (*lead, k + 1, V), dtype)
    if draft == "perfect":
        q = p[..., :-1, :].copy()
    elif draft == "disjoint":  # p on the first half of the vocabulary, q on the rest
        half = V // 2
        p[..., :half] += 1e-3
        p[..., half:] = 0
        p /= p.sum(axis=-1, keepdims=True)
        q = _distributions(rng, (*lead, k, V), dtype)
        q[..., :half] = 0
        q /= q.sum(axis=-1, keepdims=True)
    elif draft == "falling":
        w = np.linspace(0.95, 0.05, k)[:, None] if k else np.zeros((0, 1))
        q = w * p[..., :-1, :] + (1 - w) * _distributions(rng, (*lead, k, V), dtype)
    else:
        q = _distributions(rng, (*lead, k, V), dtype, peaked=True)
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    label = (f"k = {k} drafted tokens, {V} tokens in the vocabulary, {axes}, "
             f"{np.dtype(dtype).name}, a {draft} draft")
    return Trial(label, (p.astype(dtype), q.astype(dtype)), {}, np.dtype(dtype))


def check_expected_tokens(your_function):
    """Exercise 6: your_function(p, q) = the expected tokens one round emits (...)."""
    rng = fresh_rng()
    trials = [_round_trial(rng, (), 3, 6, draft="falling"),
              _round_trial(rng, (4,), 2, 5), _round_trial(rng, (2, 3), 4, 7),
              _round_trial(rng, (3,), 3, 5, draft="perfect"),
              _round_trial(rng, (2,), 3, 6, draft="disjoint"),
              _round_trial(rng, (2,), 0, 4),
              _round_trial(rng, (3,), 5, 8, np.float32, draft="falling"),
              _round_trial(rng, (int(rng.integers(1, 4)),), int(rng.integers(1, 8)),
                           int(rng.integers(2, 10)))]

    def one_alpha(p, q):  # Leviathan's formula with the mean acceptance
        k = q.shape[-2]
        alpha = np.minimum(p[..., :-1, :], q).sum(-1).mean(-1)
        with np.errstate(all="ignore"):
            return np.where(alpha == 1, k + 1, (1 - alpha ** (k + 1)) / (1 - alpha))

    hints = [(lambda p, q: expected_tokens_reference(p, q) - np.prod(
                  np.minimum(p[..., :-1, :], q).sum(-1), axis=-1),
              "a round that keeps every drafted token adds the bonus token, drawn "
              "from the target's last distribution: k + 1 tokens, not k"),
             (one_alpha, "one acceptance rate for all positions is the formula's "
                         "assumption; here each position has its own α_i, and the "
                         "round reaches position i only if 1 to i - 1 were kept"),
             (lambda p, q: 1 + np.cumprod((p[..., :-1, :] * q).sum(-1), -1).sum(-1),
              "the chance a drafted token is kept is Σ min(p, q), not the chance "
              "that both models draw the same token"),
             (lambda p, q: expected_tokens_reference(
                  np.concatenate([p[..., 1:, :], p[..., -1:, :]], -2), q),
              "q_i drafts the token that p_i judges: row i of q goes with row i of p, "
              "and p's last row, k + 1, is the bonus's")]

    def compare(result, expected, trial):
        got, problem = as_array(result, "expected_tokens")
        if problem is not None:
            return problem
        problem = difference(got, expected, trial.dtype, kind=False)
        if problem is None:
            return None
        for wrong, message in hints:
            if matches(got, wrong(*trial.args), trial.dtype):
                return message
        return problem

    problem = first_failure(your_function, trials, expected_tokens_reference,
                            what="expected_tokens", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random rounds (0 to 7 drafted tokens; "
                         "perfect, disjoint, falling and random drafts; no, one and "
                         "two leading axes; float32) your expectation equals the "
                         "exact one, bonus token included.")


guard_checks(globals())
