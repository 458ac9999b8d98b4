"""The learning rate over a run: a linear warm-up, then a cosine decay.

References: Goyal et al., "Accurate, Large Minibatch SGD" (2017) (warm-up);
Loshchilov and Hutter, "SGDR" (2017) (the cosine). Early on, Adam's second
moment v is an average of very few gradients and its steps are unreliable;
warming up keeps them small until v settles. The cosine then lowers the rate
smoothly to ``floor``, so the last steps refine instead of bouncing.
The same schedule in PyTorch: ``SequentialLR`` of ``LinearLR(start_factor=
1/warmup, total_iters=warmup - 1)`` and ``CosineAnnealingLR(T_max=total -
warmup, eta_min=floor)`` at milestone ``warmup``.
"""

# --8<-- [start:schedule]
import math
import numbers


def warmup_cosine(step, *, peak, floor, warmup, total):
    """The learning rate of step 0, 1, ..., total - 1."""
    if not (all(isinstance(c, numbers.Integral) for c in (step, warmup, total))
            and 0 <= step < total and 0 <= warmup <= total):
        raise ValueError(f"warmup_cosine: need integers 0 <= step < total and "
                         f"0 <= warmup <= total, got step={step!r}, "
                         f"warmup={warmup!r}, total={total!r}")
    if step < warmup:  # peak / warmup, 2 peak / warmup, ..., peak
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (total - warmup)  # 0 -> 1
    return floor + (peak - floor) * (1 + math.cos(math.pi * progress)) / 2
# --8<-- [end:schedule]
