"""Backward passes by hand: the gradients that autograd would compute, written out in NumPy.

Each module mirrors the forward module whose gradients it computes (``softmax``,
``scaled_dot_product``, ``blocked``, ``norms``, ``feed_forward``), plus the loss, the
whole model and a finite-difference checker. Chapter 6 of the course derives them.

Convention: a backward function takes the gradient of the loss with respect to the
forward's output (``d_out``, same shape as the output) and what the forward saved, and
returns the gradients with respect to the forward's inputs, each with its input's shape.
"""

from attention.backward.softmax import softmax_backward, softmax_jacobian
from attention.backward.scaled_dot_product import attention_backward
from attention.backward.blocked import blocked_attention_backward
from attention.backward.gradcheck import numerical_gradient, gradient_check

__all__ = [
    "softmax_jacobian",
    "softmax_backward",
    "attention_backward",
    "blocked_attention_backward",
    "numerical_gradient",
    "gradient_check",
]
