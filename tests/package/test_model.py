"""Whole models: the NumPy GPT-2 and Llama == Hugging Face's GPT2LMHeadModel and
LlamaForCausalLM (grouped-query attention: fewer KV heads), tiny random configurations
built here (no download), float64, logits <= 1e-10, weights loaded with
attention.checkpoints."""

import numpy as np
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.model import (
    ModelConfig, block_params, forward, init_params, parameter_shapes)

TOL = 1e-10  # float64, whole model
VOCAB, MAX_POS = 64, 64


def randomise(model, seed):
    """Weights of order one everywhere, so that a wrong piece shows in the logits
    (the default initialisation, std 0.02, leaves logits near zero)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if p.ndim == 1:  # norm gains around 1, biases around 0
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * noise)
            else:
                p.copy_(noise / p.shape[-1] ** 0.5)
    return model


class Float64Rotary(torch.nn.Module):
    """LlamaRotaryEmbedding's formula without its casts to float32."""

    def __init__(self, d_head, base):
        super().__init__()
        self.inv_freq = 1.0 / base ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)

    def forward(self, x, position_ids):
        freqs = position_ids[..., None].double() * self.inv_freq  # (batch, n, d_head/2)
        emb = torch.cat((freqs, freqs), dim=-1)                    # (batch, n, d_head)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def llama_in_float64(model):
    """Hugging Face's Llama computes RMSNorm and the RoPE angles in float32 even in a
    float64 model (deliberately, for bf16 training). For a float64 reference, swap each
    LlamaRMSNorm for torch's nn.RMSNorm with the same weight and eps, and the rotary
    table for the same formula in float64. Nothing else changes."""
    for name, module in list(model.named_modules()):
        if isinstance(module, LlamaRMSNorm):
            norm = torch.nn.RMSNorm(module.weight.shape[0], eps=module.variance_epsilon,
                                    dtype=torch.float64)
            with torch.no_grad():
                norm.weight.copy_(module.weight)
            parent, _, attr = name.rpartition(".")
            setattr(model.get_submodule(parent), attr, norm)
    c = model.config
    model.model.rotary_emb = Float64Rotary(c.hidden_size // c.num_attention_heads,
                                           c.rope_parameters["rope_theta"])
    return model


def gpt2_reference(seed=0, **overrides):
    kw = dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=MAX_POS,
              bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**(kw | overrides))).double().eval()
    return randomise(model, seed)


def llama_reference(seed=0, float64=True, **overrides):
    kw = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4,
              num_key_value_heads=2, num_hidden_layers=2, vocab_size=VOCAB,
              max_position_embeddings=MAX_POS, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**(kw | overrides))).double().eval()
    model = randomise(model, seed)
    return llama_in_float64(model) if float64 else model


def ours(model):
    config = config_from_hf(model.config)
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return from_hf_state_dict(state, config), config


def hf_logits(model, ids, positions=None):
    kwargs = {} if positions is None else {"position_ids": torch.from_numpy(positions)[None]}
    with torch.no_grad():
        return model(torch.from_numpy(ids), **kwargs).logits.numpy()


SEQUENCES = {
    "length 1": np.array([[5]]),
    "batch of 3, length 7": np.random.default_rng(1).integers(0, VOCAB, size=(3, 7)),
    "full length (64 positions)": np.random.default_rng(2).integers(0, VOCAB, size=(2, MAX_POS)),
}

REFERENCES = {
    "gpt2": lambda: gpt2_reference(),
    "gpt2 untied, d_ff 80": lambda: gpt2_reference(seed=3, n_inner=80, tie_word_embeddings=False),
    "llama GQA 4q/2kv": lambda: llama_reference(),
    "llama MQA, theta 5e5, tied": lambda: llama_reference(
        seed=4, num_key_value_heads=1, rope_theta=500000.0, tie_word_embeddings=True),
    "llama MHA, 3 layers": lambda: llama_reference(
        seed=5, num_key_value_heads=4, num_hidden_layers=3),
}


@pytest.fixture(scope="module", params=list(REFERENCES))
def reference(request):
    model = REFERENCES[request.param]()
    params, config = ours(model)
    return model, params, config


@pytest.mark.parametrize("sequence", list(SEQUENCES))
def test_logits_match_hugging_face(reference, sequence):
    model, params, config = reference
    ids = SEQUENCES[sequence]
    assert np.abs(forward(params, config, ids) - hf_logits(model, ids)).max() <= TOL


