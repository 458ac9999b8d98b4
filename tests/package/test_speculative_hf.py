"""Chapter 11's speculative decoding against Hugging Face's assisted generation, float64.

``generate(assistant_model=...)`` with ``do_sample=False`` is Hugging Face's speculative
decoding; it emits the target's greedy tokens. Ours, given the same two models through
the chapter-3 converter, must emit the same tokens. Tiny GPT-2 and Llama configurations
built in the test (no downloads), eos_token_id None so that every continuation has its
full length; HF's float32 internals computed in float64 (``float64_hf``).
"""

import numpy as np
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from attention.speculative import speculative_generate
from tests.package.test_long_context_models import (build, float64_hf,
                                                    hf_greedy, ours)

VOCAB = 67
COMMON = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=None, pad_token_id=0)


def gpt2(n_layer, n_embd):
    return GPT2Config(**COMMON, n_embd=n_embd, n_layer=n_layer, n_head=2,
                      n_positions=64)


def llama(n_layer, hidden):
    config = LlamaConfig(**COMMON, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_attention_heads=2, num_key_value_heads=1,
                         num_hidden_layers=n_layer, max_position_embeddings=64)
    config._attn_implementation = "eager"
    return config


PAIRS = {"gpt2": (GPT2LMHeadModel, gpt2), "llama": (LlamaForCausalLM, llama)}


@pytest.fixture(scope="module", params=list(PAIRS))
def pair(request):
    cls, make = PAIRS[request.param]
    target = build(cls, make(3, 24), seed=1)
    draft = build(cls, make(1, 12), seed=2)
    return target, draft


def test_assisted_generation_equals_ours_and_the_targets_greedy(pair):
    target, draft = pair
    prompt = np.random.default_rng(3).integers(2, VOCAB, size=(1, 5))
    with torch.no_grad(), float64_hf():
        assisted = target.generate(torch.from_numpy(prompt), assistant_model=draft,
                                   max_new_tokens=20, min_new_tokens=20,
                                   do_sample=False).numpy()
    greedy = hf_greedy(target, prompt, 20, use_cache=True)
    (tp, tc), (dp, dc) = ours(target), ours(draft)
    mine, stats = speculative_generate(tp, tc, dp, dc, prompt, max_new_tokens=20,
                                       n_draft=3)
    assert np.array_equal(assisted, greedy)
    assert np.array_equal(mine, assisted)
    assert stats["accepted"] + stats["target_calls"] == 20
