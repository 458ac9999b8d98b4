"""Hugging Face GPT-2 and Llama weights -> this package's parameter dict (NumPy only).

Chapter 8 adds Mistral and Ministral, chapter 9 Qwen3, Gemma 2, DeepSeek-V3 and the
mixtures of experts (Mixtral, Qwen3-MoE, DeepSeek-V3's MoE layers, gpt-oss), each a row of
``FAMILIES`` (and, where its names differ, a block reader).

``from_hf_state_dict`` takes a state dict whose values are already NumPy arrays (for
example ``{k: v.numpy() for k, v in model.state_dict().items()}``) and renames, splits and
transposes them; ``config_from_hf`` reads a Hugging Face configuration object by its
attribute names. Neither imports torch or transformers.

What changes on the way:
- GPT-2 stores its projections as ``Conv1D`` modules whose weight is already (d_in,
  d_out), the layout used here, and packs W_q, W_k and W_v side by side in ``c_attn``:
  split its columns in three.
- Llama uses ``nn.Linear``, whose weight is (d_out, d_in): transpose. Its q_proj/k_proj
  rows are in the "halves" RoPE layout (Hugging Face's ``rotate_half``); Meta's original
  checkpoints use "interleaved" (see ``attention.positions.rope_weights_to_layout``).
"""

# --8<-- [start:imports]
import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from attention.families.moe import MoE, qwen3_moe_dense_layers
from attention.linear.gated_deltanet import GatedDeltaNetConfig
from attention.linear.kda import KDAConfig
from attention.linear.lightning import LightningConfig
from attention.long_context.rope_scaling import ROPE_TYPES, RopeScaling
from attention.families.deepseek_v4 import SCORES, V4Sizes
from attention.family import family_of
from attention.model import ModelConfig, parameter_shapes
from attention.sparse.indexer import Indexer
# --8<-- [end:imports]


# --8<-- [start:config_from_hf]
@dataclass(frozen=True)
class Family:
    """How one Hugging Face model family maps onto ModelConfig.

    Every field of the Hugging Face configuration falls in one of three
    groups; a field in none of them is refused unless it has its default.
    """
    arch: str        # ModelConfig.arch
    read: dict       # HF field -> ModelConfig field, or (field or fields,
    #                  function of (value, config) giving its value or values);
    #                  a tuple of HF fields passes their values as a tuple
    accepted: dict   # HF field -> the values implemented (or a test of config)
    inert: frozenset  # fields that do not change the logits in eval mode
    fixed: dict = dataclasses.field(default_factory=dict)  # ModelConfig
    #                  fields every model of the family has (chapter 9)


# Fields every PretrainedConfig has. None changes what forward computes:
# what the model returns (hidden states, dict or tuple), its labels, its dtype
# (the arrays come with their own), and chunking, which GPT-2 and Llama never
# use.
COMMON_INERT = frozenset({
    "transformers_version", "architectures", "output_hidden_states",
    "return_dict", "dtype", "chunk_size_feed_forward", "id2label", "label2id",
    "problem_type", "use_cache", "bos_token_id", "eos_token_id",
    "pad_token_id", "initializer_range"})
COMMON_ACCEPTED = {"is_encoder_decoder": (False,)}


def _rope(rope, c):
    """Llama's rope_parameters -> RoPE's (base, scaling): chapter 8."""
    rope = rope or {"rope_type": "default", "rope_theta": 10000.0}
    return (float(rope.get("rope_theta", 10000.0)),
            _rope_scaling(rope, c.max_position_embeddings))


def _layer_types(types, c):
    """Hugging Face's layer_types -> "sliding"/"full" per layer (None: all
    alike): chapter 8."""
    if types is None or c.sliding_window is None:
        return None
    names = {"sliding_attention": "sliding", "full_attention": "full"}
    unknown = sorted(set(types) - set(names))
    if unknown:
        raise ValueError(f"config_from_hf: layer_types {unknown} are not "
                         f"implemented (only {sorted(names)})")
    return tuple(names[t] for t in types)


