"""Chapter 11's fast decoder (``attention.serving.fast_decode``) against the simple path.

float64, tiny models (GPT-2, and Llama with grouped-query attention: 4 query heads on 2
and on 1 key/value heads, both RoPE layouts, an untied head): the logits of the prefill's
last position and of every cached step equal ``forward``'s one pass over the whole
sequence to 1e-12; ``fast_generate`` gives ``generate``'s tokens, greedy and sampled, one
prompt, a left-padded batch, and with a stop token. ``generate`` itself is checked against
Hugging Face in tests/package/test_generation.py.
"""

import numpy as np
import pytest

from attention._blas_threads import _bundled_openblas, blas_threads
from attention.generation import generate, left_pad
from attention.model import ModelConfig, forward, init_params
from attention.serving.fast_decode import Decoder, fast_generate, prepare

TOL = 1e-12
VOCAB, PROMPT, NEW = 64, 7, 9
CONFIGS = {
    "gpt2": ModelConfig(vocab_size=VOCAB, d_model=32, n_layers=2, n_heads=4,
                        max_positions=64),
    "llama-gqa": ModelConfig(arch="llama", vocab_size=VOCAB, d_model=32,
                             n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48,
                             max_positions=64, tie_embeddings=False),
    "llama-mqa-interleaved": ModelConfig(
        arch="llama", vocab_size=VOCAB, d_model=32, n_layers=2, n_heads=4,
        n_kv_heads=1, d_ff=48, max_positions=64, rope_layout="interleaved"),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def model(request):
    config = CONFIGS[request.param]
    params = init_params(config, np.random.default_rng(0), std=0.3)
    return params, config, prepare(params, config)


def test_cached_logits_equal_one_pass(model):
    params, config, weights = model
    ids = np.random.default_rng(1).integers(0, VOCAB, (3, PROMPT))
    full = generate(params, config, ids, max_new_tokens=NEW)
    decoder = Decoder(weights, 3, PROMPT + NEW)
    logits = [decoder.prefill(ids)]  # the last prompt position's only
    logits += [decoder.step(full[:, PROMPT + t]) for t in range(NEW - 1)]
    reference = forward(params, config, full[:, :-1])[:, PROMPT - 1:]
    assert logits[0].shape == (3, VOCAB)
    np.testing.assert_allclose(np.stack(logits, axis=1), reference, rtol=0,
                               atol=TOL)


def test_greedy_tokens_equal_generate(model):
    params, config, weights = model
    ids = np.random.default_rng(2).integers(0, VOCAB, (4, PROMPT))
    np.testing.assert_array_equal(
        fast_generate(weights, ids, max_new_tokens=NEW),
        generate(params, config, ids, max_new_tokens=NEW))
    one = ids[0]  # a single prompt (n,) gives (1, n + new), as generate
    np.testing.assert_array_equal(
        fast_generate(weights, one, max_new_tokens=NEW),
        generate(params, config, one, max_new_tokens=NEW))


def test_left_padded_and_sampled_tokens_equal_generate(model):
    params, config, weights = model
    ids, valid = left_pad([[1, 2, 3], [4, 5, 6, 7, 8], [9]])
    kw = dict(valid=valid, max_new_tokens=NEW, temperature=0.9, top_k=8)
    np.testing.assert_array_equal(
        fast_generate(weights, ids, rng=np.random.default_rng(3), **kw),
        generate(params, config, ids, rng=np.random.default_rng(3), **kw))
    kw = dict(valid=valid, max_new_tokens=NEW)
    np.testing.assert_array_equal(fast_generate(weights, ids, **kw),
                                  generate(params, config, ids, **kw))


def test_stop_token_ends_like_generate(model):
    params, config, weights = model
    ids = np.random.default_rng(4).integers(0, VOCAB, (2, PROMPT))
    stop = int(generate(params, config, ids, max_new_tokens=3)[0, -1])
    kw = dict(max_new_tokens=NEW, stop_token=stop)
    np.testing.assert_array_equal(fast_generate(weights, ids, **kw),
                                  generate(params, config, ids, **kw))


def test_the_prepared_copy_ignores_later_in_place_updates(model):
    params, config, weights = model
    ids = np.arange(PROMPT)
    before = fast_generate(weights, ids, max_new_tokens=NEW)
    changed = {k: v.copy() for k, v in params.items()}
    prepared = prepare(changed, config)
    for v in changed.values():  # what an optimiser's in-place step does
        v *= -1.0
    np.testing.assert_array_equal(
        fast_generate(prepared, ids, max_new_tokens=NEW), before)


def test_errors_name_the_fault():
    gemma = ModelConfig(arch="gemma2", vocab_size=VOCAB, d_model=32,
                        n_layers=2, n_heads=4, max_positions=64)
    with pytest.raises(ValueError, match="norm 'gemma_rms_norm'"):
        prepare(init_params(gemma, np.random.default_rng(0)), gemma)
    windowed = ModelConfig(arch="llama", vocab_size=VOCAB, d_model=32,
                           n_layers=2, n_heads=4, sliding_window=4)
    with pytest.raises(ValueError, match="sliding_window=4"):
        prepare(init_params(windowed, np.random.default_rng(0)), windowed)
    config = CONFIGS["gpt2"]
    params = init_params(config, np.random.default_rng(0))
    with pytest.raises(TypeError, match="weights must come from prepare"):
        fast_generate(params, [1, 2], max_new_tokens=2)
    with pytest.raises(ValueError, match="max_new_tokens"):
        fast_generate(prepare(params, config), [1, 2], max_new_tokens=-1)
    with pytest.raises(ValueError, match="length must lie in 1..64"):
        Decoder(prepare(params, config), 1, 65)
    decoder = Decoder(prepare(params, config), 1, 3)
    with pytest.raises(ValueError, match=r"ids must be token ids in 0..63"):
        decoder.prefill(np.array([[1, 2, VOCAB]]))
    with pytest.raises(ValueError, match=r"valid must be booleans of shape"):
        decoder.prefill(np.array([[1, 2, 3]]), valid=np.ones((1, 2), bool))
    decoder.prefill(np.array([[1, 2, 3]]))
    with pytest.raises(ValueError, match=r"new must be token ids .* 1 rows"):
        decoder.step(np.array([4, 5]))
    with pytest.raises(ValueError, match="4 slots needed, 3 allocated"):
        decoder.step(np.array([4]))


@pytest.mark.skipif(not _bundled_openblas(), reason="NumPy's OpenBLAS only")
def test_blas_threads_sets_and_restores():
    get, _ = _bundled_openblas()
    before = get()
    with blas_threads(1):
        assert get() == 1
        with blas_threads(None):  # None leaves the setting alone
            assert get() == 1
    assert get() == before
