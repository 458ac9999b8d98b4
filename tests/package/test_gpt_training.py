"""Chapter 7's training practice against PyTorch 2.13 and Hugging Face GPT-2,
float64: dropout with the same masks (forward and every gradient, <= 1e-10),
AdamW with decay groups == torch.optim.AdamW (<= 1e-12 over 5 steps), warm-up
+ cosine == torch's SequentialLR(LinearLR, CosineAnnealingLR) (<= 1e-12 rel.),
clipping == clip_grad_norm_ (<= 1e-12; in float16 the norm to float16's
rounding and the same clipped gradients), accumulation == one large batch
(<= 1e-12), and a short training run (24 steps of a tiny GPT) whose losses
fall and equal the same run in PyTorch (<= 1e-9). Bad settings and
checkpoints raise ValueErrors naming the field; every configuration of
chapters 3-9 (converted, published, or drawn by hypothesis) round-trips
through a checkpoint; a damaged file is one ValueError naming it; the
shipped checkpoint's validation loss equals its log."""

import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

from attention.backward.model import loss_and_grads
from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.gpt.adamw import adamw_init, adamw_step, decay_groups
from attention.gpt.baselines import bigram_loss, unigram_loss
from attention.gpt.clipping import clip_by_global_norm
from attention.gpt.checkpoint import (config_from_json, config_to_json,
                                     load_checkpoint, save_checkpoint)
from attention.gpt.corpus import cut, random_windows
from attention.gpt.dropout import dropout_mask, dropout_masks
from attention.gpt.evaluation import evaluate_strided
from attention.gpt.schedule import warmup_cosine
from attention.gpt.training import (TrainConfig, accumulated_grads,
                                    draw_micro_batches, evaluate, train,
                                    train_step)
from attention.families.moe import ROUTERS, MoE
from attention.families.moe_costs import MOE_CONFIGS
from attention.long_context.rope_scaling import RopeScaling
from attention.model import (CONFIGS, MLA_ABSORB, QK_NORMS, ModelConfig,
                             forward, init_params)
from tests.package import (test_families, test_latent_attention, test_long_context_models,
                           test_mixture_of_experts)
from tests.package.test_backward_model import hf_gradients
from tests.package.test_model import VOCAB


def tiny_gpt2(seed=0, vocab=VOCAB, n_positions=16):
    torch.manual_seed(seed)
    config = GPT2Config(n_embd=16, n_layer=2, n_head=2, vocab_size=vocab,
                        n_positions=n_positions, bos_token_id=1, eos_token_id=2,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = "eager"
    model = GPT2LMHeadModel(config).double()
    for p in model.parameters():  # biases and norms away from 0 and 1
        p.data += 0.05 * torch.randn_like(p)
    params = from_hf_state_dict({k: v.detach().numpy() for k, v in model.state_dict().items()},
                                config_from_hf(model.config))
    return model, params, config_from_hf(model.config)


def test_dropout_with_the_same_masks_equals_hugging_face_gpt2_in_training():
    model, params, config = tiny_gpt2()
    model.train()
    rng = np.random.default_rng(1)
    ids, targets = rng.integers(0, VOCAB, (3, 9)), rng.integers(0, VOCAB, (3, 9))
    masks = dropout_masks(rng, config, 3, 9, 0.3)
    order = iter(masks.values())  # the order Hugging Face applies them
    real = F.dropout
    try:  # every dropout of the model (modules and eager attention) uses our masks
        torch.nn.functional.dropout = lambda x, *a, **k: x * torch.from_numpy(next(order))
        hf_loss, hf_grads = hf_gradients(model, config, ids, targets)
    finally:
        torch.nn.functional.dropout = real
    assert next(order, None) is None  # every mask was used once
    loss, grads, _ = loss_and_grads(params, config, ids, targets, dropout=masks)
    assert abs(loss - hf_loss) <= 1e-12
    for name in params:
        assert np.max(np.abs(grads[name] - hf_grads[name])) <= 1e-10, name
    plain, _, _ = loss_and_grads(params, config, ids, targets)
    assert abs(plain - loss) > 1e-3  # the masks did something


def test_dropout_masks_zero_a_fraction_p_and_scale_the_rest():
    config = ModelConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, max_positions=64)
    masks = dropout_masks(np.random.default_rng(0), config, 4, 64, 0.25)
    weights = masks["blocks.0.attn.weights"]
    assert set(np.unique(weights)) == {0.0, 1 / 0.75}
    assert abs((weights == 0).mean() - 0.25) < 0.01
    assert dropout_masks(np.random.default_rng(0), config, 4, 64, 0.0) is None
    with pytest.raises(ValueError, match="p must lie"):
        dropout_masks(np.random.default_rng(0), config, 4, 64, 1.0)


