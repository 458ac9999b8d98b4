"""The course's live figures: each one the package's own code, under the reader's controls.

Each function is registered under the name of the static figure it brings to life and
returns ``figure(summary, *panels)`` (``attention.interactive.widgets``). The inputs the
pages type (chapter 1's word vectors, chapter 4's logits, chapter 5's row of scores) are
repeated here as constants; ``tests/package/test_interactive.py`` checks that they are
the pages' own. References are those of the modules the figures call: softmax and
temperature (chapter 1), scaled dot-product attention and its masks (Vaswani et al.
2017, section 3.2), the sampling filters (Holtzman et al. 2020; Nguyen et al. 2024), the
online softmax (Milakov and Gimelshein 2018) and chapter 7's trained model.
"""

import functools
import math

import numpy as np

from attention.interactive.widgets import (Choice, Slider, TextBox, Toggle, bars, facts,
                                           figure, heatmap, live_figure, percent)
from attention.kv_cache import sliding_window_mask
from attention.masks import causal_mask, padding_mask
from attention.multi_head import multi_head_attention
from attention.sampling import apply_temperature, probabilities, process_logits
from attention.scaled_dot_product import attention
from attention.softmax import softmax

# Chapter 1: cat's scores against the five words (cat @ vectors.T of section 1.1).
WORDS = ("cat", "dog", "lion", "car", "truck")
VECTORS = np.array([[0.9, 0.9, 0.0, 0.1], [0.9, 0.8, 0.0, 0.4], [0.9, 0.0, 0.0, 0.7],
                    [0.0, 0.0, 0.9, 0.5], [0.0, 0.0, 0.9, 0.9]])  # (5, 4)
# Chapter 4: the eight logits of section 4.5.
LOGITS = np.array([2.0, 1.0, 0.5, 0.5, -1.0, -3.0, 0.0, 4.0])
# Chapter 5: the row of scores and the value of each key, section 5.3.
ROW_SCORES = np.array([1.0, 3.0, 2.0, 5.0, 0.0, 4.0])
ROW_VALUES = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])


def _entropy(p):
    """-Σ p log p in nats, 0 log 0 taken as 0."""
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


@live_figure("ch01-softmax-temperature", "softmax(cat's scores / T)",
             [Slider("temperature", "Temperature T", 0.05, 5.0, 0.05, 1.0)])
def softmax_temperature(temperature):
    """Chapter 1: the weights of cat's five scores at one temperature, and their
    entropy against its largest possible value, log 5."""
    scores = VECTORS[0] @ VECTORS.T  # (5,)
    p = softmax(scores / temperature)
    top = int(np.argmax(p))
    h = _entropy(p)
    summary = (f"At T = {temperature:g}, {WORDS[top]} gets the largest weight "
               f"({percent(p[top])}) and {WORDS[int(np.argmin(p))]} the smallest "
               f"({percent(p.min())}); the entropy is {h:.3f} of at most "
               f"{math.log(len(p)):.3f}.")
    return figure(summary, bars(f"T = {temperature:g}", WORDS, p),
                  facts("entropy", [("entropy (nats)", h, f"{h:.3f}"),
                                    ("log 5, the most", math.log(5), f"{math.log(5):.3f}")]))


N_TOKENS = 6  # chapter 2's live weights: six random queries and keys
MASKS = (("none", "none"), ("causal", "causal"),
         ("padding", "padding: the last 2 keys are <pad>"),
         ("window", "causal sliding window of 3, 1 sink"))


def _mask(kind, n):
    """The (n, n) boolean mask of ``kind`` (True = may attend)."""
    if kind == "causal":
        return causal_mask(n)
    if kind == "padding":
        return np.broadcast_to(padding_mask([n - 2], n)[0, 0], (n, n))  # (n, n)
    if kind == "window":
        return sliding_window_mask(n, 3, n_sinks=1)
    return np.ones((n, n), dtype=bool)


@live_figure("ch02-weights-causal", "Attention weights of six random queries and keys",
             [Choice("d_k", "d_k, the size of each query and key",
                     tuple((str(d), str(d)) for d in (4, 16, 64, 256, 1024)), "64"),
              Toggle("scaled", "Divide the scores by √d_k", True),
              Choice("mask", "Mask", MASKS, "none")])
