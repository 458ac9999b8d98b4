"""Chapter 12, sparse and compressed attention: the 2026 designs past chapters 8-10.

- ``differential``: differential attention (DiffLlama): two softmax maps and their
  difference, λ's re-parameterisation and its depth-dependent start, the per-pair
  RMSNorm and its (1 - λ_init) scale; the token mixer of the ``diffllama`` family
  (``attention.families.diffllama``).
"""