@pytest.mark.parametrize("p", [-0.5, 1.0, 1.5, math.nan, "0.1", True, None, 0.5j])
def test_dropout_refuses_a_p_outside_0_1_by_name(p):
    config = ModelConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, max_positions=8)
    with pytest.raises(ValueError, match=r"dropout_mask: p must lie in \[0, 1\)"):
        dropout_mask(np.random.default_rng(0), (4,), p)
    with pytest.raises(ValueError, match=r"dropout_masks: p must lie in \[0, 1\)"):
        dropout_masks(np.random.default_rng(0), config, 1, 4, p)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dropout_scale_equals_torchs_in_each_dtype(dtype):
    # torch scales by 1/(1 - p) computed in float32 for float16, then rounded
    # once: 1.4287 at p = 0.3, where 1 / float16(0.7) rounds to 1.4277.
    torch.manual_seed(0)
    ps = np.concatenate([np.linspace(0.01, 0.95, 95), [0.3]])
    tdtype = getattr(torch, np.dtype(dtype).name)
    for p in ps:
        out = F.dropout(torch.ones(512, dtype=tdtype), float(p), training=True)
        scale = out[out != 0][0].item()
        mask = dropout_mask(np.random.default_rng(0), (512,), float(p), dtype)
        assert mask.dtype == dtype
        assert float(mask.max()) == scale, p


def test_adamw_with_decay_groups_equals_torch_adamw():
    rng = np.random.default_rng(2)
    params = {"W": rng.normal(size=(4, 3)), "norm.weight": rng.normal(size=3),
              "b": rng.normal(size=3)}
    tensors = {n: torch.tensor(p, requires_grad=True) for n, p in params.items()}
    groups = decay_groups(params)
    assert groups == {"decay": ["W"], "no_decay": ["norm.weight", "b"]}
    opt = torch.optim.AdamW(
        [{"params": [tensors["W"]], "weight_decay": 0.1},
         {"params": [tensors["norm.weight"], tensors["b"]], "weight_decay": 0.0}],
        lr=0.01, betas=(0.9, 0.95), eps=1e-8)
    state = adamw_init(params, groups)
    for _ in range(5):
        grads = {n: rng.normal(size=p.shape) for n, p in params.items()}
        for n, t in tensors.items():
            t.grad = torch.tensor(grads[n])
        opt.step()
        adamw_step(params, grads, state, groups, lr=0.01, weight_decay=0.1,
                   betas=(0.9, 0.95))
    for n in params:
        assert np.max(np.abs(params[n] - tensors[n].detach().numpy())) <= 1e-12, n


def torch_schedule(optimizer, warmup, total, floor):
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [
        torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / warmup,
                                          end_factor=1.0, total_iters=warmup - 1),
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total - warmup,
                                                   eta_min=floor)],
        milestones=[warmup])


def test_warmup_cosine_equals_torch_schedulers():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=3e-3)
    sched = torch_schedule(opt, 10, 100, 3e-4)
    for step in range(100):
        ours = warmup_cosine(step, peak=3e-3, floor=3e-4, warmup=10, total=100)
        assert abs(ours - opt.param_groups[0]["lr"]) <= 1e-12 * 3e-3, step
        opt.step()
        sched.step()


def test_warmup_cosine_refuses_steps_outside_the_run_by_name():
    lr = dict(peak=3e-3, floor=3e-4)
    # all warm-up is a schedule: its last step is the peak
    assert warmup_cosine(9, **lr, warmup=10, total=10) == 3e-3
    for step, warmup, total in [(10, 10, 10), (-3, 10, 100), (100, 10, 100),
                                (5, 11, 10), (5, -1, 10), (1.5, 10, 100),
                                (5, 10, math.inf), (math.nan, 10, 100)]:
        with pytest.raises(ValueError, match="warmup_cosine: need integers 0 <= step"):
            warmup_cosine(step, **lr, warmup=warmup, total=total)


def test_clip_by_global_norm_equals_clip_grad_norm():
    rng = np.random.default_rng(3)
    for max_norm in (0.5, 100.0):
        grads = {"a": rng.normal(size=(5, 4)), "b": rng.normal(size=7)}
        tensors = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True)
                   for g in grads.values()]
        for t, g in zip(tensors, grads.values()):
            t.grad = torch.tensor(g)
        theirs = torch.nn.utils.clip_grad_norm_(tensors, max_norm).item()
        ours = clip_by_global_norm(grads, max_norm)
        assert abs(ours - theirs) <= 1e-12
        for t, g in zip(tensors, grads.values()):
            assert np.max(np.abs(g - t.grad.numpy())) <= 1e-12


@pytest.mark.parametrize("values", [[300.0, 400.0], [1e-4] * 10_000],
                         ids=["squares-overflow", "squares-underflow"])
