"""The whole model's backward pass (chapter 3's decoder), and the embedding's.

An embedding lookup, out = W_emb[ids], copies rows; its backward adds each row of d_out
back into the row it came from. A token that appears twice collects both gradients, so
the adding must accumulate (``np.add.at``), not assign.
"""

# --8<-- [start:embedding_backward]
import numpy as np


def embedding_backward(d_out, ids, vocab_size):
    """∂L/∂W_emb (vocab_size, d) of out = W_emb[ids], ids (...), d_out (..., d)."""
    d_weight = np.zeros((vocab_size, d_out.shape[-1]), dtype=d_out.dtype)
    np.add.at(d_weight, np.asarray(ids).reshape(-1), d_out.reshape(-1, d_out.shape[-1]))
    return d_weight
# --8<-- [end:embedding_backward]