FAMILIES = {
    "gpt2": Family(
        arch="gpt2",
        read={"vocab_size": "vocab_size", "n_embd": "d_model",
              "n_layer": "n_layers", "n_head": "n_heads", "n_inner": "d_ff",
              "n_positions": "max_positions",
              "layer_norm_epsilon": "norm_eps",
              "tie_word_embeddings": "tie_embeddings"},
        accepted={"activation_function": ("gelu_new", "gelu_pytorch_tanh"),
                  "scale_attn_weights": (True,),
                  "scale_attn_by_inverse_layer_idx": (False,),
                  "reorder_and_upcast_attn": (False,),  # float32 inside
                  "add_cross_attention": (False,)},
        # dropout (training only) and GPT2DoubleHeadsModel's summary head
        inert=frozenset({"resid_pdrop", "embd_pdrop", "attn_pdrop",
                         "summary_type", "summary_use_proj",
                         "summary_activation", "summary_proj_to_labels",
                         "summary_first_dropout"})),
    "llama": Family(
        arch="llama",
        read={"vocab_size": "vocab_size", "hidden_size": "d_model",
              "num_hidden_layers": "n_layers",
              "num_attention_heads": "n_heads",
              "num_key_value_heads": "n_kv_heads",
              "intermediate_size": "d_ff",
              "max_position_embeddings": "max_positions",
              "rms_norm_eps": "norm_eps",
              "tie_word_embeddings": "tie_embeddings",
              "attention_bias": "attn_bias",
              "rope_parameters": (("rope_base", "rope_scaling"), _rope)},
        accepted={"hidden_act": ("silu",), "mlp_bias": (False,),
                  # d_head is d_model / n_heads here
                  "head_dim": lambda c: c.head_dim in (
                      None, c.hidden_size // c.num_attention_heads)},
        # dropout (training only); pretraining_tp splits no product in 5.x
        inert=frozenset({"attention_dropout", "pretraining_tp"})),
}
# Chapter 8: Mistral is Llama with a sliding window on every layer (no
# biases, and a head_dim of its own, which Hugging Face's Mistral honours);
# Ministral names each layer's type, sliding or full.
_MISTRAL_READ = {k: v for k, v in FAMILIES["llama"].read.items()
                 if k != "attention_bias"} | {
    "sliding_window": "sliding_window", "head_dim": "head_dim"}
FAMILIES["mistral"] = dataclasses.replace(
    FAMILIES["llama"], read=_MISTRAL_READ,
    accepted={k: v for k, v in FAMILIES["llama"].accepted.items()
              if k != "head_dim"})
FAMILIES["ministral"] = dataclasses.replace(
    FAMILIES["mistral"], read=_MISTRAL_READ | {
        "layer_types": ("layer_types", _layer_types)})
# Chapter 12: DiffLlama is Llama with differential attention (its λ vectors
# are weights of the state dict) and a head size of its own.
FAMILIES["diffllama"] = dataclasses.replace(
    FAMILIES["llama"], arch="diffllama",
    read=FAMILIES["llama"].read | {"head_dim": "head_dim"},
    accepted={"hidden_act": ("silu",)},
    # lambda_std_dev sets λ's initialisation only; attention_dropout is for
    # training (Hugging Face refuses any above 0 for this family)
    inert=frozenset({"attention_dropout", "lambda_std_dev"}))
# OLMo 2: Llama's fields, its norms after each branch and over the whole
# query and key projections (its own family).
FAMILIES["olmo2"] = dataclasses.replace(
    FAMILIES["llama"], arch="olmo2", accepted={"hidden_act": ("silu",)},
    inert=frozenset({"attention_dropout"}), fixed={"qk_norm": "projection"})
# Chapter 9: Qwen3 is Llama with RMSNorm on each head's query and key, and a
# head size of its own; its sliding window is refused (no test covers it).
FAMILIES["qwen3"] = dataclasses.replace(
    FAMILIES["llama"],
    read=FAMILIES["llama"].read | {"head_dim": "head_dim"},
    accepted={"hidden_act": ("silu",), "use_sliding_window": (False,),
              "layer_types": lambda c: set(c.layer_types) <= {
                  "full_attention"}},
    # without use_sliding_window HF sets no window (sliding_window None)
    inert=frozenset({"attention_dropout", "sliding_window",
                     "max_window_layers"}),
    fixed={"qk_norm": "head"})
FAMILIES["gemma2"] = Family(
    arch="gemma2",
    read={"vocab_size": "vocab_size", "hidden_size": "d_model",
          "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
          "num_key_value_heads": "n_kv_heads", "head_dim": "head_dim",
          "intermediate_size": "d_ff",
          "max_position_embeddings": "max_positions",
          "rms_norm_eps": "norm_eps", "tie_word_embeddings": "tie_embeddings",
          "rope_parameters": (("rope_base", "rope_scaling"), _rope),
          "query_pre_attn_scalar": ("attn_scale", lambda s, c: s ** -0.5),
          "attn_logit_softcapping": "attn_softcap",
          "final_logit_softcapping": "final_softcap",
          "sliding_window": "sliding_window",
          "layer_types": ("layer_types", _layer_types)},
    accepted={"hidden_activation": ("gelu_pytorch_tanh",),
              "attention_bias": (False,),
              "use_bidirectional_attention": (None, False)},
    inert=frozenset({"attention_dropout"}))


def _mla_scale(rope, c):
    """DeepSeek-V3's softmax scale: 1/sqrt(d_nope + d_rope), times YaRN's
    mscale(factor, mscale_all_dim) squared where that is set."""
    scale = (c.qk_nope_head_dim + c.qk_rope_head_dim) ** -0.5
    rope = rope or {}
    all_dim = rope.get("mscale_all_dim") or 0
    factor = rope.get("factor", 1.0)
    if rope.get("rope_type", "default") != "default" and all_dim and factor > 1:
        mscale = 0.1 * all_dim * math.log(factor) + 1.0
        scale = scale * mscale * mscale
    return scale


def _deepseek_moe(values, c):
    """DeepSeek-V3's experts (None where first_k_dense_replace covers every
    layer): sigmoid routing, groups, shared experts, dense first layers."""
    E, k, d_ff, norm, scale, groups, topk_group, shared, dense = values
    if dense >= c.num_hidden_layers:
        return None
    return MoE(E, k, d_ff, router="sigmoid", renormalise=norm, scale=scale,
               n_group=groups, topk_group=topk_group, n_shared=shared,
               first_dense=dense)


FAMILIES["deepseek_v3"] = Family(
    arch="deepseek_v3",
    read={k: v for k, v in FAMILIES["llama"].read.items()
          if k != "attention_bias"} | {
        "rope_parameters": (("rope_base", "rope_scaling", "attn_scale"),
                            lambda r, c: (*_rope(r, c), _mla_scale(r, c))),
        "rope_interleave": ("rope_layout", lambda i, c: (
            "interleaved" if i else "halves")),
        "q_lora_rank": "q_lora_rank", "kv_lora_rank": "kv_lora_rank",
        "qk_rope_head_dim": "qk_rope_head_dim",
        "qk_nope_head_dim": "qk_nope_head_dim", "v_head_dim": "v_head_dim",
        ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
         "norm_topk_prob", "routed_scaling_factor", "n_group", "topk_group",
         "n_shared_experts", "first_k_dense_replace"): ("moe", _deepseek_moe)},
    # Hugging Face's MLA norms (q_a_layernorm, kv_a_layernorm) keep their
    # default eps of 1e-6 whatever rms_norm_eps says, while the layer norms
    # read it; the package has one eps: only 1e-6 makes them all agree.
    accepted={"hidden_act": ("silu",), "attention_bias": (False,),
              "rms_norm_eps": (1e-6,)},
    # what the model returns (router logits), training only (the aux loss
    # needs router logits), dropout; num_mtp_layers counts the multi-token
    # prediction modules (default 1), which Hugging Face's forward never
    # runs (only generate(use_mtp=True) drafts with them): not built here
    inert=frozenset({"output_router_logits", "attention_dropout",
                     "pretraining_tp", "num_mtp_layers"}))


def _dense_then_sparse(c):
    """DeepSeek-V3.2's mlp_layer_types, as first_k_dense_replace makes them
    (the only layout read: MoE.first_dense)."""
    dense = min(c.first_k_dense_replace, c.num_hidden_layers)
    return list(c.mlp_layer_types) == (
        ["dense"] * dense + ["sparse"] * (c.num_hidden_layers - dense))


# Chapter 12: DeepSeek-V3.2 is DeepSeek-V3 with the lightning indexer. Its
# MLA always rotates interleaved pairs (it has no rope_interleave field).
FAMILIES["deepseek_v32"] = Family(
    arch="deepseek_v32",
    read={k: v for k, v in FAMILIES["deepseek_v3"].read.items()
          if k != "rope_interleave"} | {
        ("index_n_heads", "index_head_dim", "index_topk"): (
            "indexer", lambda v, c: Indexer(*v))},
    accepted=FAMILIES["deepseek_v3"].accepted | {
        "mlp_bias": (False,),
        "mlp_layer_types": _dense_then_sparse,
        "layer_types": lambda c: set(c.layer_types) == {"indexed_attention"}},
    # head_dim: Hugging Face sets it to qk_rope_head_dim (its RoPE's size)
    inert=FAMILIES["deepseek_v3"].inert - {"pretraining_tp", "num_mtp_layers"}
    | {"head_dim"},
    fixed={"rope_layout": "interleaved"})


# GLM-5 (glm_moe_dsa) is DeepSeek-V3.2's design with an indexer that rotates
# interleaved pairs; its layers that reuse an earlier layer's choice
# (indexer_types "shared") are refused.
FAMILIES["glm_moe_dsa"] = dataclasses.replace(
    FAMILIES["deepseek_v32"],
    read=FAMILIES["deepseek_v32"].read | {
        ("index_n_heads", "index_head_dim", "index_topk"): (
            "indexer", lambda v, c: Indexer(*v, rope_layout="interleaved"))},
    accepted=FAMILIES["deepseek_v32"].accepted | {
        "indexer_types": lambda c: set(c.indexer_types) == {"full"}})


# Chapter 9's mixtures of experts. Hugging Face's settings that only change
# training (the auxiliary loss's coefficient, Mixtral's router jitter) or what
# the model returns (output_router_logits) leave the logits alone.
_MOE_INERT = frozenset({"router_aux_loss_coef", "output_router_logits",
                        "router_jitter_noise"})
FAMILIES["mixtral"] = dataclasses.replace(
    FAMILIES["mistral"],
    read=_MISTRAL_READ | {("num_local_experts", "num_experts_per_tok",
                           "intermediate_size"): (
                              "moe", lambda v, c: MoE(*v))},
    inert=FAMILIES["llama"].inert | _MOE_INERT)
# Qwen3-MoE mixes dense and expert layers: its layout is one more field of
# the MoE it reads (chapter 12).
FAMILIES["qwen3_moe"] = dataclasses.replace(
    FAMILIES["qwen3"],
    read=FAMILIES["qwen3"].read | {
        ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
         "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers"): (
            "moe", lambda v, c: MoE(*v[:3], renormalise=v[3],
                                    dense_layers=qwen3_moe_dense_layers(
                                        c.num_hidden_layers, *v[4:])))},
    inert=FAMILIES["qwen3"].inert | _MOE_INERT)