def test_clip_by_global_norm_of_float16_equals_clip_grad_norm(values):
    # Issue 38, 3.2: float16 squares overflowed (norm inf, step zeroed) or
    # underflowed (norm 0); torch sums them in float32.
    grads = {"g": np.array(values, dtype=np.float16)}
    exact = float(np.linalg.norm(grads["g"].astype(np.float64)))  # 500, 0.0100017
    t = torch.zeros(len(values), dtype=torch.float16, requires_grad=True)
    t.grad = torch.tensor(values, dtype=torch.float16)
    theirs = torch.nn.utils.clip_grad_norm_([t], 1.0)
    ours = clip_by_global_norm(grads, 1.0)
    assert abs(ours - exact) <= 1e-6 * exact  # summed in float32
    assert abs(ours - theirs.item()) <= 2**-11 * exact  # theirs: float16, rounded
    assert grads["g"].dtype == np.float16
    assert np.array_equal(grads["g"], t.grad.numpy())  # [0.6001, 0.8003], or kept


@pytest.mark.parametrize("max_norm, error", [(-1.0, ValueError), (math.nan, ValueError),
                                             ("1", TypeError), (True, TypeError)])
def test_clip_by_global_norm_refuses_a_bad_max_norm_by_name(max_norm, error):
    # Issue 38, 4.13: -1 flipped every gradient.
    grads = {"g": np.array([3.0, 4.0])}
    with pytest.raises(error, match="clip_by_global_norm: max_norm must be"):
        clip_by_global_norm(grads, max_norm)
    assert np.array_equal(grads["g"], [3.0, 4.0])


def test_clip_by_global_norm_refuses_integer_gradients_by_name():
    # Issue 38, 4.13: a raw UFuncTypeError escaped, after scaling earlier ones.
    grads = {"a": np.array([3.0]), "b": np.array([4, 0])}
    with pytest.raises(TypeError, match="gradient 'b' must be a floating"):
        clip_by_global_norm(grads, 1.0)
    assert np.array_equal(grads["a"], [3.0])
    with pytest.raises(TypeError, match="gradient 'a' must be a floating"):
        clip_by_global_norm({"a": [3.0, 4.0]}, 1.0)  # not scalable in place


def test_gradient_accumulation_equals_one_large_batch():
    _, params, config = tiny_gpt2()
    rng = np.random.default_rng(4)
    ids, targets = rng.integers(0, VOCAB, (8, 12)), rng.integers(0, VOCAB, (8, 12))
    masks = dropout_masks(rng, config, 8, 12, 0.2)
    halves = [{k: m[i:i + 4] for k, m in masks.items()} for i in (0, 4)]
    loss, grads = accumulated_grads(params, config, [(ids[:4], targets[:4]),
                                                     (ids[4:], targets[4:])], halves)
    big_loss, big, _ = loss_and_grads(params, config, ids, targets, dropout=masks)
    assert abs(loss - big_loss) <= 1e-12
    for name in params:
        assert np.max(np.abs(grads[name] - big[name])) <= 1e-12, name


@pytest.mark.parametrize("workers", [2, 3])
def test_micro_batches_on_threads_equal_one_thread_and_one_large_batch(workers):
    """Issue 44, item 7: the micro-batches of a step run on threads, with the same
    masks; the sum (in order) is one thread's exactly and one large batch's."""
    _, params, config = tiny_gpt2()
    rng = np.random.default_rng(5)
    ids, targets = rng.integers(0, VOCAB, (10, 12)), rng.integers(0, VOCAB, (10, 12))
    masks = dropout_masks(rng, config, 10, 12, 0.2)
    parts = [(ids[i:i + 2], targets[i:i + 2]) for i in range(0, 10, 2)]
    part_masks = [{k: m[i:i + 2] for k, m in masks.items()} for i in range(0, 10, 2)]
    one = accumulated_grads(params, config, parts, part_masks)
    threaded = accumulated_grads(params, config, parts, part_masks, workers=workers)
    big_loss, big, _ = loss_and_grads(params, config, ids, targets, dropout=masks)
    assert threaded[0] == one[0] and abs(threaded[0] - big_loss) <= 1e-12
    for name in params:
        assert np.array_equal(threaded[1][name], one[1][name]), name
        assert np.max(np.abs(threaded[1][name] - big[name])) <= 1e-12, name
    with pytest.raises(ValueError, match="workers must be a positive integer, got 0"):
        accumulated_grads(params, config, parts, part_masks, workers=0)


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.PCG64DXSM,
                                  np.random.MT19937])
