"""The live figures (attention.interactive): each one is the package's own computation,
its inputs are the pages' own, and bad control values are refused by name.

Tolerances: the figures call the same functions as the references here, so they agree
to 1e-12 (the online softmax's last step with the direct softmax, to 1e-12 as in
chapter 5).
"""

import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
from mkdocs.exceptions import PluginError

from attention.gpt.run import shipped
from attention.interactive import FIGURES, compute, compute_json
from attention.interactive import figures as live
from attention.kv_cache import sliding_window_mask
from attention.model import forward
from attention.multi_head import multi_head_attention
from attention.sampling import apply_temperature, probabilities, process_logits
from attention.softmax import softmax
from tests.support import ROOT
from tools.site.live_figures import figure_html, on_page_content

CHAPTERS = ROOT / "docs" / "chapters"


def page_array(page: str, pattern: str) -> np.ndarray:
    """The array a page types, found by the regex ``pattern`` (its group 1 is the list)."""
    text = next(CHAPTERS.glob(f"{page}-*.md")).read_text("utf8")
    found = re.search(pattern, text, re.S)
    assert found, f"{page}: {pattern} not found"
    return np.array(eval(found.group(1), {}))  # a list literal the page typed


def panel(result, kind, index=0):
    return [p for p in result["panels"] if p["kind"] == kind][index]


def test_the_inputs_are_the_pages_own():
    vectors = page_array("ch01", r"\nvectors = np\.array\((\[.*?\])\)")
    assert np.array_equal(vectors, live.VECTORS)
    assert np.array_equal(page_array("ch04", r"\nlogits = np\.array\((\[.*?\])\)"), live.LOGITS)
    assert np.array_equal(page_array("ch05", r"\ns = np\.array\((\[.*?\])\)"), live.ROW_SCORES)
    assert np.array_equal(page_array("ch05", r"\nvals = np\.array\((\[.*?\])\)"),
                          live.ROW_VALUES)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_draws_its_defaults_as_json(name):
    result = json.loads(compute_json(name, "{}"))
    assert result == compute(name)
    assert len(result["summary"].split()) >= 8
    assert result["panels"]
    for p in result["panels"]:
        numbers = (p.get("values") if p["kind"] != "facts" else [r["value"] for r in p["rows"]])
        assert np.all(np.isfinite(np.array(numbers, dtype=float)))


def test_the_figures_are_the_six_of_the_issue_and_chapter_14s():
    assert sorted(FIGURES) == ["ch01-softmax-temperature", "ch02-heads", "ch02-weights-causal",
                               "ch04-sampling-filters", "ch05-online-softmax-tiles",
                               "ch07-attention-head", "ch14-induction-head"]


@pytest.mark.parametrize("temperature", [0.05, 0.5, 1.0, 5.0])
def test_softmax_temperature_is_softmax_of_the_scaled_scores(temperature):
    result = compute("ch01-softmax-temperature", {"temperature": str(temperature)})
    p = softmax(live.VECTORS[0] @ live.VECTORS.T / temperature)
    np.testing.assert_allclose(panel(result, "bars")["values"], p, rtol=0, atol=1e-12)
    entropy = panel(result, "facts")["rows"][0]["value"]
    assert abs(entropy + np.sum(p * np.log(p))) < 1e-12
    assert entropy <= math.log(5)


def test_unscaled_scores_saturate_as_d_k_grows_and_scaled_ones_do_not():
    def saturated(d_k, scaled):
        w = np.array(panel(compute("ch02-weights-causal", {"d_k": d_k, "scaled": scaled}),
                           "heatmap")["values"])
        return int(np.sum(w.max(axis=1) > 0.9))

    assert saturated("1024", False) >= 4
    assert saturated("4", False) <= 1
    assert saturated("1024", True) == 0


