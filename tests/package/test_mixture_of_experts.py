"""Chapter 9's mixture of experts against Hugging Face, float64, through the chapter-3
converter: tiny random Mixtral (softmax, top-2, renormalised; also with a head_dim that
is not hidden / heads), Qwen3-MoE (top-3 of 7, not renormalised), DeepSeek-V3 (sigmoid
routing with a random selection bias, 3 groups of 2 experts of which 2 may be used, 2
shared experts, the first of 3 layers dense, MLA) and gpt-oss (a router with a bias,
softmax over the chosen, a clamped SwiGLU whose limit is small enough to clamp, sinks,
alternating windows), all of odd sizes.

Hugging Face's float32 internals (RMSNorm, RoPE, the routers' ``.float()``) are swapped
for float64 (``float64_hf``); its experts run on the eager path
(``config._experts_implementation = "eager"``: the grouped product rejects float64).
Logits <= 1e-10 relative to their largest value; each token's chosen experts equal
Hugging Face's (as sets: DeepSeek's top-k is unsorted) and their weights <= 1e-12; greedy
generation equal with and without the cache. Random float64 router logits never tie; a
test pins the package's rule for ties (the lower expert index).
"""

import dataclasses

import numpy as np
import pytest
import torch
from transformers import (DeepseekV3Config, DeepseekV3ForCausalLM, GptOssConfig,
                          GptOssForCausalLM, MixtralConfig, MixtralForCausalLM,
                          Qwen3MoeConfig, Qwen3MoeForCausalLM)
from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.families.load_balance import (expert_capacity,
                                             load_balancing_loss,
                                             load_balancing_loss_backward,
                                             router_z_loss)
from attention.families.moe import (MoE, has_mixture, moe_dense, moe_layer,
                                    moe_sparse, qwen3_moe_dense_layers, route)
from attention.families.costs import mla_attention_flops
from attention.families.moe_costs import (CARD_COUNTS, MOE_CONFIGS,
                                          flops_per_token, parameter_counts)
from attention.families.routing import (sigmoid_top_k, softmax_top_k, top_k,
                                        top_k_softmax)
from attention.generation import generate
from attention.model import ModelConfig, block_params, forward, init_params
from tests.package.test_families import COMMON, VOCAB
from tests.package.test_long_context_models import (build, float64_hf,
                                                    hf_greedy, hf_logits, ours,
                                                    relative)

TOL = 1e-10
PLAIN = {"rope_theta": 1000.0, "rope_type": "default"}


def eager(config):
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"  # float64 experts
    return config


def mixtral(**kw):
    return MixtralConfig(**COMMON, hidden_size=30, intermediate_size=13,
                         num_attention_heads=5, num_key_value_heads=1,
                         num_hidden_layers=2, num_local_experts=5,
                         num_experts_per_tok=2, rope_parameters=PLAIN, **kw)


def qwen3_moe(**kw):
    return Qwen3MoeConfig(**(COMMON | dict(
        hidden_size=30, intermediate_size=44, moe_intermediate_size=11,
        num_attention_heads=5, num_key_value_heads=1, head_dim=8,
        num_hidden_layers=2, num_experts=7, num_experts_per_tok=3,
        rope_parameters=PLAIN) | kw))


# Chapter 12: dense and expert layers mixed. Layers 2 and 4 are sparse by the
# step (i + 1 a multiple of 2), and layer index 3 is dense by mlp_only_layers:
# the mixture only in layer 1; without either field, more layers would have one.
MIXED = dict(num_hidden_layers=4, decoder_sparse_step=2, mlp_only_layers=[3])


def deepseek_v3():
    return DeepseekV3Config(
        **COMMON, hidden_size=30, intermediate_size=44,
        moe_intermediate_size=9, num_attention_heads=5, num_key_value_heads=5,
        num_hidden_layers=3, first_k_dense_replace=1, num_mtp_layers=0,
        q_lora_rank=6, kv_lora_rank=7, qk_rope_head_dim=4, qk_nope_head_dim=6,
        v_head_dim=5, n_routed_experts=6, num_experts_per_tok=3, n_group=3,
        topk_group=2, n_shared_experts=2, routed_scaling_factor=2.5,
        rope_parameters=PLAIN)


