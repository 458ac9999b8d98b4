"""Qwen3-Next's Gated DeltaNet layer: projections, short convolution, gates, gated norm.

Qwen Team, "Qwen3-Next" (2025; the layer of Yang, Kautz and Hatamizadeh, "Gated Delta
Networks: Improving Mamba2 with Delta Rule", ICLR 2025). For tokens x (batch, n, d_model):

1. q, k, v = x W_q, x W_k, x W_v, then each channel through the short causal convolution
   (``conv``) and silu; q and k have n_qk_heads heads of d_k, v n_v_heads heads of d_v
   (each q/k head serves n_v_heads / n_qk_heads consecutive value heads);
2. per value head, beta = sigmoid(x W_b), the write strength, and
   g = -exp(A_log) softplus(x W_a + dt_bias), the log decay (Mamba 2's discretisation);
3. the gated delta rule with unit-length q and k (``delta_rule.gated_delta_rule``);
4. per head, RMSNorm of the output times silu(x W_z) (a gated norm), then W_o.

The cache of a layer is fixed in size, whatever the context: the last K - 1 inputs of
the convolution and the d_k x d_v state of each value head (``DeltaNetState``).
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.feed_forward import silu
from attention.linear.conv import causal_conv1d
from attention.linear.delta_rule import gated_delta_rule
from attention.multi_head import split_heads
from attention.norms import rms_norm
# --8<-- [end:imports]


# --8<-- [start:config]
@dataclass(frozen=True)
class GatedDeltaNetConfig:
    """The sizes of one Gated DeltaNet layer (Hugging Face's names after #)."""
    d_model: int                # hidden_size
    n_qk_heads: int             # linear_num_key_heads: query/key heads
    n_v_heads: int              # linear_num_value_heads: a multiple of them
    d_k: int                    # linear_key_head_dim
    d_v: int                    # linear_value_head_dim
    conv_kernel: int = 4        # linear_conv_kernel_dim: K
    norm_eps: float = 1e-6      # rms_norm_eps, of the gated norm
    chunk_size: int = 64        # the chunked form for more than one token

    def __post_init__(self):
        for name in ("d_model", "n_qk_heads", "n_v_heads", "d_k", "d_v",
                     "conv_kernel", "chunk_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                raise ValueError(f"GatedDeltaNetConfig: {name} must be an "
                                 f"integer >= 1, got {value!r}")
        if self.n_v_heads % self.n_qk_heads:
            raise ValueError(f"GatedDeltaNetConfig: n_v_heads "
                             f"({self.n_v_heads}) must be a multiple of "
                             f"n_qk_heads ({self.n_qk_heads})")

    @property
    def conv_channels(self) -> int:
        """Channels of the convolution: q, k and v side by side."""
        return 2 * self.n_qk_heads * self.d_k + self.n_v_heads * self.d_v


@dataclass
class DeltaNetState:
    """What one layer keeps between calls: fixed in size."""
    conv: np.ndarray            # (batch, K - 1, conv_channels): last inputs
    recurrent: np.ndarray       # (batch, n_v_heads, d_k, d_v): the state S
# --8<-- [end:config]


# --8<-- [start:gates]
def softplus(x):
    """log(1 + e^x), without overflow."""
    return np.logaddexp(0.0, x)


def sigmoid(x):
    """1 / (1 + e^-x): in (0, 1)."""
    with np.errstate(over="ignore"):  # e^-x = inf for x << 0 gives 0
        return 1.0 / (1.0 + np.exp(-x))
# --8<-- [end:gates]


# --8<-- [start:layer]
def gated_deltanet(x, p, config, state=None):
    """One Gated DeltaNet layer over n new tokens, after the state's tokens.

    x: (batch, n, d_model); p: the weights (W_q, W_k, W_v, W_z, W_b, W_a,
    conv, A_log, dt_bias, norm, W_o); state: a DeltaNetState or None for
    an empty context. Returns (y (batch, n, d_model), the new state).
    """
    c = config
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[-1] != c.d_model:
        raise ValueError(f"gated_deltanet: x must have shape (batch, n, "
                         f"d_model={c.d_model}), got {x.shape}")
    batch, n, _ = x.shape
    qkv = np.concatenate([x @ p["W_q"], x @ p["W_k"], x @ p["W_v"]], axis=-1)
    qkv, conv_state = causal_conv1d(                   # (batch, n, channels)
        qkv, p["conv"], state=None if state is None else state.conv)
    qkv = silu(qkv)
    d_qk = c.n_qk_heads * c.d_k
    q = split_heads(qkv[..., :d_qk], c.n_qk_heads)     # (batch, H_qk, n, d_k)
    k = split_heads(qkv[..., d_qk:2 * d_qk], c.n_qk_heads)
    v = split_heads(qkv[..., 2 * d_qk:], c.n_v_heads)  # (batch, H_v, n, d_v)
    group = c.n_v_heads // c.n_qk_heads
    q, k = np.repeat(q, group, axis=1), np.repeat(k, group, axis=1)
    beta = np.swapaxes(sigmoid(x @ p["W_b"]), -1, -2)  # (batch, H_v, n)
    a = x @ p["W_a"] + p["dt_bias"]                    # (batch, n, H_v)
    g = np.swapaxes(-np.exp(p["A_log"]) * softplus(a), -1, -2)
    out, S = gated_delta_rule(
        q, k, v, g, beta, qk_l2norm=True,
        chunk_size=None if n == 1 else c.chunk_size,
        initial_state=None if state is None else state.recurrent)
    out = np.swapaxes(out, 1, 2)                       # (batch, n, H_v, d_v)
    z = (x @ p["W_z"]).reshape(batch, n, c.n_v_heads, c.d_v)
    out = rms_norm(out, p["norm"], eps=c.norm_eps) * silu(z)
    y = out.reshape(batch, n, c.n_v_heads * c.d_v) @ p["W_o"]
    return y, DeltaNetState(conv_state, S)
# --8<-- [end:layer]


# --8<-- [start:init]
def init_params(config, rng):
    """Random weights of one layer: normal projections divided by
    sqrt(fan-in), decays and gains that differ per head."""
    c = config
    d_qk, d_vv = c.n_qk_heads * c.d_k, c.n_v_heads * c.d_v
    shapes = {"W_q": (c.d_model, d_qk), "W_k": (c.d_model, d_qk),
              "W_v": (c.d_model, d_vv), "W_z": (c.d_model, d_vv),
              "W_b": (c.d_model, c.n_v_heads), "W_a": (c.d_model, c.n_v_heads),
              "W_o": (d_vv, c.d_model)}
    p = {name: rng.normal(size=s) / np.sqrt(s[0])
         for name, s in shapes.items()}
    p["conv"] = rng.normal(size=(c.conv_channels, c.conv_kernel)) * 0.5
    p["A_log"] = rng.normal(size=c.n_v_heads) * 0.5
    p["dt_bias"] = rng.normal(size=c.n_v_heads) * 0.5
    p["norm"] = 1 + 0.2 * rng.normal(size=c.d_v)
    return p
# --8<-- [end:init]