@pytest.mark.parametrize("mask", ["none", "causal", "padding", "window"])
def test_blocked_cells_get_no_weight_and_rows_sum_to_one(mask):
    heat = panel(compute("ch02-weights-causal", {"mask": mask}), "heatmap")
    w, blocked = np.array(heat["values"]), np.array(heat["blocked"])
    assert np.all(w[blocked] == 0)
    np.testing.assert_allclose(w.sum(axis=1), 1, rtol=0, atol=1e-12)
    expected = {"none": np.zeros((6, 6), bool), "causal": np.triu(np.ones((6, 6), bool), 1),
                "padding": np.broadcast_to(np.arange(6) >= 4, (6, 6)),
                "window": ~sliding_window_mask(6, 3, n_sinks=1)}[mask]
    assert np.array_equal(blocked, expected)


def test_each_head_is_one_head_of_multi_head_attention():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 16))
    W_q, W_k, W_v, W_o = rng.normal(size=(4, 16, 16)) / math.sqrt(16)
    _, weights = multi_head_attention(x, W_q, W_k, W_v, W_o, 4, causal=True,
                                      return_weights=True)
    drawn = [np.array(panel(compute("ch02-heads", {"head": str(h)}), "heatmap")["values"])
             for h in range(4)]
    np.testing.assert_allclose(np.stack(drawn), weights, rtol=0, atol=1e-12)
    assert not np.allclose(drawn[0], drawn[1])  # heads differ


@pytest.mark.parametrize("settings, kept", [
    ({}, list(range(8))),
    ({"top_k": "3"}, [0, 1, 7]),
    ({"top_p": "0.9"}, [0, 1, 7]),
    ({"min_p": "0.1"}, [0, 7]),
    ({"temperature": "0.5", "top_p": "0.9"}, [7]),
])
def test_sampling_keeps_what_process_logits_keeps(settings, kept):
    result = compute("ch04-sampling-filters", settings)
    bars = panel(result, "bars")
    t = float(settings.get("temperature", 1))
    filtered = process_logits(live.LOGITS, temperature=t,
                              top_k=int(settings.get("top_k", 0)),
                              top_p=float(settings.get("top_p", 1)),
                              min_p=float(settings.get("min_p", 0)) or None)
    np.testing.assert_allclose(bars["values"], probabilities(filtered), rtol=0, atol=1e-12)
    np.testing.assert_allclose(bars["before"], probabilities(apply_temperature(live.LOGITS, t)),
                               rtol=0, atol=1e-12)
    assert [i for i, m in enumerate(bars["marks"]) if m == "kept"] == kept
    assert f"{len(kept)} of 8 tokens kept" in result["summary"]


def test_the_online_softmax_steps_end_at_the_softmax_of_the_row():
    steps = [panel(compute("ch05-online-softmax-tiles", {"step": str(s)}), "facts")["rows"]
             for s in (1, 2, 3)]
    m = [rows[0]["value"] for rows in steps]
    l = [rows[1]["value"] for rows in steps]
    assert m == [3.0, 5.0, 5.0]  # the figure of section 5.3: 3, then 5 and 5
    assert [round(x, 3) for x in l] == [1.135, 1.203, 1.578]
    exact = softmax(live.ROW_SCORES) @ live.ROW_VALUES
    assert abs(steps[-1][2]["value"] - exact) < 1e-12
    assert abs(l[-1] - np.exp(live.ROW_SCORES - 5).sum()) < 1e-12
    marks = panel(compute("ch05-online-softmax-tiles", {"step": "2"}), "bars")["marks"]
    assert marks == ["read", "read", "now", "now", "next", "next"]


def test_the_trained_model_figure_is_the_models_own_weights():
    tokenizer, params, config, _, _ = shipped()
    prompt = "Each head looks back at the keys."
    ids = tokenizer.encode(prompt)
    traces = {}
    for dtype in (np.float32, np.float64):  # the figure computes in float64
        traces[dtype] = {}
        forward({k: v.astype(dtype) for k, v in params.items()}, config,
                np.array(ids)[None], trace=traces[dtype])
    heat = panel(compute("ch07-attention-head", {"prompt": prompt, "layer": "2",
                                                  "head": "1"}), "heatmap")
    weights = traces[np.float64]["blocks.2.weights"][0, 1]  # (n, n)
    np.testing.assert_allclose(heat["values"], weights, rtol=0, atol=1e-12)
    # ... and the float32 model, which chapter 7 runs, differs from it at float32 rounding
    np.testing.assert_allclose(traces[np.float32]["blocks.2.weights"][0, 1], weights,
                               rtol=0, atol=1e-5)
    assert len(heat["rows"]) == len(ids) < live.MAX_PROMPT_TOKENS
    long = compute("ch07-attention-head", {"prompt": "one two three " * 8})
    assert len(panel(long, "heatmap")["rows"]) == live.MAX_PROMPT_TOKENS