def test_logits_match_near_the_last_position(reference):
    # Tokens at positions 56..63 only (as after a prefix): GPT-2's last table rows,
    # Llama's largest RoPE angles.
    model, params, config = reference
    ids = np.random.default_rng(6).integers(0, VOCAB, size=(2, 8))
    positions = np.arange(MAX_POS - 8, MAX_POS)
    got = forward(params, config, ids, positions=positions)
    assert np.abs(got - hf_logits(model, ids, positions)).max() <= TOL


def test_the_comparison_is_sensitive(reference):
    # Logits of order one, and a small change in one weight moves them well past TOL.
    model, params, config = reference
    ids = SEQUENCES["batch of 3, length 7"]
    expected = hf_logits(model, ids)
    assert np.abs(expected).max() > 0.5
    params = dict(params)
    name = "blocks.1.attn.W_k"
    params[name] = params[name] + 1e-6
    assert np.abs(forward(params, config, ids) - expected).max() > 1e3 * TOL


def test_unbatched_ids_give_unbatched_logits():
    model = llama_reference()
    params, config = ours(model)
    ids = np.array([3, 1, 4, 1, 5])
    assert np.abs(forward(params, config, ids) - hf_logits(model, ids[None])[0]).max() <= TOL


def test_hugging_face_llama_rounds_norm_and_rope_to_float32():
    # Why llama_in_float64 exists: the stock module is float64 only on paper.
    ids = SEQUENCES["batch of 3, length 7"]
    stock = hf_logits(llama_reference(float64=False), ids)
    params, config = ours(llama_reference(float64=False))
    diff = np.abs(forward(params, config, ids) - stock).max()
    assert 1e-9 < diff < 1e-4 * np.abs(stock).max()


def test_trace_records_every_block_and_reproduces_the_logits():
    model = llama_reference()
    params, config = ours(model)
    ids = SEQUENCES["batch of 3, length 7"]
    trace = {}
    logits = forward(params, config, ids, trace=trace)
    for i in range(config.n_layers):
        for key in ("x", "norm1", "q", "k", "v", "weights", "heads", "x_mid", "norm2", "out"):
            assert f"blocks.{i}.{key}" in trace
    assert trace["blocks.0.k"].shape == (3, config.n_kv_heads, 7, config.d_head)
    last = trace[f"blocks.{config.n_layers - 1}.out"]
    np.testing.assert_array_equal(trace["final_norm.in"], last)
    np.testing.assert_allclose(trace["final_norm.out"] @ params["lm_head.W"], logits)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_init_params_has_every_shape_and_runs(arch):
    config = ModelConfig(arch=arch, vocab_size=50, d_model=24, n_layers=2, n_heads=4,
                         n_kv_heads=2 if arch == "llama" else None, max_positions=16,
                         tie_embeddings=arch == "gpt2")
    params = init_params(config, np.random.default_rng(0))
    assert {k: v.shape for k, v in params.items()} == parameter_shapes(config)
    assert set(block_params(params, 1)) == {k[len("blocks.1."):] for k in params
                                             if k.startswith("blocks.1.")}
    logits = forward(params, config, np.arange(10)[None])
    assert logits.shape == (1, 10, 50) and np.isfinite(logits).all()
    again = init_params(config, np.random.default_rng(0))
    assert all(np.array_equal(params[k], again[k]) for k in params)


def test_init_params_shrinks_the_residual_projections():
    config = ModelConfig(vocab_size=10, d_model=64, n_layers=8, n_heads=4, max_positions=8)
    params = init_params(config, np.random.default_rng(0))
    assert params["blocks.0.attn.W_q"].std() == pytest.approx(0.02, rel=0.05)
    assert params["blocks.0.attn.W_o"].std() == pytest.approx(0.02 / 4, rel=0.05)
    assert params["blocks.0.mlp.W_out"].std() == pytest.approx(0.02 / 4, rel=0.05)
    assert not params["blocks.0.attn.b_q"].any() and (params["final_norm.weight"] == 1).all()


def test_forward_errors_name_the_problem():
    config = ModelConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, max_positions=4)
    params = init_params(config, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"token ids must lie in 0..9, got 0..10"):
        forward(params, config, np.array([0, 10]))
    with pytest.raises(ValueError, match=r"integers of shape"):
        forward(params, config, np.array([0.5]))
    with pytest.raises(ValueError, match=r"positions must lie in 0..3, got 0..4"):
        forward(params, config, np.arange(5) % 10)
    with pytest.raises(ValueError, match=r"positions must be integers of shape \(2,\),"):
        forward(params, config, np.array([1, 2]), positions=np.arange(3))


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="not divisible by n_heads = 5"):
        ModelConfig(d_model=32, n_heads=5)
    with pytest.raises(ValueError, match="n_kv_heads = 3"):
        ModelConfig(arch="llama", d_model=32, n_heads=4, n_kv_heads=3)
    with pytest.raises(ValueError, match="arch must be one of"):
        ModelConfig(arch="bert")
    assert ModelConfig(d_model=32, n_heads=4).d_ff == 128


