"""Chapter 7's training practice against PyTorch 2.13 and Hugging Face GPT-2,
float64: dropout with the same masks (forward and every gradient, <= 1e-10),
AdamW with decay groups == torch.optim.AdamW (<= 1e-12 over 5 steps), warm-up
+ cosine == torch's SequentialLR(LinearLR, CosineAnnealingLR) (<= 1e-12 rel.),
clipping == clip_grad_norm_ (<= 1e-12), accumulation == one large batch
(<= 1e-12), and a short training run (24 steps of a tiny GPT) whose losses
fall and equal the same run in PyTorch (<= 1e-9). Bad settings and
checkpoints raise ValueErrors naming the field; the shipped checkpoint's
validation loss equals its log."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

from attention.backward.model import loss_and_grads
from attention.checkpoints import config_from_hf, from_hf_state_dict
from attention.gpt.adamw import adamw_init, adamw_step, decay_groups
from attention.gpt.clipping import clip_by_global_norm
from attention.gpt.checkpoint import load_checkpoint, save_checkpoint
from attention.gpt.corpus import random_windows
from attention.gpt.dropout import dropout_masks
from attention.gpt.evaluation import evaluate_strided
from attention.gpt.schedule import warmup_cosine
from attention.gpt.training import TrainConfig, accumulated_grads, evaluate, train
from attention.model import ModelConfig, forward, init_params
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


def test_short_training_run_falls_and_equals_pytorch():
    vocab, n = 96, 16
    model, params, config = tiny_gpt2(seed=5, vocab=vocab, n_positions=n)
    rng = np.random.default_rng(6)
    text = np.tile(rng.integers(0, vocab, 40), 20)  # a repeating "corpus"
    tc = TrainConfig(steps=24, batch_size=2, accumulation=2, context=n, lr=1e-2,
                     min_lr=1e-3, warmup=5, dropout=0.0, eval_every=10, seed=7)
    log = train(params, config, tc, text, text[:200])

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


def test_shipped_checkpoint_validation_loss_equals_its_log():
    from attention.gpt import run
    tokenizer, params, config, tokens, log = run.shipped()
    loss = evaluate(params, config, tokens["val"], log["train"]["context"])
    assert abs(loss - log["checkpoint_val_loss"]) <= 1e-5 * loss
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


@pytest.mark.parametrize("n_tokens", [5, 16, 41])
def test_strided_evaluation_scores_each_token_once_with_its_full_context(n_tokens):
    # Stride 1: token t is predicted from the n tokens before it (all of them
    # near the start), each exactly once; one forward pass per token checks it.
    _, params, config = tiny_gpt2()
    ids = np.random.default_rng(2).integers(0, VOCAB, n_tokens)
    n = 8
    want = []
    for t in range(1, n_tokens):
        context = ids[max(0, t - n): t]
        logits = forward(params, config, context[None])[0, -1]
        want.append(-(logits[ids[t]] - np.log(np.sum(np.exp(logits)))))
    loss, scored = evaluate_strided(params, config, ids, n, 1)
    assert scored == n_tokens - 1
    assert loss == pytest.approx(np.mean(want), rel=1e-12)
    for stride in (3, n):  # every stride scores every token once
        assert evaluate_strided(params, config, ids, n, stride)[1] == scored


def test_strided_evaluation_names_bad_arguments():
    _, params, config = tiny_gpt2()
    with pytest.raises(ValueError, match="1 <= stride <= n"):
        evaluate_strided(params, config, np.arange(10), 4, 5)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        evaluate_strided(params, config, np.arange(1), 4, 2)
