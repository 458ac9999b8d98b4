"""The decoding loop and the KV cache against Hugging Face Transformers.

References, built in the test from tiny random configurations (no download), float64:
- GPT2LMHeadModel and LlamaForCausalLM (grouped-query: 4 query heads, 2 key/value
  heads) with ``generate(do_sample=False)``: the same token ids, >= 20 new tokens,
  several prompts one at a time and as one left-padded batch.
- Our own forward pass without a cache, recomputed from scratch at every step: the
  logits each token is chosen from agree to <= 1e-12, with and without a sliding window
  (and attention sinks), prefill in one piece or in chunks.
"""

import numpy as np
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.generation import generate, left_pad
from attention.kv_cache import KVCache
from attention.model import forward
# Chapter 3's float64 reference: HF's Llama rounds RMSNorm and RoPE to float32.
from tests.package.test_model import llama_in_float64

TOL = 1e-12
NEW_TOKENS = 24
VOCAB = 64
PROMPTS = [[5, 17, 42, 8, 3, 9], [1, 2, 3], [60, 11], [7], [33, 33, 33, 33, 12, 50, 2, 19]]


def hf_model(arch, seed=0):
    torch.manual_seed(seed)
    common = dict(vocab_size=VOCAB, bos_token_id=0, eos_token_id=None, pad_token_id=0)
    if arch == "gpt2":
        cfg = GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=64,
                         initializer_range=0.3, **common)
        model = GPT2LMHeadModel(cfg)
    else:
        cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                          num_key_value_heads=2, num_hidden_layers=2,
                          max_position_embeddings=64, initializer_range=0.3, **common)
        model = LlamaForCausalLM(cfg)
    model = model.double().eval()
    config = config_from_hf(model.config)
    params = from_hf_state_dict({k: v.numpy() for k, v in model.state_dict().items()},
                                config)
    return model, config, params


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def models(request):
    return hf_model(request.param)


def hf_greedy(model, ids, valid=None):
    ids = torch.from_numpy(np.atleast_2d(ids))
    mask = torch.ones_like(ids) if valid is None else torch.from_numpy(valid.astype(np.int64))
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, do_sample=False,
                             max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                             pad_token_id=0, eos_token_id=None)
    return out.numpy()


@pytest.mark.parametrize("prompt", PROMPTS, ids=[f"len{len(p)}" for p in PROMPTS])
def test_greedy_ids_equal_hf_generate(models, prompt):
    model, config, params = models
    ours = generate(params, config, np.array([prompt]), max_new_tokens=NEW_TOKENS)
    theirs = hf_greedy(model, np.array([prompt]))
    assert ours.shape == (1, len(prompt) + NEW_TOKENS)
    np.testing.assert_array_equal(ours, theirs)
    assert len(np.unique(ours[0, len(prompt):])) > 3  # not one token repeated


def test_left_padded_batch_equals_hf_generate_and_each_prompt_alone(models):
    model, config, params = models
    ids, valid = left_pad(PROMPTS, pad_id=0)
    ours = generate(params, config, ids, valid=valid, max_new_tokens=NEW_TOKENS)
    np.testing.assert_array_equal(ours, hf_greedy(model, ids, valid))
    for b, prompt in enumerate(PROMPTS):  # padding changes nothing for any sequence
        alone = generate(params, config, np.array([prompt]), max_new_tokens=NEW_TOKENS)
        np.testing.assert_array_equal(ours[b, -NEW_TOKENS:], alone[0, -NEW_TOKENS:])


def step_logits(params, config, ids, **kwargs):
    seen = []
    out = generate(params, config, ids, max_new_tokens=NEW_TOKENS,
                   on_step=lambda step, logits: seen.append(logits.copy()), **kwargs)
    return out, np.stack(seen)


@pytest.mark.parametrize("window, n_sinks", [(None, 0), (4, 0), (5, 2), (1, 0)])
def test_cached_logits_equal_recomputed_logits_at_every_step(models, window, n_sinks):
    model, config, params = models
    ids, valid = left_pad(PROMPTS, pad_id=0)
    kw = dict(valid=valid, window=window, n_sinks=n_sinks)
    cached_ids, cached = step_logits(params, config, ids, use_cache=True, **kw)
    fresh_ids, fresh = step_logits(params, config, ids, use_cache=False, **kw)
    np.testing.assert_array_equal(cached_ids, fresh_ids)
    assert cached.shape == (NEW_TOKENS, len(PROMPTS), VOCAB)
    assert np.abs(cached - fresh).max() <= TOL


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_cached_logits_equal_hf_logits_at_every_step(arch):
    model, config, params = hf_model(arch)
    if arch == "llama":
        model = llama_in_float64(model)
    prompt = np.array([PROMPTS[0]])
    ours_ids, ours = step_logits(params, config, prompt)
    with torch.no_grad():
        out = model.generate(torch.from_numpy(prompt), do_sample=False,
                             max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                             output_logits=True, return_dict_in_generate=True,
                             pad_token_id=0, eos_token_id=None)
    theirs = torch.stack(out.logits).numpy()  # (steps, 1, vocab)
    np.testing.assert_array_equal(ours_ids, out.sequences.numpy())
    # generate() hands back its logits cast to float32: agree to float32 rounding.
    assert theirs.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=2**-23, atol=1e-7)
    # In float64: HF's forward pass over the whole generated sequence, position by
    # position, gives the logits our cached steps chose each token from.
    with torch.no_grad():
        full = model(out.sequences).logits.numpy()[0]  # (n + new, vocab)
    n = prompt.shape[1]
    assert np.abs(ours[:, 0] - full[n - 1:-1]).max() <= 1e-10


