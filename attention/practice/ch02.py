"""Self-checks for the practice exercises of chapter 2 (self-attention from scratch).

Each check calls the reader's function on data of its own, prints a one-line verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying concretely what is wrong) and returns True
or False. A check never raises because an answer is wrong, so a page can run an unsolved
starter and show the check's message.
"""

import math

import numpy as np

from attention.masks import causal_mask
from attention.multi_head import multi_head_attention, split_heads
from attention.scaled_dot_product import attention
from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, judge, matches,
                                       redrawable, shape_text)
from attention.practice.verdict import call, guard_checks, verdict


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _weights_trial(rng, lead, n_q, n_k, d, masked="", dtype=np.float64, scale=1.0):
    q = (rng.normal(size=lead + (n_q, d)) * scale).astype(dtype)
    k = rng.normal(size=lead + (n_k, d)).astype(dtype)
    kwargs, label = {}, f"q {shape_text(q.shape)} and k {shape_text(k.shape)} in {np.dtype(dtype).name}"
    if scale != 1.0:
        label += f", q scaled by {scale:g} (scores spread over thousands)"
    if masked:
        mask = rng.random(size=(n_q, n_k)) < 0.7
        mask[np.arange(n_q), rng.integers(n_k, size=n_q)] = True  # no row all False...
        if masked == "a fully masked row":  # ... but where one is asked for
            mask[0] = False
        kwargs["mask"] = mask
        label += f" with a random ({n_q}, {n_k}) mask" + (", its first row all False"
                                                          if masked == "a fully masked row" else "")
    return Trial(label, (q, k), kwargs, np.dtype(dtype))


def _weights(q, k, mask=None):
    v = np.zeros(k.shape[:-1] + (1,), k.dtype)
    return attention(q, k, v, mask=mask, return_weights=True)[1]


def check_attention_weights(your_function):
    """Exercise 1: your_function(q, k, mask=None) = softmax(q kᵀ / √d_k) with masked keys
    weighted 0, a row with no key allowed all 0, over any leading axes."""
    rng = fresh_rng()
    trials = [_weights_trial(rng, (), 5, 7, 16),
              _weights_trial(rng, (), 4, 6, 8, masked="random"),
              _weights_trial(rng, (2, 3), 5, 5, 32, masked="random"),
              _weights_trial(rng, (2,), 4, 9, 4, dtype=np.float32),
              _weights_trial(rng, (), 3, 5, 8, masked="a fully masked row"),
              _weights_trial(rng, (2,), 4, 6, 8, masked="random", scale=1000.0)]
    d_of = lambda q: q.shape[-1]  # noqa: E731
    return judge(
        your_function, trials, _weights, what="attention_weights",
        success="your weights equal those of attention.attention (as PyTorch's SDPA: a "
                "row with every key masked is all 0).",
        hints=[(lambda q, k, mask=None: _weights(q * math.sqrt(d_of(q)), k, mask),
                "the scores are not scaled: divide q kᵀ by √d_k (d_k = q.shape[-1])"),
               (lambda q, k, mask=None: _weights(q / math.sqrt(d_of(q)), k, mask),
                "you divided by d_k; divide by √d_k"),
               (lambda q, k, mask=None: _weights(q * math.sqrt(d_of(q)) / 4.0, k, mask),
                "you divided by 4.0, the √d_k of one example; use √d_k of the q you are "
                "given"),
               (lambda q, k, mask=None: _weights(q, k, None if mask is None else ~mask),
                "True in the mask means 'may attend'; you blocked the True keys"),
               (lambda q, k, mask=None: _weights(q, k, None),
                "the mask is ignored: give the blocked keys a score of -inf")])


# Exercise 2 ---------------------------------------------------------------------------

PAD = "<pad>"
_PADDING_BATCHES = [
    # Batch size = length first: there a (B, n) mask broadcasts without an error and
    # silently masks the wrong thing, the trap this exercise is about.
    [["a", "b", "c", PAD, PAD], ["d", "e", PAD, PAD, PAD], ["f", "g", "h", "i", "j"],
     ["k", PAD, PAD, PAD, PAD], ["l", "m", "n", "o", PAD]],
    [["the", "cat", "sat", "down"], ["the", "cat", PAD, PAD]],
]
# Another pad token, and padding on the left (as batched generation pads prompts).
_OTHER_PAD = ("[PAD]", [["[PAD]", "[PAD]", "a", "b", "c"], ["d", "e", "f", "g", "h"],
                        ["[PAD]", "i", "j", "k", "l"]])


