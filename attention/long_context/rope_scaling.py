"""RoPE past the training length: the inverse frequencies of each scaling rule.

RoPE turns pair i of a query or key by the angle position * inv_freq[i], with
inv_freq[i] = base ** (-2i / d_head) (``attention.positions``). A model trained on
positions below some length L has seen each pair turn through at most L * inv_freq[i]
radians; past L, the slow pairs reach angles they never saw. Each rule below changes the
inverse frequencies (and, for YaRN, the size of q and k) so that long positions look like
trained ones.

References: Chen et al., "Extending Context Window of Large Language Models via
Positional Interpolation" (2023) (linear); u/emozilla, "Dynamically Scaled RoPE" (Reddit,
2023) (dynamic NTK), built on bloc97's static "NTK-Aware Scaled RoPE" (Reddit, 2023); Peng
et al., "YaRN: Efficient Context Window Extension of Large Language Models" (2023),
sections 3.2-3.4; Meta's released Llama 3.1 code, ``apply_scaling`` in
meta-llama/llama-models (the llama3 frequency bands: factor 8, band edges 1 and 4, "values
obtained from grid search"). Hugging Face's
``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS`` computes the same values (in
float32; the tests compare in float64). It also holds two rules left out here: longrope,
whose per-pair factors are searched for each checkpoint and shipped as lists in its
configuration, and proportional, which rotates only a share of the pairs.

Every function takes (d_head, base, ...) and returns inv_freq of shape (d_head / 2,), in
float64. ``rope_parameters`` picks one from a :class:`RopeScaling` and also returns the
attention factor that multiplies cos and sin (so q . k by its square).
"""

# --8<-- [start:imports]
import math
from dataclasses import dataclass

import numpy as np
# --8<-- [end:imports]

# --8<-- [start:checks]
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")


def _check(fn, d_head, base):
    if (isinstance(d_head, bool) or not isinstance(d_head, (int, np.integer))
            or d_head < 2 or d_head % 2):
        raise ValueError(f"{fn}: d_head must be an even integer >= 2, "
                         f"got {d_head!r}")
    if not (isinstance(base, (int, float, np.number))
            and not isinstance(base, bool) and base > 1):
        raise ValueError(f"{fn}: base must be a number > 1, got {base!r}")


def _check_factor(fn, factor):
    if not (isinstance(factor, (int, float, np.number))
            and not isinstance(factor, bool) and factor >= 1):
        raise ValueError(f"{fn}: factor must be a number >= 1 (a factor "
                         f"below 1 would shrink the context), got {factor!r}")
# --8<-- [end:checks]


# --8<-- [start:default]
def default_inv_freq(d_head, base):
    """Plain RoPE: inv_freq[i] = 1 / base ** (2i / d_head)."""
    _check("default_inv_freq", d_head, base)
    return 1.0 / base ** (np.arange(0, d_head, 2) / d_head)  # (d_head/2,)
# --8<-- [end:default]


# --8<-- [start:linear]
def linear_inv_freq(d_head, base, factor):
    """Position interpolation: every frequency divided by ``factor``.

    Position p then turns as position p / factor did, so a model trained on
    L positions sees factor * L positions inside its trained range.
    """
    _check_factor("linear_inv_freq", factor)
    return default_inv_freq(d_head, base) / factor
# --8<-- [end:linear]


# --8<-- [start:dynamic]
def dynamic_ntk_inv_freq(d_head, base, factor, max_positions, seq_len):
    """Dynamic NTK: a larger base, growing with the sequence once it passes
    ``max_positions``; below it, plain RoPE.

    base' = base * (factor * n / max_positions - (factor - 1)) ** (d / (d - 2))
    with n = max(seq_len, max_positions). Pair i's frequency is divided by
    stretch ** (2i / (d - 2)): the fastest (i = 0) is unchanged and the
    slowest is stretched by exactly factor * n / max_positions - (factor - 1),
    which exceeds n / max_positions once n passes max_positions (57, not 8,
    at factor 8 and n = 8 * max_positions).
    """
    _check("dynamic_ntk_inv_freq", d_head, base)
    _check_factor("dynamic_ntk_inv_freq", factor)
    if d_head == 2:  # d / (d - 2) has no value: one pair, nothing to spread
        raise ValueError("dynamic_ntk_inv_freq: d_head must be >= 4, got 2")
    for name, value in (("max_positions", max_positions), ("seq_len", seq_len)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < 1):
            raise ValueError(f"dynamic_ntk_inv_freq: {name} must be a "
                             f"positive integer, got {value!r}")
    n = max(seq_len, max_positions)
    stretch = factor * n / max_positions - (factor - 1)
    return default_inv_freq(d_head, base * stretch ** (d_head / (d_head - 2)))
