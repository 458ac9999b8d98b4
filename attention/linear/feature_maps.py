"""Feature maps: what linear attention puts in place of exp(q . k).

Softmax attention weighs key j for query i by exp(q_i . k_j). Linear attention replaces
that kernel by a dot product of features, phi(q_i) . phi(k_j), which splits into a
part for the query and a part for the key, so that the sum over keys can be taken once
for all queries (Katharopoulos et al., "Transformers are RNNs: Fast Autoregressive
Transformers with Linear Attention", ICML 2020, section 3.2; their phi is elu(x) + 1,
positive so that the weights are).

DeltaNet and Gated DeltaNet (Yang et al., 2024 and 2025) use no positive map: they
normalise q and k to unit length instead (``l2_normalize``), which keeps the delta rule's
update a contraction (section 10.4 of the page). Hugging Face's Qwen3-Next divides by
sqrt(sum(x^2) + 1e-6), as the flash-linear-attention kernels do; so does this.
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:feature_maps]
def elu_plus_one(x):
    """elu(x) + 1: x + 1 for x > 0, exp(x) below; always positive.

    The feature map of Katharopoulos et al. (2020): positive features give
    positive weights phi(q) . phi(k), so the normalised output is a weighted
    average of the values, as softmax's is.
    """
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    with np.errstate(over="ignore"):  # exp of large x is never used
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def l2_normalize(x, *, eps=1e-6):
    """x / sqrt(sum(x^2) + eps) along the last axis: unit-length rows.

    DeltaNet's choice for q and k: |k| = 1 makes the delta rule's step
    (I - beta k^T k) a contraction for beta in [0, 1].
    """
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    return x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + eps)
# --8<-- [end:feature_maps]