FAMILIES["gpt_oss"] = dataclasses.replace(
    FAMILIES["llama"],
    read=FAMILIES["llama"].read | {
        "head_dim": "head_dim", "sliding_window": "sliding_window",
        "layer_types": ("layer_types", _layer_types),
        ("num_local_experts", "num_experts_per_tok", "intermediate_size",
         "swiglu_limit", "swiglu_alpha"): ("moe", lambda v, c: MoE(
             *v[:3], router="top_k_softmax", bias=True, swiglu_limit=v[3],
             swiglu_alpha=v[4]))},
    # its experts ignore hidden_act: the clamped SwiGLU is written out
    accepted={}, inert=FAMILIES["llama"].inert | _MOE_INERT | {"hidden_act"},
    fixed={"attn_sinks": True})


# Chapter 12: the hybrids. Qwen3-Next and Qwen3.5 rotate a fraction of each
# head (partial_rotary_factor); Qwen3.5's text positions are the same in its
# three mRoPE grids (time, height, width), which makes mRoPE plain RoPE, so
# its mrope_* keys change nothing for text.
def _partial_rope(rope, c):
    """rope_parameters -> (base, scaling, the fraction of d_head rotated)."""
    rope = dict(rope or {})
    fraction = rope.pop("partial_rotary_factor", 1.0)
    for key in ("mrope_section", "mrope_interleaved"):
        rope.pop(key, None)
    return (*_rope(rope, c), fraction)


