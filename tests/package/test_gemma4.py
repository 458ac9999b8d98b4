"""Chapter 12's cross-layer KV sharing (Gemma 4) against Hugging Face's attention layers.

A tiny random ``Gemma4ForCausalLM`` in float64 (hidden 36, 4 query heads over 2 key/value
heads of 6 in sliding layers and of 10 in full ones, a window of 4, proportional RoPE
turning 2 of the full layers' 5 frequencies, per-layer inputs on), six layers of which
the last three share: layer 3 (sliding) reads layer 1, not layer 0, and layers 4 and 5
(full) read layer 2. Hooks catch what enters and leaves every ``self_attn``; the NumPy
layers (``attention.sparse.kv_sharing``) take the same inputs and must give the same
outputs within 1e-10 of the largest, over one full forward and over a prefill then
cached decoding steps, where the cache holds three layers of six.

Hugging Face's float32 internals are swapped for float64 (``float64_hf``; a test shows the
swap moves the logits only at float32 rounding). Sensitivity: with
``num_kv_shared_layers`` = 0 Hugging Face's logits move, and a shared layer that read
the wrong earlier layer would move its output. Only the attention layers are built
here, not the whole Gemma 4 text model. The cache counts (``shared_kv_card``) read
Gemma 3n's and Gemma 4's default configurations, checked here against transformers'.
"""

import numpy as np
import pytest
import torch
from transformers import (DynamicCache, Gemma3nTextConfig, Gemma4ForCausalLM,
                          Gemma4TextConfig)

from attention.checkpoints import config_from_hf
from attention.kv_cache import KVCache
from attention.sparse.kv_sharing import (ProportionalRope, gemma4_attention,
                                         kv_sources)
from attention.sparse.sparse_costs import (GEMMA_3N_E4B, GEMMA_4, Cached,
                                           cache_bytes_at, shared_kv_card)
from tests.package.hf_encoders import float64_hf, randomise

TOL = 1e-10
VOCAB = 67
TYPES = ["sliding_attention", "sliding_attention", "full_attention",
         "sliding_attention", "full_attention", "full_attention"]
ROPES = {"sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
         "full_attention": {"rope_type": "proportional",
                            "partial_rotary_factor": 0.5,
                            "rope_theta": 1000.0}}


def gemma4(n_shared):
    config = Gemma4TextConfig(
        vocab_size=VOCAB, bos_token_id=1, eos_token_id=None, pad_token_id=0,
        hidden_size=36, intermediate_size=20, num_hidden_layers=6,
        num_attention_heads=4, num_key_value_heads=2, head_dim=6,
        global_head_dim=10, sliding_window=4, layer_types=list(TYPES),
        rope_parameters=ROPES, num_kv_shared_layers=n_shared,
        vocab_size_per_layer_input=VOCAB, hidden_size_per_layer_input=4,
        max_position_embeddings=64, final_logit_softcapping=30.0)
    config._attn_implementation = "eager"
    return config


def build(n_shared, seed=4):
    torch.manual_seed(seed)
    with float64_hf():
        model = Gemma4ForCausalLM(gemma4(n_shared))
    return randomise(model.double().eval(), seed)


@pytest.fixture(scope="module")
def model():
    return build(3)


def layer_params(model, i):
    attn = model.model.layers[i].self_attn
    p = {"attn.W_q": attn.q_proj.weight, "attn.W_o": attn.o_proj.weight,
         "attn.q_norm.weight": attn.q_norm.weight}
    if not attn.is_kv_shared_layer:
        p |= {"attn.W_k": attn.k_proj.weight, "attn.W_v": attn.v_proj.weight,
              "attn.k_norm.weight": attn.k_norm.weight}
    return {k: (v.T if v.ndim == 2 else v).detach().numpy()
            for k, v in p.items()}


def caught(model, run):
    """(input, output) of every layer's self_attn while run() runs."""
    seen = {}

    def hook(i):
        def keep(module, args, kwargs, output):
            seen[i] = (kwargs["hidden_states"].detach().numpy(),
                       output[0].detach().numpy())
        return keep
    handles = [layer.self_attn.register_forward_hook(hook(i),
                                                     with_kwargs=True)
               for i, layer in enumerate(model.model.layers)]
    try:
        with torch.no_grad(), float64_hf():
            result = run()
    finally:
        for handle in handles:
            handle.remove()
    return seen, result


