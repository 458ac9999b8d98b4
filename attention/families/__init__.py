"""Chapter 9, smaller caches and steadier logits: what today's model families add.

- ``mla``: multi-head latent attention (DeepSeek-V3): the latent and the decoupled RoPE
  key, expanding the latent into keys and values, absorbing W_uk and W_uv, the block.
- ``softcap``: Gemma 2's soft-capping, cap * tanh(x / cap), and attention with capped
  scores.
- ``gemma``: the rest of Gemma 2's block: (1 + weight) RMSNorm, GeGLU (tanh), norms
  before and after each branch.

Qwen3's and OLMo 2's QK-norm is an option of ``attention.blocks.attention_layer``.
"""
