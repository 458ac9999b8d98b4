"""Self-checks for the practice exercises of chapter 9 (latent attention, soft-capping,
the mixture of experts).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.families`` and
``attention.families.softcap_backward``.
"""

import numpy as np

from attention.families.softcap_backward import capped_softmax_backward
from attention.backward.softmax import softmax_backward
from attention.families.costs import latent_cache_bytes
from attention.families.load_balance import load_balancing_loss
from attention.families.routing import softmax_top_k, top_k
from attention.families.mla import absorb_key
from attention.families.softcap import softcap
from attention.model import ModelConfig
from attention.practice.trials import (Trial, first_failure, fresh_rng, judge, redrawable,
                                       shape_text)
from attention.practice.verdict import call, guard_checks, num, verdict
from attention.softmax import softmax


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
@redrawable
def _absorb_trial(rng, batch, H, n, d_nope, d_v, r, dtype=np.float64):
    q = rng.normal(size=(batch, H, n, d_nope)).astype(dtype)
    W = rng.normal(size=(H * (d_nope + d_v), r)).astype(dtype)
    return Trial(f"q_nope {shape_text(q.shape)} and kv_b_proj.weight "
                 f"{shape_text(W.shape)} (d_v = {d_v}) in {np.dtype(dtype).name}",
                 (q, W, d_v), {}, np.dtype(dtype))


def absorb_packed_reference(q_nope, kv_b_weight, d_v, *, rows=None):
    """The package's absorb_key on W_uk unpacked as ``deepseek_v3_weights`` unpacks
    it; ``rows`` picks other rows of each head, to name a mistake."""
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W = kv_b_weight.T.reshape(kv_b_weight.shape[1], H, d_nope + d_v)  # (r, H, ·)
    W_uk = W[..., :d_nope] if rows is None else W[..., rows]
    return absorb_key(q_nope, W_uk.reshape(W.shape[0], -1))


def check_absorb_key_packed(your_function):
    """Exercise 1: your_function(q_nope, kv_b_weight, d_v) = q_nope[h] W_uk[h]ᵀ for
    every head h, W_uk read from Hugging Face's packed kv_b_proj weight."""
    rng = fresh_rng()
    sizes = [(2, 3, 4, 5, 3, 7), (1, 4, 3, 2, 5, 6), (3, 2, 5, 3, 3, 4)]
    trials = [_absorb_trial(rng, *s) for s in sizes]
    trials.append(_absorb_trial(rng, 2, 5, 2, 4, 2, 3, np.float32))

    def keys_first(q, W, d_v):  # the first H * d_nope rows, as if keys came first
        H, d = q.shape[-3], q.shape[-1]
        return q @ W[:H * d].reshape(H, d, -1)

    hints = [
        (keys_first, "the key rows were read as one block for all heads; the rows "
                     "go for each head in turn, its d_nope key rows then its d_v "
                     "value rows"),
        (lambda q, W, d_v: absorb_packed_reference(q, W, d_v, rows=slice(
            d_v, None)), "those are the last d_nope rows of each head; its d_nope "
                         "key rows come first"),
        (lambda q, W, d_v: np.broadcast_to(
            absorb_packed_reference(q, W, d_v).sum(axis=-3, keepdims=True),
            q.shape[:-1] + (W.shape[-1],)),
         "the heads were summed; each head keeps its own latent query"),
        (lambda q, W, d_v: absorb_packed_reference(q, W, d_v) / np.sqrt(q.shape[-1]),
         "divided by sqrt(d_nope); no scale here: the softmax scale is applied "
         "to the scores, once"),
    ]
    return judge(your_function, trials, absorb_packed_reference,
                 what="absorb_key_packed", hints=hints,
                 success="your latent queries equal q_nope[h] W_uk[h]ᵀ, head by head, "
                         "with W_uk unpacked as the package unpacks DeepSeek-V3.")


# Exercise 2 ---------------------------------------------------------------------------

