"""attention_backward: dq, dk, dv equal to torch.autograd through PyTorch's SDPA.

Float64, tolerance 1e-12 (absolute, on gradients of order 1). Masks (with rows that see
nothing), causal alignment bottom-right, n_q != n_k, explicit scale, grouped-query heads,
broadcast heads; and torch.autograd.gradcheck of the same formula written in PyTorch.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention import attention, causal_mask
from attention.backward import attention_backward

TOL = 1e-12


def sdpa_grads(d_out, q, k, v, mask=None, *, causal=False, scale=None):
    """dq, dk, dv from autograd through torch's SDPA (its math path in float64)."""
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    if causal:
        allowed = causal_mask(q.shape[-2], k.shape[-2])
        mask = allowed if mask is None else mask & allowed  # boolean masks only
    gqa = q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3] and k.shape[-3] > 1
    out = F.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=None if mask is None else torch.tensor(mask),
        scale=scale, enable_gqa=gqa)
    out.backward(torch.tensor(d_out))
    return out.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()


def draw(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in shapes]


def max_diff(a, b):
    return float(np.max(np.abs(a - b), initial=0.0))


# (q shape, k shape, d_v): one head, batch and heads, n_q < n_k, n_q > n_k, one token,
# GQA 4 query heads on 2 and on 1 key/value heads, a key/value head shared by a batch.
CASES = {
    "one-head": ((9, 8), (9, 8), 8),
    "batch-heads": ((2, 3, 11, 4), (2, 3, 11, 4), 5),
    "fewer-queries": ((2, 5, 6), (2, 13, 6), 3),
    "more-queries": ((2, 13, 6), (2, 5, 6), 3),
    "one-token": ((1, 1, 1, 4), (1, 1, 1, 4), 4),
    "gqa-4-on-2": ((2, 4, 7, 8), (2, 2, 7, 8), 8),
    "mqa-4-on-1": ((2, 4, 7, 8), (2, 1, 7, 8), 6),
    "kv-shared-by-batch": ((3, 2, 6, 4), (1, 2, 9, 4), 4),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_gradients_equal_autograd(case, causal):
    q_shape, k_shape, d_v = case
    q, k, v, d_out = draw(len(q_shape) * 10 + q_shape[-2], q_shape, k_shape,
                          k_shape[:-1] + (d_v,), q_shape[:-1] + (d_v,))  # q leads in every case
    _, *theirs = sdpa_grads(d_out, q, k, v, causal=causal)
    ours = attention_backward(d_out, q, k, v, causal=causal)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        assert max_diff(a, b) <= TOL


def test_boolean_mask_and_rows_with_nothing_to_attend_to():
    q, k, v, d_out = draw(5, (2, 3, 8, 4), (2, 3, 10, 4), (2, 3, 10, 4), (2, 3, 8, 4))
    mask = np.random.default_rng(6).random((2, 1, 8, 10)) < 0.4  # shared by the heads
    mask[0, 0, 3] = False  # query 3 of batch 0 sees no key
    _, *theirs = sdpa_grads(d_out, q, k, v, mask)
    ours = attention_backward(d_out, q, k, v, mask=mask)
    for a, b in zip(ours, theirs):
        assert max_diff(a, b) <= TOL
    dq = ours[0]
    assert np.all(dq[0, :, 3] == 0)  # nothing attended, nothing learned


def test_a_floating_mask_is_added_to_the_scores():
    q, k, v, d_out = draw(15, (2, 7, 4), (2, 9, 4), (2, 9, 4), (2, 7, 4))
    bias = -0.3 * np.abs(np.arange(7)[:, None] + 2 - np.arange(9))  # ALiBi-like (7, 9)
    _, *theirs = sdpa_grads(d_out, q, k, v, bias)
    ours = attention_backward(d_out, q, k, v, mask=bias)
    for a, b in zip(ours, theirs):
        assert max_diff(a, b) <= TOL


def test_blocked_entries_pass_no_gradient_to_their_keys():
    q, k, v, d_out = draw(7, (6, 4), (6, 4), (6, 4), (6, 4))
    mask = np.ones((6, 6), dtype=bool)
    mask[:, 2] = False  # nobody may attend to key 2
    _, dk, dv = attention_backward(d_out, q, k, v, mask=mask)
    assert np.all(dk[2] == 0) and np.all(dv[2] == 0)


def test_causal_is_bottom_right_aligned_with_a_cache():
    # 3 new queries against 8 keys: query 0 sits at position 5 and sees keys 0..5.
    q, k, v, d_out = draw(8, (3, 4), (8, 4), (8, 4), (3, 4))
    _, *theirs = sdpa_grads(d_out, q, k, v, causal_mask(3, 8))
    ours = attention_backward(d_out, q, k, v, causal=True)
    for a, b in zip(ours, theirs):
        assert max_diff(a, b) <= TOL
    # Top-left alignment (PyTorch's is_causal) would hide keys 3..7 from every query.
    assert np.all(ours[1][7] != 0)  # key 7 is seen by the last query only, and learns


@pytest.mark.parametrize("scale", [0.05, 1.0, 2.5])
def test_explicit_scale(scale):
    q, k, v, d_out = draw(9, (2, 7, 16), (2, 9, 16), (2, 9, 3), (2, 7, 3))
    _, *theirs = sdpa_grads(d_out, q, k, v, causal=True, scale=scale)
    ours = attention_backward(d_out, q, k, v, causal=True, scale=scale)
    for a, b in zip(ours, theirs):
        assert max_diff(a, b) <= TOL


def test_gqa_shared_heads_receive_the_sum_of_their_groups_gradients():
    q, k, v, d_out = draw(10, (1, 4, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4), (1, 4, 5, 4))
    _, dk, dv = attention_backward(d_out, q, k, v, causal=True)
    k_rep, v_rep = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)  # (1, 4, 5, 4)
    _, dk_rep, dv_rep = attention_backward(d_out, q, k_rep, v_rep, causal=True)
    assert max_diff(dk, dk_rep.reshape(1, 2, 2, 5, 4).sum(axis=2)) <= TOL
    assert max_diff(dv, dv_rep.reshape(1, 2, 2, 5, 4).sum(axis=2)) <= TOL


