"""Chapter 8, long contexts: what changes when a model reads past its training length.

- ``rope_scaling``: the inverse frequencies of RoPE's scaling rules (linear, dynamic NTK,
  YaRN and its attention factor, Llama 3.1's bands), from a ``RopeScaling`` setting.
- ``alibi``: ALiBi's per-head slopes (any head count) and its distance bias.
- ``sinks``: attention with a learned sink logit per head (gpt-oss).
"""
