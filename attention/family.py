"""What a model family declares: its layer's named parts, their parameters, its weights.

A decoder layer is made of named parts: a norm, a token mixer (attention of some kind),
a feed-forward, and the wiring that puts them around the residual stream (pre-norm,
Gemma's norms before and after). A ``Family`` declares them once, with everything the
rest of the package reads from a family: the block each layer runs, each layer's
parameter shapes, the embedding, final norm and logits around the layers, and the
Hugging Face names of its weights. ``forward``, ``parameter_shapes``, ``init_params``,
``ModelConfig``'s checks, the weight converter and the backward pass read this
declaration; none of them asks which family it is running.

Each family lives in one module of ``attention.families`` (GPT-2 and Llama, chapter 3;
Gemma 2 and DeepSeek-V3, chapter 9; the hybrids of chapter 12, whose ``layer_mixer``
says which layers keep a recurrent state instead of keys and values) and calls
``register``; a new family is one more module. ``attention`` imports them all, so
``ModelConfig(arch=...)`` knows every one.
"""

# --8<-- [start:family]
from dataclasses import dataclass
from typing import Callable

FAMILIES = {}  # ModelConfig.arch -> Family, filled by ``register``


@dataclass(frozen=True)
class Family:
    """One model family, as ModelConfig.arch names it."""
    name: str               # ModelConfig.arch
    parts: dict             # part -> its name: "norm", "mixer", "ffn",
    #                         "wiring", "positions" (what the backward reads)
    block: Callable         # (config, i) -> layer i's block function
    layer_shapes: Callable  # (config, i) -> {short name: shape} of layer i
    final_norm: Callable    # (x, params, config) -> the normalised x
    norm_shapes: Callable   # config -> {"weight": shape, ...} of a norm
    check: Callable = lambda config: None  # family rules, or a ValueError
    embed: Callable = lambda x, params, positions, config: x  # after lookup
    embed_shapes: Callable = lambda config: {}  # extra embedding tables
    logits: Callable = lambda logits, config: logits  # after the LM head
    gain: float = 1.0       # a norm weight's initial value (Gemma 2: 0)
    hf_outer: Callable = None  # Hugging Face state dict -> embeddings and
    #                            final norm (``attention.checkpoints``)
    hf_layer: Callable = None  # (state dict, i, config) -> layer i's
    #                            parameters, short names (None: no loader)
    layer_mixer: Callable = lambda config, i: "attention"  # layer i's token
    #   mixer kind: "attention" (keys and values in the KV cache) or
    #   "recurrent" (a state of fixed size, chapter 12's hybrids; DeepSeek-V4:
    #   its compressors' state, and its window of keys through the slot's cache)
    token_ids: bool = False  # the block also takes token_ids= (batch, n):
    #                          DeepSeek-V4's experts route some layers by them


def register(family):
    """Make ``family`` known to ModelConfig and forward; returns it."""
    if not isinstance(family, Family):
        raise TypeError(f"register: family must be a Family, got "
                        f"{type(family).__name__}")
    FAMILIES[family.name] = family
    return family


def family_of(config):
    """The Family that config.arch names, or a ValueError naming it."""
    family = FAMILIES.get(getattr(config, "arch", None))
    if family is None:
        raise ValueError(f"ModelConfig: arch must be one of "
                         f"{tuple(FAMILIES)}, got "
                         f"{getattr(config, 'arch', None)!r}")
    return family
# --8<-- [end:family]
