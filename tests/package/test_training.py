"""Training the tiny model on the reverse task: it solves it in under 20 s of CPU time
(about 3 s here), and the same seed gives the same run, bit for bit."""

import time

import numpy as np

from attention.model import ModelConfig, init_params
from attention.training import ReverseTask, accuracy, train


def tiny_model(task):
    config = ModelConfig(vocab_size=task.vocab_size, d_model=32, n_layers=2, n_heads=4,
                         d_ff=64, max_positions=task.n)
    return config, init_params(config, np.random.default_rng(0))


def test_the_task_scores_only_the_reversed_half():
    task = ReverseTask(length=4, symbols=5)
    ids, targets = task.batch(np.random.default_rng(0), 3)
    assert ids.shape == targets.shape == (3, 8)
    assert np.all(ids[:, 4] == 0)  # the separator
    assert np.all(targets[:, :4] == -100)
    assert np.array_equal(targets[:, 4:], ids[:, 3::-1])  # the input, reversed


def test_adam_solves_the_reverse_task_in_seconds_and_deterministically():
    task = ReverseTask()
    config, params = tiny_model(task)
    test_ids, test_targets = task.batch(np.random.default_rng(1), 1000)
    assert accuracy(params, config, test_ids, test_targets)[0] < 0.3  # chance: 1/8
    start = time.process_time()  # CPU time: a busy shared machine only adds wall time
    losses = train(params, config, task, steps=200, batch_size=32, lr=3e-3, seed=0)
    seconds = time.process_time() - start
    tokens, sequences = accuracy(params, config, test_ids, test_targets)
    assert sequences >= 0.99 and tokens >= 0.998
    assert losses[-1] < 0.05 < 1.5 < losses[0]
    assert seconds < 20

    _, again = tiny_model(task)
    assert train(again, config, task, steps=20, seed=0) == losses[:20]  # bit for bit


# --- Issue 24: empty work is refused, not averaged to -0.0 ---

def test_train_refuses_batch_size_zero_and_lr_nan():
    import pytest
    task = ReverseTask(length=2, symbols=3)
    config, params = tiny_model(task)
    with pytest.raises(ValueError, match="size must be a positive integer, got 0"):
        train(params, config, task, steps=1, batch_size=0)
    with pytest.raises(ValueError, match="lr must be a finite number"):
        train(params, config, task, steps=1, lr=float("nan"))
    assert all(np.isfinite(p).all() for p in params.values())


def test_accuracy_with_nothing_scored_is_refused():
    import pytest
    task = ReverseTask(length=2, symbols=3)
    config, params = tiny_model(task)
    ids, targets = task.batch(np.random.default_rng(0), 2)
    with pytest.raises(ValueError, match="score a token"):
        accuracy(params, config, ids, np.full_like(targets, -100))