def check_padding_mask(your_function):
    """Exercise 2: your_function(batch of token lists, pad="<pad>") -> boolean mask,
    True = real token.

    The mask must broadcast against scores of shape (batch, heads, n_q, n_k) so that no
    query of any head attends to a pad key, wherever the pads are.
    """
    rng = fresh_rng()
    words = [f"w{i}" for i in range(40)]
    lengths = rng.integers(1, 7, size=3)
    lengths[0] = 6  # one sequence without padding
    random_batch = [[str(w) for w in rng.choice(words, size=n)] + [PAD] * (6 - n)
                    for n in lengths]
    cases = [(None, b) for b in _PADDING_BATCHES + [random_batch]] + [_OTHER_PAD]
    for pad, batch in cases:
        B, n, h, d = len(batch), len(batch[0]), 2, 4
        real = np.array([[tok != (pad or PAD) for tok in seq] for seq in batch])  # (B, n)
        mask, problem = (call(your_function, batch) if pad is None
                         else call(your_function, batch, pad))
        if problem is None:
            mask, problem = as_array(mask, "your function")
        if problem:
            return verdict(False, problem)
        if mask.shape == (B, n) and B == n:
            _, w = attention(*(rng.normal(size=(B, h, n, d)) for _ in range(3)),
                             mask=np.broadcast_to(mask, (B, h, n, n)), return_weights=True)
            leak = np.argwhere((w > 0) & ~real[:, None, None, :])
            b, head, i, j = leak[0] if len(leak) else (0, 0, 0, 0)
            return verdict(False, f"your mask has shape (batch, n_k) = {mask.shape}. Broadcasting lines up the LAST axes, so against scores (batch, heads, n_q, n_k) it lands on (n_q, n_k): row b of it masks query b of every sequence. Here batch = n_k, so nothing fails, and query {i} of sequence {b} attends to a pad at position {j}")
        if mask.dtype != np.bool_:
            return verdict(False, f"the mask has dtype {mask.dtype}; it must be boolean (True = may attend)")
        scores_shape = (B, h, n, n)
        try:
            ok_shape = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            ok_shape = False
        if not ok_shape:
            return verdict(False, f"for {B} sequences of {n} tokens your mask has shape {mask.shape}, which does not broadcast to the scores' shape {scores_shape}; try (batch, 1, 1, n_k)")
        full = np.broadcast_to(mask, scores_shape)
        q, k, v = (rng.normal(size=scores_shape[:3] + (d,)) for _ in range(3))
        _, w = attention(q, k, v, mask=full, return_weights=True)  # (B, h, n, n)
        leak = (w > 0) & ~real[:, None, None, :]
        if leak.any():
            b, head, i, j = np.argwhere(leak)[0]
            return verdict(False, f"in sequence {b} (head {head}), query {i} attends to {pad or PAD} at position {j} with weight {w[b, head, i, j]:.2f}; your mask has shape {mask.shape}" + ("" if pad is None else f" (the pad token is {pad!r} here)"))
        blocked = ~full & real[:, None, None, :]
        if blocked.any():
            b, head, i, j = np.argwhere(blocked)[0]
            return verdict(False, f"in sequence {b} (head {head}), query {i} may not attend to the real token {batch[b][j]!r} at position {j}; True must mean 'may attend'")
    return verdict(True, "no query attends to a pad token (<pad> and [PAD], on the right "
                         "and on the left), and every real token stays visible.")


# Exercise 3 ---------------------------------------------------------------------------

@redrawable
def _masked_trial(rng, lead, n_q, n_k, d, d_v, dtype=np.float64):
    q, k = rng.normal(size=lead + (n_q, d)), rng.normal(size=lead + (n_k, d))
    v = rng.normal(size=lead + (n_k, d_v))
    mask = rng.random(size=(n_q, n_k)) < 0.6
    mask[:, 0], mask[:, -1] = True, False  # every query sees a key and misses one
    return Trial(f"q {shape_text(q.shape)}, k {shape_text(k.shape)} and a random "
                 f"({n_q}, {n_k}) mask in {np.dtype(dtype).name}",
                 tuple(a.astype(dtype) for a in (q, k, v)) + (mask,), {}, np.dtype(dtype))


