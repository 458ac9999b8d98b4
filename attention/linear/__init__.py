"""Chapter 10, attention without the n²: linear attention and the (gated) delta rule.

- ``feature_maps``: elu + 1 (Katharopoulos et al. 2020) and the unit-length q and k of
  DeltaNet.
- ``linear_attention``: causal linear attention in its parallel, recurrent and chunked
  forms, with the normaliser as a column of ones.
- ``decayed``: linear attention that fades its state, S <- a S + k^T v (RetNet, GLA,
  Mamba-2), recurrent and chunked.
- ``delta_rule``: one step of the (gated) delta rule, its recurrence, and
  ``gated_delta_rule``, the contract checked against Hugging Face's Qwen3-Next.
- ``chunked``: the gated delta rule in chunks, through the UT transform (WY form).

Chapter 12 adds ``kda`` (Kimi Linear's delta rule with a decay per key channel,
recurrent and chunked, and its layer) and ``lightning`` (MiniMax's lightning attention).
"""

from attention.linear.delta_rule import gated_delta_rule

__all__ = ["gated_delta_rule"]