@pytest.mark.parametrize("workers", [2, 3])
def test_masks_drawn_on_threads_are_one_threads_numbers(bits, workers):
    """Issue 44, item 7: the masks of each micro-batch drawn on a thread from its place
    in the stream (a jump for PCG64, in turn otherwise) are the numbers one thread
    draws in turn, and the generator ends where one thread's does; a generator that
    keeps half a 64-bit output (after a small integers()) keeps it across the jump."""
    _, _, config = tiny_gpt2()
    tc = TrainConfig(batch_size=2, context=12, accumulation=3, dropout=0.2)
    ids = np.arange(200) % VOCAB
    runs = []
    for w in (1, workers):
        rng = np.random.Generator(bits(7))
        rng.integers(0, 3)
        runs.append((*draw_micro_batches(rng, config, tc, ids, np.float64,
                                         workers=w), rng.integers(0, 3, 8)))
    (micro, masks, after), (micro_w, masks_w, after_w) = runs
    assert np.array_equal(after, after_w)
    for (x, y), (x_w, y_w), m, m_w in zip(micro, micro_w, masks, masks_w):
        assert np.array_equal(x, x_w) and np.array_equal(y, y_w)
        assert m.keys() == m_w.keys()
        assert all(np.array_equal(m[k], m_w[k]) for k in m)


def test_a_training_step_on_two_threads_equals_one_thread():
    _, params, config = tiny_gpt2()
    tc = TrainConfig(batch_size=2, context=12, accumulation=2, dropout=0.1)
    ids = np.arange(300) % VOCAB
    ends = []
    for workers in (1, 2):
        p = {k: v.copy() for k, v in params.items()}
        groups = decay_groups(p)
        state, rng = adamw_init(p, groups), np.random.default_rng(3)
        out = [train_step(p, config, tc, state, groups, rng, s, ids,
                          workers=workers) for s in (1, 2)]
        ends.append((out, p))
    assert ends[0][0] == ends[1][0]
    assert all(np.array_equal(ends[0][1][k], ends[1][1][k]) for k in params)


@pytest.mark.parametrize("n_batches, n_masks", [(2, 1), (1, 2), (0, 0)])
def test_accumulated_grads_refuses_micro_batches_and_masks_of_other_lengths(
        n_batches, n_masks):
    # Issue 38, 3.3: masks=[None] with two micro-batches ran one and divided by 2.
    _, params, config = tiny_gpt2()
    ids = np.random.default_rng(4).integers(0, VOCAB, (2, 12))
    with pytest.raises(ValueError, match=f"accumulated_grads: .* got {n_batches} "
                       f"micro_batches and {n_masks} masks"):
        accumulated_grads(params, config, [(ids, ids)] * n_batches, [None] * n_masks)


def test_short_training_run_falls_and_equals_pytorch():
    vocab, n = 96, 16
    model, params, config = tiny_gpt2(seed=5, vocab=vocab, n_positions=n)
    rng = np.random.default_rng(6)
    text = np.tile(rng.integers(0, vocab, 40), 20)  # a repeating "corpus"
    tc = TrainConfig(steps=24, batch_size=2, accumulation=2, context=n, lr=1e-2,
                     min_lr=1e-3, warmup=5, dropout=0.0, eval_every=10, seed=7)
    log = train(params, config, tc, text, {"val": text[:200]})

    model.train()  # no dropout: all its probabilities are 0
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc.weight_decay},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=tc.lr, betas=(tc.beta1, tc.beta2), eps=1e-8)
    sched = torch_schedule(opt, tc.warmup, tc.steps, tc.min_lr)
    data = np.random.default_rng(tc.seed)
    losses = []
    for _ in range(tc.steps):
        opt.zero_grad()
        total = 0.0
        for _ in range(tc.accumulation):
            x, y = random_windows(data, text, tc.batch_size, n)
            logits = model(torch.tensor(x)).logits
            loss = F.cross_entropy(logits.reshape(-1, vocab), torch.tensor(y).reshape(-1))
            (loss / tc.accumulation).backward()
            total += loss.item() / tc.accumulation
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
        opt.step()
        sched.step()
        losses.append(total)
    assert np.max(np.abs(np.array(log["loss"]) - losses)) <= 1e-9
    assert np.mean(log["loss"][-5:]) < np.mean(log["loss"][:5]) - 1.0  # it learns
    final = from_hf_state_dict({k: v.detach().numpy() for k, v in model.state_dict().items()},
                               config)
    for name in params:
        assert np.max(np.abs(params[name] - final[name])) <= 1e-9, name


@pytest.mark.parametrize("field, value", [
    ("steps", 0), ("batch_size", 2.5), ("lr", -1.0), ("lr", math.nan), ("warmup", 0),
    ("dropout", 1.0), ("min_lr", 1.0), ("weight_decay", 2.0), ("clip", 0.0),
    ("beta2", 1.0), ("accumulation", True)])
def test_training_settings_out_of_range_raise_naming_the_field(field, value):
    with pytest.raises(ValueError, match=f"TrainConfig: {field} "):
        TrainConfig(**{field: value})