def gpt_oss():
    return GptOssConfig(
        **COMMON, hidden_size=30, intermediate_size=13, num_attention_heads=5,
        num_key_value_heads=1, head_dim=6, num_hidden_layers=2,
        sliding_window=3, num_local_experts=5, num_experts_per_tok=2,
        swiglu_limit=0.8,  # order-one activations: a limit of 7 never clamps
        rope_parameters={"rope_theta": 1000.0, "rope_type": "yarn",
                         "factor": 4.0, "beta_fast": 8.0, "beta_slow": 1.0,
                         "truncate": False,
                         "original_max_position_embeddings": 16})


MODELS = {"mixtral": (MixtralForCausalLM, mixtral),
          # head_dim 8 != 30 / 5: Hugging Face's Mixtral honours it
          "mixtral head_dim": (MixtralForCausalLM,
                               lambda: mixtral(head_dim=8)),
          "qwen3_moe": (Qwen3MoeForCausalLM, qwen3_moe),
          "qwen3_moe mixed": (Qwen3MoeForCausalLM,
                              lambda: qwen3_moe(**MIXED)),
          "deepseek_v3": (DeepseekV3ForCausalLM, deepseek_v3),
          "gpt_oss": (GptOssForCausalLM, gpt_oss)}


def routers(model):
    """Each mixture layer's router module (Mixtral, Qwen3-MoE and DeepSeek
    call it gate, gpt-oss router)."""
    return [getattr(layer.mlp, "gate", None) or layer.mlp.router
            for layer in model.model.layers
            if hasattr(layer.mlp, "gate") or hasattr(layer.mlp, "router")]


@pytest.fixture(scope="module", params=list(MODELS))
def reference(request):
    cls, make = MODELS[request.param]
    model = build(cls, eager(make()), seed=len(request.param))
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():  # DeepSeek's selection bias is a buffer: randomise
        for router in routers(model):
            if hasattr(router, "e_score_correction_bias"):
                bias = router.e_score_correction_bias
                bias.copy_(0.3 * torch.randn(bias.shape, generator=gen,
                                             dtype=bias.dtype))
    params, config = ours(model)
    return model, params, config


def test_the_converter_reads_each_mixture(reference):
    model, _, config = reference
    c, m = model.config, config.moe
    assert (m.n_experts, m.top_k) == (c.num_local_experts, c.num_experts_per_tok)
    expected = {"mixtral": ("softmax", True, 0, 0, False),
                "qwen3_moe": ("softmax", False, 0, 0, False),
                "deepseek_v3": ("sigmoid", True, 2, 1, False),
                "gpt_oss": ("top_k_softmax", True, 0, 0, True)}[c.model_type]
    assert (m.router, m.renormalise, m.n_shared, m.first_dense,
            m.bias) == expected
    if c.model_type == "deepseek_v3":
        assert (m.n_group, m.topk_group, m.scale) == (3, 2, 2.5)
    if c.model_type == "gpt_oss":
        assert (m.swiglu_limit, config.attn_sinks) == (0.8, True)
        assert config.layer_windows == [3, None]
    mixtures = [i for i in range(config.n_layers) if has_mixture(config, i)]
    assert mixtures == {4: [1], 3: [1, 2]}.get(config.n_layers, [0, 1])


def test_logits_equal_hugging_face(reference):
    model, params, config = reference
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 23))
    assert relative(forward(params, config, ids), hf_logits(model, ids)) <= TOL