def test_a_prompt_with_half_an_emoji_gets_a_message_not_a_traceback():
    # JSON.stringify of a string holding half of "😀" (a lone surrogate)
    with pytest.raises(ValueError) as error:
        compute_json("ch07-attention-head", '{"prompt": "Hi \\ud83d!"}')
    assert str(error.value).startswith("prompt holds half of a character at position 3")
    assert type(error.value) is ValueError  # not a UnicodeEncodeError


@pytest.mark.parametrize("name, values, words", [
    ("ch00-nothing", {}, "no live figure named 'ch00-nothing'"),
    ("ch01-softmax-temperature", {"temperature": "0"}, "temperature must be in [0.05, 5.0]"),
    ("ch01-softmax-temperature", {"temperature": "hot"}, "temperature must be a number"),
    ("ch01-softmax-temperature", {"heat": "1"}, "no control named ['heat']"),
    ("ch04-sampling-filters", {"top_k": "2.5"}, "top_k must be a whole number"),
    ("ch02-weights-causal", {"mask": "diagonal"}, "mask must be one of"),
    ("ch02-weights-causal", {"scaled": "maybe"}, "scaled must be true or false"),
    ("ch07-attention-head", {"prompt": ""}, "prompt must hold 1 to 120 characters"),
    ("ch07-attention-head", {"prompt": 7}, "prompt must be text"),
    ("ch14-induction-head", {"segment": ""}, "segment must hold 1 to 80 characters"),
    ("ch14-induction-head", {"head": "2.0"}, "head must be one of"),
])
def test_bad_control_values_are_refused_by_name(name, values, words):
    with pytest.raises(ValueError) as error:
        compute(name, values)
    assert words in str(error.value)


@pytest.mark.parametrize("values_json, words", [
    ("[1, 2]", "values must be a dict of control name -> value, got [1, 2]"),
    ('"hot"', "values must be a dict of control name -> value, got 'hot'"),
    ("{temperature: 1}", "values_json must be a JSON object of control values"),
    (None, "values_json must be a JSON object of control values, got None"),
])
def test_values_that_are_not_a_json_object_are_refused_by_name(values_json,
                                                              words):
    with pytest.raises(ValueError) as error:
        compute_json("ch04-sampling-filters", values_json)
    assert str(error.value).startswith("ch04-sampling-filters: ")
    assert words in str(error.value)
    assert type(error.value) is ValueError  # not a JSONDecodeError


def test_the_page_gets_a_labelled_native_input_for_every_control():
    for name, spec in FIGURES.items():
        markup = figure_html(name)
        assert " hidden>" in markup.split(">", 1)[0] + ">"  # shown by the script only
        for control in spec.controls:
            ident = f"live-{name}-{control.name}"
            assert f'<label for="{ident}">' in markup
            assert f'id="{ident}" name="{control.name}"' in markup


def test_a_page_asking_for_an_unknown_figure_fails_the_build():
    with pytest.raises(ValueError, match="ch00-nothing"):
        figure_html("ch00-nothing")


PAGE = SimpleNamespace(file=SimpleNamespace(src_uri="chapters/ch02.md"))


@pytest.mark.parametrize("placeholder", [
    '<div class="live-figure" data-figure="ch02-heads"></div>',
    "<div class='live-figure' data-figure='ch02-heads'></div>",
    '<div  class="live-figure"   data-figure="ch02-heads" ></div>',
    '<div data-figure="ch02-heads" class="live-figure"></div>',
    '<DIV CLASS=live-figure DATA-FIGURE=ch02-heads>\n</DIV >',
    '<div class="wide live-figure" data-figure="ch0&#50;-heads"></div>',
])
def test_any_html_spelling_of_the_placeholder_becomes_the_figure(placeholder):
    html = f'<p>Before.</p>\n{placeholder}\n<div class="other"></div>'
    assert on_page_content(html, PAGE, None, None) == (
        f'<p>Before.</p>\n{figure_html("ch02-heads")}\n<div class="other"></div>')