def weights_causal(d_k, scaled, mask):
    """Chapter 2: softmax(q kᵀ / √d_k) for six queries and keys drawn from N(0, 1),
    with or without the scaling, under one of the chapter's masks. Unscaled, the
    spread of the scores grows like √d_k and the rows saturate."""
    d = int(d_k)
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, N_TOKENS, d))  # (2, n, d_k)
    allowed = _mask(mask, N_TOKENS)
    _, w = attention(q, k, k, mask=allowed, scale=None if scaled else 1.0,
                     return_weights=True)  # w (n, n)
    tops = w.max(axis=1)
    worst = int(np.argmax(tops))
    saturated = int(np.sum(tops > 0.9))
    how = "scaled by 1/√d_k" if scaled else "not scaled"
    summary = (f"d_k = {d}, scores {how}, mask {mask}: the most peaked row is query "
               f"{worst}, with {percent(tops[worst])} on key {int(np.argmax(w[worst]))}; "
               f"{saturated} of {N_TOKENS} rows give one key more than 90%.")
    names = [str(i) for i in range(N_TOKENS)]
    return figure(summary,
                  heatmap(f"d_k = {d}, {how}, mask: {mask}", names, names, w, ~allowed),
                  facts("largest weight per row", [(f"query {i}", t, percent(t))
                                                   for i, t in enumerate(tops)]))


N_HEADS = 4


@functools.cache
def head_weights():
    """(n_heads, n, n) weights of one random causal multi-head layer (d_model 16,
    4 heads) on six random token vectors, seeded."""
    rng = np.random.default_rng(7)
    d_model = 16
    x = rng.normal(size=(N_TOKENS, d_model))  # (n, d_model)
    W_q, W_k, W_v, W_o = rng.normal(size=(4, d_model, d_model)) / math.sqrt(d_model)
    _, w = multi_head_attention(x, W_q, W_k, W_v, W_o, N_HEADS, causal=True,
                                return_weights=True)
    return w  # (n_heads, n, n)


@live_figure("ch02-heads", "Each head's causal attention weights",
             [Choice("head", "Head", tuple((str(h), f"head {h}") for h in range(N_HEADS)),
                     "0")])
def heads(head):
    """Chapter 2: one head's weights in a random causal multi-head layer; every head
    has its own projections, so its own pattern over the same tokens."""
    h = int(head)
    w = head_weights()[h]  # (n, n)
    last = N_TOKENS - 1
    j = int(np.argmax(w[last]))
    previous = float(np.mean(np.diagonal(w, offset=-1)))
    summary = (f"Head {h}: the last token, {last}, attends most to token {j} "
               f"({percent(w[last, j])}); on average a token gives {percent(previous)} "
               f"to the one before it.")
    labels = [str(i) for i in range(N_TOKENS)]
    return figure(summary, heatmap(f"head {h} of {N_HEADS}", labels, labels, w,
                                   ~causal_mask(N_TOKENS)),
                  facts("this head", [("weight on the previous token", previous,
                                       percent(previous))]))


@live_figure("ch04-sampling-filters", "One distribution under the sampling filters",
             [Slider("temperature", "Temperature", 0.1, 3.0, 0.1, 1.0),
              Slider("top_k", "Top-k (0: off)", 0, len(LOGITS), 1, 0, integer=True),
              Slider("top_p", "Top-p (1: off)", 0.05, 1.0, 0.05, 1.0),
              Slider("min_p", "Min-p (0: off)", 0.0, 1.0, 0.05, 0.0)])
