"""Self-checks for the practice exercises of chapter 2 (self-attention from scratch).

Each check calls the reader's function on data of its own, prints a one-line verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying concretely what is wrong) and returns True
or False. A check never raises because an answer is wrong, so a page can run an unsolved
starter and show the check's message.
"""

import numpy as np

from attention.multi_head import multi_head_attention
from attention.scaled_dot_product import attention
from attention.self_attention import self_attention
from attention.softmax import softmax
from attention.practice.verdict import call, guard_checks, verdict


def _as_array(result, what):
    if result is None:
        return None, f"{what} returned None; return a NumPy array"
    return np.asarray(result), None


# Exercise 1 ---------------------------------------------------------------------------

def check_attention_weights(your_function):
    """Exercise 1: your_function(Q, K, scaled) = softmax(Q Kᵀ / √d_k), or softmax(Q Kᵀ)."""
    rng = np.random.default_rng(2024)
    Q, K = rng.normal(size=(6, 16)), rng.normal(size=(6, 16))
    scores = Q @ K.T
    expected = {True: softmax(scores / 4.0), False: softmax(scores)}
    for scaled in (True, False):
        got, problem = call(your_function, Q, K, scaled=scaled)
        if problem is None:
            got, problem = _as_array(got, f"attention_weights(Q, K, scaled={scaled})")
        if problem:
            return verdict(False, problem)
        if got.shape != (6, 6):
            return verdict(False, f"for Q and K of shape (6, 16) the weights should have shape (6, 6), got {got.shape}")
        sums = got.sum(axis=-1)
        if not np.allclose(sums, 1.0):
            return verdict(False, f"with scaled={scaled} row 0 sums to {sums[0]:.3f}, not 1: apply softmax along the last axis (each query's row)")
        if np.allclose(got, expected[scaled]):
            continue
        if scaled and np.allclose(got, expected[False]):
            return verdict(False, "with scaled=True your weights are softmax(Q Kᵀ), unscaled: divide the scores by √d_k = 4.0 before the softmax")
        if scaled and np.allclose(got, softmax(scores / 16.0)):
            return verdict(False, "with scaled=True you divided the scores by d_k = 16; divide by √d_k = 4.0")
        if not scaled and np.allclose(got, expected[True]):
            return verdict(False, "with scaled=False your weights are still scaled: skip the division when scaled is False")
        return verdict(False, f"with scaled={scaled} row 0 should be {np.round(expected[scaled][0], 2)}, got {np.round(got[0], 2)}")
    peak = {s: expected[s].max(axis=-1).mean() for s in (True, False)}
    return verdict(True, f"on this check's 6 tokens (d_k = 16) the largest weight per row averages {peak[False]:.2f} unscaled and {peak[True]:.2f} scaled.")


# Exercise 2 ---------------------------------------------------------------------------

PAD = "<pad>"
_PADDING_BATCHES = [
    # Batch size = length first: there a (B, n) mask broadcasts without an error and
    # silently masks the wrong thing, the trap this exercise is about.
    [["a", "b", "c", PAD, PAD], ["d", "e", PAD, PAD, PAD], ["f", "g", "h", "i", "j"],
     ["k", PAD, PAD, PAD, PAD], ["l", "m", "n", "o", PAD]],
    [["the", "cat", "sat", "down"], ["the", "cat", PAD, PAD]],
]