def _mla_config(rng):
    H = int(rng.integers(2, 9))
    return ModelConfig(arch="deepseek_v3", vocab_size=11, d_model=16,
                       n_layers=int(rng.integers(2, 62)), n_heads=H,
                       kv_lora_rank=int(rng.integers(8, 600)),
                       qk_rope_head_dim=2 * int(rng.integers(1, 40)),
                       qk_nope_head_dim=int(rng.integers(1, 200)),
                       v_head_dim=int(rng.integers(1, 200)))


def check_latent_cache_bytes(your_function):
    """Exercise 2: your_function(config, n_tokens, bytes_per_value) = MLA's cache bytes."""
    rng = fresh_rng()
    # DeepSeek-V3's own sizes first (a verdict the page can show), then random ones.
    v3 = ModelConfig(arch="deepseek_v3", vocab_size=11, d_model=16, n_layers=61,
                     n_heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
                     qk_nope_head_dim=128, v_head_dim=128)
    configs = [(v3, 4096, 2)]
    configs += [(_mla_config(rng), int(rng.integers(1, 5000)), b) for b in (1, 4)]
    # a million tokens (past int32) and bytes_per_value left to its default (None: 2)
    configs += [(v3, 1_000_000, 2), (_mla_config(rng), 7, None)]
    for config, n, b in configs:
        want = latent_cache_bytes(config, n, bytes_per_value=b or 2)
        got, problem = call(your_function, config, n, *(() if b is None else (b,)))
        where = (f"n_layers={config.n_layers}, kv_lora_rank={config.kv_lora_rank}, "
                 f"qk_rope_head_dim={config.qk_rope_head_dim}, n_heads={config.n_heads}, "
                 f"{n:,} tokens, " + (f"{b} bytes per value" if b else
                                      "bytes_per_value left to its default 2"))
        b = b or 2
        if problem is None and (isinstance(got, bool) or not isinstance(got, (int, np.integer))):
            problem = f"return a whole number of bytes, got {got!r}"
        if problem is None and got != want:
            c = config
            known = {
                c.n_layers * c.kv_lora_rank * n * b:
                    "only the latent; the shared rotated key (qk_rope_head_dim) is cached "
                    "too",
                2 * want: "twice too much: MLA caches one latent, not a key and a value",
                c.n_layers * (c.kv_lora_rank + c.n_heads * c.qk_rope_head_dim) * n * b:
                    "the rotated key counted per head; it is shared by every head",
            }
            problem = known.get(int(got), f"got {int(got):,}, expected {want:,}")
        if problem is not None:
            return verdict(False, f"for {where}: {problem}")
    return verdict(True, f"on DeepSeek-V3's sizes (4,096 and 1,000,000 tokens), 3 random "
                         "configurations (one with the default 2 bytes per value) "
                         "your count equals n_layers * (kv_lora_rank + "
                         "qk_rope_head_dim) values per token.")


# Exercise 3 ---------------------------------------------------------------------------

@redrawable
def _capped_trial(rng, shape, cap, dtype=np.float64):
    s = (rng.normal(size=shape) * 2 * cap).astype(dtype)  # many scores past the cap
    g = rng.normal(size=shape).astype(dtype)
    return Trial(f"g and s of shape {shape_text(shape)} with cap {cap:g} in "
                 f"{np.dtype(dtype).name}", (g, s, cap), {}, np.dtype(dtype))


def _softmax_only(g, s, cap):
    return softmax_backward(g, softmax(softcap(s, cap), axis=-1))