def test_every_token_chooses_hugging_faces_experts(reference):
    model, params, config = reference
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(2, 17))
    seen = []
    hooks = [r.register_forward_hook(lambda mod, inp, out: seen.append(out))
             for r in routers(model)]
    try:
        hf_logits(model, ids)
    finally:
        for hook in hooks:
            hook.remove()
    trace = {}
    forward(params, config, ids, trace=trace)
    mixtures = [i for i in range(config.n_layers) if has_mixture(config, i)]
    assert len(seen) == len(mixtures)
    for layer, (_, weights, indices) in zip(mixtures, seen):
        k = config.moe.top_k
        mine_i = trace[f"blocks.{layer}.router.indices"].reshape(-1, k)
        mine_w = trace[f"blocks.{layer}.router.weights"].reshape(mine_i.shape)
        theirs_i, theirs_w = indices.numpy(), weights.numpy()
        order_m, order_t = np.argsort(mine_i, -1), np.argsort(theirs_i, -1)
        assert np.array_equal(np.take_along_axis(mine_i, order_m, -1),
                              np.take_along_axis(theirs_i, order_t, -1))
        assert np.abs(np.take_along_axis(mine_w, order_m, -1)
                      - np.take_along_axis(theirs_w, order_t, -1)).max() <= 1e-12


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_equals_hugging_face(reference, use_cache):
    model, params, config = reference
    prompt = np.random.default_rng(5).integers(2, VOCAB, size=(1, 4))
    new = 12  # past gpt-oss's window of 3 and YaRN's original 16 positions
    theirs = hf_greedy(model, prompt, new, use_cache)
    mine = generate(params, config, prompt, max_new_tokens=new,
                    use_cache=use_cache)
    assert np.array_equal(mine, theirs)


def test_the_sparse_sum_equals_the_dense_reference(reference):
    _, params, config = reference
    last = max(i for i in range(config.n_layers) if has_mixture(config, i))
    p = block_params(params, last)
    x = np.random.default_rng(3).normal(size=(19, config.d_model))
    indices, weights = route(x, p, config.moe)
    dense = moe_dense(x, p, config.moe, indices, weights)
    assert relative(moe_sparse(x, p, config.moe, indices, weights),
                    dense) <= 1e-13


def test_the_float64_swap_moves_mixtral_only_at_float32_rounding():
    swapped = build(MixtralForCausalLM, eager(mixtral()), seed=3)
    shipped = build(MixtralForCausalLM, eager(mixtral()), seed=3,
                    float64=False)
    ids = np.random.default_rng(2).integers(0, VOCAB, size=(1, 20))
    with torch.no_grad():
        as_shipped = shipped(torch.from_numpy(ids)).logits.numpy()
    assert 1e-9 < relative(as_shipped, hf_logits(swapped, ids)) < 1e-5


def test_the_load_balancing_loss_and_its_gradient_equal_autograd():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(29, 7))
    t = torch.from_numpy(logits).requires_grad_(True)
    with float64_hf():
        theirs = load_balancing_loss_func((t,), num_experts=7, top_k=3)
    theirs.backward()
    assert abs(load_balancing_loss(logits, 3) - theirs.item()) <= 1e-14
    assert np.abs(load_balancing_loss_backward(logits, 3)
                  - t.grad.numpy()).max() <= 1e-15
    # one-hot routers: spread evenly the loss is k = 1, all on one expert E
    spread = 50.0 * np.eye(5)[np.arange(10) % 5]
    assert load_balancing_loss(spread, 1) == pytest.approx(1.0, rel=1e-12)
    assert load_balancing_loss(50.0 * np.eye(5)[np.zeros(10, int)],
                               1) == pytest.approx(5.0, rel=1e-12)


def test_the_router_z_loss_equals_switch_transformers():
    from transformers.models.switch_transformers.modeling_switch_transformers \
        import router_z_loss_func
    logits = 3 * np.random.default_rng(5).normal(size=(29, 7))
    theirs = router_z_loss_func(torch.from_numpy(logits)[None]).item()
    assert router_z_loss(logits) == pytest.approx(theirs, rel=1e-14)
    assert router_z_loss(logits + 10) > router_z_loss(logits)  # not shift-free
    with pytest.raises(ValueError, match="router_z_loss: router_logits"):
        router_z_loss(np.zeros(7))


def test_top_k_breaks_ties_by_the_lower_index_and_torch_may_not():
    scores = np.array([1.0, 2.0, 2.0, 0.0, 2.0])
    assert top_k(scores, 2).tolist() == [1, 2]
    # routing.py's docstring: PyTorch's choice among ties is its own
    assert torch.topk(torch.from_numpy(scores), 2).indices.tolist() == [2, 4]
    chosen, weights = softmax_top_k(np.zeros((1, 4)), 2)
    assert chosen.tolist() == [[0, 1]] and np.allclose(weights, 0.5)