def _hybrid_layers(types, c):
    """Hugging Face's layer_types -> "linear"/"full" per layer."""
    names = {"linear_attention": "linear", "full_attention": "full"}
    unknown = sorted(set(types) - set(names))
    if unknown:
        raise ValueError(f"config_from_hf: layer_types {unknown} are not "
                         f"implemented (only {sorted(names)})")
    return tuple(names[t] for t in types)


def _deltanet(values, c):
    """The linear_* fields -> the Gated DeltaNet layers' sizes."""
    H_qk, H_v, d_k, d_v, K = values
    return GatedDeltaNetConfig(
        d_model=c.hidden_size, n_qk_heads=H_qk, n_v_heads=H_v, d_k=d_k,
        d_v=d_v, conv_kernel=K, norm_eps=c.rms_norm_eps)


def _qwen3_next_moe(values, c):
    """Qwen3-Next's experts: softmax top-k, one shared expert of its own
    width under a sigmoid gate (None: num_experts 0, all dense)."""
    E, k, d_ff, norm, d_shared = values
    if E == 0:
        return None
    return MoE(E, k, d_ff, renormalise=norm, n_shared=1, d_shared=d_shared,
               shared_gate=True)


_QWEN3_5_READ = {k: v for k, v in FAMILIES["llama"].read.items()
                 if k != "attention_bias"} | {
    "head_dim": "head_dim",
    "rope_parameters": (("rope_base", "rope_scaling", "rope_fraction"),
                        _partial_rope),
    "layer_types": ("layer_types", _hybrid_layers),
    ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
     "linear_value_head_dim", "linear_conv_kernel_dim"): (
        "linear", _deltanet)}
