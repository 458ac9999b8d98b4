"""gpt-oss's expert MLP: SwiGLU with clamped inputs, a sharper sigmoid and up + 1.

OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (2025), section 2.1, and its reference
code (``gpt_oss/torch/model.py``, ``swiglu``), as Hugging Face's ``GptOssExperts``
computes it. With g = x W_gate + b_gate and u = x W_up + b_up:

    glu(g, u) = min(g, limit) * sigmoid(alpha * min(g, limit)) * (clip(u, -limit, limit) + 1)

alpha = 1.702 makes g * sigmoid(alpha g) the sigmoid approximation of GELU (Hendrycks and
Gimpel 2016); the clamps (limit = 7) bound what one expert can add to the residual stream;
with u = 0 the + 1 passes the gated g on unchanged.
"""

# --8<-- [start:imports]
import numpy as np

from attention.families.routing import sigmoid
# --8<-- [end:imports]


# --8<-- [start:clamped_swiglu]
def clamped_glu(gate, up, *, alpha=1.702, limit=7.0):
    """gpt-oss's gated unit: gate and up (..., d_ff) -> (..., d_ff)."""
    gate = np.minimum(gate, limit)           # clamped from above only
    up = np.clip(up, -limit, limit)
    return gate * sigmoid(alpha * gate) * (up + 1.0)
# --8<-- [end:clamped_swiglu]
