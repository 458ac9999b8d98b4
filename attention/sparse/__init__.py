"""Chapter 12, sparse and compressed attention: the 2026 designs past chapters 8-10.

- ``sparse_costs``: what a decoded token reads at context n, with every key (GQA, MLA)
  and with a top-k selection plus the indexer's own keys; cache bytes per token.
- ``indexer``: DeepSeek Sparse Attention's lightning indexer (``Indexer``, its scores,
  its queries and key) and the top-k choice of keys per query, ties to the earlier key.
- ``dsa``: attention over the chosen keys, masked (the definition) and gathered (the fast
  path), and the score rule ``"select"`` that DeepSeek-V3.2's family uses
  (``attention.families.deepseek_v32``).
- ``indexer_loss``: the indexer's training loss (KL divergence to the main attention's
  distribution) and its gradient by hand.
- ``compressed``: DeepSeek-V4's compressed cache entries (HCA's gated pooling of blocks,
  CSA's overlapping series and the entries its indexer picks).
- ``gated_output``: the output gate of gated attention (Qwen3-Next, Qwen3.5): each head's
  output times a sigmoid of the layer's input, before W_o.
- ``differential``: differential attention (DiffLlama): two softmax maps and their
  difference, λ's re-parameterisation and its depth-dependent start, the per-pair
  RMSNorm and its (1 - λ_init) scale; the token mixer of the ``diffllama`` family
  (``attention.families.diffllama``).
- ``kv_sharing``: cross-layer KV sharing (Gemma 4's shared layers read an earlier
  layer's keys and values; the cache keeps the others' only) and Gemma 4's attention.

Chapter 12's recurrent mixers sit beside chapter 10's: ``attention.linear.kda`` (Kimi
Linear's per-channel delta rule) and ``attention.linear.lightning`` (MiniMax).
"""
