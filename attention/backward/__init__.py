"""Backward passes by hand: the gradients autograd would compute, written out.

Each module mirrors the forward module whose gradients it computes
(``softmax``, ``scaled_dot_product``, ``blocked``, ``norms``,
``feed_forward``, ``model``), plus a finite-difference checker. Chapter 6 of the
course derives them.

Convention: a backward function takes the gradient of the loss with respect to
the forward's output (``d_out``, the output's shape) and what the forward kept,
and returns the gradients with respect to the forward's inputs, each shaped
like its input.
"""

from attention.backward.softmax import softmax_backward, softmax_jacobian
from attention.backward.scaled_dot_product import attention_backward
from attention.backward.blocked import blocked_attention_backward
from attention.backward.norms import layer_norm_backward, rms_norm_backward
from attention.backward.feed_forward import gelu_backward, linear_backward
from attention.backward.gradcheck import gradient_check, numerical_gradient

__all__ = [
    "softmax_jacobian",
    "softmax_backward",
    "attention_backward",
    "blocked_attention_backward",
    "layer_norm_backward",
    "rms_norm_backward",
    "gelu_backward",
    "linear_backward",
    "numerical_gradient",
    "gradient_check",
]
