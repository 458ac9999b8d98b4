"""Chapter 13's Whisper against Hugging Face's WhisperForConditionalGeneration, float64.

A tiny random model on random log-mel features (given as an array: no audio is decoded).
Hugging Face computes the encoder's sinusoidal position table in float32 when it builds
the model; built under ``float64_hf`` the table is the same formula in float64, and a
test shows the swap moves the logits only at float32 rounding. Eager attention.

Generation: the tiny model's generation config has no suppressed tokens, no forced
tokens, no timestamps and no end token, so Whisper's ``generate`` adds no logits
processor and is plain greedy decoding with its EncoderDecoderCache (it returns the new
tokens without the decoder's start token). Our greedy tokens equal both its output and a
plain greedy loop over Hugging Face's forward with that cache.
"""

import contextlib

import numpy as np
import pytest
import torch
from transformers import WhisperConfig as HFWhisperConfig
from transformers import WhisperForConditionalGeneration
from transformers.cache_utils import DynamicCache, EncoderDecoderCache

from attention.encoders import whisper
from attention.encoders.cross_attention import DecoderCache
from tests.package.test_long_context_models import float64_hf, relative

TOL = 1e-10
VOCAB = 59
START = 3
HF_CONFIG = dict(
    vocab_size=VOCAB, num_mel_bins=7, d_model=24, encoder_layers=2,
    decoder_layers=2, encoder_attention_heads=3, decoder_attention_heads=4,
    encoder_ffn_dim=36, decoder_ffn_dim=40, max_source_positions=11,
    max_target_positions=24, dropout=0.0, pad_token_id=0, bos_token_id=1,
    eos_token_id=None, decoder_start_token_id=START, suppress_tokens=None,
    begin_suppress_tokens=None)


def randomise(model, seed):
    """Order-one weights, gains near one; the encoder's fixed sinusoids
    stay as built."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if name == "model.encoder.embed_positions.weight":
                continue
            if "layer_norm.weight" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif p.ndim == 1:
                p.copy_(0.5 * noise)
            else:
                fan_in = p[0].numel()  # a convolution's is c_in * k
                p.copy_(noise / fan_in ** 0.5)
    return model


def build(seed=0, *, swap=True):
    config = HFWhisperConfig(**HF_CONFIG)
    config._attn_implementation = "eager"
    with float64_hf() if swap else contextlib.nullcontext():
        hf = WhisperForConditionalGeneration(config)
    return randomise(hf.double().eval(), seed)


def ours(hf):
    sd = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    config = whisper.config_from_hf(hf.config.to_dict())
    return whisper.params_from_hf(sd, config), config


def features(seed=1, batch=2):
    """Random 'log-mel' frames: (batch, n_mels, 2 * max_source_positions)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, HF_CONFIG["num_mel_bins"],
                            2 * HF_CONFIG["max_source_positions"]))


def hf_logits(hf, feats, tgt):
    with torch.no_grad():
        return hf(input_features=torch.from_numpy(feats),
                  decoder_input_ids=torch.from_numpy(tgt)).logits.numpy()


@pytest.fixture(scope="module")
def model():
    hf = build(seed=2)  # a seed whose greedy tokens vary
    return hf, *ours(hf)


def test_encoder_positions_are_whispers_sinusoids():
    table = whisper.whisper_positions(11, 24)
    swapped = build().model.encoder.embed_positions.weight.detach().numpy()
    plain = build(swap=False).model.encoder.embed_positions.weight
    assert np.abs(swapped - table).max() < 1e-15
    # Hugging Face's own table is the float32 rounding of the same numbers
    assert np.abs(plain.detach().numpy() - table).max() < 3e-7
    assert table[0, :12].tolist() == [0.0] * 12  # sin 0, then cos 0 = 1
    assert table[0, 12:].tolist() == [1.0] * 12


def test_the_float64_positions_move_logits_only_at_float32_rounding():
    feats = features()
    tgt = np.array([[START, 5, 9, 11]])
    swapped = hf_logits(build(), feats[:1], tgt)
    plain = hf_logits(build(swap=False), feats[:1], tgt)
    assert 1e-10 < relative(plain, swapped) < 1e-5


def test_conv_stem_equals_torch(model):
    hf, params, config = model
    feats = features()
    x = np.swapaxes(feats, 1, 2)
    mine = whisper.conv1d(x, params["encoder.conv1.W"],
                          params["encoder.conv1.b"])
    mine = whisper.conv1d(mine, params["encoder.conv2.W"],
                          params["encoder.conv2.b"], stride=2)
    with torch.no_grad():
        t = hf.model.encoder.conv1(torch.from_numpy(feats))
        t = hf.model.encoder.conv2(t).numpy()
    assert mine.shape == (2, 11, 24)
    assert np.abs(np.swapaxes(mine, 1, 2) - t).max() < 1e-12


def test_encoder_equals_hugging_face(model):
    hf, params, config = model
    feats = features()
    with torch.no_grad():
        theirs = hf.model.encoder(torch.from_numpy(feats)).last_hidden_state
    mine = whisper.encode(params, config, feats)
    assert relative(mine, theirs.numpy()) < TOL