def check_capped_softmax_grad(your_function):
    """Exercise 3: your_function(g, s, cap) = ∂ℒ/∂s through a soft-capped softmax."""
    rng = fresh_rng()
    trials = [_capped_trial(rng, (3, 7), 2.0), _capped_trial(rng, (2, 3, 5), 0.5),
              _capped_trial(rng, (4, 6), 30.0, np.float32), _capped_trial(rng, (9,), 5.0)]
    t = lambda s, cap: np.tanh(s / cap)  # noqa: E731
    hints = [
        (_softmax_only, "that is the softmax's backward alone; multiply by the cap's "
         "derivative, 1 - tanh²(s / cap)"),
        (lambda g, s, cap: _softmax_only(g, s, cap) * (1 - t(s, cap)),
         "the cap's derivative is 1 - tanh² of s / cap, squared, not 1 - tanh"),
        (lambda g, s, cap: softmax_backward(g, softmax(s, axis=-1)) * (1 - t(s, cap) ** 2),
         "p must be the softmax of the capped scores, cap * tanh(s / cap)"),
        (lambda g, s, cap: capped_softmax_backward(g, s, cap) * cap,
         "no factor cap: d/ds cap * tanh(s / cap) = 1 - tanh²(s / cap)"),
    ]
    return judge(your_function, trials, capped_softmax_backward, what="capped_softmax_grad",
                 hints=hints, success="your gradient equals the capped softmax's backward.")


# Exercise 4 ---------------------------------------------------------------------------

def _gates(chosen, weights, n_experts):
    """(..., k) choices and weights -> gates (..., n_experts), zero elsewhere."""
    gates = np.zeros(chosen.shape[:-1] + (n_experts,), dtype=weights.dtype)
    np.put_along_axis(gates, chosen, weights, axis=-1)
    return gates


def _router_gates(logits, k):
    return _gates(*softmax_top_k(logits, k), logits.shape[-1])


@redrawable
def _logits_trial(rng, shape, k, dtype=np.float64):
    z = (rng.normal(size=shape) * 2).astype(dtype)
    return Trial(f"logits of shape {shape_text(shape)} with k={k} in "
                 f"{np.dtype(dtype).name}", (z, k), {}, np.dtype(dtype))


def check_top_k_router(your_function):
    """Exercise 4: your_function(logits, k) = each token's gates, softmax, top k,
    renormalised, zero off the chosen experts."""
    rng = fresh_rng()
    trials = [_logits_trial(rng, (5, 8), 2), _logits_trial(rng, (3, 4, 6), 3),
              _logits_trial(rng, (6, 16), 4, np.float32),
              _logits_trial(rng, (7, 5), 5)]

    def gates_of(p, chosen, renormalise=True):
        w = np.take_along_axis(p, chosen, axis=-1)
        if renormalise:
            w = w / w.sum(axis=-1, keepdims=True)
        return _gates(chosen, w, p.shape[-1])

    def p_of(z, axis=-1):
        return softmax(np.asarray(z, dtype=np.float64), axis=axis)

    hints = [
        (lambda z, k: gates_of(p_of(z), top_k(z, k), renormalise=False),
         "the k kept probabilities are not renormalised: divide them by their sum, so "
         "each token's gates sum to one"),
        (lambda z, k: p_of(z),
         "every expert got a weight; only the k chosen experts get one, the others are "
         "zero"),
        (lambda z, k: gates_of(p_of(z), top_k(-z, k)),
         "kept the k least probable experts; a router keeps the k most probable"),
        (lambda z, k: gates_of(p_of(z, axis=0), top_k(p_of(z, axis=0), k)),
         "the softmax ran over the tokens (axis 0); it runs over each token's experts, "
         "the last axis"),
    ]
    return judge(your_function, trials, _router_gates, what="top_k_router", hints=hints,
                 success="your gates are the top k softmax probabilities, renormalised.")


# Exercise 5 ---------------------------------------------------------------------------

