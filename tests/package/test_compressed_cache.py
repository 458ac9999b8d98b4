"""Chapter 12's compressed cache against Hugging Face's DeepSeek-V4 compressors, float64.

Hugging Face's ``DeepseekV4HCACompressor`` (one entry per m' tokens) and
``DeepseekV4CSACompressor`` (one entry per m tokens from two overlapping series, and its
lightning indexer's choice of entries), each built from a tiny random configuration of
odd sizes (blocks of 3 and 5, an unfinished block at the end), run without a cache; its
float32 internals (the gate softmax, RMSNorm, RoPE) swapped for float64 (``float64_hf``).
The entries agree within 1e-12 relative, the chosen entries exactly (the random scores
have no tie at the k-th entry: checked). Fed in pieces with a state, as a cache feeds it,
``compress`` gives the entries of one call.
"""

import numpy as np
import pytest
import torch
from transformers import DeepseekV4Config
from transformers.models.deepseek_v4.modeling_deepseek_v4 import (
    DeepseekV4CSACompressor, DeepseekV4HCACompressor)

from attention.positions import rope
from attention.sparse.compressed import (compress, csa_select, pool_blocks,
                                         visible_entries)
from attention.sparse.indexer import index_scores
from tests.package.test_long_context_models import float64_hf, randomise

TOL = 1e-12
D_ROPE, THETA = 4, 1600.0


def config():
    rope_type = {"rope_type": "default", "partial_rotary_factor": 0.25}
    return DeepseekV4Config(
        hidden_size=24, head_dim=16, q_lora_rank=6, index_n_heads=7,
        index_head_dim=8, index_topk=2, num_hidden_layers=2,
        compress_rates={"compressed_sparse_attention": 3,
                        "heavily_compressed_attention": 5},
        rope_parameters={"main": {"rope_theta": 1000.0, **rope_type},
                         "compress": {"rope_theta": THETA, **rope_type}})


def build(cls, seed):
    torch.manual_seed(seed)
    with float64_hf():
        module = cls(config())
    module = randomise(module.double().eval(), seed)
    with torch.no_grad():  # the gate biases: order one, so the softmax bends
        module.position_bias.normal_(generator=torch.Generator().manual_seed(seed))
    return module


def weights(module):
    t = lambda a: a.detach().numpy()  # noqa: E731
    return {"W_kv": t(module.kv_proj.weight).T, "W_gate": t(module.gate_proj.weight).T,
            "bias": t(module.position_bias), "norm": t(module.kv_norm.weight)}


def run(module, x, q_residual):
    positions = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
    with torch.no_grad(), float64_hf():
        return module(torch.from_numpy(x), torch.from_numpy(q_residual),
                      positions, None, 0)


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(2, 17, 24)), rng.normal(size=(2, 17, 6))


def test_heavily_compressed_entries_equal_hugging_face(inputs):
    x, q_res = inputs
    module = build(DeepseekV4HCACompressor, seed=1)
    theirs = run(module, x, q_res)[0][:, 0].numpy()  # (batch, 17 // 5, d)
    mine = compress(x, weights(module), m=5, overlapping=False, d_rope=D_ROPE,
                    rope_base=THETA, eps=1e-6)
    assert mine.shape == theirs.shape == (2, 3, 16)
    assert relative(mine, theirs) <= TOL


def test_compressed_sparse_entries_and_their_choice_equal_hugging_face(inputs):
    x, q_res = inputs
    module = build(DeepseekV4CSACompressor, seed=2)
    entries, block_bias = run(module, x, q_res)
    mine = compress(x, weights(module), m=3, overlapping=True, d_rope=D_ROPE,
                    rope_base=THETA, eps=1e-6)
    assert mine.shape == (2, 5, 16)
    assert relative(mine, entries[:, 0].numpy()) <= TOL
    ix = module.indexer
    keys = compress(x, weights(ix), m=3, overlapping=True, d_rope=D_ROPE,
                    rope_base=THETA, eps=1e-6)
    q = (q_res @ ix.q_b_proj.weight.detach().numpy().T).reshape(2, 17, 7, 8)
    q_rot = rope(q[..., -D_ROPE:].swapaxes(1, 2), np.arange(17), base=THETA,
                 layout="interleaved").swapaxes(1, 2)
    q = np.concatenate([q[..., :-D_ROPE], q_rot], axis=-1)
    w = (x @ ix.scorer.weights_proj.weight.detach().numpy().T) * 7 ** -0.5
    scores = index_scores(q, w, keys)
    for row, allowed in zip(scores.reshape(-1, 5),
                            np.tile(visible_entries(np.arange(17), 5, 3), (2, 1))):
        ranked = np.sort(row[allowed])[::-1]
        assert len(ranked) <= 2 or ranked[1] != ranked[2]  # no tie at k = 2
    chosen = csa_select(q, w, keys, np.arange(17), m=3, top_k=2)
    assert np.array_equal(chosen, block_bias[:, 0].numpy() == 0)
    assert chosen.sum(-1).tolist()[0][:6] == [0, 0, 1, 1, 1, 2]  # grows with t


@pytest.mark.parametrize("cls, m", [(DeepseekV4HCACompressor, 5),
                                    (DeepseekV4CSACompressor, 3)])
def test_compressing_in_pieces_with_a_state_equals_one_call(inputs, cls, m):
    # what a cache does: pieces that end inside a block, or complete none
    x = inputs[0]
    p = weights(build(cls, seed=3))
    rules = dict(m=m, overlapping=m == 3, d_rope=D_ROPE, rope_base=THETA,
                 eps=1e-6)
    whole, state = compress(x, p, **rules), {}
    for a, b in [(0, 2), (2, 3), (3, 10), (10, 11), (11, 17)]:
        pieces = compress(x[:, a:b], p, **rules, state=state)
    assert pieces.shape == whole.shape and relative(pieces, whole) <= 1e-13
    assert state["kv"].shape[1] == 17 % m + (m if m == 3 else 0)


def test_a_block_pools_its_tokens_by_a_softmax_per_channel():
    kv = np.arange(12.0).reshape(1, 6, 2)       # two blocks of 3, 2 channels
    gate = np.zeros((1, 6, 2))
    equal = pool_blocks(kv, gate, np.zeros((3, 2)), 3)
    assert np.allclose(equal, kv.reshape(1, 2, 3, 2).mean(axis=2))
    first = pool_blocks(kv, gate, np.array([[50.0, 0.0], [0, 0], [0, 0]]), 3)
    assert np.allclose(first[0, :, 0], [0.0, 6.0])  # channel 0: first token


@pytest.mark.parametrize("call, match", [
    (lambda: pool_blocks(np.zeros((1, 6, 4)), np.zeros((1, 6, 4)),
                         np.zeros((2, 4)), 3), r"bias \(m, 1 d\) with m = 3"),
    (lambda: pool_blocks(np.zeros((1, 6, 4)), np.zeros((1, 6, 4)),
                         np.zeros((3, 4)), 0), "m must be a positive integer"),
    (lambda: compress(np.zeros((1, 6, 5)), {"W_kv": np.zeros((4, 2))}, m=3,
                      overlapping=False, d_rope=2, rope_base=10.0, eps=1e-6),
     r"d_model = 4 \(W_kv's rows\), got \(1, 6, 5\)"),
])
def test_bad_compressor_inputs_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