def test_logits_equal_hugging_face(model):
    hf, params, config = model
    feats = features()
    tgt = np.random.default_rng(2).integers(4, VOCAB, size=(2, 17))
    tgt[:, 0] = START
    memory = whisper.encode(params, config, feats)
    mine = whisper.decode(params, config, tgt, memory)
    assert relative(mine, hf_logits(hf, feats, tgt)) < TOL


def hf_greedy_loop(hf, feats, prompt, n):
    """Plain greedy over Hugging Face's forward and EncoderDecoderCache."""
    with torch.no_grad():
        encoded = hf.model.encoder(torch.from_numpy(feats))
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        ids = step = torch.from_numpy(prompt)
        for _ in range(n):
            out = hf(encoder_outputs=encoded, decoder_input_ids=step,
                     past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            step = out.logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, step], dim=1)
    return ids.numpy()


def test_greedy_transcription_equals_hugging_face(model):
    hf, params, config = model
    feats = features(seed=3)
    prompt = np.full((2, 1), START)
    mine = whisper.generate(params, config, feats, prompt, max_new_tokens=12)
    np.testing.assert_array_equal(mine, hf_greedy_loop(hf, feats, prompt, 12))
    with torch.no_grad():
        theirs = hf.generate(input_features=torch.from_numpy(feats),
                             max_new_tokens=12, do_sample=False).numpy()
    np.testing.assert_array_equal(mine[:, 1:], theirs)  # no start token
    assert all(len(set(row[1:])) >= 3 for row in mine)  # not one token


def test_cached_decoding_equals_one_full_decoder_pass(model):
    _, params, config = model
    memory = whisper.encode(params, config, features())
    tgt = np.random.default_rng(4).integers(4, VOCAB, size=(2, 13))
    full = whisper.decode(params, config, tgt, memory)
    cache = DecoderCache(config.decoder_layers)
    steps = [whisper.decode(params, config, tgt[:, :3], memory, cache=cache)]
    steps += [whisper.decode(params, config, tgt[:, i:i + 1], memory,
                             cache=cache) for i in range(3, 13)]
    assert relative(np.concatenate(steps, axis=1), full) < 1e-12
    assert cache.projections == config.decoder_layers  # once per layer


def test_generation_with_and_without_the_cache_agree(model):
    _, params, config = model
    feats, prompt = features(seed=5), np.array([[START, 7], [START, 8]])
    cached = whisper.generate(params, config, feats, prompt, max_new_tokens=9)
    recomputed = whisper.generate(params, config, feats, prompt,
                                  max_new_tokens=9, use_cache=False)
    np.testing.assert_array_equal(cached, recomputed)


@pytest.mark.parametrize("name, value", [("scale_embedding", True),
                                         ("activation_function", "relu"),
                                         ("tie_word_embeddings", False)])
def test_unimplemented_options_are_refused_by_name(name, value):
    hf = HFWhisperConfig(**HF_CONFIG).to_dict() | {name: value}
    with pytest.raises(ValueError, match=f"{name}={value!r} is not impl"):
        whisper.config_from_hf(hf)


@pytest.mark.parametrize("call, words", [
    (lambda p, c: whisper.encode(p, c, np.zeros((1, 7, 20))),
     r"features must be floats of shape \(batch, n_mels=7, 22\)"),
    (lambda p, c: whisper.encode(p, c, np.zeros((7, 22))), "features must"),
    (lambda p, c: whisper.decode(p, c, np.zeros((1, 25), int), None),
     "25 target positions do not fit max_target_positions = 24"),
    (lambda p, c: whisper.generate(p, c, features(), np.full((2, 1), START),
                                   max_new_tokens=25),
     "25 target positions"),
    (lambda p, c: whisper.generate(p, c, features(), np.full((2, 1), START),
                                   max_new_tokens=0), "max_new_tokens must be"),
    (lambda p, c: whisper.decode(p, c, np.array([[VOCAB]]), None),
     rf"ids must lie in 0..{VOCAB - 1}"),
    (lambda p, c: whisper.WhisperConfig(d_model=30, encoder_heads=4),
     "d_model = 30 is not divisible by encoder_heads = 4"),
    (lambda p, c: whisper.conv1d(np.zeros((1, 5, 7)), np.zeros((2, 7, 4)),
                                 np.zeros(4)), r"W \(k, c_in, c_out\) with k odd"),
    (lambda p, c: whisper.conv1d(np.zeros((1, 5, 7)), np.zeros((3, 6, 4)),
                                 np.zeros(4)), r"got x \(1, 5, 7\), W \(3, 6, 4\)"),
    (lambda p, c: whisper.conv1d(np.zeros((1, 5, 7)), np.zeros((3, 7, 4)),
                                 np.zeros(4), stride=0), "stride must be a positive"),
    (lambda p, c: whisper.whisper_positions(4, 7), "d_model must be an even"),
    (lambda p, c: whisper.whisper_positions(-1, 8), "n must be a non-negative"),
])
def test_bad_inputs_are_named(model, call, words):
    _, params, config = model
    with pytest.raises(ValueError, match=words):
        call(params, config)


def test_parameter_shapes_are_what_hugging_face_holds(model):
    _, params, config = model
    assert whisper.parameter_shapes(config) == {k: v.shape
                                                for k, v in params.items()}
