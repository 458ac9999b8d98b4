"""A new model family is one module: this test writes one (a post-norm family whose odd
layers swap SwiGLU for a GELU MLP with biases, so its layers differ), imports it, and
runs the checks every family must pass: its parameters, the forward pass, the KV cache,
left padding, generation and the parameter count, with no other file touched."""

import importlib.util
import math

import numpy as np
import pytest

from attention.family import FAMILIES
from attention.generation import generate, left_pad
from attention.kv_cache import KVCache
from attention.model import ModelConfig, forward, init_params, parameter_shapes
from attention.parameters import count_parameters

MODULE = '''
"""A throwaway family: the original Transformer's post-norm wiring with RMSNorm,
RoPE attention, and a feed-forward chosen per layer."""

from functools import partial

from attention.blocks import attention_shapes, record, rope_attention, swiglu_mlp
from attention.family import Family, register
from attention.feed_forward import mlp
from attention.norms import rms_norm


def gelu_mlp(h, p, config, *, trace=None):
    return mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
               activation="gelu_tanh")


def post_norm_block(x, p, config, positions, *, trace=None, attend_fn=None,
                    dropout=None, ffn):
    eps = config.norm_eps
    a = rope_attention(x, p, config, positions, trace=trace, attend_fn=attend_fn)
    x_mid = rms_norm(x + a, p["norm1.weight"], eps=eps)
    out = rms_norm(x_mid + ffn(x_mid, p, config), p["norm2.weight"], eps=eps)
    record(trace, x=x, x_mid=x_mid, out=out)
    return out


def ffn_of(c, i):
    return swiglu_mlp if i % 2 == 0 else gelu_mlp


def layer_shapes(c, i):
    d, f = c.d_model, c.d_ff
    ffn = ({"mlp.W_gate": (d, f), "mlp.W_up": (d, f), "mlp.W_down": (f, d)}
           if i % 2 == 0 else
           {"mlp.W_in": (d, f), "mlp.b_in": (f,), "mlp.W_out": (f, d),
            "mlp.b_out": (d,)})
    return ({"norm1.weight": (d,)} | attention_shapes(c)
            | {"norm2.weight": (d,)} | ffn)


register(Family(
    name="throwaway",
    parts={"norm": "rms_norm", "mixer": "attention", "ffn": "per layer",
           "wiring": "post_norm", "positions": "rope"},
    block=lambda c, i: partial(post_norm_block, ffn=ffn_of(c, i)),
    layer_shapes=layer_shapes,
    final_norm=lambda x, params, c: rms_norm(x, params["final_norm.weight"],
                                             eps=c.norm_eps),
    norm_shapes=lambda c: {"weight": (c.d_model,)},
))
'''


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    path = tmp_path_factory.mktemp("family") / "throwaway_family.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("throwaway_family", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    yield ModelConfig(arch="throwaway", vocab_size=40, d_model=16, n_layers=3,
                      n_heads=4, n_kv_heads=2, d_ff=24, max_positions=32,
                      tie_embeddings=False)
    del FAMILIES["throwaway"]


@pytest.fixture(scope="module")
def params(config):
    return init_params(config, np.random.default_rng(0), std=0.3)


def test_a_family_is_unknown_until_its_module_registers_it():
    if "throwaway" in FAMILIES:
        pytest.skip("registered by the fixture of this module")
    with pytest.raises(ValueError, match="arch must be one of .*'throwaway'"):
        ModelConfig(arch="throwaway")


def test_its_layers_have_the_shapes_it_declares(config, params):
    shapes = parameter_shapes(config)
    assert {k: v.shape for k, v in params.items()} == shapes
    assert "blocks.0.mlp.W_gate" in shapes and "blocks.1.mlp.b_in" in shapes
    assert count_parameters(config)["total"] == sum(
        math.prod(s) for s in shapes.values())


def test_the_kv_cache_decodes_what_one_pass_computes(config, params):
    ids = np.random.default_rng(1).integers(0, config.vocab_size, (2, 9))
    full = forward(params, config, ids)
    cache = KVCache(config.n_layers)
    steps = [forward(params, config, ids[:, :4], cache=cache)]
    steps += [forward(params, config, ids[:, j:j + 1], cache=cache)
              for j in range(4, 9)]
    assert np.abs(np.concatenate(steps, axis=1) - full).max() <= 1e-12
    assert np.abs(full).max() > 0.1  # not a comparison of zeros


def test_left_padding_changes_nothing_but_the_pads(config, params):
    short, long = [3, 7, 1], [5, 2, 8, 6, 4]
    ids, valid = left_pad([short, long], pad_id=0)
    batched = forward(params, config, ids, valid=valid)
    alone = forward(params, config, np.array(short))
    assert np.abs(batched[0, -3:] - alone).max() <= 1e-12


def test_greedy_generation_runs_with_and_without_the_cache(config, params):
    prompt = np.array([1, 2, 3])
    cached = generate(params, config, prompt, max_new_tokens=5,
                      use_cache=True)
    plain = generate(params, config, prompt, max_new_tokens=5,
                     use_cache=False)
    assert np.array_equal(cached, plain) and cached.shape[-1] == 8
