"""Reading Qwen3-Next's Gated DeltaNet weights and sizes from Hugging Face's layout.

Hugging Face's ``Qwen3NextGatedDeltaNet`` (transformers, ``models/qwen3_next``) fuses the
projections, grouped by query/key head: ``in_proj_qkvz`` holds, for each of the
n_qk_heads groups in turn, that head's q (d_k rows), k (d_k), then the values and the
output gates z of its n_v_heads / n_qk_heads value heads; ``in_proj_ba`` holds, per group,
the b then the a of its value heads. Qwen3.5's ``Qwen3_5GatedDeltaNet`` keeps them apart
instead: ``in_proj_qkv`` (all queries, all keys, all values), ``in_proj_z``, ``in_proj_b``,
``in_proj_a``. ``config_from_hf`` and ``params_from_hf`` read either into the separate
matrices of ``gated_deltanet``. Plain attribute reads and NumPy arrays:
no torch here.
"""

# --8<-- [start:imports]
import numpy as np

from attention.linear.gated_deltanet import GatedDeltaNetConfig
# --8<-- [end:imports]


# --8<-- [start:read]
def config_from_hf(hf_config, *, chunk_size=64):
    """GatedDeltaNetConfig from a Qwen3NextConfig's linear_* fields."""
    c = hf_config
    return GatedDeltaNetConfig(
        d_model=c.hidden_size, n_qk_heads=c.linear_num_key_heads,
        n_v_heads=c.linear_num_value_heads, d_k=c.linear_key_head_dim,
        d_v=c.linear_value_head_dim, conv_kernel=c.linear_conv_kernel_dim,
        norm_eps=c.rms_norm_eps, chunk_size=chunk_size)


def params_from_hf(state_dict, config):
    """Our weights from the layer's state dict (name -> NumPy array)."""
    c = config
    group = c.n_v_heads // c.n_qk_heads
    sd = {name: np.asarray(a) for name, a in state_dict.items()}
    common = {"conv": sd["conv1d.weight"][:, 0, :],    # (channels, K)
              "A_log": sd["A_log"], "dt_bias": sd["dt_bias"],
              "norm": sd["norm.weight"], "W_o": sd["out_proj.weight"].T}
    if "in_proj_qkv.weight" in sd:  # Qwen3.5: q, k, v, z, b, a apart
        edges = np.cumsum([c.n_qk_heads * c.d_k] * 2)
        W_q, W_k, W_v = np.split(sd["in_proj_qkv.weight"].T, edges, axis=-1)
        return common | {"W_q": W_q, "W_k": W_k, "W_v": W_v} | {
            f"W_{x}": sd[f"in_proj_{x}.weight"].T for x in "zba"}
    # (out, d_model) -> (d_model, n_qk_heads, per group)
    qkvz = sd["in_proj_qkvz.weight"].T.reshape(c.d_model, c.n_qk_heads, -1)
    edges = np.cumsum([c.d_k, c.d_k, group * c.d_v])
    W_q, W_k, W_v, W_z = np.split(qkvz, edges, axis=-1)
    ba = sd["in_proj_ba.weight"].T.reshape(c.d_model, c.n_qk_heads, 2 * group)
    W_b, W_a = np.split(ba, [group], axis=-1)          # (d_model, H_qk, group)
    flat = lambda W: W.reshape(c.d_model, -1)          # noqa: E731 head-major
    return common | {"W_q": flat(W_q), "W_k": flat(W_k), "W_v": flat(W_v),
                     "W_z": flat(W_z), "W_b": flat(W_b), "W_a": flat(W_a)}
# --8<-- [end:read]
