"""The short causal convolution in front of Gated DeltaNet's token mixer.

Each channel of the projected queries, keys and values is mixed with its own previous
K - 1 values (a depthwise convolution, K = 4 in Qwen3-Next), before the silu and the
delta rule: cheap local mixing that the recurrence, reading one token at a time, would
otherwise have to learn (H3, Fu et al. 2023; Mamba, Gu and Dao 2023; Gated DeltaNet, Yang
et al. 2025, section 3.4, all use one). Causal: output t reads inputs t - K + 1 .. t only.

To decode, the layer keeps the last K - 1 inputs as its convolution state: the next
token's output needs nothing else (Hugging Face's cache keeps K columns and uses the
last K - 1).
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:causal_conv1d]
def causal_conv1d(x, weight, *, state=None):
    """y_t = sum_j weight[:, j] * x_{t - K + 1 + j}, channel by channel.

    x: (batch, n, channels); weight: (channels, K); state: the K - 1
    inputs before x, (batch, K - 1, channels), zeros if None. Returns
    (y (batch, n, channels), the new state: the last K - 1 inputs).
    """
    x, weight = np.asarray(x), np.asarray(weight)
    if x.ndim != 3 or weight.ndim != 2 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"causal_conv1d: x must be (batch, n, channels) and "
                         f"weight (channels, K), got x {x.shape} and weight "
                         f"{weight.shape}")
    batch, n, channels = x.shape
    K = weight.shape[1]
    if state is None:
        state = np.zeros((batch, K - 1, channels), dtype=x.dtype)
    state = np.asarray(state)
    if state.shape != (batch, K - 1, channels):
        raise ValueError(f"causal_conv1d: state must be (batch, K - 1, "
                         f"channels) = {(batch, K - 1, channels)}, got "
                         f"{state.shape}")
    full = np.concatenate([state, x], axis=1)          # (batch, K-1+n, ch)
    y = sum(full[:, j:j + n, :] * weight[:, j] for j in range(K))
    return y, full[:, n:, :]                           # state: (batch, K-1, ch)
# --8<-- [end:causal_conv1d]
