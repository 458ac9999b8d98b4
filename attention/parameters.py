"""Counting a model's parameters from its configuration alone (nothing is allocated).

The shapes come from ``attention.model.parameter_shapes``, the same list that
``init_params`` fills, so the count cannot drift from the model.
"""

# --8<-- [start:imports]
import math

from attention.model import parameter_shapes
# --8<-- [end:imports]


# --8<-- [start:count_parameters]
def parameter_group(name):
    """Which part of the model a parameter belongs to."""
    if name.startswith("embed."):
        return "embeddings"
    if name.startswith("lm_head."):
        return "lm_head"
    if ".attn." in name or ".linear." in name:  # the token mixer (ch. 12:
        return "attention"                      # or a linear layer's)
    if ".mlp." in name:
        return "mlp"
    return "norms"


def count_parameters(config):
    """Parameters per group (embeddings, attention, mlp, norms, lm_head)
    and their total. A tied LM head is the embedding: counted once."""
    counts = dict.fromkeys(
        ["embeddings", "attention", "mlp", "norms", "lm_head"], 0)
    for name, shape in parameter_shapes(config).items():
        counts[parameter_group(name)] += math.prod(shape)
    counts["total"] = sum(counts.values())
    return counts
# --8<-- [end:count_parameters]