def sampling_filters(temperature, top_k, top_p, min_p):
    """Chapter 4: the eight-token distribution after temperature, top-k, top-p and
    min-p, in ``generate()``'s order (``process_logits``), renormalised; the tokens
    a filter removed are marked, and the distribution before the filters is kept
    as ghost bars."""
    before = probabilities(apply_temperature(LOGITS, temperature))
    filtered = process_logits(LOGITS, temperature=temperature, top_k=top_k,
                              top_p=top_p, min_p=min_p or None)
    kept = np.isfinite(filtered)
    after = probabilities(filtered)
    names = [str(i) for i in np.flatnonzero(kept)]
    summary = (f"T = {temperature:g}, top-k {top_k or 'off'}, top-p "
               f"{'off' if top_p == 1 else f'{top_p:g}'}, min-p {min_p or 'off'}: "
               f"{kept.sum()} of {len(LOGITS)} tokens kept ({', '.join(names)}); token "
               f"{int(np.argmax(after))} has {percent(after.max())} after renormalising.")
    return figure(summary,
                  bars("after the filters (ghost bars: before)", range(len(LOGITS)), after,
                       before=before, marks=["kept" if k else "cut" for k in kept]),
                  facts("kept", [("tokens kept", float(kept.sum()), str(kept.sum()))]))


TILE_KEYS = 2  # chapter 5's figure cuts the row into tiles of two keys