def mha_reference(q, k, v, attn_mask, key_padding_mask):
    """Attention with nn.MultiheadAttention's two masks, True = blocked: attn_mask
    (n_q, n_k) for every sequence, key_padding_mask (batch, n_k) per sequence."""
    allowed = ~attn_mask & ~key_padding_mask[:, None, None, :]
    return attention(q, k, v, mask=allowed)


def _plain_masked(q, k, v, allowed):
    """Masked attention as a reader writes it: a row with no allowed key is NaN."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    with np.errstate(all="ignore"):
        w = np.exp(np.where(allowed, scores, -np.inf)
                   - np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True))
        return (w / w.sum(axis=-1, keepdims=True)) @ v


@redrawable
def _two_mask_trial(rng, B, h, n_q, n_k, d, dtype=np.float64):
    """Random masks, True = blocked, with key 0 open to every query (no row is
    all blocked) and each mask blocking keys the other leaves open."""
    q, k = rng.normal(size=(B, h, n_q, d)), rng.normal(size=(B, h, n_k, d))
    v = rng.normal(size=(B, h, n_k, d))
    attn_mask = rng.random(size=(n_q, n_k)) < 0.3
    padding = rng.random(size=(B, n_k)) < 0.3
    attn_mask[:, 0], padding[:, 0] = False, False
    attn_mask[0, -1], padding[-1, 1] = True, True  # one of each, at least
    return Trial(f"q {shape_text(q.shape)}, k {shape_text(k.shape)}, a random "
                 f"({n_q}, {n_k}) attn_mask and ({B}, {n_k}) key_padding_mask in "
                 f"{np.dtype(dtype).name}",
                 tuple(a.astype(dtype) for a in (q, k, v)) + (attn_mask, padding), {},
                 np.dtype(dtype))


def check_masked_attention(your_function):
    """Exercise 3: your_function(q, k, v, attn_mask, key_padding_mask) = attention with
    nn.MultiheadAttention's boolean masks, True = blocked."""
    rng = fresh_rng()
    trials = [_two_mask_trial(rng, 2, 3, 4, 6, 8), _two_mask_trial(rng, 3, 2, 5, 5, 4),
              _two_mask_trial(rng, 1, 1, 3, 7, 4, np.float32)]
    keep = lambda m: ~m[:, None, None, :]  # noqa: E731
    return judge(
        your_function, trials, mha_reference, what="masked_attention",
        success="your output equals attention with both masks (True = blocked).",
        hints=[(lambda q, k, v, a, p: _plain_masked(q, k, v, a & p[:, None, None, :]),
                "the masks are read the other way round: in nn.MultiheadAttention's "
                "convention True means blocked"),
               (lambda q, k, v, a, p: attention(q, k, v, mask=~a),
                "the key padding mask is ignored: a padded key is blocked for every "
                "query of its sequence"),
               (lambda q, k, v, a, p: attention(q, k, v, mask=keep(p)),
                "attn_mask is ignored: it blocks keys for every sequence"),
               (lambda q, k, v, a, p: attention(q, k, v, mask=~a | keep(p)),
                "a key is blocked when either mask blocks it, not only when both do")])


# Exercise 4 ---------------------------------------------------------------------------

