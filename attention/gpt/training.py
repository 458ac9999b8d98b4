"""The training loop of a GPT: micro-batches, dropout, gradient
accumulation, clipping, AdamW over decay groups, a warm-up/cosine schedule,
evaluation without dropout (on held-out text and on a slice of the training
text), and a log of all of it.

Gradient accumulation: the loss of a batch is the mean over its tokens, so
the gradient of a batch of k equal micro-batches is the mean of their
gradients. Summing k gradients scaled by 1/k is therefore one large batch's
step with the memory of one micro-batch (the test checks it).

Compute: a forward and backward pass costs about 6 floating-point operations
per parameter per token (2 for the forward's multiply-add, 4 for the
backward's two products), so a run costs about 6·N·D for N parameters and D
training tokens (Kaplan et al., "Scaling Laws for Neural Language Models",
2020, section 2.1; the attention scores add a little more).
"""

# --8<-- [start:config]
import math
import time
from dataclasses import dataclass, fields

import numpy as np

from attention._blas_threads import thread_map
from attention.backward.model import loss_and_grads
from attention.gpt.adamw import adamw_init, adamw_step, decay_groups
from attention.gpt.clipping import clip_by_global_norm
from attention.gpt.corpus import check_windows, random_windows, windows
from attention.gpt.dropout import dropout_masks, mask_shapes
from attention.gpt.schedule import warmup_cosine
from attention.gpt.streams import jump_past
from attention.loss import cross_entropy
from attention.model import forward


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 900            # optimiser steps
    batch_size: int = 8         # sequences per micro-batch
    accumulation: int = 1       # micro-batches per optimiser step
    context: int = 128          # tokens per sequence
    lr: float = 3e-3            # peak learning rate
    min_lr: float = 3e-4        # the cosine's floor
    warmup: int = 40            # steps of linear warm-up
    weight_decay: float = 0.1   # AdamW's λ on the matrices
    beta1: float = 0.9          # Adam's β1
    beta2: float = 0.95         # Adam's β2
    clip: float = 1.0           # max global gradient norm
    dropout: float = 0.1        # dropout probability everywhere
    eval_every: int = 100       # steps between validation losses
    seed: int = 0               # batches and dropout masks

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in (int, "int") and (isinstance(value, bool)
                                    or not isinstance(value, int)):
                raise ValueError(f"TrainConfig: {f.name} must be an "
                                 f"integer, got {value!r}")
            if f.type in (float, "float") and not (
                    isinstance(value, (int, float))
                    and not isinstance(value, bool) and math.isfinite(value)):
                raise ValueError(f"TrainConfig: {f.name} must be a finite "
                                 f"number, got {value!r}")
        positive = ("steps", "batch_size", "accumulation", "context", "lr",
                    "clip", "eval_every")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"TrainConfig: {name} must be > 0, got "
                                 f"{getattr(self, name)!r}")
        ranges = {"warmup": (1, self.steps), "min_lr": (0, self.lr),
                  "weight_decay": (0, 1), "beta1": (0, 0.999999),
                  "beta2": (0, 0.999999), "dropout": (0, 0.9),
                  "seed": (0, 2**63)}
        for name, (low, high) in ranges.items():
            if not low <= getattr(self, name) <= high:
                raise ValueError(f"TrainConfig: {name} must lie in "
                                 f"[{low}, {high}], got "
                                 f"{getattr(self, name)!r}")
# --8<-- [end:config]


# --8<-- [start:step]
def accumulated_grads(params, config, micro_batches, masks, *, workers=1):
    """(mean loss, mean gradients) over equal micro-batches: one big batch.
    masks: one dropout mask set (or None) per micro-batch. workers > 1:
    that many micro-batches run at once on threads (NumPy's products and
    elementwise work release the GIL; BLAS gets one thread in each), and
    their gradients are summed in order: the same numbers as one thread."""
    k = len(micro_batches)
    if k == 0 or len(masks) != k:  # zip would drop the extra ones silently
        raise ValueError(f"accumulated_grads: needs at least one micro-batch "
                         f"and one entry of masks (or None) per micro-batch, "
                         f"got {k} micro_batches and {len(masks)} masks")
    if (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
            or workers < 1):
        raise ValueError(f"accumulated_grads: workers must be a positive "
                         f"integer, got {workers!r}")
    results = [None] * k

    def run(i):
        (ids, targets), mask = micro_batches[i], masks[i]
        results[i] = loss_and_grads(params, config, ids, targets,
                                    dropout=mask)[:2]

    total_loss, total = 0.0, None
    with thread_map(min(workers, k)) as run_all:
        for start in range(0, k, workers):  # workers at a time, summed in order
            group = range(start, min(start + workers, k))
            run_all(run, group)
            for i in group:
                loss, grads = results[i]
                results[i] = None  # at most `workers` gradients held
                total_loss += loss
                if total is None:
                    total = grads
                else:
                    for name, g in grads.items():
                        total[name] += g
    for g in total.values():
        g /= k
    return total_loss / k, total