@pytest.mark.parametrize("chunks", [[6], [1] * 6, [2, 3, 1], [4, 2]])
@pytest.mark.parametrize("window", [None, 3])
def test_chunked_prefill_gives_the_logits_of_one_full_pass(models, chunks, window):
    model, config, params = models
    ids = np.array([[5, 17, 42, 8, 3, 9]])
    full = forward(params, config, ids, window=window)
    cache, pieces, start = KVCache(config.n_layers, window=window), [], 0
    for size in chunks:
        pieces.append(forward(params, config, ids[:, start:start + size], cache=cache))
        start += size
    assert np.abs(np.concatenate(pieces, axis=1) - full).max() <= TOL
    assert len(cache) == 6


def test_stop_token_ends_a_sequence_and_pads_it():
    _, config, params = hf_model("gpt2")
    ids, valid = left_pad(PROMPTS[:3], pad_id=0)
    free = generate(params, config, ids, valid=valid, max_new_tokens=NEW_TOKENS)
    stop = int(free[0, ids.shape[1] + 2])  # the third token sequence 0 generates
    out = generate(params, config, ids, valid=valid, max_new_tokens=NEW_TOKENS,
                   stop_token=stop)
    row = out[0, ids.shape[1]:]
    first = int(np.argmax(row == stop))
    assert first <= 2 and np.all(row[first:] == stop)
    np.testing.assert_array_equal(row[:first], free[0, ids.shape[1]:][:first])


def test_seeded_sampling_is_reproducible_and_differs_across_seeds():
    _, config, params = hf_model("llama")
    prompt = np.array([PROMPTS[0]])
    kw = dict(max_new_tokens=NEW_TOKENS, temperature=1.0, top_p=0.9)
    a = generate(params, config, prompt, rng=np.random.default_rng(1), **kw)
    b = generate(params, config, prompt, rng=np.random.default_rng(1), **kw)
    c = generate(params, config, prompt, rng=np.random.default_rng(2), **kw)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_cached_sampling_equals_uncached_sampling_for_the_same_seed():
    _, config, params = hf_model("gpt2")
    prompt = np.array(PROMPTS[:1])
    kw = dict(max_new_tokens=NEW_TOKENS, temperature=0.8, top_k=10)
    a = generate(params, config, prompt, rng=np.random.default_rng(3), **kw)
    b = generate(params, config, prompt, rng=np.random.default_rng(3), use_cache=False, **kw)
    np.testing.assert_array_equal(a, b)


def test_too_long_for_learned_positions_is_a_clear_error():
    _, config, params = hf_model("gpt2")
    with pytest.raises(ValueError, match="positions must lie in 0..63"):
        generate(params, config, np.array([PROMPTS[0]]), max_new_tokens=70)


# --- Issue 24: generate's and left_pad's checks ---

def tiny():
    from attention.model import ModelConfig, init_params
    config = ModelConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, max_positions=16)
    return init_params(config, np.random.default_rng(0)), config


@pytest.mark.parametrize("kwargs,match", [
    ({"max_new_tokens": -1}, "max_new_tokens must be a non-negative integer, got -1"),
    ({"max_new_tokens": True}, "max_new_tokens must be a non-negative integer, got True"),
    ({"max_new_tokens": 2, "stop_token": 10}, r"stop_token must be None or a token id in 0\.\.9"),
    ({"max_new_tokens": 2, "token_ids": []}, "at least one token"),
])
def test_generate_refuses_bad_settings(kwargs, match):
    params, config = tiny()
    kwargs = {"token_ids": [[1, 2]]} | kwargs
    with pytest.raises(ValueError, match=match):
        generate(params, config, kwargs.pop("token_ids"), **kwargs)


def test_generate_top_k_zero_is_off_and_a_1d_prompt_works():
    params, config = tiny()
    rng = np.random.default_rng
    off = generate(params, config, [1, 2], max_new_tokens=3, temperature=1.0, top_k=0, rng=rng(0))
    plain = generate(params, config, [[1, 2]], max_new_tokens=3, temperature=1.0, rng=rng(0))
    np.testing.assert_array_equal(off, plain)


@pytest.mark.parametrize("prompts", [[], [[1.5, 2.0]], "ab"])
def test_left_pad_refuses_what_is_not_a_list_of_prompts(prompts):
    with pytest.raises(ValueError, match="left_pad: prompt"):
        left_pad(prompts)
