"""Chapter 9, smaller caches and steadier logits: what today's model families add.

- ``mla``: multi-head latent attention (DeepSeek-V3): the latent and the decoupled RoPE
  key, expanding the latent into keys and values, absorbing W_uk and W_uv, the block.
- ``softcap``: Gemma 2's soft-capping, cap * tanh(x / cap), and attention with capped
  scores.
- ``gemma``: the rest of Gemma 2's block: (1 + weight) RMSNorm, GeGLU (tanh), norms
  before and after each branch.
- ``costs``: cache bytes per token of MHA, GQA, MQA and MLA, seven published model cards,
  MLA's FLOPs absorbed and not, the latent cache's bytes.
- ``routing``: top-k routers: softmax then top-k (Mixtral, Qwen3-MoE), top-k then softmax
  (gpt-oss), sigmoid with a selection bias and expert groups (DeepSeek-V3); how ties break.
- ``moe``: the mixture-of-experts feed-forward: its configuration (``MoE``), the experts,
  the dense reference and the sparse gather/scatter, shared experts, the block's
  ``feed_forward``.
- ``gpt_oss``: gpt-oss's clamped SwiGLU.
- ``load_balance``: tokens per expert, capacity, the auxiliary load-balancing loss and its
  gradient, DeepSeek-V3's selection-bias update.
- ``moe_costs``: five published mixtures, active and total parameters, FLOPs per token,
  cache bytes per token.

Soft-capping's backward is ``attention.backward.softcap`` (chapter 6's passes, extended).

Qwen3's and OLMo 2's QK-norm is an option of ``attention.blocks.attention_layer``.
"""