FAMILIES["qwen3_5_text"] = Family(
    arch="qwen3_next", read=_QWEN3_5_READ,
    accepted={"hidden_act": ("silu",), "attention_bias": (False,)},
    inert=frozenset({"attention_dropout"}),
    fixed={"qk_norm": "head", "attn_gate": True})
FAMILIES["qwen3_next"] = dataclasses.replace(
    FAMILIES["qwen3_5_text"],
    read=_QWEN3_5_READ | {
        ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
         "norm_topk_prob", "shared_expert_intermediate_size"): (
            "moe", _qwen3_next_moe)},
    accepted=FAMILIES["qwen3_5_text"].accepted | {
        "decoder_sparse_step": (1,),       # every layer a mixture
        "mlp_only_layers": lambda c: not c.mlp_only_layers},
    inert=FAMILIES["qwen3_5_text"].inert | _MOE_INERT)
# Qwen3.5's mixtures: Qwen3-Next's experts in every layer, always renormalised
# (no norm_topk_prob), no dense layers (no intermediate_size).
FAMILIES["qwen3_5_moe_text"] = dataclasses.replace(
    FAMILIES["qwen3_next"],
    read={k: v for k, v in _QWEN3_5_READ.items()
          if k != "intermediate_size"} | {
        ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
         "shared_expert_intermediate_size"): (
            "moe", lambda v, c: _qwen3_next_moe((*v[:3], True, v[3]), c))},
    accepted=FAMILIES["qwen3_5_text"].accepted)


def _kda(values, c):
    """The linear_* fields -> the KDA layers' sizes."""
    H, d, K = values
    return KDAConfig(d_model=c.hidden_size, n_heads=H, d_head=d,
                     conv_kernel=K, norm_eps=c.rms_norm_eps)


def _kimi_moe(values, c):
    """Kimi Linear's experts: DeepSeek-V3's (sigmoid, groups, shared
    experts, a routed scale); mlp_layer_types: dense layers first, then
    sparse ones (None: all dense)."""
    E, k, d_ff, norm, scale, groups, topk_group, shared, kinds = values
    dense = kinds.count("dense")
    if list(kinds) != ["dense"] * dense + ["sparse"] * (len(kinds) - dense):
        raise ValueError(f"config_from_hf: mlp_layer_types {kinds!r} is not "
                         f"implemented (only dense layers, then sparse)")
    if dense == len(kinds):
        return None
    return MoE(E, k, d_ff, router="sigmoid", renormalise=norm, scale=scale,
               n_group=groups, topk_group=topk_group, n_shared=shared,
               first_dense=dense)


FAMILIES["kimi_linear"] = Family(
    arch="kimi_linear",
    read={k: v for k, v in FAMILIES["llama"].read.items()
          if k not in ("attention_bias", "rope_parameters")} | {
        "q_lora_rank": "q_lora_rank", "kv_lora_rank": "kv_lora_rank",
        "qk_rope_head_dim": "qk_rope_head_dim",
        "qk_nope_head_dim": "qk_nope_head_dim", "v_head_dim": "v_head_dim",
        "layer_types": ("layer_types", _hybrid_layers),
        ("linear_num_heads", "linear_head_dim", "linear_conv_kernel_dim"): (
            "linear", _kda),
        ("num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
         "norm_topk_prob", "routed_scaling_factor", "n_group", "topk_group",
         "n_shared_experts", "mlp_layer_types"): ("moe", _kimi_moe)},
    accepted={"hidden_act": ("silu",), "attention_bias": (False,)},
    inert=frozenset({"output_router_logits", "attention_dropout",
                     "pretraining_tp"}))


def _lightning(values, c):
    """MiniMax's sizes -> its lightning layers' (all heads of one size)."""
    H, head_dim, block = values
    return LightningConfig(d_model=c.hidden_size, n_heads=H,
                           d_head=head_dim or c.hidden_size // H,
                           block_size=block)


def _branch_scales(values, c):
    """The six alpha/beta factors -> (full, linear, mlp) pairs."""
    return tuple(zip(values[::2], values[1::2]))