def test_kept_weights_give_the_same_gradients_as_recomputed_ones():
    q, k, v, d_out = draw(11, (2, 6, 4), (2, 6, 4), (2, 6, 4), (2, 6, 4))
    _, weights = attention(q, k, v, causal=True, return_weights=True)
    kept = attention_backward(d_out, q, k, v, causal=True, weights=weights)
    recomputed = attention_backward(d_out, q, k, v, causal=True)
    for a, b in zip(kept, recomputed):
        assert max_diff(a, b) <= TOL


def test_float32_stays_float32_and_agrees():
    q, k, v, d_out = draw(12, (2, 9, 8), (2, 9, 8), (2, 9, 8), (2, 9, 8))
    ours32 = attention_backward(*(a.astype(np.float32) for a in (d_out, q, k, v)), causal=True)
    ours64 = attention_backward(d_out, q, k, v, causal=True)
    for a, b in zip(ours32, ours64):
        assert a.dtype == np.float32 and max_diff(a, b) <= 1e-5


def test_the_same_formula_in_pytorch_passes_gradcheck():
    """Our formula, written with torch operations, checked by autograd's own finite
    differences: evidence independent of SDPA's backward."""

    class HandAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            scale = q.shape[-1] ** -0.5
            s = q @ k.transpose(-1, -2) * scale
            s = s.masked_fill(~torch.tensor(causal_mask(q.shape[-2], k.shape[-2])), -torch.inf)
            p = torch.softmax(s, dim=-1)
            ctx.save_for_backward(q, k, v, p)
            return p @ v

        @staticmethod
        def backward(ctx, d_out):
            q, k, v, p = ctx.saved_tensors
            dq, dk, dv = attention_backward(d_out.numpy(), q.detach().numpy(), k.detach().numpy(),
                                            v.detach().numpy(), causal=True, weights=p.numpy())
            return torch.tensor(dq), torch.tensor(dk), torch.tensor(dv)

    q, k, v = (torch.tensor(a, requires_grad=True) for a in draw(13, (2, 4, 3), (2, 6, 3), (2, 6, 2)))
    assert torch.autograd.gradcheck(HandAttention.apply, (q, k, v), eps=1e-6, atol=1e-8)


def test_shape_errors_name_the_shapes():
    q, k, v = draw(14, (2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4))
    with pytest.raises(ValueError, match=r"\(2, 3, 5, 4\).*\(2, 3, 5, 9\)"):
        attention_backward(np.zeros((2, 3, 5, 9)), q, k, v)
    with pytest.raises(ValueError, match="multiple"):
        attention_backward(np.zeros((2, 3, 5, 4)), q, k[:, :2], v[:, :2])
    with pytest.raises(TypeError, match="boolean"):
        attention_backward(np.zeros((2, 3, 5, 4)), q, k, v, mask=np.ones((5, 5), dtype=int))


# --- Issue 24: the kept weights, and d_k = 0 ---

def test_kept_weights_of_the_wrong_shape_are_refused():
    q, k, v = np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 4))
    with pytest.raises(ValueError, match=r"weights must be the forward's P of shape \(2, 3, 5\)"):
        attention_backward(np.ones((2, 3, 4)), q, k, v, weights=np.ones((2, 5, 3)))


def test_d_k_zero_gives_the_gradients_of_constant_scores():
    q, k, v = np.ones((3, 0)), np.ones((4, 0)), np.arange(8.0).reshape(4, 2)
    dq, dk, dv = attention_backward(np.ones((3, 2)), q, k, v)
    assert dq.shape == (3, 0) and dk.shape == (4, 0)
    np.testing.assert_allclose(dv, np.full((4, 2), 3 / 4))