def ours(model, inputs, positions, *, cache=None, sources=None):
    """Every layer's output from its input, keys shared as sources says.
    A shared layer's input may be the last tokens only (Hugging Face's
    ``logits_to_keep``): its queries take the last positions."""
    c = model.config
    sources = sources or kv_sources(c.layer_types, c.num_kv_shared_layers)
    shared, outs = {}, []
    for i, kind in enumerate(c.layer_types):
        full = kind == "full_attention"
        outs.append(gemma4_attention(
            inputs[i], layer_params(model, i),
            positions[len(positions) - inputs[i].shape[1]:], shared, layer=i,
            source=sources[i], n_heads=4, d_head=10 if full else 6,
            base=ROPES[kind]["rope_theta"],
            scaling=ProportionalRope(0.5) if full else None,
            window=None if full else c.sliding_window, eps=c.rms_norm_eps,
            cache=cache))
    if cache is not None:
        cache.advance(len(positions))
    return outs


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module")
def full_pass(model):
    ids = torch.from_numpy(np.random.default_rng(2).integers(
        2, VOCAB, size=(2, 11)))
    seen, out = caught(model, lambda: model(ids))
    return ids, seen, out.logits.numpy()


def test_sources_follow_hugging_faces_sharing_modes(model):
    modes = model.config.kv_sharing_modes
    sources = kv_sources(TYPES, 3)
    assert sources == [0, 1, 2, 1, 2, 2]
    for i, mode in enumerate(modes):  # "reuse" reads the kind's "store"
        assert (mode == "reuse") == (sources[i] != i)
        if mode == "reuse":
            assert modes[sources[i]] == "store"
    shared = [layer.self_attn.is_kv_shared_layer
              for layer in model.model.layers]
    assert shared == [False] * 3 + [True] * 3  # no W_k, W_v there


def test_every_layer_equals_hugging_face_over_a_full_pass(model, full_pass):
    _, seen, _ = full_pass
    outs = ours(model, [seen[i][0] for i in range(6)], np.arange(11))
    for i, out in enumerate(outs):
        assert relative(out, seen[i][1]) <= TOL, i


def test_cached_decoding_equals_hugging_face_and_holds_fewer_layers(
        model, full_pass):
    ids, full_seen, _ = full_pass
    hf_cache, cache = DynamicCache(config=model.config), KVCache(6)
    for start, stop in ((0, 7), (7, 8), (8, 9), (9, 10), (10, 11)):
        # as in generate: the shared layers see the prompt's last token only
        seen, _ = caught(model, lambda: model(
            ids[:, start:stop], past_key_values=hf_cache, use_cache=True,
            logits_to_keep=1))
        outs = ours(model, [seen[i][0] for i in range(6)],
                    cache.new_positions(stop - start), cache=cache)
        if start == 0:
            assert [out.shape[1] for out in outs] == [7, 7, 7, 1, 1, 1]
        for i, out in enumerate(outs):
            assert relative(out, seen[i][1]) <= TOL, (start, i)
            # prefill + decode == one forward
            since = stop - out.shape[1]
            assert relative(out, full_seen[i][1][:, since:stop]) <= TOL
    held = [True] * 3 + [False] * 3  # as in Hugging Face's cache
    assert [k is not None for k in cache.keys] == held
    assert [getattr(layer, "keys", None) is not None
            for layer in hf_cache.layers] == held


def test_turning_sharing_off_in_hugging_face_moves_the_logits(full_pass):
    ids, _, logits = full_pass
    unshared = build(0)  # the same draw; layers 3-5 get their own W_k, W_v
    with torch.no_grad(), float64_hf():
        theirs = unshared(ids).logits.numpy()
    assert relative(theirs, logits) > 1e-3


