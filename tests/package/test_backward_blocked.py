"""blocked_attention_backward: equal to the plain backward and to autograd, in O(tile) memory.

Float64 tolerance 1e-12 (absolute; gradients of order 1); float32 1e-5. The per-row
log-sum-exp comes from the blocked forward (``blocked_attention(..., return_lse=True)``).
"""

import math
import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention import attention, blocked_attention, causal_mask
from attention.backward import attention_backward, blocked_attention_backward
from attention.backward.blocked import query_tiles

TOL = {np.float64: 1e-12, np.float32: 1e-5}


def forward(q, k, v, mask=None, *, causal=False, scale=None):
    """Output and per-row log-sum-exp from the blocked forward (GQA by repeating k, v)."""
    group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 and k.ndim >= 3 and k.shape[-3] > 1 else 1
    k, v = (np.repeat(a, group, axis=-3) for a in (k, v)) if group > 1 else (k, v)
    return blocked_attention(q, k, v, mask=mask, causal=causal, scale=scale, return_lse=True,
                             block_q=8, block_k=8)


def draw(seed, dtype, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(dtype) for s in shapes]


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0.0))


@pytest.fixture(params=[np.float64, np.float32], ids=["float64", "float32"])
def dtype(request):
    return request.param


# (q shape, k shape, d_v, block_q, block_k): ragged tiles both ways, n_q != n_k, one token,
# tiles larger than the input, GQA and a key/value head shared by the batch.
SHAPES = {
    "ragged": ((37, 8), (53, 8), 5, 8, 16),
    "fewer-queries": ((2, 3, 9, 6), (2, 3, 40, 6), 6, 4, 16),
    "more-queries": ((2, 40, 6), (2, 13, 6), 6, 16, 4),
    "one-token": ((1, 4), (1, 4), 4, 8, 8),
    "big-tiles": ((20, 8), (20, 8), 8, 64, 64),
    "gqa": ((2, 4, 17, 8), (2, 2, 17, 8), 8, 5, 7),
    "kv-shared-by-batch": ((3, 2, 12, 4), (1, 2, 12, 4), 4, 4, 4),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("case", SHAPES.values(), ids=SHAPES.keys())
def test_equals_the_plain_backward(case, causal, dtype):
    q_shape, k_shape, d_v, bq, bk = case
    q, k, v, d_out = draw(q_shape[-2], dtype, q_shape, k_shape, k_shape[:-1] + (d_v,),
                          q_shape[:-1] + (d_v,))
    out, lse = forward(q, k, v, causal=causal)
    ours = blocked_attention_backward(d_out, q, k, v, out, lse, causal=causal,
                                      block_q=bq, block_k=bk)
    plain = attention_backward(d_out, q, k, v, causal=causal)
    for a, b in zip(ours, plain):
        assert a.dtype == dtype and a.shape == b.shape
        assert max_diff(a, b) <= TOL[dtype]


def test_equals_autograd_with_a_mask_scale_and_empty_rows():
    q, k, v, d_out = draw(3, np.float64, (2, 3, 21, 8), (2, 3, 29, 8), (2, 3, 29, 5), (2, 3, 21, 5))
    mask = np.random.default_rng(4).random((2, 1, 21, 29)) < 0.3
    mask[0, 0, 4] = False  # query 4 of batch 0 sees nothing
    scale = 0.7
    allowed = mask & causal_mask(21, 29)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(allowed), scale=scale)
    ref.backward(torch.tensor(d_out))
    out, lse = forward(q, k, v, mask, causal=True, scale=scale)
    assert np.isneginf(lse[0, :, 4]).all()  # nothing to attend to
    assert max_diff(out, ref.detach().numpy()) <= 1e-12
    ours = blocked_attention_backward(d_out, q, k, v, out, lse, mask=mask, causal=True, scale=scale,
                                      block_q=4, block_k=6)
    for a, b in zip(ours, (tq.grad, tk.grad, tv.grad)):
        assert max_diff(a, b.numpy()) <= 1e-12
    assert np.all(ours[0][0, :, 4] == 0)