def check_multi_head_scale(your_function):
    """Exercise 4: your_function(x, W_q, W_k, W_v, W_o, n_heads) must match multi-head attention."""
    rng = fresh_rng()
    results = {}
    # the last: the sizes of the second again, new values (a cache by shape shows)
    for n, d_model, n_heads in ((6, 16, 1), (7, 16, 4), (5, 24, 3), (4, 32, 8),
                                (7, 16, 4)):
        x = rng.normal(size=(n, d_model))
        W = [rng.normal(size=(d_model, d_model)) * 0.5 for _ in range(4)]
        got, problem = call(your_function, x, *W, n_heads)
        if problem is None:
            got, problem = as_array(got, "your function")
        if problem:
            return verdict(False, f"with {n_heads} heads: {problem}")
        expected = multi_head_attention(x, *W, n_heads)
        if got.shape != expected.shape:
            return verdict(False, f"with x of shape {x.shape} the output should have shape {expected.shape}, got {got.shape}")
        results[n_heads] = difference(got, expected)
    if not any(results.values()):
        return verdict(True, "with 1, 3, 4 and 8 heads on random inputs your output matches "
                             "multi_head_attention (each head scaled by √d_head).")
    if results[1] is None:
        wrong = next(h for h, why in results.items() if why)
        return verdict(False, f"one head matches, but with {wrong} heads your output differs "
                              "(" + results[wrong] + "): which length should the scores be "
                              "scaled by?")
    return verdict(False, f"even with one head: {results[1]}")


# Exercise 5 ---------------------------------------------------------------------------

@redrawable
def _heads_trial(rng, lead, n, d_model, n_heads, dtype=np.float64):
    x = rng.normal(size=lead + (n, d_model)).astype(dtype)
    return Trial(f"x {shape_text(x.shape)} in {n_heads} heads", (x, n_heads), {},
                 np.dtype(dtype))


@redrawable
def _qkv_trial(rng, lead, n, n_heads, n_kv_heads, d_head, dtype=np.float64):
    x = rng.normal(size=lead + (n, (n_heads + 2 * n_kv_heads) * d_head)).astype(dtype)
    return Trial(f"x {shape_text(x.shape)} with {n_heads} query heads and {n_kv_heads} "
                 f"key/value head{'s' * (n_kv_heads != 1)} in {np.dtype(dtype).name}",
                 (x, n_heads, n_kv_heads), {}, np.dtype(dtype))


def qkv_reference(x, n_heads, n_kv_heads):
    """The fused features cut at the query and key widths, each part through the
    package's split_heads."""
    d_head = x.shape[-1] // (n_heads + 2 * n_kv_heads)
    q_end, k_end = n_heads * d_head, (n_heads + n_kv_heads) * d_head
    return (split_heads(x[..., :q_end], n_heads),
            split_heads(x[..., q_end:k_end], n_kv_heads),
            split_heads(x[..., k_end:], n_kv_heads))


