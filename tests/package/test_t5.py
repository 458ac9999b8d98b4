"""Chapter 13's T5 against Hugging Face's T5ForConditionalGeneration, in float64.

Two tiny random models: T5 v1.1's gated tanh-GELU feed-forward with three decoder layers
for two encoder layers, and the original ReLU feed-forward. Hugging Face's T5LayerNorm
computes its variance in float32; the models are run with ``float64_hf`` (the same
formula in float64), and a test shows the swap moves the logits only at float32
rounding. Logits within 1e-10 of the largest, greedy tokens equal to ``generate``'s
(which runs with its EncoderDecoderCache), our cached decoding equal to one full
decoder pass, and the memory projected once per layer however long the generation.
"""

import contextlib

import numpy as np
import pytest
import torch
from transformers import T5Config as HFT5Config
from transformers import T5ForConditionalGeneration
from transformers.models.t5.modeling_t5 import T5Attention

from attention.encoders import t5
from attention.encoders.cross_attention import DecoderCache
from tests.package.test_long_context_models import float64_hf, relative

TOL = 1e-10
VOCAB = 61
# Buckets 8, max distance 12: sources of 19 and targets of 16 tokens reach the
# logarithmic buckets and the shared last one in both directions.
COMMON = dict(vocab_size=VOCAB, d_model=24, d_kv=5, d_ff=36, num_heads=3,
              relative_attention_num_buckets=8,
              relative_attention_max_distance=12, dropout_rate=0.0,
              decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
MODELS = {
    "v1.1 gated-gelu": dict(feed_forward_proj="gated-gelu", num_layers=2,
                            num_decoder_layers=3, tie_word_embeddings=False),
    "original relu": dict(feed_forward_proj="relu", num_layers=2,
                          num_decoder_layers=2),
}


def randomise(model, seed):
    """Order-one weights and bias tables, gains near one."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if name.endswith("layer_norm.weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif "relative_attention_bias" in name:
                p.copy_(noise)
            else:
                p.copy_(noise / p.shape[-1] ** 0.5)
    return model


def build(name, seed=0, *, swap=True):
    """A tiny random T5 in float64; swap: its norms' float32 in float64."""
    with float64_hf() if swap else contextlib.nullcontext():
        hf = T5ForConditionalGeneration(HFT5Config(**COMMON, **MODELS[name]))
    return randomise(hf.double().eval(), seed)


def ours(hf):
    sd = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    config = t5.config_from_hf(hf.config.to_dict())
    return t5.params_from_hf(sd, config), config


def batch(seed=1):
    """Two sources, the second padded after 13 tokens; two targets."""
    rng = np.random.default_rng(seed)
    src = rng.integers(2, VOCAB, size=(2, 19))
    valid = np.ones(src.shape, bool)
    valid[1, 13:] = False
    src[1, 13:] = 0
    tgt = rng.integers(2, VOCAB, size=(2, 16))
    return src, valid, tgt


def hf_logits(hf, src, valid, tgt):
    with torch.no_grad(), float64_hf():
        return hf(input_ids=torch.from_numpy(src),
                  attention_mask=torch.from_numpy(valid.astype(np.int64)),
                  decoder_input_ids=torch.from_numpy(tgt)).logits.numpy()


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    hf = build(request.param)
    return hf, *ours(hf)


def test_config_reads_the_feed_forward_and_the_output_scale(model):
    hf, _, config = model
    assert config.gated == hf.config.is_gated_act
    assert config.scale_decoder_output == hf.config.scale_decoder_outputs
    assert config.n_decoder_layers == hf.config.num_decoder_layers


def test_logits_equal_hugging_face(model):
    hf, params, config = model
    src, valid, tgt = batch()
    memory = t5.encode(params, config, src, valid)
    logits = t5.decode(params, config, tgt, memory, memory_valid=valid)
    assert relative(logits, hf_logits(hf, src, valid, tgt)) < TOL


def test_padding_changes_no_real_token():
    hf = build("original relu")
    params, config = ours(hf)
    src, valid, tgt = batch()
    padded = t5.decode(params, config, tgt[1:],
                       t5.encode(params, config, src[1:], valid[1:]),
                       memory_valid=valid[1:])
    alone = t5.decode(params, config, tgt[1:],
                      t5.encode(params, config, src[1:, :13]))
    assert relative(padded, alone) < TOL


def test_the_float64_norm_moves_logits_only_at_float32_rounding():
    name = "v1.1 gated-gelu"
    src, valid, tgt = batch()
    swapped = hf_logits(build(name), src, valid, tgt)
    hf = build(name, swap=False)  # the same weights, float32 variance
    with torch.no_grad():
        plain = hf(input_ids=torch.from_numpy(src),
                   attention_mask=torch.from_numpy(valid.astype(np.int64)),
                   decoder_input_ids=torch.from_numpy(tgt)).logits.numpy()
    assert 1e-9 < relative(plain, swapped) < 1e-5


@pytest.mark.parametrize("buckets, distance", [(32, 128), (8, 12), (16, 32),
                                               (6, 10), (64, 256)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_buckets_equal_hugging_face(buckets, distance, bidirectional):
    # Hugging Face takes the logarithm in float32 (no swap here): it puts
    # every distance up to 1,000 in the bucket float64 does.
    relative_positions = np.arange(-1000, 1001)
    theirs = T5Attention._relative_position_bucket(
        torch.from_numpy(relative_positions), bidirectional=bidirectional,
        num_buckets=buckets, max_distance=distance).numpy()
    mine = t5.relative_position_bucket(
        relative_positions, bidirectional=bidirectional, num_buckets=buckets,
        max_distance=distance)
    np.testing.assert_array_equal(mine, theirs)


def test_buckets_of_t5_base():
    # 32 buckets, 128: exact up to 7 each way, then log-spaced, 128+ shared
    b = t5.relative_position_bucket(np.array([-1, -7, -8, -12, -16, -127,
                                              -128, -1000, 0, 1, 8, 1000]),
                                    bidirectional=True)
    np.testing.assert_array_equal(b, [1, 7, 8, 9, 10, 15, 15, 15, 0, 17, 24,
                                      31])
    causal = t5.relative_position_bucket(np.array([3, 0, -1, -15, -16, -128]),
                                         bidirectional=False)
    np.testing.assert_array_equal(causal, [0, 0, 1, 15, 16, 31])


def test_only_the_first_layer_holds_a_bias_table(model):
    hf, params, _ = model
    for stack in (hf.encoder, hf.decoder):
        holders = [i for i, block in enumerate(stack.block)
                   if block.layer[0].SelfAttention.has_relative_attention_bias]
        assert holders == [0]
    assert [k for k in params if "rel_bias" in k] == ["encoder.rel_bias",
                                                      "decoder.rel_bias"]


def hf_generate(hf, src, valid, n):
    """Greedy with Hugging Face's generate (its EncoderDecoderCache)."""
    with torch.no_grad(), float64_hf():
        return hf.generate(
            input_ids=torch.from_numpy(src),
            attention_mask=torch.from_numpy(valid.astype(np.int64)),
            max_new_tokens=n, do_sample=False, eos_token_id=None).numpy()


def test_greedy_generation_equals_hugging_faces_generate():
    # generate() sizes its self-attention cache by num_layers (the
    # encoder's): an unequal decoder fails there, so equal stacks here.
    hf = build("original relu", seed=4)
    params, config = ours(hf)
    src, valid, _ = batch(seed=4)
    theirs = hf_generate(hf, src, valid, 12)
    mine = t5.generate(params, config, src, valid=valid, max_new_tokens=12)
    np.testing.assert_array_equal(mine, theirs)
    assert all(len(set(row[1:])) > 3 for row in mine)  # not one token


def test_cached_decoding_equals_one_full_decoder_pass(model):
    _, params, config = model
    src, valid, tgt = batch()
    memory = t5.encode(params, config, src, valid)
    full = t5.decode(params, config, tgt, memory, memory_valid=valid)
    cache = DecoderCache(config.n_decoder_layers)
    steps = [t5.decode(params, config, tgt[:, :5], memory,
                       memory_valid=valid, cache=cache)]
    steps += [t5.decode(params, config, tgt[:, i:i + 1], memory,
                        memory_valid=valid, cache=cache)
              for i in range(5, tgt.shape[1])]
    assert relative(np.concatenate(steps, axis=1), full) < 1e-12
    # The memory was projected once per layer, not once per step.
    assert cache.projections == config.n_decoder_layers
    assert len(cache.self_attn) == tgt.shape[1]


def test_generation_with_and_without_the_cache_agree(model):
    _, params, config = model
    src, valid, _ = batch(seed=5)
    cached = t5.generate(params, config, src, valid=valid, max_new_tokens=9)
    recomputed = t5.generate(params, config, src, valid=valid,
                             max_new_tokens=9, use_cache=False)
    np.testing.assert_array_equal(cached, recomputed)


def test_stop_token_ends_a_target():
    hf = build("original relu", seed=4)
    params, config = ours(hf)
    src, valid, _ = batch(seed=4)
    free = t5.generate(params, config, src, valid=valid, max_new_tokens=12)
    stop = int(free[0, 3])  # the first target's third new token
    out = t5.generate(params, config, src, valid=valid, max_new_tokens=12,
                      stop_token=stop)
    first = list(out[0]).index(stop)
    assert first <= 3 and (out[0, first:] == stop).all()


@pytest.mark.parametrize("change, words", [
    (dict(feed_forward_proj="gated-gelu_fast"),
     "feed_forward_proj='gated-gelu_fast' is not implemented"),
    (dict(feed_forward_proj="swish"),
     "feed_forward_proj='swish' is not implemented"),
    (dict(is_decoder=True), "only the encoder-decoder T5"),
])
def test_unimplemented_options_are_refused_by_name(change, words):
    hf = HFT5Config(**COMMON, **MODELS["original relu"]).to_dict() | change
    with pytest.raises(ValueError, match=words):
        t5.config_from_hf(hf)


@pytest.mark.parametrize("call, words", [
    (lambda p, c: t5.encode(p, c, np.array([[1, 2]]), np.array([[1, 1]])),
     "valid must be booleans"),
    (lambda p, c: t5.encode(p, c, np.array([[1, VOCAB]])),
     rf"ids must lie in 0..{VOCAB - 1}"),
    (lambda p, c: t5.decode(p, c, np.array([1.0]), None), "ids must be"),
    (lambda p, c: t5.generate(p, c, np.array([[1, 2]]), max_new_tokens=0),
     "max_new_tokens must be a positive integer"),
    (lambda p, c: t5.generate(p, c, np.array([[1, 2]]), max_new_tokens=2,
                              stop_token=VOCAB), "stop_token must be None or"),
    (lambda p, c: t5.T5Config(num_buckets=2), "num_buckets must be >= 4"),
    (lambda p, c: t5.T5Config(max_distance=16),
     "max_distance must exceed num_buckets // 2 = 16"),
    (lambda p, c: t5.T5Config(d_kv=0), "d_kv must be a positive integer"),
    (lambda p, c: t5.relative_position_bucket(np.arange(3), bidirectional=True,
                                              num_buckets=2), "num_buckets must"),
    (lambda p, c: t5.relative_position_bucket(np.arange(3.0),
                                              bidirectional=True),
     "relative must be integers"),
    (lambda p, c: t5.position_bias(np.zeros((5, 3)), 2, 2, bidirectional=True,
                                   config=c), r"table must have shape \(8, 3\)"),
])
def test_bad_inputs_are_named(model, call, words):
    _, params, config = model
    with pytest.raises(ValueError, match=words):
        call(params, config)


def test_parameter_shapes_are_what_hugging_face_holds(model):
    _, params, config = model
    assert t5.parameter_shapes(config) == {k: v.shape
                                           for k, v in params.items()}
