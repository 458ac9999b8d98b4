"""``make train``: the tokenizer, the data and the run that chapter 7 ships.

Deterministic for a seed on one machine: the tokenizer, the batches and the
dropout masks are all seeded. It writes ``attention/gpt/shipped/``:
``vocab.json`` and ``merges.txt``, ``tokens.npz`` (the token ids of the
training text, of the slice of it scored as the training loss, of the
held-out slice and of the held-out page), ``model.npz`` (the checkpoint,
float16) and ``log.json``. They belong together (the model's embedding rows are the
tokenizer's ids), so the run writes them into a staging folder beside
``shipped/`` and only at the end renames them in, ``log.json`` last: a run
stopped part way (Ctrl-C during minutes of training) leaves the previous set
whole. The files travel with the package, so a page in the browser loads
them as the tests do.
"""

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from attention.gpt.bpe import BPETokenizer, train_bpe
from attention.gpt.checkpoint import load_checkpoint, save_checkpoint
from attention.gpt.corpus import cut, prose
from attention.gpt.tokenizer_files import save_tokenizer
from attention.gpt.training import TrainConfig, evaluate, train
from attention.model import ModelConfig, init_params
from attention.parameters import count_parameters

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = Path(__file__).resolve().parent / "shipped"
# The prose of the home page and of chapters 1 to 6 and 8 to 11 (not chapter
# 7's: it quotes this model). Of each page, the tenth from halfway on
# (HELD_OUT, cut at line boundaries) is held out: text of the kind the model
# trains on. The tenth before it (PROBE) is trained on; scored without
# dropout, it is the training loss beside the held-out one. The article,
# which retells chapter 2 in its own words, is held out whole (BLOG_PAGES):
# a page of another kind.
PAGES = ("index.md", "chapters/ch01-foundations.md",
         "chapters/ch02-self-attention.md",
         "chapters/ch03-transformer-block.md",
         "chapters/ch04-generation.md",
         "chapters/ch05-attention-at-scale.md",
         "chapters/ch06-backpropagation.md",
         "chapters/ch08-long-contexts.md",
         "chapters/ch09-smaller-caches-steadier-logits.md",
         "chapters/ch10-linear-attention.md",
         "chapters/ch11-serving.md")
PROBE, HELD_OUT = (0.4, 0.5), (0.5, 0.6)  # shares of each page's prose
BLOG_PAGES = ("blog/posts/self-attention-numpy.md",)
VOCAB_SIZE = 1024
MODEL = ModelConfig(vocab_size=VOCAB_SIZE, d_model=128, n_layers=3,
                    n_heads=4, max_positions=128)
TRAIN = TrainConfig(steps=2000, context=128, lr=3e-3, warmup=100,
                    eval_every=200)


def shipped():
    """(tokenizer, params, config, tokens, log) of the shipped run."""
    tokenizer = BPETokenizer.from_files(SHIPPED)
    params, config = load_checkpoint(SHIPPED / "model.npz")
    with np.load(SHIPPED / "tokens.npz") as data:
        # NumPy's index type (int64 here, int32 in the browser's WebAssembly,
        # where np.bincount refuses int64)
        tokens = {name: data[name].astype(np.intp) for name in data.files}
    log = json.loads((SHIPPED / "log.json").read_text("utf8"))
    return tokenizer, params, config, tokens, log


SET = ("vocab.json", "merges.txt", "tokens.npz", "model.npz", "log.json")


def main(model=MODEL, tc=TRAIN, out=SHIPPED):
    """Train, then replace the set in out (see the module's docstring)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # the same file system as out, so that os.replace is a rename
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        _run(model, tc, staging)
        for name in SET:  # the whole set, log.json last
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def split_pages(pages):
    """{"train", "probe", "val", "blog": text}: see PAGES above."""
    parts = {"train": [], "probe": [], "val": []}
    for name in PAGES:
        head, probe, held, tail = cut(pages[name], *PROBE, HELD_OUT[1])
        parts["train"].append(head + probe + tail)
        parts["probe"].append(probe)
        parts["val"].append(held)
    texts = {part: "".join(texts) for part, texts in parts.items()}
    return texts | {"blog": "".join(pages[p] for p in BLOG_PAGES)}, parts


def _run(model, tc, out):
    """The tokenizer, the tokens, the training run, the checkpoint and the
    log, written into the (staging) folder out."""
    pages = {name: prose((ROOT / "docs" / name).read_text("utf8"))
             for name in PAGES + BLOG_PAGES}
    texts, parts = split_pages(pages)
    start = time.perf_counter()
    vocab, merges = train_bpe(parts["train"], VOCAB_SIZE)
    save_tokenizer(out, vocab, merges)
    tokenizer = BPETokenizer(vocab, merges)
    ids = {part: np.array(tokenizer.encode(text), dtype=np.uint16)
           for part, text in texts.items()}
    with open(out / "tokens.npz", "wb") as f:
        np.savez_compressed(f, **ids)
    print(f"tokenizer: {len(merges)} merges in "
          f"{time.perf_counter() - start:.0f} s; tokens: " + ", ".join(
              f"{len(v)} {k}" for k, v in ids.items()), flush=True)

    params = init_params(model, np.random.default_rng(tc.seed),
                         dtype=np.float32)
    n_params = count_parameters(model)["total"]

    def report(step, loss, losses):
        print(f"step {step:4d}  loss {loss:.3f}  " + "  ".join(
            f"{k} {v:.3f}" for k, v in losses.items()), flush=True)

    evals = {"train": ids["probe"], "val": ids["val"], "blog": ids["blog"]}
    evals = {k: v.astype(np.int64) for k, v in evals.items()}
    log = train(params, model, tc, ids["train"].astype(np.int64), evals,
                report=report)
    save_checkpoint(out / "model.npz", params, model)
    saved, _ = load_checkpoint(out / "model.npz")  # float16, back to float32
    log |= {
        "model": asdict(model), "train": asdict(tc), "pages": PAGES,
        "probe": PROBE, "held_out": HELD_OUT, "blog_pages": BLOG_PAGES,
        "bytes": {k: len(v.encode()) for k, v in texts.items()},
        "n_tokens": {k: len(v) for k, v in ids.items()},
        "parameters": n_params, "flops_6ND": 6 * n_params * log["tokens"],
        "checkpoint_losses": {k: evaluate(saved, model, v, tc.context)
                              for k, v in evals.items()}}
    (out / "log.json").write_text(json.dumps(log), "utf8")
    print(f"{log['seconds']:.0f} s, {log['tokens_per_second']:.0f} tokens/s, "
          f"checkpoint losses " + ", ".join(
              f"{k} {v:.4f}" for k, v in log["checkpoint_losses"].items()))


if __name__ == "__main__":
    sys.exit(main())