FAMILIES["minimax"] = dataclasses.replace(
    FAMILIES["mixtral"], arch="minimax",
    read={k: v for k, v in FAMILIES["mixtral"].read.items()
          if k != "sliding_window"} | {
        "layer_types": ("layer_types", _hybrid_layers),
        ("num_attention_heads", "head_dim", "block_size"): (
            "linear", _lightning),
        ("full_attn_alpha_factor", "full_attn_beta_factor",
         "linear_attn_alpha_factor", "linear_attn_beta_factor",
         "mlp_alpha_factor", "mlp_beta_factor"): (
            "branch_scales", _branch_scales)},
    accepted={"hidden_act": ("silu",), "sliding_window": (None,)})


def _v4_rope(rope, c):
    """DeepSeek-V4's two RoPEs ("main": sliding layers, plain; "compress":
    the compressed ones, plain or YaRN) -> (main base, the fraction of
    d_head rotated, the same in both)."""
    for name, kinds in (("main", ("default",)),
                        ("compress", ("default", "yarn"))):
        if rope[name].get("rope_type", "default") not in kinds:
            raise ValueError(f"config_from_hf: rope_parameters[{name!r}] = "
                             f"{rope[name]!r} is not implemented (only "
                             f"{' or '.join(kinds)} RoPE)")
        _v4_scaling(rope[name], c)  # or a ValueError naming a key
    fractions = {rope[name].get("partial_rotary_factor", 1.0)
                 for name in ("main", "compress")}
    if len(fractions) > 1:
        raise ValueError(f"config_from_hf: rope_parameters' "
                         f"partial_rotary_factor {sorted(fractions)} differ; "
                         f"only one is implemented")
    return float(rope["main"]["rope_theta"]), fractions.pop()


def _v4_scaling(rope, c):
    """One of V4's RoPEs -> its RopeScaling (None: plain)."""
    rope = {k: v for k, v in rope.items() if k != "partial_rotary_factor"}
    return _rope_scaling(rope, c.max_position_embeddings)


def _v4_sizes(values, c):
    """DeepSeek-V4's own fields -> V4Sizes (ModelConfig.linear)."""
    (types, mlp_types, q_rank, o_groups, o_rank, rates, heads,
     dim, topk, hc, iters, hc_eps, E, k, score, scale, limit) = values
    kinds = {"sliding_attention": "sliding",
             "compressed_sparse_attention": "csa",
             "heavily_compressed_attention": "hca"}
    return V4Sizes(
        kinds=tuple(kinds[t] for t in types),
        hashed=tuple(t == "hash_moe" for t in mlp_types),
        q_lora_rank=q_rank, o_groups=o_groups, o_lora_rank=o_rank,
        m_csa=rates["compressed_sparse_attention"],
        m_hca=rates["heavily_compressed_attention"],
        compress_base=float(c.rope_parameters["compress"]["rope_theta"]),
        compress_scaling=_v4_scaling(c.rope_parameters["compress"], c),
        index_heads=heads, index_dim=dim, index_topk=topk, hc_mult=hc,
        hc_iters=iters, hc_eps=hc_eps, n_experts=E, top_k=k, score=score,
        routed_scale=scale, swiglu_limit=limit)


# Chapter 12: DeepSeek-V4 (attention.families.deepseek_v4).
FAMILIES["deepseek_v4"] = Family(
    arch="deepseek_v4",
    read={k: v for k, v in FAMILIES["llama"].read.items()
          if k not in ("attention_bias", "intermediate_size")} | {
        "head_dim": "head_dim", "moe_intermediate_size": "d_ff",
        "rope_parameters": (("rope_base", "rope_fraction"), _v4_rope),
        "sliding_window": "sliding_window",
        ("layer_types", "mlp_layer_types", "q_lora_rank",
         "o_groups", "o_lora_rank", "compress_rates", "index_n_heads",
         "index_head_dim", "index_topk", "hc_mult", "hc_sinkhorn_iters",
         "hc_eps", "n_routed_experts", "num_experts_per_tok", "scoring_func",
         "routed_scaling_factor", "swiglu_limit"): ("linear", _v4_sizes)},
    accepted={"hidden_act": ("silu",), "attention_bias": (False,),
              "mlp_bias": (False,), "num_key_value_heads": (1,),
              # Hugging Face always renormalises and builds one shared expert
              "norm_topk_prob": (True,), "n_shared_experts": (1,),
              "scoring_func": SCORES,
              "partial_rotary_factor": lambda c: c.partial_rotary_factor in (
                  None, c.rope_parameters["main"].get(
                      "partial_rotary_factor", 1.0))},
    # rope_theta and compress_rope_theta are folded into rope_parameters;
    # num_nextn_predict_layers counts multi-token prediction modules that
    # Hugging Face's forward never builds; the rest: training, outputs
    inert=_MOE_INERT | {"attention_dropout", "rope_theta",
                        "compress_rope_theta", "num_nextn_predict_layers"},
    fixed={"rope_layout": "interleaved"})  # what its layers rotate