def test_top_k_then_softmax_equals_softmax_then_top_k_renormalised():
    logits = np.random.default_rng(6).normal(size=(40, 9)) * 3
    a, b = top_k_softmax(logits, 4), softmax_top_k(logits, 4)
    assert np.array_equal(a[0], b[0]) and np.abs(a[1] - b[1]).max() <= 1e-15


def test_a_groups_excluded_experts_are_never_chosen():
    logits = np.random.default_rng(8).normal(size=(50, 12))
    chosen, _ = sigmoid_top_k(logits, 3, bias=np.zeros(12), n_group=4,
                              topk_group=2)
    assert (np.unique(chosen // 3, axis=None).size == 4
            and max(len(set(row // 3)) for row in chosen) <= 2)


@pytest.mark.parametrize("kwargs, match", [
    ({"bias": np.zeros(5)}, r"bias must have shape \(12,\).*got shape \(5,\)"),
    ({"bias": np.zeros((2, 12))}, r"bias must have shape \(12,\)"),
    ({"n_group": 5}, "n_group = 5 must split the 12 experts"),
    ({"n_group": 12}, "n_group = 12 must split the 12 experts"),
    ({"n_group": 0}, r"n_group must be an integer in 1..12 .*, got 0"),
    ({"n_group": 2.0}, r"n_group must be an integer in 1..12 .*, got 2.0"),
    ({"n_group": 4, "topk_group": 5}, r"topk_group must be an integer in 1..4"),
    ({"n_group": 4, "topk_group": 0}, r"topk_group must be an integer in 1..4"),
    ({"n_group": 4, "topk_group": 1}, r"k = 4 is more than the 3 experts"),
])
def test_sigmoid_routing_names_a_group_count_or_bias_that_does_not_fit(kwargs,
                                                                      match):
    logits = np.random.default_rng(9).normal(size=(5, 12))
    with pytest.raises(ValueError, match=f"sigmoid_top_k: {match}"):
        sigmoid_top_k(logits, 4, **{"bias": np.zeros(12)} | kwargs)


def test_published_counts_match_the_cards():
    for name, config in MOE_CONFIGS.items():
        counts = parameter_counts(config)
        total, active = CARD_COUNTS[name]
        assert counts["total"] / 1e9 == pytest.approx(total, rel=0.01)
        assert min(abs(counts[k] / 1e9 / active - 1) for k in (
            "active", "active_no_embedding")) < 0.04


def test_deepseek_decode_flops_follow_the_absorbed_form():
    # Section 9.3: decoding attends over the latent at size r + d_rope (and
    # r for values), 1.17 GFLOP a layer at 4,096; the weights are counted once.
    c = MOE_CONFIGS["DeepSeek-V3"]
    sizes = dict(n_heads=c.n_heads, kv_lora_rank=c.kv_lora_rank,
                 qk_nope_head_dim=c.qk_nope_head_dim,
                 qk_rope_head_dim=c.qk_rope_head_dim, v_head_dim=c.v_head_dim,
                 absorbed=True)
    reads = (mla_attention_flops(1, 4096, **sizes)
             - mla_attention_flops(1, 0, **sizes))
    assert flops_per_token(c, 0) == 2 * parameter_counts(c)[
        "active_no_embedding"]
    assert (flops_per_token(c, 4096) - flops_per_token(c, 0)
            == c.n_layers * reads)
    assert reads == 2 * c.n_heads * 4096 * (2 * c.kv_lora_rank
                                            + c.qk_rope_head_dim)


MOE = MoE(5, 2, 7)


@pytest.mark.parametrize("make, match", [
    (lambda: MoE(4, 5, 7), "top_k = 5 is larger than n_experts = 4"),
    (lambda: MoE(6, 2, 7, n_group=4, router="sigmoid"), "n_group = 4"),
    (lambda: MoE(6, 2, 7, router="relu"), "router must be one of"),
    (lambda: ModelConfig(arch="gemma2", vocab_size=11, d_model=8,
                         n_layers=2, n_heads=2, moe=MOE),
     "is for arch 'llama' or 'deepseek_v3'"),
    (lambda: ModelConfig(arch="llama", vocab_size=11, d_model=8, n_layers=2,
                         n_heads=2, moe=dataclasses.replace(
                             MOE, first_dense=3)), "first_dense = 3"),
    (lambda: MoE(5, 2, 7, dense_layers=(1, -1)), "dense_layers must be a"),
    (lambda: MoE(5, 2, 7, dense_layers=2), "dense_layers must be a"),
    (lambda: ModelConfig(arch="llama", vocab_size=11, d_model=8, n_layers=2,
                         n_heads=2, moe=dataclasses.replace(
                             MOE, dense_layers=(1, 2))),
     r"dense_layers \[2\] are not layers of a model with n_layers = 2"),
])
def test_bad_mixture_settings_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("args, match", [
    ((10, 2, 0), "n_experts must be an integer >= 1, got 0"),
    ((10, 2, 4, -1), "factor must be a positive finite number.*got -1"),
    ((10, 2, 4, 0.0), "factor must be a positive finite number.*got 0.0"),
    ((10, 2, 4, float("nan")), "factor must be a positive finite.*got nan"),
    ((10, 0, 4), "top_k must be an integer >= 1, got 0"),
    ((-3, 2, 4), "n_tokens must be an integer >= 0, got -3"),
    ((10.5, 2, 4), "n_tokens must be an integer >= 0, got 10.5"),
])
def test_expert_capacity_names_a_count_or_factor_it_cannot_use(args, match):
    with pytest.raises(ValueError, match=f"expert_capacity: {match}"):
        expert_capacity(*args)
    assert expert_capacity(64, 2, 8, 1.25) == 20  # chapter 9's 1.25 row


def test_routers_and_experts_of_the_wrong_shape_are_named():
    config = ModelConfig(arch="llama", vocab_size=11, d_model=8, n_layers=1,
                         n_heads=2, moe=MOE)
    p = block_params(init_params(config, np.random.default_rng(0)), 0)
    x = np.ones((3, 8))
    with pytest.raises(ValueError, match=r"mlp.router.W must have shape "
                                         r"\(8, 5\).*got \(8, 4\)"):
        moe_layer(x, p | {"mlp.router.W": np.ones((8, 4))}, MOE)
    with pytest.raises(ValueError, match=r"mlp.experts.W_up must have shape "
                                         r"\(5, 8, 7\).*got \(5, 8, 6\)"):
        moe_layer(x, p | {"mlp.experts.W_up": np.ones((5, 8, 6))}, MOE)
    with pytest.raises(ValueError, match="k must be an integer in 1..5"):
        top_k(np.ones((3, 5)), 6)
    chosen, weights = route(x, p, MOE)
    with pytest.raises(ValueError, match=r"moe_sparse: .*\(3, 2\)"):
        moe_sparse(x, p, MOE, chosen[:, :1], weights)
    with pytest.raises(ValueError, match=r"moe_dense: .*0..4"):
        moe_dense(x, p, MOE, chosen + 5, weights)


def test_a_flat_expert_stack_is_refused_by_the_converter(reference):
    model, _, config = reference
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    key = next(k for k in state if k.endswith("experts.down_proj"))
    state[key] = state[key][0]
    with pytest.raises(ValueError, match="stacks one matrix per expert"):
        from_hf_state_dict(state, config)


def test_a_sparse_step_that_hugging_face_cannot_use_is_refused():
    config = qwen3_moe()
    config.decoder_sparse_step = 0  # Hugging Face would divide by zero
    with pytest.raises(ValueError, match="decoder_sparse_step must be a "
                                         "positive integer, got 0"):
        config_from_hf(config)


@pytest.mark.parametrize("step, only, dense", [
    (1, [], ()), (2, [], (0, 2, 4)), (1, [0, 4, 9], (0, 4)),
    (3, [], (0, 1, 3, 4)), (2, [1], (0, 1, 2, 4)),
    (7, [], (0, 1, 2, 3, 4))])
def test_qwen3_moe_layouts_follow_hugging_faces_rule(step, only, dense):
    assert qwen3_moe_dense_layers(5, step, only) == dense
    config = qwen3_moe(num_hidden_layers=5, decoder_sparse_step=step,
                       mlp_only_layers=only)
    config._experts_implementation = "eager"
    with torch.device("meta"):
        model = Qwen3MoeForCausalLM(config)
    theirs = tuple(i for i, layer in enumerate(model.model.layers)
                   if not hasattr(layer.mlp, "gate"))
    assert theirs == dense == config_from_hf(config).moe.dense_layers
