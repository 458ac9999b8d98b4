"""Sentence embeddings from an encoder's hidden states: one vector per sequence.

Two ways are in use. [CLS] pooling takes the first token's vector: BERT puts a special
[CLS] token first and trains it, through the next-sentence task, to speak for the pair
(Devlin et al. 2019, section 3); BERT's pooler passes it through a dense layer and tanh.
Mean pooling averages the real tokens' vectors and was found to give better sentence
embeddings for similarity search (Reimers and Gurevych, "Sentence-BERT", 2019, sections
3 and 6). Its one trap is padding: the mean must skip the <pad> positions.
"""

# --8<-- [start:pooling]
import numpy as np

from attention.encoders.hf import check_real


def cls_pool(hidden):
    """The first token's vector: hidden (batch, n, d) -> (batch, d)."""
    hidden = np.asarray(hidden)
    if hidden.ndim != 3 or hidden.shape[1] == 0:
        raise ValueError(f"cls_pool: hidden must be (batch, n >= 1, d), "
                         f"got {hidden.shape}")
    return hidden[:, 0]


def bert_pooler(hidden, W, b):
    """BERT's pooler: tanh(hidden[:, 0] W + b), (batch, d)."""
    return np.tanh(cls_pool(hidden) @ W + b)


def mean_pool(hidden, real=None):
    """The mean of the real tokens' vectors, (batch, d).

    real: (batch, n) boolean, False on <pad> (None: all real). A plain
    hidden.mean(axis=1) would count the pads.
    """
    hidden = np.asarray(hidden)
    if hidden.ndim != 3:
        raise ValueError(f"mean_pool: hidden must be (batch, n, d), got "
                         f"{hidden.shape}")
    real = check_real("mean_pool", real, hidden.shape[:2])
    weights = real[..., None].astype(hidden.dtype)        # (batch, n, 1)
    return (hidden * weights).sum(axis=1) / weights.sum(axis=1)
# --8<-- [end:pooling]