def check_padding_mask(your_function):
    """Exercise 2: your_function(batch of token lists) -> boolean mask, True = real token.

    The mask must broadcast against scores of shape (batch, heads, n_q, n_k) so that no
    query of any head attends to a <pad> key.
    """
    rng = np.random.default_rng(7)
    for batch in _PADDING_BATCHES:
        B, n, h, d = len(batch), len(batch[0]), 2, 4
        real = np.array([[tok != PAD for tok in seq] for seq in batch])  # (B, n)
        mask, problem = call(your_function, batch)
        if problem is None:
            mask, problem = _as_array(mask, "your function")
        if problem:
            return verdict(False, problem)
        if mask.shape == (B, n) and B == n:
            _, w = attention(*(rng.normal(size=(B, h, n, d)) for _ in range(3)),
                             mask=np.broadcast_to(mask, (B, h, n, n)), return_weights=True)
            leak = np.argwhere((w > 0) & ~real[:, None, None, :])
            b, head, i, j = leak[0] if len(leak) else (0, 0, 0, 0)
            return verdict(False, f"your mask has shape (batch, n_k) = {mask.shape}. Broadcasting lines up the LAST axes, so against scores (batch, heads, n_q, n_k) it lands on (n_q, n_k): row b of it masks query b of every sequence. Here batch = n_k, so nothing fails, and query {i} of sequence {b} attends to <pad> at position {j}. Give the mask axes of size 1 for heads and queries")
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
            return verdict(False, f"in sequence {b} (head {head}), query {i} attends to <pad> at position {j} with weight {w[b, head, i, j]:.2f}; your mask has shape {mask.shape}")
        blocked = ~full & real[:, None, None, :]
        if blocked.any():
            b, head, i, j = np.argwhere(blocked)[0]
            return verdict(False, f"in sequence {b} (head {head}), query {i} may not attend to the real token {batch[b][j]!r} at position {j}; True must mean 'may attend'")
    return verdict(True, "no query attends to a <pad> token, and every real token stays visible.")


# Exercise 3 ---------------------------------------------------------------------------

def check_permutation_test(your_function):
    """Exercise 3: your_function(X, W_q, W_k, W_v, perm, causal) -> bool.

    True iff permuting the tokens permutes the outputs the same way:
    self_attention(X[perm]) == self_attention(X)[perm]. It should say True without a mask
    and False with the causal mask.
    """
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 8))
    W_q, W_k, W_v = (rng.normal(size=(8, 4)) for _ in range(3))
    perm = np.array([1, 2, 0, 4, 3])  # a 3-cycle and a swap: its inverse is a different permutation
    identity = np.arange(5)
    # The identity "shuffle" moves nothing, so even with the causal mask the outputs match:
    # an answer that only looks at `causal` (say, `return not causal`) says False there.
    cases = ((perm, False, True), (perm, True, False), (identity, True, True))
    for perm, causal, expected in cases:
        got, problem = call(your_function, X, W_q, W_k, W_v, perm, causal=causal)
        if problem:
            return verdict(False, problem)
        if not isinstance(got, (bool, np.bool_)):
            return verdict(False, f"return True or False, got a value of type {type(got).__name__}" + (f" with shape {got.shape}" if hasattr(got, "shape") else ""))
        if bool(got) != expected:
            if not causal:
                return verdict(False, f"without a mask your test says {bool(got)} for perm {perm}, but the outputs do move with the tokens: which row of the original output belongs to row i of the permuted one?")
            if expected:
                return verdict(False, f"with the causal mask and the identity perm {perm} (nothing moves) your test says False, but the outputs are equal: compare the outputs, do not decide from `causal` alone")
            return verdict(False, f"with the causal mask your test says {bool(got)}, but the first token now sees different tokens, so the outputs cannot simply move")
    return verdict(True, "without a mask the outputs move with the tokens; with the causal mask they do not.")


# Exercise 4 ---------------------------------------------------------------------------

def check_multi_head_scale(your_function):
    """Exercise 4: your_function(x, W_q, W_k, W_v, W_o, n_heads) must match multi-head attention."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(6, 16))
    W = [rng.normal(size=(16, 16)) * 0.5 for _ in range(4)]
    results = {}
    for n_heads in (1, 4):
        got, problem = call(your_function, x, *W, n_heads)
        if problem is None:
            got, problem = _as_array(got, "your function")
        if problem:
            return verdict(False, problem)
        expected = multi_head_attention(x, *W, n_heads)
        if got.shape != expected.shape:
            return verdict(False, f"with x of shape {x.shape} the output should have shape {expected.shape}, got {got.shape}")
        results[n_heads] = float(np.max(np.abs(got - expected)))
    if results[4] <= 1e-10 and results[1] <= 1e-10:
        return verdict(True, "with 4 heads your output matches multi_head_attention (each head scaled by √d_head = 2.0).")
    if results[1] <= 1e-10:
        return verdict(False, f"one head matches, but with 4 heads (d_head = 4) your output is off by up to {results[4]:.2f}: which length should the scores be scaled by?")
    return verdict(False, f"even with one head your output is off by up to {results[1]:.2f}")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
