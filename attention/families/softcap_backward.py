"""The backward of soft-capping (Gemma 2, chapter 9): y = cap * tanh(x / cap).

dy/dx = 1 - tanh(x / cap)^2 = 1 - (y / cap)^2: one near zero, where the cap leaves x
alone, and falling to zero as |x| passes the cap. A capped softmax p = softmax(softcap(s))
passes its gradient through both: ∂L/∂s = softmax_backward(∂L/∂p, p) * (1 - (y / cap)^2).
A score far past the cap gets almost no gradient: capping keeps logits bounded and, in
exchange, stops teaching the ones it caps.
"""

# --8<-- [start:imports]
import numpy as np

from attention.backward.softmax import softmax_backward
from attention.families.softcap import softcap
from attention.softmax import softmax
# --8<-- [end:imports]


# --8<-- [start:softcap_backward]
def softcap_backward(d_y, x, cap):
    """∂L/∂x from ∂L/∂y for y = softcap(x, cap): d_y * (1 - tanh(x/cap)^2).

    d_y and x have the same shape.
    """
    d_y, x = np.asarray(d_y), np.asarray(x)
    if d_y.shape != x.shape:
        raise ValueError(f"softcap_backward: d_y {d_y.shape} and x {x.shape} "
                         f"must have the same shape")
    y = softcap(x, cap)
    return d_y * (1.0 - (y / cap) ** 2)


def capped_softmax_backward(d_p, s, cap, axis=-1):
    """∂L/∂s from ∂L/∂p for p = softmax(softcap(s, cap), axis)."""
    d_p, s = np.asarray(d_p), np.asarray(s)
    if d_p.shape != s.shape:
        raise ValueError(f"capped_softmax_backward: d_p {d_p.shape} and s "
                         f"{s.shape} must have the same shape")
    p = softmax(softcap(s, cap), axis=axis)
    return softcap_backward(softmax_backward(d_p, p, axis=axis), s, cap)
# --8<-- [end:softcap_backward]
