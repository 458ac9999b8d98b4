"""Attention from Scratch: the implementations that the course's pages teach.

NumPy only at run time. Each module holds one idea and is shown on a page of the course
by snippet, so the page and the package cannot drift apart.
"""

from attention.softmax import log_softmax, logsumexp, softmax
from attention.masks import causal_mask, padding_mask
from attention.scaled_dot_product import attention
from attention.self_attention import self_attention
from attention.multi_head import grouped_query_attention, multi_head_attention
from attention.blocked import blocked_attention
from attention.positions import rope, sinusoidal_positions
from attention.norms import layer_norm, rms_norm
from attention.feed_forward import gelu, mlp, relu, swiglu
from attention.model import ModelConfig, forward, init_params
from attention.parameters import count_parameters

__all__ = [
    "softmax",
    "log_softmax",
    "logsumexp",
    "causal_mask",
    "padding_mask",
    "attention",
    "self_attention",
    "multi_head_attention",
    "grouped_query_attention",
    "blocked_attention",
    "rope",
    "sinusoidal_positions",
    "layer_norm",
    "rms_norm",
    "gelu",
    "relu",
    "mlp",
    "swiglu",
    "ModelConfig",
    "forward",
    "init_params",
    "count_parameters",
]