def check_split_qkv(your_function):
    """Exercise 5: your_function(x, n_heads, n_kv_heads) = (q, k, v), each split into
    its heads, from a fused QKV projection."""
    rng = fresh_rng()
    trials = [_qkv_trial(rng, (), 5, 4, 1, 2), _qkv_trial(rng, (2,), 7, 6, 2, 4),
              _qkv_trial(rng, (2, 3), 3, 3, 1, 2, np.float32),
              _qkv_trial(rng, (), 4, 2, 2, 5)]

    def reshaped_only(x, h, h_kv):
        d = x.shape[-1] // (h + 2 * h_kv)
        parts = np.split(x, [h * d, (h + h_kv) * d], axis=-1)
        return tuple(p.reshape(*x.shape[:-2], p.shape[-1] // d, x.shape[-2], d)
                     for p in parts)

    def equal_thirds(x, h, h_kv):
        d = x.shape[-1] // (h + 2 * h_kv)
        return tuple(split_heads(p, p.shape[-1] // d) for p in np.split(x, 3, axis=-1))

    def strided(x, h, h_kv):
        d = x.shape[-1] // (h + 2 * h_kv)
        parts = np.split(x, [h * d, (h + h_kv) * d], axis=-1)
        return tuple(np.swapaxes(p.reshape(*x.shape[:-1], d, p.shape[-1] // d), -1, -3)
                     .swapaxes(-1, -2) for p in parts)

    hints = [(reshaped_only, "a reshape straight to (..., h, n, d_head) mixes tokens "
                             "into heads: reshape to (..., n, h, d_head) first, then "
                             "swap the n and h axes"),
             (equal_thirds, "the features were cut in equal thirds; with grouped "
                            "heads the keys and values are narrower than the queries: "
                            "n_heads d_head, then n_kv_heads d_head twice"),
             (strided, "head h took every h-th feature; it holds its own d_head "
                       "features, one block")]

    def compare(result, expected, trial):
        if not (isinstance(result, tuple) and len(result) == 3):
            return f"return (q, k, v), got {type(result).__name__}"
        for i, name in enumerate("qkv"):
            got, problem = as_array(result[i], name)
            if problem is not None:
                return problem
            problem = difference(got, expected[i], trial.dtype)
            if problem is None:
                continue
            for wrong, message in hints:
                try:
                    known = wrong(*trial.args)
                except ValueError:  # a split that cannot be made on these sizes
                    continue
                if all(np.shape(r) == np.shape(w) and matches(np.asarray(r), w,
                                                              trial.dtype)
                       for r, w in zip(result, known)):
                    return message
            return f"{name}: {problem}"
        return None

    problem = first_failure(your_function, trials, qkv_reference, what="split_qkv",
                            compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random inputs (2 to 6 query heads sharing "
                         "1 or 2 key/value heads, and as many; no, one and two leading "
                         "axes; float32) your q, k and v equal the package's split_heads "
                         "of the three parts.")


# Exercise 6 ---------------------------------------------------------------------------

@redrawable
def _gqa_trial(rng, batch, h, h_kv, n_q, n_k, d, dtype=np.float64):
    q = rng.normal(size=(batch, h, n_q, d)).astype(dtype)
    k = rng.normal(size=(batch, h_kv, n_k, d)).astype(dtype)
    v = rng.normal(size=(batch, h_kv, n_k, d)).astype(dtype)
    return Trial(f"{h} query heads sharing {h_kv} key heads, q {shape_text(q.shape)} "
                 f"and k {shape_text(k.shape)}", (q, k, v), {}, np.dtype(dtype))


def _gqa(q, k, v):
    group = q.shape[-3] // k.shape[-3]
    return attention(q, np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3))


def check_gqa_attention(your_function):
    """Exercise 6: your_function(q, k, v) = grouped-query attention: query head i uses
    key head i // (h / h_kv)."""
    rng = fresh_rng()
    trials = [_gqa_trial(rng, 1, 4, 2, 5, 5, 8), _gqa_trial(rng, 2, 6, 3, 3, 7, 4),
              _gqa_trial(rng, 2, 8, 1, 4, 4, 8), _gqa_trial(rng, 1, 4, 4, 3, 6, 4, np.float32)]

    def tiled(q, k, v):
        group = q.shape[-3] // k.shape[-3]
        return attention(q, np.tile(k, (1, group, 1, 1)), np.tile(v, (1, group, 1, 1)))

    return judge(
        your_function, trials, _gqa, what="gqa_attention",
        success="your output equals attention with each key head repeated for its "
                "group of query heads (Hugging Face's repeat_kv).",
        hints=[(tiled, "np.tile cycles the key heads (0, 1, 0, 1): query heads 0 and 1 "
                "share key head 0, so repeat each key head in place, np.repeat(k, group, "
                "axis=-3)")])


# Exercise 7 ---------------------------------------------------------------------------

def check_causal_mask(your_function):
    """Exercise 7: your_function(n_q, n_k) = the bottom-right causal mask, True = may attend."""
    rng = fresh_rng()
    sizes = [(4, 4), (2, 6), (1, 5), (5, 9)] + [
        (int(n_q), int(n_q + extra)) for n_q, extra in rng.integers(1, 9, size=(4, 2))]
    for n_q, n_k in sizes:
        got, problem = call(your_function, n_q, n_k)
        expected = causal_mask(n_q, n_k)
        label = f"for n_q = {n_q} and n_k = {n_k}"
        if problem is None:
            got, problem = as_array(got, "causal_mask")
        if problem is None and got.dtype != np.bool_:
            problem = f"the mask has dtype {got.dtype}; it must be boolean (True = may attend)"
        if problem is None and got.shape != expected.shape:
            problem = f"the mask should have shape ({n_q}, {n_k}), got {got.shape}"
        if problem is None and not np.array_equal(got, expected):
            i, j = (int(a) for a in np.argwhere(got != expected)[0])
            problem = (f"query {i} sits at position n_k - n_q + i = {n_k - n_q + i} (the "
                       f"queries are the last n_q tokens) and {'may' if expected[i, j] else 'may not'} "
                       f"see key {j}; your mask says the opposite")
        if problem:
            return verdict(False, f"{label}: {problem}")
    return verdict(True, "on 4 chosen and 4 random sizes your mask is the bottom-right causal "
                         "mask a decoder with a cache needs.")


# Exercise 8 ---------------------------------------------------------------------------

@redrawable
def _bias_trial(rng, lead, n_q, n_k, d, bias_shape, *, kind="", dtype=np.float64):
    """q, k, v and a float bias; kind: "" (a bias like ALiBi's), "some -inf" (random
    keys blocked), "-inf" (the same and the first row all -inf), "near -1000" (whole rows of the bias near
    -1000: exp of the raw scores underflows to 0) or "scores near ±1000"."""
    q = rng.normal(size=lead + (n_q, d))
    k, v = rng.normal(size=lead + (n_k, d)), rng.normal(size=lead + (n_k, 3))
    bias = rng.normal(size=bias_shape) * 2.0
    label = (f"q {shape_text(q.shape)}, k {shape_text(k.shape)} and a "
             f"{shape_text(bias_shape)} bias in {np.dtype(dtype).name}")
    if kind in ("some -inf", "-inf"):
        bias[rng.random(size=bias_shape) < 0.3] = -np.inf
        bias[..., 0] = 0.5  # every row keeps a key ...
        label += ", some entries -inf"
    if kind == "-inf":
        bias[..., 0, :] = -np.inf  # ... but the first
        label += " and its first row all -inf"
    elif kind == "near -1000":
        bias = bias - 1000.0
        label += " near -1000"
    elif kind == "scores near ±1000":
        q = q * 600.0  # q·k / √d then has a standard deviation of 600
        label += ", the scores near ±1000"
    return Trial(label, tuple(a.astype(dtype) for a in (q, k, v, bias)), {},
                 np.dtype(dtype))


def _naive_biased(q, k, v, bias):
    """Plain softmax of the biased scores: NaN on a row whose bias is all -inf."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + bias
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def check_biased_attention(your_function):
    """Exercise 8: your_function(q, k, v, bias) = attention with a float bias added to
    the scaled scores (-inf blocks a key; a row with every key blocked gives 0)."""
    rng = fresh_rng()
    trials = [_bias_trial(rng, (), 4, 6, 8, (4, 6), kind="some -inf"),
              _bias_trial(rng, (2, 3), 5, 7, 16, (3, 5, 7)),
              _bias_trial(rng, (2,), 3, 9, 4, (3, 9), kind="near -1000"),
              _bias_trial(rng, (3,), 5, 5, 8, (5, 5), kind="scores near ±1000"),
              _bias_trial(rng, (2, 2), 4, 6, 8, (4, 6), kind="-inf"),
              _bias_trial(rng, (2, 3), 5, 7, 8, (2, 1, 5, 7), kind="-inf",
                          dtype=np.float32)]

    def before_scale(q, k, v, bias):
        return attention(q, k, v, mask=(bias / math.sqrt(q.shape[-1])).astype(q.dtype))

    def shifted_by_zero(q, k, v, bias):
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + bias
        e = np.exp(scores)
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total > 0, total, 1.0) @ v

    return judge(
        your_function, trials, lambda q, k, v, bias: attention(q, k, v, mask=bias),
        what="biased_attention",
        success="your output equals attention.attention with the bias as an additive "
                "mask (a row with every key at -inf gives 0, as with a boolean mask).",
        hints=[(lambda q, k, v, bias: attention(q, k, v),
                "the bias is ignored: add it to the scaled scores q kᵀ / √d_k"),
               (before_scale, "you added the bias before dividing by √d_k; it is added "
                "to q kᵀ / √d_k, after the scale"),
               (lambda q, k, v, bias: attention(q, k, v, mask=np.isfinite(bias)),
                "only the -inf entries of the bias count: its finite entries shift the "
                "scores too (the bias is added, it is not a yes/no mask)"),
               (_naive_biased, "a row whose bias is all -inf (no key allowed) gives nan; "
                "give it all-zero weights and an all-zero output, as PyTorch's SDPA does"),
               (shifted_by_zero, "exp of scores near -1000 underflows to 0 and the row "
                "divides 0 by 0: subtract each row's largest finite score first")])


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
