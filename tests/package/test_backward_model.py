"""The whole model's backward pass: every parameter's gradient equals autograd's through
Hugging Face's GPT2LMHeadModel and LlamaForCausalLM with the same weights (tiny random
configurations, float64, <= 1e-10 absolute; the loss <= 1e-12), and finite differences
through our own forward agree on sampled entries."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.backward import gradient_check
from attention.backward.model import embedding_backward, loss_and_grads, model_backward
from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.loss import cross_entropy, cross_entropy_backward
from attention.model import ModelConfig, forward, init_params
from tests.package.test_model import VOCAB, gpt2_reference, llama_reference

TOL = 1e-10


def hf_gradients(model, config, ids, targets, positions=None):
    """Loss and every parameter's gradient through Hugging Face, in our names."""
    model.zero_grad()
    position_ids = None if positions is None else torch.tensor(positions)
    logits = model(torch.tensor(ids), position_ids=position_ids).logits  # (batch, n, V)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), torch.tensor(targets).reshape(-1),
                           ignore_index=-100)
    loss.backward()
    grads = {name: p.grad.numpy() for name, p in model.named_parameters()}
    # A tied LM head is the token table itself: named_parameters lists it once, as wte.
    return loss.item(), from_hf_state_dict(grads, config)  # renamed, split, transposed


def ours_and_theirs(model, seed):
    config = config_from_hf(model.config)
    params = from_hf_state_dict({k: v.detach().numpy() for k, v in model.state_dict().items()},
                                config)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, size=(3, 11))
    targets = rng.integers(0, VOCAB, size=(3, 11))
    targets[0, :4] = -100  # unscored positions, as in the training task
    ours = loss_and_grads(params, config, ids, targets)
    return config, params, ours, hf_gradients(model, config, ids, targets)


@pytest.mark.parametrize("build", [gpt2_reference, llama_reference], ids=["gpt2", "llama-gqa"])
def test_every_gradient_equals_autograd_through_hugging_face(build):
    model = build(seed=3)
    config, params, (loss, grads, _), (hf_loss, hf_grads) = ours_and_theirs(model, seed=4)
    assert abs(loss - hf_loss) <= 1e-12
    assert grads.keys() == params.keys()
    for name in params:
        assert grads[name].shape == params[name].shape, name
        assert np.max(np.abs(grads[name] - hf_grads[name])) <= TOL, name
    # every parameter learns something: no gradient silently left at zero
    assert all(np.any(g != 0) for g in grads.values())


@pytest.mark.parametrize("build", [gpt2_reference, llama_reference], ids=["gpt2", "llama-gqa"])
def test_positions_per_sequence(build):
    """Positions (batch, n), as chapter 4's left-padded batches use them."""
    model = build(seed=7)
    config = config_from_hf(model.config)
    params = from_hf_state_dict({k: v.detach().numpy() for k, v in model.state_dict().items()},
                                config)
    rng = np.random.default_rng(8)
    ids, targets = rng.integers(0, VOCAB, size=(2, 7)), rng.integers(0, VOCAB, size=(2, 7))
    positions = np.array([np.arange(7), np.arange(7) + 20])  # the second starts at 20
    trace = {}
    logits = forward(params, config, ids, positions=positions, trace=trace)
    grads = model_backward(params, config, ids, cross_entropy_backward(logits, targets), trace,
                           positions=positions)
    _, hf_grads = hf_gradients(model, config, ids, targets, positions)
    for name in params:
        assert np.max(np.abs(grads[name] - hf_grads[name])) <= TOL, name


def test_untied_head_and_unused_positions():
    model = gpt2_reference(seed=5, tie_word_embeddings=False)
    config, params, (loss, grads, _), (hf_loss, hf_grads) = ours_and_theirs(model, seed=6)
    assert not config.tie_embeddings and "lm_head.W" in grads
    for name in params:
        assert np.max(np.abs(grads[name] - hf_grads[name])) <= TOL, name
    assert np.all(grads["embed.positions"][11:] == 0)  # positions never used get nothing


def test_finite_differences_through_our_own_forward_agree():
    config = ModelConfig(vocab_size=13, d_model=16, n_layers=2, n_heads=2, d_ff=32,
                         max_positions=8)
    params = init_params(config, np.random.default_rng(7), std=0.3)
    rng = np.random.default_rng(8)
    ids, targets = rng.integers(0, 13, size=(2, 6)), rng.integers(0, 13, size=(2, 6))
    _, grads, _ = loss_and_grads(params, config, ids, targets)
    for name in ("embed.tokens", "blocks.0.attn.W_k", "blocks.1.norm1.weight", "blocks.0.mlp.b_in"):
        def loss_of(value, name=name):
            return cross_entropy(forward(params | {name: value}, config, ids), targets)
        ok, error = gradient_check(loss_of, params[name].copy(), grads[name], entries=12)
        assert ok and error < 1e-7, (name, error)


def test_single_sequence_and_batch_agree():
    config = ModelConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2, max_positions=8)
    params = init_params(config, np.random.default_rng(9), std=0.3)
    ids = np.array([3, 1, 4, 1, 5])
    trace = {}
    logits = forward(params, config, ids, trace=trace)  # (n, vocab): no batch axis
    d_logits = np.random.default_rng(10).normal(size=logits.shape)
    single = model_backward(params, config, ids, d_logits, trace)
    trace = {}
    forward(params, config, ids[None], trace=trace)
    batched = model_backward(params, config, ids[None], d_logits[None], trace)
    for name in params:
        assert np.max(np.abs(single[name] - batched[name])) <= 1e-14


def test_a_missing_trace_or_a_wrong_gradient_shape_is_named():
    config = ModelConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2, max_positions=8)
    params = init_params(config, np.random.default_rng(13))
    ids = np.array([[1, 2, 3]])
    with pytest.raises(ValueError, match="trace"):
        model_backward(params, config, ids, np.zeros((1, 3, 11)), {})
    with pytest.raises(ValueError, match=r"\(1, 3, 11\)"):
        model_backward(params, config, ids, np.zeros((1, 3, 10)), {})


def test_embedding_backward_accumulates_repeated_tokens():
    W = np.random.default_rng(11).normal(size=(10, 4))
    ids = np.array([[1, 3, 1], [9, 1, 0]])  # token 1 appears three times
    d_out = np.random.default_rng(12).normal(size=(2, 3, 4))
    tW = torch.tensor(W, requires_grad=True)
    F.embedding(torch.tensor(ids), tW).backward(torch.tensor(d_out))
    ours = embedding_backward(d_out, ids, vocab_size=10)
    assert np.max(np.abs(ours - tW.grad.numpy())) <= 1e-12
    assert np.max(np.abs(ours[1] - (d_out[0, 0] + d_out[0, 2] + d_out[1, 1]))) <= 1e-15
