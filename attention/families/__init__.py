"""The model families, one module each, and chapter 9's parts: what today's families add.

Each family module declares an ``attention.family.Family`` and registers it:
- ``gpt2``, ``llama``: chapter 3's two families (Llama with chapter 8's windows, biases
  and sinks and chapter 9's QK-norm and mixtures of experts: Mistral, Qwen3, Mixtral,
  gpt-oss);
- ``gemma`` (Gemma 2) and ``mla`` (DeepSeek-V3): chapter 9's;
- chapter 12's: ``deepseek_v32`` (DeepSeek-V3.2, DeepSeek-V3 with the lightning indexer),
  ``diffllama`` (differential attention, ``attention.sparse.differential``), ``olmo2``
  (OLMo 2: norms after each branch, QK-norm over the projections), and the hybrids below.

Chapter 9's modules:

- ``mla``: multi-head latent attention (DeepSeek-V3): the latent and the decoupled RoPE
  key, expanding the latent into keys and values, absorbing W_uk and W_uv; the
  DeepSeek-V3 family (Llama's wiring, MLA as its token mixer).
- ``softcap``: Gemma 2's soft-capping, cap * tanh(x / cap), and attention with capped
  scores (the score rule ``softcap``); ``softcap_backward``, its backward.
- ``gemma``: the rest of Gemma 2's block: (1 + weight) RMSNorm, GeGLU (tanh), norms
  before and after each branch; the Gemma 2 family.
- ``costs``: cache bytes per token of MHA, GQA, MQA and MLA, seven published model cards,
  MLA's FLOPs absorbed and not, the latent cache's bytes.
- ``routing``: top-k routers: softmax then top-k (Mixtral, Qwen3-MoE), top-k then softmax
  (gpt-oss), sigmoid with a selection bias and expert groups (DeepSeek-V3); how ties break.
- ``moe``: the mixture-of-experts feed-forward: its configuration (``MoE``), the experts,
  the dense reference and the sparse gather/scatter, shared experts, the block's
  ``feed_forward``, the experts' Hugging Face names.
- ``gpt_oss``: gpt-oss's clamped SwiGLU.
- ``load_balance``: tokens per expert, capacity, the auxiliary load-balancing loss and its
  gradient, DeepSeek-V3's selection-bias update.
- ``moe_costs``: five published mixtures, active and total parameters, FLOPs per token,
  cache bytes per token.

Qwen3's and OLMo 2's QK-norm is an option of ``attention.blocks.attention_layer``.

Chapter 12's hybrids, whose ``layer_mixer`` makes the "linear" layers recurrent:
- ``qwen3_next``: Qwen3-Next and Qwen3.5 (Gated DeltaNet beside gated attention, the
  gated shared expert);
- ``kimi_linear``: Kimi Linear (KDA beside MLA without positions, DeepSeek's experts);
- ``minimax``: MiniMax-01 (lightning attention beside softmax attention, the scaled
  residual branches).

And ``deepseek_v4``: DeepSeek-V4 (hyper-connections between layers, a sliding window
beside compressed entries, hash-routed experts), whose layers keep their compressors'
state where the hybrids keep theirs; ``hyper_connections``, its residual streams.
"""

# Importing the package imports every module in it, so every family registers
# itself and every score rule (sinks, softcap) is known: a new family is one
# new module, listed nowhere. Chapter 3's families come first (the model's
# published configurations name them), then the rest in name order.
import importlib  # noqa: E402
import pkgutil  # noqa: E402

from attention.families import gpt2, llama  # noqa: E402,F401
from attention.long_context import sinks  # noqa: E402,F401

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