def config_from_hf(hf_config):
    """A ModelConfig from a Hugging Face configuration of a family in
    FAMILIES (GPT2Config, LlamaConfig).

    Refuses, naming the field, every setting this package does not
    implement, so a converted model computes what Hugging Face's does.
    """
    c = hf_config
    family = FAMILIES.get(getattr(c, "model_type", None))
    if family is None:
        raise ValueError(f"config_from_hf: model_type "
                         f"{getattr(c, 'model_type', None)!r} is not one of "
                         f"{sorted(FAMILIES)}")
    _refuse_unimplemented(c, family)
    fields = {"arch": family.arch}
    fields |= family.fixed
    for hf_name, ours in family.read.items():
        if isinstance(hf_name, tuple):  # several fields, one of ours
            value = tuple(getattr(c, name) for name in hf_name)
        else:
            value = getattr(c, hf_name)
        if isinstance(ours, tuple):  # (our field or fields, conversion)
            ours, convert = ours
            value = convert(value, c)
        if isinstance(ours, tuple):  # one Hugging Face field, several of ours
            fields.update(zip(ours, value))
        else:
            fields[ours] = value
    # Hugging Face's rotate_half, unless the family reads or fixes its own
    fields.setdefault("rope_layout", "halves")  # (DeepSeek's interleaved)
    return ModelConfig(**fields)
# --8<-- [end:config_from_hf]


def _refuse_unimplemented(c, family):
    """A ValueError naming the first field whose value is not implemented."""
    accepted = COMMON_ACCEPTED | family.accepted
    for name, allowed in accepted.items():
        if not hasattr(c, name):  # a field this family does not have
            continue
        value = getattr(c, name)
        ok = allowed(c) if callable(allowed) else value in allowed
        if not ok:
            what = ("" if callable(allowed) else
                    f"; implemented: {', '.join(map(repr, allowed))}")
            raise ValueError(f"config_from_hf: {type(c).__name__}.{name} = "
                             f"{value!r} is not implemented{what}")
    read = {name for key in family.read
            for name in (key if isinstance(key, tuple) else (key,))}
    known = read | set(accepted) | family.inert | COMMON_INERT
    if not dataclasses.is_dataclass(c):
        return
    for field in dataclasses.fields(c):
        if field.name in known or field.default is dataclasses.MISSING:
            continue
        value = getattr(c, field.name, field.default)
        if value != field.default:
            raise ValueError(
                f"config_from_hf: {type(c).__name__}.{field.name} = "
                f"{value!r} is a setting this converter does not know; only "
                f"its default {field.default!r} is accepted")


# --8<-- [start:rope_scaling]
# The keys of Hugging Face's rope_parameters that each type reads.
_ROPE_KEYS = {
    "default": set(),
    "linear": {"factor"},
    "dynamic": {"factor"},
    "yarn": {"factor", "original_max_position_embeddings", "beta_fast",
             "beta_slow", "truncate", "attention_factor", "mscale",
             "mscale_all_dim"},
    "llama3": {"factor", "original_max_position_embeddings",
               "low_freq_factor", "high_freq_factor"},
}


def _rope_scaling(rope, max_positions):
    """A RopeScaling from Hugging Face's ``rope_parameters`` (None: plain).

    Older config.json files name the type ``type`` (in ``rope_scaling``);
    Hugging Face keeps that key beside ``rope_type``, which wins if both
    are set, and so does this converter.
    """
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise ValueError(f"config_from_hf: rope_parameters['rope_type'] = "
                         f"{kind!r} is not implemented (only {ROPE_TYPES})")
    extra = set(rope) - _ROPE_KEYS[kind] - {"rope_type", "type",
                                            "rope_theta"}
    if rope.get("partial_rotary_factor", 1.0) == 1.0:
        extra.discard("partial_rotary_factor")
    if extra:
        raise ValueError(f"config_from_hf: rope_parameters {sorted(extra)} "
                         f"are not implemented for rope_type {kind!r}")
    if kind == "default":
        return None
    original = rope.get("original_max_position_embeddings")
    if kind == "dynamic":  # grows past the model's own length
        original = max_positions
    factor = rope.get("factor")
    if kind == "yarn" and factor is None:
        factor = max_positions / original
    get = rope.get
    return RopeScaling(
        kind, factor=float(factor), original_max_positions=original,
        low_freq_factor=get("low_freq_factor", 1.0),
        high_freq_factor=get("high_freq_factor", 4.0),
        beta_fast=get("beta_fast") or 32.0, beta_slow=get("beta_slow") or 1.0,
        truncate=get("truncate", True),
        attention_factor=get("attention_factor"), mscale=get("mscale"),
        mscale_all_dim=get("mscale_all_dim"))