@pytest.mark.parametrize("steps", [1, 3])
def test_a_run_may_be_all_warm_up_even_of_one_step(steps):
    _, params, config = tiny_gpt2()
    tc = TrainConfig(steps=steps, warmup=steps, batch_size=2, context=8, eval_every=1)
    log = train(params, config, tc, np.arange(40) % VOCAB, {"val": np.arange(20) % VOCAB})
    assert abs(log["lr"][-1] - tc.lr) <= 1e-15 * tc.lr and len(log["evals"]) == steps
    with pytest.raises(ValueError, match=rf"TrainConfig: warmup must lie in \[1, {steps}\]"):
        TrainConfig(steps=steps, warmup=steps + 1)


def test_train_checks_its_token_streams_before_any_step():
    _, params, config = tiny_gpt2()
    before = {k: v.copy() for k, v in params.items()}
    tc = TrainConfig(steps=4, warmup=1, batch_size=2, context=8, eval_every=2)
    ids = np.arange(40) % VOCAB
    with pytest.raises(ValueError, match=r"train \(evals\['val'\]\): 5 tokens hold no window of 8"):
        train(params, config, tc, ids, {"train": ids, "val": ids[:5]})
    with pytest.raises(ValueError, match=r"train \(train_ids\): ids must be a 1-D"):
        train(params, config, tc, ids / 2, {"val": ids})
    with pytest.raises(ValueError, match="train: evals must be a non-empty dict of name: token ids, "
                       "got ndarray"):
        train(params, config, tc, ids, ids)
    assert all(np.array_equal(params[k], before[k]) for k in params)  # no step taken


def test_train_scores_each_named_text_without_dropout_at_each_evaluation():
    """Issue 39 (overclaim 4): the step losses carry dropout's noise, so the training loss
    beside the held-out one is an evaluation without dropout, as the held-out one is."""
    _, params, config = tiny_gpt2()
    ids = np.random.default_rng(8).integers(0, VOCAB, 300)
    tc = TrainConfig(steps=4, warmup=1, batch_size=2, context=8, eval_every=2, dropout=0.5)
    log = train(params, config, tc, ids, {"train": ids[:100], "val": ids[200:]})
    assert [e["step"] for e in log["evals"]] == [2, 4]
    assert list(log["evals"][-1]["losses"]) == ["train", "val"]
    for name, part in (("train", ids[:100]), ("val", ids[200:])):  # the final weights
        assert log["evals"][-1]["losses"][name] == evaluate(params, config, part, 8)


