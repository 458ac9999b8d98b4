"""An int8 KV cache: each token's keys and values as 8-bit integers and one scale.

References: the symmetric per-token quantization of LLM.int8() (T. Dettmers et al.,
2022) and KIVI (Z. Liu et al., "KIVI: A Tuning-Free Asymmetric 2bit Quantization for
KV Cache", 2024), which keep a scale per token (or per channel); vLLM's and Hugging
Face's quantized caches store the cache this way and dequantize it to attend.

For each token and head, the d_head numbers x are stored as round(x / s) in -127..127
with s = max |x| / 127, and s in float16: d_head + 2 bytes where float16 takes
2 d_head, about half (0.52 of it at d_head = 64). Attention reads s times the codes:
every number off by at most s / 2, half a step of its token's largest. The model then
computes its logits from slightly different keys and values; chapter 11 prints how
far they move and whether the greedy tokens change.
"""

# --8<-- [start:int8]
import numpy as np

from attention.kv_cache import KVCache, check_update


def quantize(x):
    """x (..., d) -> int8 codes (..., d) and float16 scales (..., 1), one
    per row: the row's largest |x| is 127 steps (a zero row: scale 1)."""
    top = np.abs(x).max(axis=-1, keepdims=True)
    scales = np.where(top > 0, top / 127, 1.0).astype(np.float16)
    codes = np.rint(x / scales.astype(x.dtype)).clip(-127, 127)
    return codes.astype(np.int8), scales


def dequantize(codes, scales, dtype):
    """What attention reads: codes times their row's scale, in dtype."""
    return codes.astype(dtype) * scales.astype(dtype)


class Int8KVCache(KVCache):
    """A KVCache (the same interface, window and crop) that keeps int8
    codes in ``keys`` and ``values`` and a float16 scale per token and
    head in ``key_scales`` and ``value_scales``; update returns the
    dequantized keys and values, the new tokens' too (they are read from
    the cache as every later step reads them)."""

    def __init__(self, n_layers, *, window=None, n_sinks=0):
        super().__init__(n_layers, window=window, n_sinks=n_sinks)
        self.key_scales = [None] * n_layers    # (batch, heads, kept, 1)
        self.value_scales = [None] * n_layers

    def update(self, layer, k, v, valid=None):
        check_update(self, layer, k, v, valid)
        (k_codes, k_scales), (v_codes, v_scales) = quantize(k), quantize(v)
        k_all, v_all, positions, key_valid = super().update(
            layer, k_codes, v_codes, valid)
        keep = self._keep(positions, self.length + k.shape[-2])
        scales = []
        for kept, new in ((self.key_scales, k_scales),
                          (self.value_scales, v_scales)):
            old = new[..., :0, :] if kept[layer] is None else kept[layer]
            scales.append(np.concatenate([old, new], axis=-2))
            kept[layer] = scales[-1][..., keep, :]
        return (dequantize(k_all, scales[0], k.dtype),
                dequantize(v_all, scales[1], v.dtype), positions, key_valid)

    def crop(self, n):
        super().crop(n)
        for kept in (self.key_scales, self.value_scales):
            for layer, scales in enumerate(kept):
                if scales is not None:
                    kept[layer] = scales[..., :n, :]

    def nbytes(self):
        """Bytes held: the codes and the scales of every layer."""
        return sum(a.nbytes for group in (self.keys, self.values,
                                          self.key_scales, self.value_scales)
                   for a in group if a is not None)
# --8<-- [end:int8]
