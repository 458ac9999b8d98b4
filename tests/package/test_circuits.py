"""Chapter 14's attention-only model, the same with MLPs, and their head scores: every
gradient equals autograd's (float64, <= 1e-12 absolute), ablation included; the scores take their extreme values on
the patterns and matrices that define them; a short run of ``make induction``'s pipeline is
deterministic and writes what the page reads; the shipped run is what its log says."""

import math
from dataclasses import asdict

import numpy as np
import pytest
import torch

from attention.circuits import run
from attention.circuits.data import repeat_positions, repeated_segments
from attention.circuits.model import (CircuitConfig, backward, forward, init_params,
                                      loss_and_grads)
from attention.circuits.scores import (composition_scores, copying_score,
                                       prefix_matching_score, previous_token_score,
                                       random_composition, uniform_baseline)
from attention.circuits.train import InductionTrain, drop_step, half_losses, train

TINY = CircuitConfig(vocab_size=11, d_model=12, n_layers=2, n_heads=3, max_positions=10)
TINY_MLP = CircuitConfig(**(asdict(TINY) | {"d_mlp": 7}))


def torch_loss(params, config, ids, ablate=()):
    """The same model written with PyTorch's operations, for autograd."""
    p = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    x_ids, targets = torch.tensor(ids[:, :-1]), torch.tensor(ids[:, 1:])
    batch, n = x_ids.shape
    x = p["W_E"][x_ids] + p["W_pos"][:n]
    for i in range(config.n_layers):
        q, k, v = ((x @ p[f"{i}.{W}"]).reshape(batch, n, config.n_heads, -1)
                   .transpose(1, 2) for W in ("W_Q", "W_K", "W_V"))
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        keep = torch.ones(config.n_heads, 1, 1, dtype=o.dtype)
        for layer, head in ablate:
            if layer == i:
                keep[head] = 0
        x = x + (o * keep).transpose(1, 2).reshape(batch, n, -1) @ p[f"{i}.W_O"]
        if config.d_mlp:
            x = x + torch.nn.functional.gelu(x @ p[f"{i}.W_in"],
                                             approximate="tanh") @ p[f"{i}.W_out"]
    logits = x @ p["W_U"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config.vocab_size),
                                             targets.reshape(-1))
    loss.backward()
    return loss.item(), {k: t.grad.numpy() for k, t in p.items()}


@pytest.mark.parametrize("config", [TINY, TINY_MLP], ids=["attention-only", "mlp"])
@pytest.mark.parametrize("ablate", [(), ((1, 2),), ((0, 0), (1, 1))])
def test_every_gradient_equals_autograd_ablated_heads_included(ablate, config):
    rng = np.random.default_rng(5)
    params = init_params(config, rng, std=0.5, dtype=np.float64)
    assert ("0.W_in" in params) == bool(config.d_mlp)
    ids = repeated_segments(rng, 3, 5, config.vocab_size)
    loss, grads = loss_and_grads(params, config, ids, ablate=ablate)
    ref_loss, ref = torch_loss(params, config, ids, ablate)
    assert abs(loss - ref_loss) <= 1e-12
    assert grads.keys() == params.keys()
    for name in params:
        assert np.max(np.abs(grads[name] - ref[name])) <= 1e-12, name
    for layer, head in ablate:  # an ablated head's own weights learn nothing
        cols = slice(head * TINY.d_head, (head + 1) * TINY.d_head)
        assert not grads[f"{layer}.W_V"][:, cols].any()


def test_repeated_segments_are_distinct_tokens_then_the_same_again():
    ids = repeated_segments(np.random.default_rng(0), 50, 7, 9)
    assert ids.shape == (50, 14)
    assert np.array_equal(ids[:, :7], ids[:, 7:])
    assert all(len(set(row[:7])) == 7 for row in ids)
    assert repeat_positions(7).tolist() == [7, 8, 9, 10, 11, 12]


@pytest.mark.parametrize("half, batch, words", [(1, 2, "half"), (10, 2, "half"),
                                                (3, 0, "batch"), (2.0, 1, "half")])
def test_repeated_segments_refuse_bad_sizes_by_name(half, batch, words):
    with pytest.raises(ValueError, match=words):
        repeated_segments(np.random.default_rng(0), batch, half, 9)