@redrawable
@redrawable
def _padded_router_trial(rng, shape, k, dtype=np.float64, *, idle=False, loud=False):
    """Uneven load over a padded batch: each sequence real up to a random length
    (one whole sequence, one of a single token); the pads' logits are wild (all on
    the last expert) so that counting them shows. ``idle``: the last expert 20 below
    the rest; ``loud``: logits spread over ±1000."""
    batch, seq, n_experts = shape
    z = rng.normal(size=shape) + np.linspace(2.0, 0.0, n_experts)
    if loud:
        z = z * 400.0
    if idle:
        z[..., -1] -= 20.0
    lengths = rng.integers(1, seq + 1, size=batch)
    lengths[0], lengths[-1] = seq, 1
    mask = np.arange(seq)[None, :] < lengths[:, None]  # (batch, seq)
    z[~mask] = 0.0
    z[..., -1][~mask] = 50.0  # a pad votes hard for the last expert
    return Trial(f"router logits of shape {shape_text(shape)} with k={k}, padded to "
                 f"random lengths, in {np.dtype(dtype).name}"
                 + (", the last expert never chosen by a real token" if idle else "")
                 + (", logits spread over ±1000" if loud else ""),
                 (z.astype(dtype), k, mask), {}, np.dtype(dtype))


def masked_reference(router_logits, k, mask):
    """The package's load-balancing loss on the real tokens (Hugging Face's
    load_balancing_loss_func with an attention mask, tests/practice/test_ch09.py)."""
    return load_balancing_loss(np.asarray(router_logits, np.float64)[mask], k)


def _loss_parts(z, k):
    """(n_experts, counts per expert of the top k, mean probabilities)."""
    p = softmax(np.asarray(z, dtype=np.float64), axis=-1)
    E = p.shape[-1]
    counts = np.bincount(top_k(p, k).ravel(), minlength=E)
    return E, counts, p.mean(axis=0)


def check_masked_balancing_loss(your_function):
    """Exercise 5: your_function(router_logits, k, mask) = n_experts * sum_e f_e P_e
    over the real tokens."""
    rng = fresh_rng()
    trials = [_padded_router_trial(rng, (4, 16, 8), 2),
              _padded_router_trial(rng, (3, 30, 16), 4),
              _padded_router_trial(rng, (5, 10, 6), 2, np.float32),
              _padded_router_trial(rng, (3, 11, 5), 1),
              _padded_router_trial(rng, (4, 10, 6), 2, idle=True),
              _padded_router_trial(rng, (3, 12, 6), 2, loud=True)]

    def every_position(z, k, mask):
        E, counts, _ = _loss_parts(z[mask], k)
        p = softmax(np.asarray(z[mask], np.float64), axis=-1)
        return E * np.sum(counts / mask.size * p.sum(axis=0) / mask.size)

    def p_over_all(z, k, mask):
        E, counts, _ = _loss_parts(z[mask], k)
        flat = z.reshape(-1, z.shape[-1])
        return E * np.sum(counts / mask.sum() * _loss_parts(flat, k)[2])

    hints = [
        (lambda z, k, mask: load_balancing_loss(z.reshape(-1, z.shape[-1]), k),
         "the padding was counted; f and P are means over the real tokens only"),
        (p_over_all, "f counts the real tokens, but P_e too is a mean over the real "
                     "tokens, not every position"),
        (every_position, "the sums over the real tokens were divided by every "
                         "position, pads included; divide by the number of real "
                         "tokens"),
        (lambda z, k, mask: masked_reference(z, k, mask) / z.shape[-1],
         "the sum is not multiplied by n_experts, which makes an even router's loss "
         "k whatever the number of experts"),
        (lambda z, k, mask: masked_reference(z, k, mask) / k,
         "f was divided by tokens * k; f_e = assignments to e / tokens, so the f sum "
         "to k")]

    def compare(result, expected, trial):
        try:
            got = float(result)
        except (TypeError, ValueError):
            return f"return one number, got {type(result).__name__}"
        rtol = 2e-4 if trial.dtype == np.float32 else 1e-9
        if np.isclose(got, expected, rtol=rtol, atol=rtol):
            return None
        if not np.isfinite(got):
            return (f"the loss is {got}: an exponential overflowed at logits near "
                    "1000; subtract each token's largest logit before exp")
        for wrong, message in hints:
            if np.isclose(got, wrong(*trial.args), rtol=rtol, atol=rtol):
                return message
        return f"the loss is {num(expected)}, you gave {num(got)}"

    problem = first_failure(your_function, trials, masked_reference,
                            what="masked_balancing_loss", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} padded batches (k from 1 to 4, 5 to 16 "
                         "experts, an idle expert, logits spread over ±1000, float32; "
                         "the pads voting hard for one expert) your loss equals "
                         "n_experts * sum_e f_e P_e over the real tokens.")


