"""Chapter 13's BERT against Hugging Face's BertForMaskedLM, float64, padded batches.

BERT's eager attention has no float32 internals (its softmax runs in the model's dtype
and its padding mask adds float64's most negative number), so Hugging Face runs as it
is. Logits and hidden states within 1e-10 of the largest; padding leaves the real
tokens' outputs unchanged (1e-12); the post-LN block's backward equals autograd's.
"""

import numpy as np
import pytest
import torch
from transformers import BertConfig as HFBertConfig
from transformers import BertForMaskedLM, BertModel

from attention.blocks import encoder_block
from attention.encoders.backward import post_ln_block_backward
from attention.encoders.bert import (BertConfig, bert_config_from_hf,
                                     bert_encode, bert_from_hf, bert_shapes,
                                     mlm_logits)
from attention.encoders.pooling import bert_pooler, cls_pool, mean_pool
from attention.model import block_params
from tests.package.hf_encoders import TOL, numpy_state, randomise, rel_err

SMALL = dict(vocab_size=53, hidden_size=24, num_hidden_layers=2,
             num_attention_heads=3, intermediate_size=40,
             max_position_embeddings=16, type_vocab_size=2,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
             pad_token_id=0)
LENGTHS = [7, 4, 2]


@pytest.fixture(scope="module")
def hf_mlm():
    torch.manual_seed(0)
    config = HFBertConfig(**SMALL)
    config._attn_implementation = "eager"
    model = randomise(BertForMaskedLM(config).double().eval(), seed=1)
    model.tie_weights()  # randomise drew the decoder apart from the table
    return model


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    n = max(LENGTHS)
    real = np.arange(n)[None, :] < np.array(LENGTHS)[:, None]  # (3, 7)
    ids = np.where(real, rng.integers(1, SMALL["vocab_size"], (3, n)), 0)
    types = np.where(real & (np.arange(n) >= 2), 1, 0)  # sentence B from 2
    return ids, real, types


def ours(hf_model):
    config = bert_config_from_hf(hf_model.config)
    return bert_from_hf(numpy_state(hf_model), config), config


def test_bert_mlm_logits_equal_hugging_face_on_a_padded_batch(hf_mlm, batch):
    ids, real, types = batch
    params, config = ours(hf_mlm)
    with torch.no_grad():
        out = hf_mlm(torch.from_numpy(ids), attention_mask=torch.from_numpy(
            real.astype(np.int64)), token_type_ids=torch.from_numpy(types),
            output_hidden_states=True)
    hidden = bert_encode(params, config, ids, real, types)
    logits = mlm_logits(params, config, hidden)
    # Hugging Face computes the padded positions too; only real ones count
    assert rel_err(hidden[real], out.hidden_states[-1].numpy()[real]) < TOL
    assert rel_err(logits[real], out.logits.numpy()[real]) < TOL


def test_padding_does_not_change_the_real_tokens(hf_mlm, batch):
    ids, real, types = batch
    params, config = ours(hf_mlm)
    padded = bert_encode(params, config, ids, real, types)
    for b, n in enumerate(LENGTHS):
        alone = bert_encode(params, config, ids[b:b + 1, :n], None,
                            types[b:b + 1, :n])[0]
        assert np.abs(padded[b, :n] - alone).max() < 1e-12
    # without the mask the pads are read, and the outputs move
    unmasked = bert_encode(params, config, ids, None, types)
    assert np.abs(unmasked[1, :4] - padded[1, :4]).max() > 1e-3


def test_pooling_cls_mean_and_bert_pooler(batch):
    torch.manual_seed(2)
    config = HFBertConfig(**SMALL)
    config._attn_implementation = "eager"
    model = randomise(BertModel(config).double().eval(), seed=3)
    ours_config = bert_config_from_hf(model.config)
    params = bert_from_hf(numpy_state(model), ours_config)
    ids, real, types = batch
    with torch.no_grad():
        out = model(torch.from_numpy(ids), attention_mask=torch.from_numpy(
            real.astype(np.int64)), token_type_ids=torch.from_numpy(types))
    hidden = bert_encode(params, ours_config, ids, real, types)
    pooled = bert_pooler(hidden, params["pooler.W"], params["pooler.b"])
    assert rel_err(pooled, out.pooler_output.numpy()) < TOL
    assert np.array_equal(cls_pool(hidden), hidden[:, 0])
    means = mean_pool(hidden, real)
    for b, n in enumerate(LENGTHS):
        assert np.allclose(means[b], hidden[b, :n].mean(axis=0),
                           rtol=0, atol=1e-14)
    assert not np.allclose(means[2], hidden[2].mean(axis=0))  # pads counted


