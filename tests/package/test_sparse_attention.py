"""Chapter 12's sparse-attention pieces on their own: the indexer's scores against the
formula in PyTorch, the top-k choice and its ties, the gathered attention against the
masked definition, and the indexer's KL loss and gradients against autograd (float64,
<= 1e-12 relative)."""

import numpy as np
import pytest
import torch

from attention.masks import causal_mask
from attention.sparse.dsa import masked_sparse_attention, sparse_attention
from attention.sparse.indexer import Indexer, index_scores, top_k_keys
from attention.sparse.indexer_loss import (index_scores_backward,
                                           indexer_kl_loss)

TOL = 1e-12


def indexer_draw(seed=0, batch=2, n=9, heads=3, d=4):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(batch, n, heads, d)),
            rng.normal(size=(batch, n, heads)), rng.normal(size=(batch, n, d)))


def torch_scores(q, w, k):
    """Hugging Face's formula: ReLU(q kᵀ / √d), weighted, summed over heads."""
    logits = torch.matmul(q.transpose(1, 2), k.transpose(-1, -2).unsqueeze(1))
    logits = torch.relu(logits * q.shape[-1] ** -0.5)     # (b, h, n_q, n_k)
    return torch.matmul(w.unsqueeze(-2), logits.transpose(1, 2)).squeeze(-2)


def test_index_scores_equal_the_formula_in_pytorch():
    q, w, k = indexer_draw()
    theirs = torch_scores(*map(torch.from_numpy, (q, w, k))).numpy()
    assert np.abs(index_scores(q, w, k) - theirs).max() <= TOL * np.abs(
        theirs).max()


def test_ties_go_to_the_earlier_key():
    scores = np.array([[1.0, 3.0, 2.0, 3.0, 2.0]])
    indices, kept = top_k_keys(scores, 3)
    assert indices.tolist() == [[1, 3, 2]] and kept.all()


def test_masked_keys_are_never_read_and_short_rows_say_so():
    scores = np.array([[5.0, 1.0, 4.0]])
    indices, kept = top_k_keys(scores, 3, np.array([[True, False, True]]))
    assert indices.tolist() == [[0, 2, 1]]
    assert kept.tolist() == [[True, True, False]]


def test_gathered_attention_equals_the_masked_definition():
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(2, 3, 11, 5)) for _ in range(3))
    scores = rng.normal(size=(2, 11, 11))
    indices, kept = top_k_keys(scores, 4, causal_mask(11, 11))
    fast, w_fast = sparse_attention(q, k, v, indices, kept)
    slow, w_slow = masked_sparse_attention(q, k, v, indices, kept)
    assert np.abs(fast - slow).max() <= TOL
    assert np.allclose(np.take_along_axis(w_slow, indices[:, None], -1)
                       * kept[:, None], w_fast, rtol=0, atol=TOL)


@pytest.mark.parametrize("kw, match", [
    (dict(indices=np.zeros((2, 11, 4), np.int64) + 11), "indices must lie"),
    (dict(kept=np.ones((2, 11, 3), bool)), "kept"),
])
def test_bad_selections_are_named(kw, match):
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(2, 3, 11, 5)) for _ in range(3))
    args = dict(indices=np.zeros((2, 11, 4), np.int64),
                kept=np.ones((2, 11, 4), bool)) | kw
    with pytest.raises(ValueError, match=match):
        sparse_attention(q, k, v, **args)


def test_an_indexer_needs_positive_sizes():
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        Indexer(n_heads=4, head_dim=8, top_k=0)


def test_the_kl_loss_and_its_gradients_equal_autograd():
    q, w, k = indexer_draw(seed=2)
    rng = np.random.default_rng(3)
    weights = rng.dirichlet(np.ones(9), size=(2, 4, 9))   # (b, H, n_q, n_k)
    allowed = causal_mask(9, 9)[None]
    scores = index_scores(q, w, k)
    loss, d_scores = indexer_kl_loss(weights, scores, allowed)
    d_q, d_w, d_k = index_scores_backward(q, w, k, d_scores)

    tq, tw, tk = (torch.tensor(a, requires_grad=True) for a in (q, w, k))
    s = torch_scores(tq, tw, tk).masked_fill(~torch.from_numpy(allowed),
                                             float("-inf"))
    p = torch.from_numpy(weights).sum(1) * torch.from_numpy(allowed)
    p = p / p.sum(-1, keepdim=True)
    log_q = torch.log_softmax(s, dim=-1)
    kl = torch.where(p > 0, p * (torch.log(p.clamp_min(1e-300)) - log_q),
                     torch.zeros(()))
    kl.sum().backward()
    assert abs(loss - kl.sum().item()) <= TOL * abs(loss)
    for mine, theirs in ((d_q, tq.grad), (d_w, tw.grad), (d_k, tk.grad)):
        assert np.abs(mine - theirs.numpy()).max() <= TOL * np.abs(
            theirs.numpy()).max()


def test_the_loss_is_zero_when_the_indexer_agrees():
    scores = np.log(np.array([[[0.5, 0.3, 0.2]]]))
    weights = np.array([[[[0.5, 0.3, 0.2]], [[0.5, 0.3, 0.2]]]])  # 2 heads
    loss, grad = indexer_kl_loss(weights, scores, np.ones((1, 1, 3), bool))
    assert abs(loss) <= TOL and np.abs(grad).max() <= TOL


def test_grouped_key_heads_are_gathered_once_for_their_queries():
    rng = np.random.default_rng(4)
    q = rng.normal(size=(2, 6, 5, 4))                       # 6 query heads
    k, v = rng.normal(size=(2, 2, 9, 4)), rng.normal(size=(2, 2, 9, 3))
    indices, kept = top_k_keys(rng.normal(size=(2, 5, 9)), 3,
                               causal_mask(5, 9))
    grouped, _ = sparse_attention(q, k, v, indices, kept)
    repeated, _ = sparse_attention(q, np.repeat(k, 3, axis=1),
                                   np.repeat(v, 3, axis=1), indices, kept)
    slow, _ = masked_sparse_attention(q, np.repeat(k, 3, axis=1),
                                      np.repeat(v, 3, axis=1), indices, kept)
    assert np.abs(grouped - repeated).max() <= TOL
    assert np.abs(grouped - slow).max() <= TOL


@pytest.mark.parametrize("call, match", [
    (lambda: top_k_keys(np.zeros((3, 4)), 2, np.ones((2, 4), bool)),
     r"allowed of shape \(2, 4\) does not broadcast"),
    (lambda: top_k_keys(np.zeros((3, 4)), 2, np.ones((3, 4))),
     "allowed must be booleans"),
    (lambda: index_scores_backward(*indexer_draw(), np.zeros((2, 9, 8))),
     r"d_scores \(2, 9, 8\)"),
    (lambda: indexer_kl_loss(np.ones((1, 2, 3, 3)), np.zeros((1, 3, 3)),
                             np.ones((2, 3), bool)),
     r"allowed of shape \(2, 3\) does not broadcast"),
])
def test_bad_indexer_inputs_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