# --8<-- [end:rope_scaling]


# --8<-- [start:from_hf_state_dict]
def from_hf_state_dict(state_dict, config):
    """Our flat parameter dict from a GPT2LMHeadModel or LlamaForCausalLM
    state dict (values: NumPy arrays of floats). Shapes are checked against
    config; a key that config has no place for is refused."""
    sd = _Reads(_check_state(state_dict, config))
    try:
        params = _rename(sd, config)
    except KeyError as missing:
        raise ValueError(
            f"from_hf_state_dict: the state dict has no {missing} "
            f"(is it a {config.arch} model of this config?)") from None
    _refuse_unread(sd, params, config)
    expected = parameter_shapes(config)
    for name, shape in expected.items():
        got = np.shape(params.get(name))
        if got != shape:
            raise ValueError(f"from_hf_state_dict: {name} should have shape "
                             f"{shape} for this config, got {got}")
    # Copies: contiguous arrays that no longer share memory with the source.
    return {name: np.array(params[name]) for name in expected}


class _Reads(dict):
    """A dict that remembers which keys were read."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def _check_state(state_dict, config):
    """Every value a floating array; GPT-2's c_attn splits in three."""
    sd = dict(state_dict)
    for key, value in sd.items():
        kind = np.asarray(value).dtype
        if kind.kind != "f" and not (  # DeepSeek-V4's table of expert ids
                key.endswith(".tid2eid") and kind.kind in "iu"):
            raise ValueError(f"from_hf_state_dict: {key} must be an array of "
                             f"floats, got dtype {kind}")
        if key.endswith(("experts.gate_up_proj", "experts.down_proj")) and (
                np.ndim(value) != 3):
            raise ValueError(f"from_hf_state_dict: {key} stacks one matrix "
                             f"per expert: it must be 3-D, got shape "
                             f"{np.shape(value)}")
        if key.endswith(("attn.c_attn.weight", "attn.c_attn.bias")):
            width = np.shape(value)[-1] if np.ndim(value) else 0
            if width != 3 * config.d_model:
                raise ValueError(
                    f"from_hf_state_dict: {key} packs W_q, W_k, W_v side by "
                    f"side: its last axis must be 3 * d_model = "
                    f"{3 * config.d_model}, got shape {np.shape(value)}")
    return sd


def _refuse_unread(sd, params, config):
    """Keys the conversion did not read: other layers, other modules."""
    unread = set(sd) - sd.read
    if config.tie_embeddings and "lm_head.weight" in unread:
        # A tied checkpoint may store the head too: it must be the embedding.
        unread.discard("lm_head.weight")
        head = dict.__getitem__(sd, "lm_head.weight")
        if not np.array_equal(head, params["embed.tokens"]):
            raise ValueError("from_hf_state_dict: lm_head.weight differs from "
                             "the token embedding, but the config ties them "
                             "(tie_embeddings=True)")
    if unread:
        names = sorted(unread)
        raise ValueError(
            f"from_hf_state_dict: {len(names)} keys have no place in this "
            f"config ({config.arch}, n_layers={config.n_layers}): "
            f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''}")


def _rename(sd, config):
    """The family's names (``Family.hf_outer``, ``Family.hf_layer``)."""
    family = family_of(config)
    if family.hf_layer is None:
        raise ValueError(f"from_hf_state_dict: the {config.arch!r} family "
                         f"declares no Hugging Face weight names")
    params = family.hf_outer(sd)
    block = functools.partial(family.hf_layer, config=config)
    for i in range(config.n_layers):
        params |= {f"blocks.{i}.{k}": v for k, v in block(sd, i).items()}
    if not config.tie_embeddings:
        params["lm_head.W"] = sd["lm_head.weight"].T     # (d_model, vocab)
    return params
# --8<-- [end:from_hf_state_dict]
