"""Training a tiny model from scratch: a synthetic task, the loop, and how
well the model does.

The task is to reverse a short sequence of symbols: the model reads
``a b c d e f |`` and must continue with ``f e d c b a``. Each output token
copies the input token at the mirrored position, so a head that looks back
there solves it; the model has to learn where to look. Only the reversed
tokens are scored (the first half is random and cannot be predicted).

The loop is the whole of training: forward with a trace, the loss, the
backward pass by hand (``attention.backward.model``), one Adam step.
Everything is seeded, so two runs give the same numbers.
"""

# --8<-- [start:task]
from dataclasses import dataclass

import numpy as np

from attention.backward.model import loss_and_grads
from attention.model import forward
from attention.optim import adam_init, adam_step

SEPARATOR = 0  # token id of "|"; the symbols are 1 .. symbols


@dataclass(frozen=True)
class ReverseTask:
    length: int = 6    # symbols per sequence to reverse
    symbols: int = 8   # distinct symbols, token ids 1 .. symbols

    @property
    def vocab_size(self) -> int:  # the symbols and the separator
        return self.symbols + 1

    @property
    def n(self) -> int:  # tokens read: symbols, "|", all but the last output
        return 2 * self.length

    def batch(self, rng, size):
        """(ids, targets), (size, n) each: targets are the next tokens, -100
        (not scored) except for the reversed symbols."""
        if (isinstance(size, bool) or not isinstance(size, (int, np.integer))
                or size < 1):
            raise ValueError(f"ReverseTask.batch: size must be a positive "
                             f"integer, got {size!r}")
        a = rng.integers(1, self.symbols + 1, size=(size, self.length))
        sep = np.full((size, 1), SEPARATOR)
        seq = np.concatenate([a, sep, a[:, ::-1]], axis=1)  # (size, n + 1)
        ids, targets = seq[:, :-1], seq[:, 1:].copy()  # (size, n) each
        targets[:, : self.length] = -100  # random symbols and "|": not scored
        return ids, targets
# --8<-- [end:task]


# --8<-- [start:train]
def train(params, config, task, *, steps, batch_size=32, lr=3e-3, seed=0):
    """Adam on fresh random batches; updates params, returns the losses."""
    rng = np.random.default_rng(seed)
    state = adam_init(params)
    losses = []
    for _ in range(steps):
        ids, targets = task.batch(rng, batch_size)
        loss, grads, _ = loss_and_grads(params, config, ids, targets)
        adam_step(params, grads, state, lr=lr)
        losses.append(loss)
    return losses


def accuracy(params, config, ids, targets):
    """(token accuracy, sequence accuracy) of the argmax predictions.

    Over the scored tokens. A sequence counts only if all of them are right;
    then greedy decoding, which feeds the model its own predictions, would
    produce exactly the same tokens.
    """
    predicted = forward(params, config, ids).argmax(axis=-1)  # (batch, n)
    scored = targets != -100
    if predicted.shape != np.shape(targets) or not scored.any():
        raise ValueError(f"accuracy: targets must have the shape of ids, "
                         f"{predicted.shape}, and score a token (not all "
                         f"-100), got shape {np.shape(targets)}")
    right = (predicted == targets) | ~scored
    return float(right[scored].mean()), float(right.all(axis=1).mean())
# --8<-- [end:train]