@live_figure("ch05-online-softmax-tiles", "The online softmax, one key tile at a time",
             [Slider("step", "Tiles read", 1, -(-len(ROW_SCORES) // TILE_KEYS), 1, 1,
                     integer=True)])
def online_softmax(step):
    """Chapter 5: the running maximum m, the running sum l of exp(s - m) and the
    output acc / l after the first ``step`` tiles of two keys, for section 5.3's
    row of scores and one value per key. After the last tile acc / l is the
    softmax-weighted average of the values."""
    size = TILE_KEYS
    n_tiles = -(-len(ROW_SCORES) // size)
    m, l, acc = -math.inf, 0.0, 0.0
    for start in range(0, step * size, size):
        s = ROW_SCORES[start:start + size]
        m_new = max(m, float(s.max()))
        alpha = math.exp(m - m_new)  # moves the old sums onto the new maximum
        p = np.exp(s - m_new)
        l = l * alpha + float(p.sum())
        acc = acc * alpha + float(p @ ROW_VALUES[start:start + size])
        m = m_new
    read = step * size
    marks = ["read" if j < read - size else "now" if j < read else "next"
             for j in range(len(ROW_SCORES))]
    exact = float(softmax(ROW_SCORES) @ ROW_VALUES)
    summary = (f"After tile {step} of {n_tiles} ({min(read, len(ROW_SCORES))} of "
               f"{len(ROW_SCORES)} keys): running max m = {m:g}, running sum "
               f"l = {l:.3f}, output so far acc / l = {acc / l:.3f}; the whole row "
               f"gives {exact:.3f}.")
    return figure(summary,
                  bars(f"scores s, tiles of {size}", range(len(ROW_SCORES)), ROW_SCORES,
                       marks=marks, percent=False),
                  facts(f"after tile {step} of {n_tiles}",
                        [("running max m", m, f"{m:g}"), ("running sum l", l, f"{l:.3f}"),
                         ("output acc / l", acc / l, f"{acc / l:.3f}"),
                         ("whole row softmax(s) · v", exact, f"{exact:.3f}")]))


MAX_PROMPT_TOKENS = 16  # a 16 x 16 heatmap still reads on a phone


@functools.cache
def _shipped():
    from attention.gpt.run import shipped

    tokenizer, params, config, _, _ = shipped()
    # float64, as the tests compute: float32 products sum in a different order in the
    # browser's NumPy (no BLAS) and differ in the last bits there.
    return tokenizer, {k: v.astype(np.float64) for k, v in params.items()}, config


@functools.cache
def _prompt_weights(prompt):
    """The token labels and every layer's (n_heads, n, n) weights on ``prompt``."""
    from attention.model import forward

    tokenizer, params, config = _shipped()
    ids = tokenizer.encode(prompt)[:MAX_PROMPT_TOKENS]
    trace = {}
    forward(params, config, np.array(ids)[None], trace=trace)
    labels = [repr(tokenizer.decode([i]))[1:-1] for i in ids]
    layers = [trace[f"blocks.{i}.weights"][0] for i in range(config.n_layers)]
    return labels, layers


@live_figure("ch07-attention-head", "The trained model's attention on your prompt",
             [TextBox("prompt", "Prompt", "The attention weights of each query sum to one.",
                      120),
              Choice("layer", "Layer", tuple((str(i), f"layer {i}") for i in range(3)), "0"),
              # Chapter 7's figure above it: the layer-0 head leaning most on the previous token.
              Choice("head", "Head", tuple((str(h), f"head {h}") for h in range(4)), "2")])
def trained_attention(prompt, layer, head):
    """Chapter 7: the weights of one head of the shipped model on the reader's prompt
    (its first 16 tokens), with the share on the previous token."""
    labels, layers = _prompt_weights(prompt)
    w = layers[int(layer)][int(head)]  # (n, n)
    n = len(labels)
    last = n - 1
    j = int(np.argmax(w[last]))
    previous = float(np.mean(np.diagonal(w, offset=-1))) if n > 1 else 0.0
    summary = (f"Layer {layer}, head {head}, {n} tokens: the last token "
               f"'{labels[last]}' attends most to token {j}, '{labels[j]}' "
               f"({percent(w[last, j])}); the weight on the previous token is "
               f"{percent(previous)} on average.")
    names = [f"{t} {i}" for i, t in enumerate(labels)]
    return figure(summary, heatmap(f"layer {layer}, head {head}", names, names, w,
                                   ~causal_mask(n)),
                  facts("this head", [("weight on the previous token", previous,
                                       percent(previous))]))


# Chapter 14: the segment the page's live figure starts on, and the shipped model's
# induction head (seed 0), the second figure of section 14.4.
SEGMENT = "5 17 42 8 33 21 60 2"
INDUCTION_HEAD = "1.1"
MAX_SEGMENT = 8  # tokens; repeated, a 16 x 16 heatmap (as chapter 7's, for a phone)


@functools.cache
def _circuits():
    from attention.circuits.run import shipped

    config, models, _ = shipped()
    return config, {k: v.astype(np.float64) for k, v in models[0].items()}


def _segment(text):
    """The reader's segment as (labels, token ids), at most MAX_SEGMENT of each: whole
    numbers 0 to 63 are token ids; any other words are numbered 0, 1, 2, ... in the order
    each first appears (the model's tokens are random ids: any distinct ids will do)."""
    words = text.replace(",", " ").split()[:MAX_SEGMENT]
    if all(w.isdigit() and int(w) < 64 for w in words):
        return words, [int(w) for w in words]
    first = {}
    return words, [first.setdefault(w, len(first)) for w in words]


@live_figure("ch14-induction-head", "The induction head on a segment you repeat",
             [TextBox("segment", "Words, or token ids 0 to 63", SEGMENT, 80),
              Choice("head", "Head", tuple((f"{layer}.{h}", f"layer {layer}, head {h}")
                                           for layer in (0, 1) for h in range(2)),
                     INDUCTION_HEAD)])
def induction_head(segment, head):
    """Chapter 14: one head of the shipped attention-only model (seed 0) on the reader's
    tokens followed by the same tokens again, with its mean weight, over the repeat,
    on the token after the earlier occurrence of each query's token."""
    from attention.circuits.model import forward

    config, params = _circuits()
    labels, tokens = _segment(segment)
    half = len(tokens)
    ids = np.array(tokens * 2)[None]  # (1, 2 * half)
    trace = {}
    forward(params, config, ids, trace=trace)
    layer, h = (int(x) for x in head.split("."))
    w = trace[f"{layer}.weights"][0, h]  # (n, n)
    n = 2 * half
    rows = np.arange(half, n)
    after = float(w[rows, rows - half + 1].mean()) if half > 1 else 0.0
    uniform = float(np.mean(1.0 / (rows + 1.0)))
    last = n - 1
    j = int(np.argmax(w[last]))
    summary = (f"Layer {layer}, head {h}, {half} tokens and their repeat: the last query "
               f"('{labels[-1]}' at position {last}) attends most to position {j} "
               f"({percent(w[last, j])}); over the repeat, the weight on the token after "
               f"the earlier occurrence is {percent(after)} on average, against "
               f"{percent(uniform)} for uniform attention.")
    names = [f"{t} @{i}" for i, t in enumerate(labels * 2)]
    return figure(summary, heatmap(f"layer {layer}, head {h}", names, names, w,
                                   ~causal_mask(n)),
                  facts("over the repeat", [
                      ("weight on the token after the earlier occurrence", after,
                       percent(after)),
                      ("uniform attention", uniform, percent(uniform))]))