# --8<-- [end:dynamic]


# --8<-- [start:yarn]
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    """YaRN's "NTK-by-parts": interpolate the slow pairs, keep the fast ones.

    A pair that turns more than ``beta_fast`` times over the original context
    keeps its frequency; one that turns fewer than ``beta_slow`` times is
    divided by ``factor`` (as in linear); between the two, a linear ramp over
    the pair index mixes them (Peng et al. 2023, 3.2).
    """
    _check("yarn_inv_freq", d_head, base)
    _check_factor("yarn_inv_freq", factor)
    n = original_max_positions
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"yarn_inv_freq: original_max_positions must be a "
                         f"positive integer, got {n!r}")
    for name, turns in (("beta_fast", beta_fast), ("beta_slow", beta_slow)):
        if isinstance(turns, bool) or not isinstance(
                turns, (int, float, np.number)) or not 0 < turns < math.inf:
            raise ValueError(f"yarn_inv_freq: {name} must be a positive "
                             f"finite number of turns, got {turns!r}")
    plain = default_inv_freq(d_head, base)                  # (d_head/2,)

    def pair_index(turns):
        # The pair i whose wavelength 2 pi / inv_freq[i] fits `turns` times
        # into the original context (fractional, from inv_freq's formula).
        return (d_head * math.log(original_max_positions
                                  / (turns * 2 * math.pi))
                / (2 * math.log(base)))

    low, high = pair_index(beta_fast), pair_index(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    if low == high:
        high += 0.001  # a ramp of no width: make it a step
    ramp = np.clip((np.arange(d_head // 2) - low) / (high - low), 0, 1)
    # ramp 0: fast pairs, kept; ramp 1: slow pairs, interpolated.
    return plain * (1 - ramp) + plain / factor * ramp
# --8<-- [end:yarn]


# --8<-- [start:yarn_attention_factor]
def yarn_attention_factor(factor, *, mscale=None, mscale_all_dim=None):
    """YaRN's temperature: cos and sin are multiplied by this number.

    0.1 * ln(factor) + 1 (Peng et al. 2023, 3.4): interpolated positions make
    the softmax flatter, and the factor sharpens it back. DeepSeek-V3 writes it
    as a ratio of two such terms, with coefficients ``mscale`` and
    ``mscale_all_dim`` (equal coefficients give 1).
    """
    _check_factor("yarn_attention_factor", factor)

    def m(c):
        return 1.0 if factor <= 1 else 0.1 * c * math.log(factor) + 1.0

    if mscale and mscale_all_dim:
        return m(mscale) / m(mscale_all_dim)
    return m(1.0)
# --8<-- [end:yarn_attention_factor]


# --8<-- [start:llama3]
def llama3_inv_freq(d_head, base, factor, original_max_positions, *,
                    low_freq_factor=1.0, high_freq_factor=4.0):
    """Llama 3.1's three bands of wavelength (2 pi / inv_freq).

    Shorter than original_max_positions / high_freq_factor: kept. Longer than
    original_max_positions / low_freq_factor: divided by ``factor``. Between:
    a mix whose weight is linear in original_max_positions / wavelength.
    """
    _check_factor("llama3_inv_freq", factor)
    if not high_freq_factor > low_freq_factor > 0:
        raise ValueError(
            f"llama3_inv_freq: need high_freq_factor > low_freq_factor > 0, "
            f"got {high_freq_factor!r} and {low_freq_factor!r}")
    plain = default_inv_freq(d_head, base)                  # (d_head/2,)
    wavelength = 2 * math.pi / plain
    turns = original_max_positions / wavelength   # turns over the context
    keep = (turns - low_freq_factor) / (high_freq_factor - low_freq_factor)
    keep = np.clip(keep, 0, 1)    # 1: short wavelengths, 0: long ones
    return plain * keep + plain / factor * (1 - keep)
# --8<-- [end:llama3]


# --8<-- [start:config]
@dataclass(frozen=True)
class RopeScaling:
    rope_type: str = "default"       # one of ROPE_TYPES
    factor: float = 1.0              # how many times longer the context gets
    original_max_positions: int | None = None  # trained length (not linear)
    low_freq_factor: float = 1.0     # llama3: band edges, as divisors of
    high_freq_factor: float = 4.0    #   the trained length
    beta_fast: float = 32.0          # yarn: turns above which a pair is kept
    beta_slow: float = 1.0           # yarn: turns below which it is scaled
    truncate: bool = True            # yarn: round the ramp's ends outwards
    attention_factor: float | None = None  # yarn: None = from the factor
    mscale: float | None = None      # yarn (DeepSeek-V3): attention factor
    mscale_all_dim: float | None = None  # as a ratio of two mscales

    def __post_init__(self):
        if self.rope_type not in ROPE_TYPES:
            raise ValueError(f"RopeScaling: rope_type must be one of "
                             f"{ROPE_TYPES}, got {self.rope_type!r}")
        _check_factor("RopeScaling", self.factor)
        needs_length = self.rope_type in ("dynamic", "yarn", "llama3")
        n = self.original_max_positions
        if needs_length and (isinstance(n, bool) or not isinstance(
                n, (int, np.integer)) or n < 1):
            raise ValueError(
                f"RopeScaling: {self.rope_type} needs original_max_positions, "
                f"a positive integer, got {n!r}")
        if self.attention_factor is not None and not self.attention_factor > 0:
            raise ValueError(f"RopeScaling: attention_factor must be > 0, "
                             f"got {self.attention_factor!r}")

    def angles(self, positions, d_head, base):
        """What chapter 3's ``rope`` asks a scaling for: the angles and the
        attention factor (``scaled_rope_angles``)."""
        return scaled_rope_angles(positions, d_head, base, self)
# --8<-- [end:config]


# --8<-- [start:rope_parameters]
def rope_parameters(d_head, base, scaling=None, *, seq_len=None):
    """(inv_freq, attention_factor) of a RoPE with a scaling rule.

    ``seq_len``: the length being computed, for dynamic NTK only (its base
    grows once seq_len passes ``scaling.original_max_positions``).
    """
    s = scaling or RopeScaling()
    n_orig = s.original_max_positions
    if s.rope_type == "default":
        return default_inv_freq(d_head, base), 1.0
    if s.rope_type == "linear":
        return linear_inv_freq(d_head, base, s.factor), 1.0
    if s.rope_type == "dynamic":
        n = n_orig if seq_len is None else seq_len
        return dynamic_ntk_inv_freq(d_head, base, s.factor, n_orig, n), 1.0
    if s.rope_type == "llama3":
        return llama3_inv_freq(
            d_head, base, s.factor, n_orig, low_freq_factor=s.low_freq_factor,
            high_freq_factor=s.high_freq_factor), 1.0
    inv_freq = yarn_inv_freq(d_head, base, s.factor, n_orig,
                             beta_fast=s.beta_fast, beta_slow=s.beta_slow,
                             truncate=s.truncate)
    factor = s.attention_factor
    if factor is None:
        factor = yarn_attention_factor(s.factor, mscale=s.mscale,
                                       mscale_all_dim=s.mscale_all_dim)
    return inv_freq, float(factor)
# --8<-- [end:rope_parameters]


# --8<-- [start:scaled_rope_angles]
def scaled_rope_angles(positions, d_head, base, scaling):
    """(angles (..., n, d_head / 2), attention factor) for ``rope``.

    Dynamic NTK sizes its base by the longest position in ``positions``, as
    Hugging Face does for each forward pass.
    """
    positions = np.asarray(positions)
    seq_len = int(positions.max()) + 1 if positions.size else 1
    inv_freq, factor = rope_parameters(d_head, base, scaling, seq_len=seq_len)
    angles = positions.astype(np.float64)[..., None] * inv_freq
    return angles, factor                          # (..., n, d_head/2)
# --8<-- [end:scaled_rope_angles]