def test_cut_splits_at_line_boundaries_into_pieces_that_rejoin():
    text = "".join(f"line {i:02}\n" for i in range(20))  # 8 characters a line
    pieces = cut(text, 0.4, 0.5, 0.6)
    assert "".join(pieces) == text and all(p.endswith("\n") for p in pieces)
    assert [len(p) // 8 for p in pieces] == [8, 2, 2, 8]
    assert [len(p) // 8 for p in cut(text, 0.41, 0.5)] == [9, 1, 10]  # the next boundary
    assert cut(text, 0, 1) == ["", text, ""]
    assert cut("no newline", 0.5) == ["no newline", ""]
    with pytest.raises(ValueError, match=r"cut: fractions must rise within \[0, 1\], got \(0.6, 0.5\)"):
        cut(text, 0.6, 0.5)


def test_the_held_out_tenth_of_each_page_is_not_trained_on_and_the_probe_is():
    from attention.gpt import run
    pages = {name: "".join(f"{name} {i:03}\n" for i in range(100))  # lines of one length
             for name in run.PAGES + run.BLOG_PAGES}
    texts, _ = run.split_pages(pages)
    for name in run.PAGES:
        lines = pages[name].splitlines(keepends=True)
        assert "".join(lines[50:60]) in texts["val"] and lines[55] not in texts["train"]
        assert "".join(lines[40:50]) in texts["probe"] and lines[45] in texts["train"]
        assert lines[0] + lines[39] + lines[60] + lines[99] not in texts["val"]
    assert texts["blog"] == pages[run.BLOG_PAGES[0]] and run.BLOG_PAGES[0] not in texts["train"]


def test_checkpoint_round_trips_and_rejects_a_mismatched_config(tmp_path):
    config = ModelConfig(vocab_size=40, d_model=16, n_layers=2, n_heads=2, max_positions=8)
    params = init_params(config, np.random.default_rng(0))
    save_checkpoint(tmp_path / "m.npz", params, config, dtype="float32")
    loaded, same = load_checkpoint(tmp_path / "m.npz", dtype=np.float64)
    assert same == config and not list(tmp_path.glob("*.tmp"))
    assert all(np.array_equal(loaded[k], params[k].astype(np.float32)) for k in params)
    wrong = dict(params)
    wrong["blocks.1.mlp.W_in"] = wrong["blocks.1.mlp.W_in"][:, :8]
    with pytest.raises(ValueError, match="'blocks.1.mlp.W_in' has shape"):
        save_checkpoint(tmp_path / "m.npz", wrong, config)
    # a file whose config does not match its weights
    other = json.dumps({**json.loads(json.dumps(config.__dict__)), "n_layers": 3})
    np.savez(tmp_path / "bad.npz", config=np.array(other),
             **{k: v.astype(np.float16) for k, v in params.items()})
    with pytest.raises(ValueError, match="'blocks.2.norm1.weight' is missing"):
        load_checkpoint(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="dtype must be one of"):
        save_checkpoint(tmp_path / "m.npz", params, config, dtype="int8")


def round_trip(config, path, seed=0):
    """Save a model of config with random weights, load it: the same config and
    the weights rounded to float32."""
    params = init_params(config, np.random.default_rng(seed))
    save_checkpoint(path, params, config, dtype="float32")
    loaded, same = load_checkpoint(path, dtype=np.float64)
    assert same == config
    assert list(loaded) == list(params)
    assert all(np.array_equal(loaded[k], params[k].astype(np.float32)) for k in params)


# Issue 38, 3.4: a model with rope_scaling or moe saved, then failed to load.
# Every configuration the package builds for chapters 3-9: converted from the
# Hugging Face configurations the family tests use, and the published tables.
CONVERTED = {f"{module.__name__.split('.')[-1]}: {name}": make
             for module in (test_families, test_long_context_models,
                            test_mixture_of_experts)
             for name, (_, make) in module.MODELS.items()}
CONVERTED |= {f"test_latent_attention: {name}":
              lambda q=q, rope=rope: test_latent_attention.deepseek(q, rope)
              for name, (q, rope) in test_latent_attention.CASES.items()}


@pytest.mark.parametrize("name", list(CONVERTED))
def test_every_converted_config_round_trips_through_a_checkpoint(name, tmp_path):
    config = config_from_hf(CONVERTED[name]())
    round_trip(config, tmp_path / "m.npz")


@pytest.mark.parametrize("name", list(CONFIGS) + list(MOE_CONFIGS))
def test_every_published_config_round_trips_through_the_checkpoints_json(name):
    # too large to hold weights: the configuration's own round trip
    config = {**CONFIGS, **MOE_CONFIGS}[name]
    assert config_from_json(config_to_json(config)) == config


def test_the_round_trips_cover_scaled_rope_mixtures_windows_and_mla():
    configs = [config_from_hf(make()) for make in CONVERTED.values()]
    configs += list(MOE_CONFIGS.values())
    assert {c.rope_scaling.rope_type for c in configs if c.rope_scaling} >= {
        "linear", "dynamic", "yarn", "llama3"}
    assert {c.moe.router for c in configs if c.moe} == set(ROUTERS)
    assert any(c.layer_types for c in configs) and any(c.kv_lora_rank for c in configs)


positive = st.floats(1e-6, 1e3)


@st.composite
def model_configs(draw):
    """A small ModelConfig using any of the fields of chapters 3-9."""
    arch = draw(st.sampled_from(["gpt2", "llama", "gemma2", "deepseek_v3"]))
    n_layers, n_heads = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kw = dict(arch=arch, vocab_size=draw(st.integers(1, 9)), n_layers=n_layers,
              n_heads=n_heads, max_positions=draw(st.integers(1, 16)),
              d_ff=draw(st.none() | st.integers(1, 6)),
              norm_eps=draw(st.floats(0, 1e-2)),
              rope_base=draw(positive), tie_embeddings=draw(st.booleans()),
              rope_layout=draw(st.sampled_from(["halves", "interleaved"])))
    kw["d_model"] = n_heads * 2 * draw(st.integers(1, 2))
    if arch == "gpt2":
        return ModelConfig(**kw)
    kw["rope_scaling"] = draw(st.none() | st.builds(
        RopeScaling, rope_type=st.sampled_from(["default", "linear", "dynamic",
                                                "yarn", "llama3"]),
        factor=st.floats(1, 64), original_max_positions=st.integers(1, 16),
        low_freq_factor=positive, high_freq_factor=positive,
        beta_fast=positive, beta_slow=positive, truncate=st.booleans(),
        attention_factor=st.none() | positive, mscale=st.none() | positive,
        mscale_all_dim=st.none() | positive))
    kw["sliding_window"] = draw(st.none() | st.integers(1, 8))
    if kw["sliding_window"] is not None:
        # Chapters 3-9's layers: "linear" (a recurrent mixer) is chapter 12's.
        kw["layer_types"] = draw(st.none() | st.tuples(
            *[st.sampled_from(["full", "sliding"])] * n_layers))
    for name in ("attn_scale", "attn_softcap", "final_softcap"):
        kw[name] = draw(st.none() | positive)
    if arch == "deepseek_v3":
        kw |= dict(kv_lora_rank=draw(st.integers(1, 4)),
                   qk_rope_head_dim=2 * draw(st.integers(1, 2)),
                   qk_nope_head_dim=draw(st.integers(1, 4)),
                   v_head_dim=draw(st.integers(1, 4)),
                   q_lora_rank=draw(st.none() | st.integers(1, 4)),
                   mla_absorb=draw(st.sampled_from(MLA_ABSORB)))
    else:
        kw |= dict(n_kv_heads=draw(st.sampled_from(
                       [k for k in (1, 2, 3) if n_heads % k == 0])),
                   head_dim=draw(st.none() | st.sampled_from([2, 4, 6])),
                   qk_norm=draw(st.sampled_from(QK_NORMS)),
                   attn_bias=draw(st.booleans()), attn_sinks=draw(st.booleans()))
    if arch != "gemma2" and draw(st.booleans()):
        router = draw(st.sampled_from(ROUTERS))
        grouped = router == "sigmoid" and draw(st.booleans())
        kw["moe"] = MoE(
            n_experts=4, top_k=draw(st.integers(1, 2)), d_ff=draw(st.integers(1, 5)),
            router=router, renormalise=draw(st.booleans()), scale=draw(positive),
            n_group=2 if grouped else 1, topk_group=draw(st.integers(1, 2)),
            n_shared=draw(st.integers(0, 2)), first_dense=draw(st.integers(0, n_layers)),
            bias=draw(st.booleans()), swiglu_limit=draw(st.none() | positive),
            swiglu_alpha=draw(positive))
    return ModelConfig(**kw)


@settings(max_examples=150, deadline=None)
@given(config=model_configs())
def test_any_config_of_chapters_3_to_9_round_trips_through_a_checkpoint(config, tmp_path_factory):
    round_trip(config, tmp_path_factory.mktemp("checkpoint") / "m.npz")


def npz(path, **arrays):
    with open(path, "wb") as f:  # np.savez(path) would add a suffix to some names
        np.savez(f, **arrays)


def npy(path, array):
    with open(path, "wb") as f:
        np.save(f, array)


def flip_a_byte_inside(data, member):
    damaged = bytearray(data)
    damaged[data.index(member.encode()) + 200] ^= 0xFF  # inside the stored array
    return bytes(damaged)


# How a file is damaged -> (write it from a good file f, what the error says).
DAMAGE = {
    "empty": (lambda f: f.path.write_bytes(b""), "not a checkpoint: the file is empty"),
    "truncated": (lambda f: f.path.write_bytes(f.data[:len(f.data) // 2]),
                  r"not a whole \.npz \(zip\) file: truncated"),
    "not a zip": (lambda f: f.path.write_text("hello"), r"not a whole \.npz"),
    "an .npy file": (lambda f: npy(f.path, np.zeros(3)), "it holds one array"),
    "a flipped byte": (lambda f: f.path.write_bytes(flip_a_byte_inside(f.data,
                                                                       "embed.tokens")),
                       r"damaged: 'embed.tokens' cannot be read \(Bad CRC-32"),
    "no config": (lambda f: npz(f.path, **f.weights), "it has no config"),
    "a missing weight": (lambda f: npz(f.path, config=np.array(f.text), **{
        k: v for k, v in f.weights.items() if k != "final_norm.bias"}),
        "parameter 'final_norm.bias' is missing"),
    "bad JSON": (lambda f: npz(f.path, config=np.array(f.text[:-1]), **f.weights),
                 "its config is not valid JSON"),
    "a JSON list": (lambda f: npz(f.path, config=np.array("[1]"), **f.weights),
                    "a JSON object is needed"),
    "an unknown field": (lambda f: npz(f.path, config=np.array(
        f.text[:-1] + ', "n_experts": 3}'), **f.weights),
        "not a valid ModelConfig: .*n_experts"),
    "a config of numbers": (lambda f: npz(f.path, config=np.arange(3), **f.weights),
                            "its config is not text"),
    "an object array": (lambda f: npz(f.path, config=np.array(f.text),
                                      x=np.array([None])), "'x' is an object array"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_checkpoint_is_one_error_naming_the_file_and_the_damage(damage,
                                                                          tmp_path):
    # Issue 38, 4.3: BadZipFile, EOFError, a context-manager TypeError and a
    # JSONDecodeError without the file's name escaped.
    config = ModelConfig(vocab_size=5, d_model=4, n_layers=1, n_heads=2, max_positions=4)
    params = init_params(config, np.random.default_rng(0))
    save_checkpoint(tmp_path / "good.npz", params, config)
    good = SimpleNamespace(path=tmp_path / "model.npz", text=config_to_json(config),
                           data=(tmp_path / "good.npz").read_bytes(),
                           weights={k: v.astype(np.float16) for k, v in params.items()})
    write, says = DAMAGE[damage]
    write(good)
    with pytest.raises(ValueError, match=f"load_checkpoint: {re.escape(str(good.path))}: "
                                         f".*{says}"):
        load_checkpoint(good.path)


@pytest.mark.parametrize("dtype", [np.int32, "int8", np.uint8, bool, "nonsense"])
def test_load_checkpoint_refuses_a_dtype_that_is_not_floating_point(dtype, tmp_path):
    # Issue 38, 4.4: dtype=np.int32 truncated every weight to 0.
    config = ModelConfig(vocab_size=5, d_model=4, n_layers=1, n_heads=2, max_positions=4)
    save_checkpoint(tmp_path / "m.npz", init_params(config, np.random.default_rng(0)),
                    config)
    with pytest.raises(ValueError, match="load_checkpoint: dtype must be a floating"):
        load_checkpoint(tmp_path / "m.npz", dtype=dtype)


def test_evaluate_refuses_a_zero_window_or_batch_by_name():
    _, params, config = tiny_gpt2()
    ids = np.arange(20) % VOCAB
    with pytest.raises(ValueError, match="evaluate: n must be a positive integer, got 0"):
        evaluate(params, config, ids, 0)
    with pytest.raises(ValueError, match="evaluate: batch must be a positive integer"):
        evaluate(params, config, ids, 4, batch=0)
    with pytest.raises(ValueError, match="evaluate: ids must be a 1-D sequence of int"):
        evaluate(params, config, ids + 0.5, 4)


def test_baselines_equal_counting_by_hand():
    train_ids, val_ids = [0, 1, 1, 2, 1, 0], [1, 2, 0]
    counts = np.array([2, 3, 1, 0]) + 1.0  # unigram, add-1 over a vocabulary of 4
    want = -np.mean(np.log(counts[val_ids] / counts.sum()))
    assert abs(unigram_loss(train_ids, val_ids, 4) - want) <= 1e-15
    # bigram, add-0.1: after 1 comes 1, 2, 0 once each; after 2 comes 1
    p12, p20 = 1.1 / (3 + 0.4), 0.1 / (1 + 0.4)
    want = -(np.log(p12) + np.log(p20)) / 2
    assert abs(bigram_loss(train_ids, val_ids, 4) - want) <= 1e-15


@pytest.mark.parametrize("fn", [unigram_loss, bigram_loss])
@pytest.mark.parametrize("train_ids, val_ids, message", [
    ([0, 1, 2], [1, -1], r"val_ids\[1\] = -1 is not a token id in \[0, 4\)"),
    ([0, 4, 2], [1, 2], r"train_ids\[1\] = 4 is not a token id in \[0, 4\)"),
    ([0, 1, 2], [1, 9], r"val_ids\[1\] = 9 is not a token id"),
    ([0, 1, 2], [1.0, 2.0], "val_ids must be a 1-D sequence of integers, got dtype float64"),
    ([[0, 1]], [1, 2], r"train_ids must be .* shape \(1, 2\)"),
    ([0, 1, 2], [], "val_ids needs at least"),
])
def test_baselines_refuse_ids_outside_the_vocabulary_by_name(fn, train_ids, val_ids, message):
    with pytest.raises(ValueError, match=f"{fn.__name__}: {message}"):
        fn(train_ids, val_ids, 4)


def test_shipped_checkpoint_losses_equal_its_log():
    from attention.gpt import run
    tokenizer, params, config, tokens, log = run.shipped()
    for name, ids in (("train", tokens["probe"]), ("val", tokens["val"]),
                      ("blog", tokens["blog"])):
        loss = evaluate(params, config, ids, log["train"]["context"])
        assert abs(loss - log["checkpoint_losses"][name]) <= 1e-5 * loss, name
        assert len(ids) == log["n_tokens"][name if name != "train" else "probe"]
    assert (run.SHIPPED / "model.npz").stat().st_size <= 4 * 2**20  # float16, <= 4 MB


def test_make_train_is_deterministic_for_its_seed(tmp_path, capsys):
    """`make train`'s pipeline (run.main), on a tiny model for a few steps, twice: the same
    tokenizer, tokens, checkpoint and log (all but the wall time)."""
    from attention.gpt import run
    model = ModelConfig(vocab_size=run.VOCAB_SIZE, d_model=16, n_layers=1, n_heads=2,
                        max_positions=32)
    tc = TrainConfig(steps=6, batch_size=2, context=32, warmup=2, eval_every=3)
    for out in ("a", "b"):
        run.main(model, tc, tmp_path / out)
    for name in ("vocab.json", "merges.txt", "tokens.npz", "model.npz"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    logs = [json.loads((tmp_path / out / "log.json").read_text("utf8")) for out in "ab"]
    for log in logs:  # the clock's readings differ, nothing else
        del log["seconds"], log["tokens_per_second"]
        for evaluation in log["evals"]:
            del evaluation["seconds"]
    assert logs[0] == logs[1] and logs[0]["loss"][-1] < logs[0]["loss"][0]
    assert not list(tmp_path.glob("*/*.tmp")), "a temporary file was left behind"