def test_reading_the_wrong_earlier_layer_moves_the_output(model, full_pass):
    _, seen, _ = full_pass
    inputs = [seen[i][0] for i in range(6)]
    wrong = ours(model, inputs, np.arange(11), sources=[0, 1, 2, 0, 2, 2])
    assert relative(wrong[3], seen[3][1]) > 1e-3


def test_float64_internals_move_the_logits_only_at_float32_rounding(
        model, full_pass):
    ids, _, logits = full_pass
    with torch.no_grad():
        as_shipped = model(ids).logits.numpy()  # float32 norms, RoPE, softmax
    assert 1e-12 < relative(as_shipped, logits) < 1e-5


QUERIES_ONLY = {"attn.W_q": np.eye(4), "attn.W_o": np.eye(4),
                "attn.q_norm.weight": np.ones(2)}  # a shared layer's


@pytest.mark.parametrize("call, match", [
    (lambda: kv_sources(["sliding", "full"], 2), "n_shared must be"),
    (lambda: kv_sources(["sliding", "full"], True), "n_shared must be"),
    (lambda: kv_sources(["sliding", "sliding", "full"], 1),
     "layer 2 is 'full' and shares"),
    (lambda: gemma4_attention(np.zeros((1, 2, 4)), QUERIES_ONLY,
                              np.arange(2), {}, layer=1, source=0,
                              n_heads=2, d_head=2, base=100.0),
     "layer 1 reads layer 0's keys"),
    (lambda: gemma4_attention(np.zeros((2, 4)), {}, np.arange(2), {},
                              layer=0, source=0, n_heads=2, d_head=2,
                              base=100.0), r"h must be \(batch, n, d_model"),
    (lambda: gemma4_attention(np.zeros((1, 2, 4)), {}, np.arange(3), {},
                              layer=0, source=0, n_heads=2, d_head=2,
                              base=100.0), r"positions must be \(2,\)"),
    (lambda: gemma4_attention(np.zeros((1, 2, 4)), {"attn.W_q": np.eye(4)},
                              np.arange(2), {}, layer=0, source=0,
                              n_heads=2, d_head=2, base=100.0),
     r"p lacks \['attn.W_o'"),
    (lambda: ProportionalRope(0.0), "fraction must be in"),
    (lambda: shared_kv_card(["sliding", "global"], 0, {"sliding": 4}, 8),
     r"got \['global'\]"),
])
def test_bad_sharing_inputs_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("model_type", ["gemma4_text", "gemma4", "gemma3n"])
def test_the_whole_gemma_models_are_refused_by_name(model_type):
    from transformers import AutoConfig
    with pytest.raises(ValueError, match=f"model_type '{model_type}' is not"):
        config_from_hf(AutoConfig.for_model(model_type))


@pytest.mark.parametrize("card, hf", [(GEMMA_3N_E4B, Gemma3nTextConfig),
                                      (GEMMA_4, Gemma4TextConfig)])
def test_the_gemma_cards_are_hugging_faces_defaults(card, hf):
    types, n_shared, values, window = card
    c = hf()
    assert [t.split("_")[0] for t in c.layer_types] == types
    assert (c.num_kv_shared_layers, c.sliding_window) == (n_shared, window)
    # Gemma 4's full layers have their own head size (per_layer_config)
    layer = getattr(c, "per_layer_config", None) or [c] * len(types)
    sliding, full = (2 * layer[i].num_key_value_heads * layer[i].head_dim
                     for i in (0, types.index("full")))
    assert values == {"sliding": sliding, "full": full}


def test_only_the_layers_that_compute_keys_are_cached():
    types, _, values, window = GEMMA_3N_E4B
    assert shared_kv_card(types, 15, values, window) == [
        Cached(16, 1024, window=512), Cached(4, 1024)]  # 20 of 35 layers
    unshared = shared_kv_card(types, 0, values, window)
    assert unshared == [Cached(28, 1024, window=512), Cached(7, 1024)]
    n = 131072  # the 3 full layers that share cut 3/7 of the long part
    saved = cache_bytes_at(unshared, n) - cache_bytes_at(
        shared_kv_card(types, 15, values, window), n)
    assert saved == (3 * n + 12 * 512) * 1024 * 2