def draw_micro_batches(rng, config, tc, ids, dtype, *, workers=1):
    """The windows and dropout masks of tc.accumulation micro-batches,
    drawn with rng in order (windows 0, masks 0, windows 1, ...).
    workers > 1: the masks drawn on threads, each at its place in rng's
    stream (``attention.gpt.streams``): the same numbers."""
    def draw(r):
        return dropout_masks(r, config, tc.batch_size, tc.context,
                             tc.dropout, dtype)

    shapes = mask_shapes(config, tc.batch_size, tc.context).values()
    n_draws = sum(math.prod(s) for s in shapes) if tc.dropout else 0
    micro, masks, later = [], [None] * tc.accumulation, []
    for i in range(tc.accumulation):
        micro.append(random_windows(rng, ids, tc.batch_size, tc.context))
        here = jump_past(rng, n_draws) if workers > 1 else None
        if here is None:
            masks[i] = draw(rng)
        else:
            later.append((i, here))

    def fill(job):
        masks[job[0]] = draw(job[1])
    with thread_map(min(workers, len(later)) or 1) as run_all:
        run_all(fill, later)
    return micro, masks


def train_step(params, config, tc, state, groups, rng, step, ids, *,
               workers=1):
    """Draw the micro-batches and masks, then one clipped AdamW step;
    workers: threads for the micro-batches (``accumulated_grads``).

    Returns (loss, gradient norm before clipping, learning rate)."""
    micro, masks = draw_micro_batches(rng, config, tc, ids,
                                      params["embed.tokens"].dtype.type,
                                      workers=workers)
    loss, grads = accumulated_grads(params, config, micro, masks,
                                    workers=workers)
    norm = clip_by_global_norm(grads, tc.clip)
    lr = warmup_cosine(step, peak=tc.lr, floor=tc.min_lr, warmup=tc.warmup,
                       total=tc.steps)
    adamw_step(params, grads, state, groups, lr=lr,
               weight_decay=tc.weight_decay, betas=(tc.beta1, tc.beta2))
    return loss, norm, lr
# --8<-- [end:step]


# --8<-- [start:train]
def evaluate(params, config, ids, n, *, batch=16):
    """Mean cross-entropy over every non-overlapping window of ids."""
    inputs, targets = windows(check_windows("evaluate", ids, n, batch), n)
    total = 0.0
    for i in range(0, len(inputs), batch):
        logits = forward(params, config, inputs[i: i + batch])
        total += cross_entropy(logits, targets[i: i + batch]) * len(
            inputs[i: i + batch])
    return total / len(inputs)


def train(params, config, tc, train_ids, evals, *, report=None):
    """Train params in place; returns the log (losses, evaluations, time).

    evals: {name: token ids} scored with ``evaluate`` every tc.eval_every
    steps, without dropout: held-out text, and a slice of the training text
    (its loss without dropout, which the dropout-noisy step losses are not).
    """
    if not isinstance(evals, dict) or not evals:
        raise ValueError(f"train: evals must be a non-empty dict of name: "
                         f"token ids, got {type(evals).__name__}")
    for name, ids in (("train_ids", train_ids), *(
            (f"evals[{k!r}]", v) for k, v in evals.items())):
        check_windows(f"train ({name})", ids, tc.context)  # before any step
    rng = np.random.default_rng(tc.seed)
    groups = decay_groups(params)
    state = adamw_init(params, groups)
    log = {"loss": [], "lr": [], "grad_norm": [], "evals": []}
    start = time.perf_counter()
    for step in range(tc.steps):
        loss, norm, lr = train_step(params, config, tc, state, groups, rng,
                                    step, train_ids)
        log["loss"].append(loss)
        log["lr"].append(lr)
        log["grad_norm"].append(norm)
        if (step + 1) % tc.eval_every == 0 or step + 1 == tc.steps:
            losses = {name: evaluate(params, config, ids, tc.context)
                      for name, ids in evals.items()}
            log["evals"].append({"step": step + 1, "losses": losses,
                                 "seconds": time.perf_counter() - start})
            if report is not None:
                report(step + 1, loss, losses)
    seconds = time.perf_counter() - start
    tokens = tc.steps * tc.accumulation * tc.batch_size * tc.context
    log |= {"seconds": seconds, "tokens": tokens,
            "tokens_per_second": tokens / seconds}
    return log
# --8<-- [end:train]