@pytest.mark.parametrize("ids, words", [
    (np.zeros(4, dtype=int), "batch, n"), (np.zeros((1, 11), dtype=int), "positions"),
    (np.full((1, 3), 11), "0..10"), (np.zeros((1, 3)), "integer")])
def test_forward_refuses_bad_ids_by_name(ids, words):
    params = init_params(TINY, np.random.default_rng(0))
    with pytest.raises(ValueError, match=words):
        forward(params, TINY, ids)


@pytest.mark.parametrize("fields, words", [
    ({"n_heads": 5}, "d_model=12 must be a multiple of n_heads=5"),
    ({"vocab_size": 0}, "vocab_size must be an int >= 1"),
    ({"n_layers": 2.0}, "n_layers must be an int >= 1"),
    ({"max_positions": True}, "max_positions must be an int >= 1"),
    ({"d_mlp": -1}, "d_mlp must be an int >= 0"), ({"d_mlp": 8.0}, "d_mlp must")])
def test_circuit_config_refuses_bad_sizes_by_name(fields, words):
    with pytest.raises(ValueError, match=words):
        CircuitConfig(**(asdict(TINY) | fields))


@pytest.mark.parametrize("ablate", [((2, 0),), ((0, 3),), (0, 1), ((0,),)])
def test_ablate_refuses_a_head_the_model_lacks(ablate):
    params = init_params(TINY, np.random.default_rng(0))
    with pytest.raises(ValueError, match="ablate"):
        forward(params, TINY, np.zeros((1, 3), dtype=int), ablate=ablate)


def test_scores_are_one_on_their_defining_patterns_and_uniform_gives_the_baseline():
    half, n = 4, 8
    previous = np.eye(n, k=-1)[None, None]  # (batch, heads, n, n)
    previous[..., 0, 0] = 1
    induction = np.zeros((1, 1, n, n))
    induction[..., np.arange(half, n), np.arange(1, half + 1)] = 1
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert previous_token_score(previous).tolist() == [1.0]
    assert prefix_matching_score(induction, half).tolist() == [1.0]
    assert previous_token_score(induction).tolist() != [1.0]
    assert previous_token_score(uniform[None, None])[0] == pytest.approx(
        uniform_baseline(np.arange(1, n)))
    assert prefix_matching_score(uniform[None, None], half)[0] == pytest.approx(
        uniform_baseline(np.arange(half, n)))


def test_copying_score_is_one_for_a_copier_minus_one_for_a_suppressor():
    rng = np.random.default_rng(0)
    W_E = rng.standard_normal((9, 6))
    W_V, W_O = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    W_U = np.linalg.pinv(W_E @ W_V @ W_O)  # the OV circuit projects onto its range
    assert copying_score(W_E, W_V, W_O, W_U) == pytest.approx(1.0)
    assert copying_score(W_E, W_V, W_O, -W_U) == pytest.approx(-1.0)


def test_k_composition_is_one_when_the_key_reads_exactly_what_was_written():
    rng = np.random.default_rng(1)
    V1, O1 = rng.standard_normal((8, 1)), rng.standard_normal((1, 8))
    Q2 = rng.standard_normal((8, 1))
    K2 = O1.T  # a rank-one key that reads O1's direction only
    Q1, K1, V2 = rng.standard_normal((3, 8, 1))
    O2 = rng.standard_normal((1, 8))
    scores = composition_scores((Q1, K1, V1, O1), (Q2, K2, V2, O2))
    assert scores["K"] == pytest.approx(1.0)
    shapes = [(8, 2)] * 3 + [(2, 8)] + [(8, 2)] * 3 + [(2, 8)]
    baseline = random_composition(shapes, np.random.default_rng(0), draws=50)
    assert all(0 < value < 0.6 for value in baseline.values())