@pytest.mark.parametrize("placeholder", [
    '<div class="live-figure"></div>',                        # no name
    '<div class="live-figure" data-figure=""></div>',
    '<div class="live-figure" data-figure="ch02-heads">text</div>',
    '<div class="live-figure" data-figure="ch02-heads">',     # never closed
    '<div class="live-figure" data-figure="ch02-heads"/>',    # not an empty element
])
def test_a_malformed_placeholder_fails_the_build_naming_the_page(placeholder):
    with pytest.raises(PluginError, match=r"chapters/ch02\.md: a live figure's "
                                          r"placeholder must be an empty div"):
        on_page_content(f"<p>Before.</p>\n{placeholder}\n<p>After.</p>", PAGE,
                        None, None)


def test_the_trained_model_figure_starts_on_the_head_chapter_7_shows_above_it():
    """The live figure opens on the sentence, layer and head of the static figure and
    text above it: layer 0's head with the largest share on the previous token."""
    page = (ROOT / "docs" / "chapters" / "ch07-train-a-gpt.md").read_text("utf8")
    sentences = re.findall(r'^sentence = "(.*)"$', page, re.M)
    start = FIGURES["ch07-attention-head"].defaults()
    assert sentences and set(sentences) == {start["prompt"]} and start["layer"] == "0"
    _, layers = live._prompt_weights(start["prompt"])
    previous = [np.diagonal(w, offset=-1).mean() for w in layers[0]]
    assert start["head"] == str(int(np.argmax(previous))), previous


def test_the_induction_figure_is_the_models_own_weights_on_the_segment_twice():
    from attention.circuits import run
    from attention.circuits.model import forward as circuit_forward

    config, models, _ = run.shipped()
    tokens = [int(t) for t in live.SEGMENT.split()]
    trace = {}
    circuit_forward({k: v.astype(np.float64) for k, v in models[0].items()}, config,
                    np.array(tokens * 2)[None], trace=trace)
    result = compute("ch14-induction-head", {"head": "0.1"})
    np.testing.assert_allclose(panel(result, "heatmap")["values"], trace["0.weights"][0, 1],
                               rtol=0, atol=1e-12)
    long = compute("ch14-induction-head", {"segment": " ".join(["7"] * 20)})
    assert len(panel(long, "heatmap")["rows"]) == 2 * live.MAX_SEGMENT
    # words: numbered in the order each first appears; 64 is a word, not an id
    assert live._segment("the cat saw the 64 dogs") == (
        ["the", "cat", "saw", "the", "64", "dogs"], [0, 1, 2, 0, 3, 4])
    worded = compute("ch14-induction-head", {"segment": "a b c d", "head": "0.1"})
    numbered = compute("ch14-induction-head", {"segment": "0 1 2 3", "head": "0.1"})
    assert panel(worded, "heatmap")["values"] == panel(numbered, "heatmap")["values"]


def test_the_induction_figure_starts_on_the_head_chapter_14_finds():
    """The head the figure opens on is the second layer's head with the largest
    prefix-matching score in section 14.4 (seed 0, the page's own probe)."""
    from attention.circuits import run
    from attention.circuits.data import repeated_segments
    from attention.circuits.scores import attention_patterns, prefix_matching_score

    config, models, log = run.shipped()
    half = log["train"]["half"]
    probe = repeated_segments(np.random.default_rng(7), 100, half, config.vocab_size)
    matching = prefix_matching_score(attention_patterns(models[0], config, probe[:, :-1]),
                                     half)
    assert FIGURES["ch14-induction-head"].defaults()["head"] == f"1.{np.argmax(matching[1])}"
    facts = panel(compute("ch14-induction-head"), "facts")["rows"]
    assert facts[0]["value"] > 0.5 > facts[1]["value"]  # the page's default: it works