def test_a_floating_mask_is_a_bias_added_to_the_scores():
    q, k, v, d_out = draw(9, np.float64, (2, 2, 12, 4), (2, 2, 15, 4), (2, 2, 15, 4), (2, 2, 12, 4))
    slopes = np.array([0.5, 0.25])[:, None, None]  # ALiBi-like, one slope per head
    bias = -slopes * np.abs(np.arange(12)[:, None] + 3 - np.arange(15))  # (2, 12, 15)
    bias[0, 5, :] = -np.inf  # head 0, query 5: blocked everywhere
    out, lse = forward(q, k, v, bias, causal=True)
    ours = blocked_attention_backward(d_out, q, k, v, out, lse, mask=bias, causal=True,
                                      block_q=5, block_k=4)
    plain = attention_backward(d_out, q, k, v, mask=bias, causal=True)
    for a, b in zip(ours, plain):
        assert max_diff(a, b) <= 1e-12


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_threads_give_the_same_gradients(workers):
    q, k, v, d_out = draw(5, np.float64, (2, 4, 30, 8), (2, 2, 30, 8), (2, 2, 30, 8), (2, 4, 30, 8))
    out, lse = forward(q, k, v, causal=True)
    one = blocked_attention_backward(d_out, q, k, v, out, lse, causal=True, block_q=8, block_k=8,
                                     workers=1)
    many = blocked_attention_backward(d_out, q, k, v, out, lse, causal=True, block_q=8, block_k=8,
                                      workers=workers)
    for a, b in zip(one, many):
        assert max_diff(a, b) <= 1e-13


def test_rowsum_do_o_equals_rowsum_dp_p():
    q, k, v, d_out = draw(6, np.float64, (7, 4), (9, 4), (9, 3), (7, 3))
    out, p = attention(q, k, v, return_weights=True)
    d_p = d_out @ v.T  # (7, 9)
    assert max_diff(np.sum(d_out * out, axis=-1), np.sum(d_p * p, axis=-1)) <= 1e-13


@pytest.mark.parametrize("n_q, n_k, block_q, block_k", [(10, 10, 3, 4), (5, 12, 2, 5), (12, 5, 4, 2)])
def test_query_tiles_skip_exactly_the_tiles_above_the_diagonal(n_q, n_k, block_q, block_k):
    allowed = causal_mask(n_q, n_k)
    for k0 in range(0, n_k, block_k):
        k1 = min(k0 + block_k, n_k)
        tiles = query_tiles(k0, k1, n_q, n_k, block_q, causal=True)
        covered = set()
        for q0, q1, on_diagonal in tiles:
            block = allowed[q0:q1, k0:k1]
            assert block.any(axis=1).all()  # every visited query sees part of the tile
            assert on_diagonal == (not block.all())  # masked only where needed
            covered |= set(range(q0, q1))
        seeing = set(np.flatnonzero(allowed[:, k0:k1].any(axis=1)))
        assert covered == seeing  # no query that sees the tile is skipped


def test_extra_memory_at_8192_is_a_few_tiles_not_n_squared():
    """n = 8,192, one head, d = 64, float32, causal. The plain backward's P, dP and dS are
    256 MiB each; the recomputing backward must stay under 16 MiB in all, gradients
    included (dq, dk and dv are 2 MiB each; a 512 x 256 tile is 0.5 MiB)."""
    n, d = 8192, 64
    rng = np.random.default_rng(7)
    q, k, v, d_out, out = (rng.normal(size=(n, d)).astype(np.float32) for _ in range(5))
    lse = (rng.normal(size=n) + 8.0).astype(np.float32)  # any values: memory does not depend on them
    tracemalloc.start()
    try:
        blocked_attention_backward(d_out, q, k, v, out, lse, causal=True, workers=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 16 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_bad_lse_shape_is_named():
    q, k, v, d_out = draw(8, np.float64, (5, 4), (5, 4), (5, 4), (5, 4))
    with pytest.raises(ValueError, match=r"\(5,\).*\(4,\)"):
        blocked_attention_backward(d_out, q, k, v, d_out, np.zeros(4))