def test_post_ln_block_backward_equals_autograd(hf_mlm, batch):
    ids, real, _ = batch
    params, config = ours(hf_mlm)
    layer = hf_mlm.bert.encoder.layer[1]
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, ids.shape[1], config.d_model))
    d_out = rng.normal(size=x.shape)
    mask = real[:, None, None, :]
    p, trace = block_params(params, 1), {}
    out = encoder_block(x, p, n_heads=config.n_heads, norm_first=False,
                        activation="gelu", eps=config.norm_eps, mask=mask,
                        trace=trace)
    dx, grads = post_ln_block_backward(d_out, x, p, trace,
                                       n_heads=config.n_heads, mask=mask,
                                       eps=config.norm_eps)
    xt = torch.tensor(x, requires_grad=True)
    additive = torch.from_numpy(np.where(mask, 0.0, -np.inf))
    layer.zero_grad()
    out_t = layer(xt, attention_mask=additive)
    out_t = out_t[0] if isinstance(out_t, tuple) else out_t
    assert rel_err(out, out_t.detach().numpy()) < TOL
    (out_t * torch.from_numpy(d_out)).sum().backward()
    assert rel_err(dx, xt.grad.numpy()) < TOL
    hf = dict(layer.named_parameters())
    names = {"attn.W_q": "attention.self.query", "attn.W_k":
             "attention.self.key", "attn.W_v": "attention.self.value",
             "attn.W_o": "attention.output.dense",
             "mlp.W_in": "intermediate.dense", "mlp.W_out": "output.dense",
             "norm1": "attention.output.LayerNorm",
             "norm2": "output.LayerNorm"}
    for name, g in grads.items():
        base, _, part = name.rpartition(".")
        if base in names:  # a norm's weight or bias
            theirs = hf[f"{names[base]}.{part}"].grad.numpy()
        elif name in names:  # a projection: ours is the transpose
            theirs = hf[names[name] + ".weight"].grad.numpy().T
        else:  # attn.b_q, ..., mlp.b_in: the projection's bias
            w = name.replace("b_", "W_")
            theirs = hf[names[w] + ".bias"].grad.numpy()
        # (the key bias's gradient is 0 up to rounding: it adds q·b_k to
        # every score of a row, which the softmax ignores)
        scale = max(np.abs(theirs).max(), 1.0)
        assert np.abs(g - theirs).max() < TOL * scale, name
    assert np.abs(grads["attn.b_k"]).max() < 1e-12


def test_bert_refuses_what_it_does_not_implement():
    for setting in (dict(hidden_act="relu"), dict(is_decoder=True),
                    dict(add_cross_attention=True)):
        with pytest.raises(ValueError, match=next(iter(setting))):
            bert_config_from_hf(HFBertConfig(**SMALL | setting))


def test_bert_input_errors_name_the_argument():
    config = BertConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2,
                        d_ff=16, max_positions=6)
    params = {k: np.zeros(s) for k, s in bert_shapes(config).items()}
    with pytest.raises(ValueError, match="token_ids must lie in 0..10"):
        bert_encode(params, config, np.array([[3, 11]]))
    with pytest.raises(ValueError, match="7 tokens is more than the 6"):
        bert_encode(params, config, np.ones((1, 7), dtype=int))
    with pytest.raises(ValueError, match="real must be a boolean array"):
        bert_encode(params, config, np.ones((1, 3), dtype=int),
                    real=np.ones((1, 3)))
    with pytest.raises(ValueError, match="token_types must be integers"):
        bert_encode(params, config, np.ones((1, 3), dtype=int),
                    token_types=np.full((1, 3), 2))
    with pytest.raises(ValueError, match="trace lacks \\['heads', 'k'"):
        post_ln_block_backward(np.zeros((1, 2, 8)), np.zeros((1, 2, 8)), {},
                               {"q": 0, "v": 0, "weights": 0}, n_heads=2)
    with pytest.raises(ValueError, match="rows \\[0\\] have none"):
        mean_pool(np.zeros((1, 2, 8)), np.zeros((1, 2), dtype=bool))