# Exercise 6 ---------------------------------------------------------------------------

def served_positions(indices, n_experts, capacity, *, by_token=False, counts_for=None,
                     drop=True):
    """The reference, one choice at a time: slot by slot (``by_token``: token by
    token, the mistake), each choice's place in its expert's buffer, -1 once the
    buffer holds ``capacity``. ``counts_for`` and ``drop`` name other mistakes."""
    tokens, k = indices.shape
    served = np.zeros(n_experts, dtype=np.int64)
    positions = np.empty((tokens, k), dtype=np.int64)
    pairs = ([(t, s) for t in range(tokens) for s in range(k)] if by_token
             else [(t, s) for s in range(k) for t in range(tokens)])
    for t, s in pairs:
        e = indices[t, s] if counts_for is None else counts_for
        place = served[e]
        served[e] += 1
        positions[t, s] = place if place < capacity or not drop else -1
    return positions


@redrawable
def _dispatch_trial(rng, tokens, k, n_experts, capacity, *, skewed=False):
    """Each token's k different experts; ``skewed``: expert 0 chosen by every token
    (first or second), so its buffer overflows whatever the draw."""
    indices = np.argsort(rng.random((tokens, n_experts)), axis=-1)[:, :k]
    if skewed:
        has = (indices == 0).any(axis=-1)
        indices[~has, int(rng.integers(k))] = 0
    label = (f"{tokens} tokens choosing {k} of {n_experts} experts, capacity "
             f"{capacity}")
    label += ", every token choosing expert 0" if skewed else ""
    return Trial(label, (indices, n_experts, capacity))


def check_dispatch(your_function):
    """Exercise 6: your_function(indices, n_experts, capacity) = each choice's place
    in its expert's buffer, served slot by slot, -1 past the capacity."""
    rng = fresh_rng()
    trials = [_dispatch_trial(rng, 6, 2, 4, 2, skewed=True),
              _dispatch_trial(rng, 8, 1, 3, 2, skewed=True),
              _dispatch_trial(rng, 5, 3, 3, 5),             # room for every choice
              _dispatch_trial(rng, 10, 2, 5, 1, skewed=True),
              _dispatch_trial(rng, 7, 2, 4, 0),             # no room at all
              _dispatch_trial(rng, 300, 2, 8, 60, skewed=True),
              _dispatch_trial(rng, int(rng.integers(2, 40)), 2, int(rng.integers(2, 9)),
                              int(rng.integers(0, 12)), skewed=True)]
    hints = [
        (lambda i, n, c: served_positions(i, n, c, by_token=True),
         "you served each token's choices together; serve every token's first choice "
         "before any second choice"),
        (lambda i, n, c: served_positions(i, n, c + 1),
         "each expert took capacity + 1 choices; positions 0 to capacity - 1 fill its "
         "buffer"),
        (lambda i, n, c: served_positions(i, n, c, by_token=True, drop=False),
         "no choice was dropped (a choice whose place reaches the capacity gets -1), "
         "and each token's choices were served together, not slot by slot"),
        (lambda i, n, c: served_positions(i, n, c, drop=False),
         "no choice was dropped: a choice whose place reaches the capacity gets -1"),
        (lambda i, n, c: served_positions(i, n, c, counts_for=0),
         "you counted the choices of all experts together; each expert's buffer "
         "counts only its own"),
    ]
    problem = first_failure(your_function, trials, served_positions, what="dispatch",
                            hints=hints)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random inputs (1 to 3 choices a token, 3 to "
                         "8 experts, 5 to 300 tokens, capacities 0, 1, tight and roomy, "
                         "an expert every token chooses) your positions are each "
                         "choice's place in its expert's buffer, served slot by slot, "
                         "-1 past the capacity.")


guard_checks(globals())
