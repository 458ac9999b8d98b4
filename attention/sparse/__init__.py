"""Chapter 12, sparse and compressed attention: reading fewer keys, or smaller ones.

- ``sparse_costs``: what a decoded token reads at context n, with every key (GQA, MLA)
  and with a top-k selection plus the indexer's own keys; cache bytes per token.
- ``indexer``: DeepSeek Sparse Attention's lightning indexer (``Indexer``, its scores,
  its queries and key) and the top-k choice of keys per query, ties to the earlier key.
- ``dsa``: attention over the chosen keys, masked (the definition) and gathered (the fast
  path), and the score rule ``"select"`` that DeepSeek-V3.2's family uses
  (``attention.families.deepseek_v32``).
- ``indexer_loss``: the indexer's training loss (KL divergence to the main attention's
  distribution) and its gradient by hand.
"""
