"""Training the attention-only model on repeated segments, and finding its phase change.

Each step draws a fresh batch (so the model cannot memorise segments: only a mechanism that
works for every segment helps) with a segment length of its own, from ``min_half`` to
``half`` (so the repeat is not always the same distance back: a head that looks a fixed
number of positions back cannot solve the task; one that finds the earlier token can), computes the loss and its gradients with the hand-written
backward, and takes an AdamW step (chapter 6's ``adam_step`` with decoupled weight decay).
Every ``eval_every`` steps it scores one fixed batch, separately on the two halves. Olsson
et al. (2022) saw induction heads form in a short window early in training, with a sudden
drop of the loss on repeated text; ``drop_step`` names that moment in a run's log.
"""

# --8<-- [start:train]
import math
from dataclasses import dataclass

import numpy as np

from attention.circuits.data import repeat_positions, repeated_segments
from attention.circuits.model import forward, init_params, loss_and_grads
from attention.loss import cross_entropy
from attention.optim import adam_init, adam_step


@dataclass(frozen=True)
class InductionTrain:
    steps: int = 3000        # optimiser steps
    batch: int = 32          # sequences per step, drawn fresh each step
    half: int = 24           # longest segment: sequences up to 2 * half long
    min_half: int = 8        # shortest segment; each step draws its length
    lr: float = 3e-3         # AdamW's learning rate (constant)
    weight_decay: float = 0.01  # decoupled, every parameter
    eval_every: int = 25     # steps between two scorings of the fixed batch
    seed: int = 0            # weights and batches


def half_losses(params, config, ids, half, *, ablate=()):
    """(loss on the first half, loss on the repeat) in nats per token."""
    logits = forward(params, config, ids[:, :-1], ablate=ablate)
    first = np.arange(half - 1)  # positions whose next token is random
    repeat = repeat_positions(half)  # positions the repeat determines
    return (cross_entropy(logits[:, first], ids[:, first + 1]),
            cross_entropy(logits[:, repeat], ids[:, repeat + 1]))


def train(config, tc, *, report=None):
    """(params, log): log["step"], log["first"], log["repeat"] per scoring
    (of the fixed batch, segments of the longest length)."""
    if not 2 <= tc.min_half <= tc.half:
        raise ValueError(f"train: min_half must lie in 2..half={tc.half}, got "
                         f"{tc.min_half}")
    rng = np.random.default_rng(tc.seed)
    params = init_params(config, rng)
    state = adam_init(params)
    fixed = repeated_segments(np.random.default_rng(12345), 64, tc.half,
                              config.vocab_size)  # the same for every seed
    log = {"step": [], "first": [], "repeat": []}
    for step in range(tc.steps + 1):
        if step % tc.eval_every == 0:
            first, repeat = half_losses(params, config, fixed, tc.half)
            for key, value in (("step", step), ("first", first),
                               ("repeat", repeat)):
                log[key].append(value)
            if report:
                report(step, first, repeat)
        if step == tc.steps:
            break
        half = int(rng.integers(tc.min_half, tc.half + 1))  # this step's
        ids = repeated_segments(rng, tc.batch, half, config.vocab_size)
        _, grads = loss_and_grads(params, config, ids)
        adam_step(params, grads, state, lr=tc.lr,
                  weight_decay=tc.weight_decay)
    return params, log


def drop_step(log, vocab_size):
    """The first scored step whose loss on the repeat is below half of
    log(vocab_size), the loss of a uniform guess; None if there is none."""
    for step, loss in zip(log["step"], log["repeat"]):
        if loss < 0.5 * math.log(vocab_size):
            return step
    return None
# --8<-- [end:train]
