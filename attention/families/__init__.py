"""Chapter 9, smaller caches and steadier logits: what today's model families add.

- ``softcap``: Gemma 2's soft-capping, cap * tanh(x / cap), and attention with capped
  scores.
- ``gemma``: the rest of Gemma 2's block: (1 + weight) RMSNorm, GeGLU (tanh), norms
  before and after each branch.
"""