def test_a_short_run_of_the_pipeline_is_deterministic_and_loads_back(tmp_path):
    tc = InductionTrain(steps=30, batch=4, half=5, min_half=3, eval_every=10)
    for out in ("a", "b"):
        run.main(TINY, tc, seeds=(0, 1), out=tmp_path / out, quiet=True)
    config, params, log = run.shipped(tmp_path / "a")
    again = run.shipped(tmp_path / "b")
    assert config == TINY and set(params) == {0, 1}
    for seed in (0, 1):
        assert all(np.array_equal(params[seed][k], again[1][seed][k]) for k in params[seed])
    def timeless(log):
        return {seed: {k: v for k, v in entry.items() if k != "seconds"}
                for seed, entry in log["seeds"].items()}
    assert timeless(log) == timeless(again[2])
    assert log["seeds"]["0"]["step"] == [0, 10, 20, 30]
    fixed = repeated_segments(np.random.default_rng(12345), 64, 5, TINY.vocab_size)
    assert half_losses(params[1], TINY, fixed, 5)[1] == pytest.approx(
        log["seeds"]["1"]["repeat"][-1], abs=1e-5)
    assert not list(tmp_path.glob(".a-*"))  # the staging folder is gone


def test_a_short_run_with_mlps_ships_float16_beside_and_loads_float32(tmp_path):
    tc = InductionTrain(steps=20, batch=4, half=5, min_half=3, eval_every=10)
    run.main(TINY, tc, seeds=(0,), out=tmp_path, quiet=True)
    run.main(TINY_MLP, tc, seeds=(0, 1), out=tmp_path, quiet=True, prefix="mlp-",
             store=np.float16)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "log.json", "mlp-log.json", "mlp-models.npz", "models.npz"]
    with np.load(tmp_path / "mlp-models.npz") as data:
        assert data["seed1/0.W_in"].dtype == np.float16
    config, params, log = run.shipped(tmp_path, prefix="mlp-")
    assert config == TINY_MLP and log["model"] == asdict(TINY_MLP)
    assert params[1]["1.W_out"].dtype == np.float32
    assert params[1].keys() == init_params(TINY_MLP, np.random.default_rng(0)).keys()
    assert run.shipped(tmp_path)[0] == TINY  # the attention-only run is untouched
    # the weights rounded to float16 score the fixed batch as the log says, nearly
    fixed = repeated_segments(np.random.default_rng(12345), 64, 5, TINY.vocab_size)
    assert half_losses(params[1], TINY_MLP, fixed, 5)[1] == pytest.approx(
        log["seeds"]["1"]["repeat"][-1], abs=1e-2)


def test_make_induction_refuses_a_model_it_does_not_know():
    with pytest.raises(SystemExit, match="unknown model 'gpt'"):
        run.cli(["mlp", "gpt"])


@pytest.mark.parametrize("min_half", [1, 6])
def test_train_refuses_a_shortest_segment_outside_2_to_half(min_half):
    with pytest.raises(ValueError, match="min_half must lie in 2..half=5"):
        train(TINY, InductionTrain(steps=1, half=5, min_half=min_half))


def test_drop_step_is_the_first_scored_step_below_half_the_uniform_loss():
    log = {"step": [0, 5, 10, 15], "repeat": [2.3, 2.0, 1.1, 0.2]}
    assert drop_step(log, 10) == 10  # half of log 10 = 1.15
    assert drop_step({"step": [0], "repeat": [2.3]}, 10) is None


def test_the_shipped_run_has_three_seeds_each_with_its_drop_under_a_megabyte():
    config, params, log = run.shipped()
    assert sum(p.stat().st_size for p in run.SHIPPED.iterdir()) <= 1_000_000
    assert sorted(params) == [0, 1, 2]
    for seed, entry in log["seeds"].items():
        assert entry["drop_step"] is not None
        assert entry["repeat"][-1] < 0.2 < math.log(config.vocab_size) / 2
    assert log["train"] == asdict(run.TRAIN)  # shipped with today's settings
    assert log["model"] == asdict(run.MODEL) and config == run.MODEL


def test_the_shipped_run_with_mlps_has_three_seeds_trained_as_the_attention_only():
    config, params, log = run.shipped(prefix="mlp-")
    assert config == run.MLP_MODEL and config.d_mlp > 0
    assert log["model"] == asdict(run.MLP_MODEL)
    assert log["train"] == asdict(run.MLP_TRAIN) == asdict(run.TRAIN)
    assert sorted(params) == [0, 1, 2] and "1.W_in" in params[0]
    for entry in log["seeds"].values():
        assert entry["drop_step"] == drop_step(entry, config.vocab_size)