def test_every_block_matches_hugging_face_hidden_states(reference):
    # Per layer, float64: <= 1e-12. HF's hidden_states[i + 1] is the output of block i
    # (the last one has the final norm applied, so compare it with ours after the norm).
    model, params, config = reference
    ids = SEQUENCES["batch of 3, length 7"]
    with torch.no_grad():
        hidden = model(torch.from_numpy(ids), output_hidden_states=True).hidden_states
    trace = {}
    forward(params, config, ids, trace=trace)
    np.testing.assert_array_equal(trace["blocks.0.x"], hidden[0].numpy())
    for i in range(config.n_layers - 1):
        assert np.abs(trace[f"blocks.{i}.out"] - hidden[i + 1].numpy()).max() <= 1e-12
    assert np.abs(trace["final_norm.out"] - hidden[-1].numpy()).max() <= 1e-12


# --- Issue 24: cached decoding of one 1-D sequence, list valid, input checks ---

def test_cached_decode_of_one_1d_sequence_equals_the_uncached_forward():
    from attention.kv_cache import KVCache
    for arch in ("gpt2", "llama"):
        config = ModelConfig(arch=arch, vocab_size=16, d_model=8, n_layers=2, n_heads=2,
                             max_positions=8)
        params = init_params(config, np.random.default_rng(0), std=0.5)
        cache = KVCache(config.n_layers)
        first = forward(params, config, [1, 2, 3], cache=cache)
        step = forward(params, config, [4], cache=cache)
        full = forward(params, config, [1, 2, 3, 4])
        assert first.shape == (3, 16) and step.shape == (1, 16)
        np.testing.assert_allclose(np.concatenate([first, step]), full, rtol=0, atol=1e-12)


def test_list_valid_works_with_and_without_a_cache():
    from attention.kv_cache import KVCache
    config = ModelConfig(arch="llama", vocab_size=16, d_model=8, n_layers=1, n_heads=2,
                         max_positions=8)
    params = init_params(config, np.random.default_rng(0), std=0.5)
    ids, valid = [[0, 5]], [[False, True]]
    plain = forward(params, config, ids, valid=valid)
    cached = forward(params, config, ids, valid=valid, cache=KVCache(1))
    np.testing.assert_allclose(cached, plain, rtol=0, atol=1e-12)


@pytest.mark.parametrize("positions", [np.array([0.0, 1.0]), np.array([0, np.nan]),
                                       np.array([False, True])])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_positions_must_be_integers(arch, positions):
    config = ModelConfig(arch=arch, vocab_size=10, d_model=8, n_layers=1, n_heads=2)
    params = init_params(config, np.random.default_rng(0))
    with pytest.raises(ValueError, match="positions must be integers of shape"):
        forward(params, config, [1, 2], positions=positions)


def test_valid_errors_speak_of_valid_and_window_is_not_ignored_with_a_cache():
    from attention.kv_cache import KVCache
    config = ModelConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2)
    params = init_params(config, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"valid must be booleans.*\(1, 3\)"):
        forward(params, config, [[1, 2, 3]], valid=[[True, True]])
    with pytest.raises(ValueError, match=r"valid must be booleans"):
        forward(params, config, [[1, 2]], valid=[[1, 0]])
    with pytest.raises(ValueError, match=r"window is the cache's"):
        forward(params, config, [[1, 2]], cache=KVCache(1), window=3)
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        forward(params, config, [[1, 2]], cache={})


@pytest.mark.parametrize("fields,match", [
    ({"d_model": np.int64(8)}, None),
    ({"norm_eps": -1e-5}, "norm_eps"), ({"norm_eps": np.nan}, "norm_eps"),
    ({"rope_base": 0.0}, "rope_base"), ({"rope_base": -10.0}, "rope_base"),
    ({"rope_base": np.nan}, "rope_base"), ({"tie_embeddings": "no"}, "tie_embeddings"),
    ({"n_layers": 2.0}, "n_layers must be a positive integer, got 2.0"),
])
def test_model_config_validates_every_field(fields, match):
    base = dict(vocab_size=10, d_model=8, n_layers=1, n_heads=2)
    if match is None:
        config = ModelConfig(**(base | fields))
        assert config == ModelConfig(**base) and type(config.d_model) is int
        return
    with pytest.raises(ValueError, match=match):
        ModelConfig(**(base | fields))
