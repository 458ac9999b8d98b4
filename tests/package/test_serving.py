"""Chapter 11's serving pieces, each against plain decoding (NumPy only, float64).

- Speculative decoding: greedy output == the target's greedy ``generate`` for a random
  draft, a good draft (the target's own weights, perturbed) and the target itself; the
  exact distribution of every continuation, by enumeration over a vocabulary of 5, ==
  the target's (<= 1e-12) with temperature, top-k and top-p, the bonus token included;
  ``accept_or_reject``'s sampled blocks follow the enumerated round (a chi-square bound).
  With a draft of no weights (``NgramDraft``: prompt lookup and an n-gram table), the
  same enumeration (<= 1e-12) and, on chapter 7's trained model (float64) and its
  held-out page, greedy tokens == ``generate``.
- Paged KV cache: logits through block tables == full recomputation (<= 1e-12 relative)
  for ragged lengths and every block size from 1 to 8; the block-table gather == the
  contiguous keys exactly; prefix sharing by reference counts and copy-on-write gives
  equal outputs; a freed block in a table is refused.
- Continuous and static batching: every request's tokens == ``generate`` alone, with
  blocks given on demand (preemption by recomputation) or reserved for each request's
  final length, and for a DeepSeek-V3 (MLA) model, whose pool pages the latent cache
  (``pool_for``); on a small pool, blocks on demand run more requests at once; a pool
  sized for other keys is refused by name. Chunked prefill (a long prompt in chunks while
  others decode) and prefix caching by block (a shared system prompt found by its chained
  block hashes, computed once; blocks only the cache holds given back when the pool runs
  out) keep every request's tokens; chunks bound each step's work, and the cache saves
  exactly its hit blocks' tokens.
- An int8 KV cache (a float16 scale per token and head): every number within half a
  step; on chapter 7's model the logits move by <= 1% of their largest and the greedy
  tokens stay; (d_head + 2) / (2 d_head) of float16's bytes; windows and crop as
  ``KVCache``.
- Split-KV: the merge == full attention (<= 1e-12), fully masked chunks and rows
  included, for boolean and additive float masks and for no keys at all.
"""

import numpy as np
import pytest

from attention import attention
from attention.generation import generate
from attention.kv_cache import KVCache
from attention.model import ModelConfig, forward, init_params
from attention.serving.batching import Request, serve
from attention.serving.prefix import PrefixCache
from attention.serving.quantized import Int8KVCache, dequantize, quantize
from attention.serving.exact import (emitted_distribution, model_distribution,
                                     round_outcomes, target_distribution)
from attention.serving.paged import (BlockPool, PagedKVCache, PagedSequence,
                                     gather, pool_for)
from attention.serving.speculative import accept_or_reject
from attention.serving.split_kv import (chunk_attention, merge_chunks,
                                        split_kv_attention)
from attention.gpt.checkpoint import load_checkpoint
from attention.gpt.run import SHIPPED
from attention.serving.drafts import NgramDraft
from attention.speculative import speculate, speculative_generate

TOL = 1e-12
TARGET = ModelConfig(arch="llama", vocab_size=40, d_model=24, n_layers=2,
                     n_heads=4, n_kv_heads=2, d_ff=48, max_positions=96)
DRAFT = ModelConfig(arch="gpt2", vocab_size=40, d_model=16, n_layers=1,
                    n_heads=2, max_positions=96)
# DeepSeek-V3's attention (chapter 9): 3 heads, a latent of 5, a rotated key of 4
MLA = ModelConfig(arch="deepseek_v3", vocab_size=40, d_model=18, n_layers=2,
                  n_heads=3, d_ff=36, max_positions=96, q_lora_rank=6,
                  kv_lora_rank=5, qk_rope_head_dim=4, qk_nope_head_dim=6,
                  v_head_dim=3)


@pytest.fixture(scope="module")
def models():
    target = init_params(TARGET, np.random.default_rng(0), std=0.3)
    draft = init_params(DRAFT, np.random.default_rng(1), std=0.3)
    noise = np.random.default_rng(2)
    good = {k: v + 0.02 * noise.normal(size=v.shape) for k, v in target.items()}
    return target, draft, good


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


# Speculative decoding -----------------------------------------------------------------

@pytest.mark.parametrize("which", ["random", "good", "itself"])
@pytest.mark.parametrize("n_draft", [1, 4])
def test_greedy_speculative_equals_the_targets_greedy_generate(models, which,
                                                               n_draft):
    target, draft, good = models
    params, config = {"random": (draft, DRAFT), "good": (good, TARGET),
                      "itself": (target, TARGET)}[which]
    prompt = np.array([5, 17, 2, 33, 8])
    ids, stats = speculative_generate(target, TARGET, params, config, prompt,
                                      max_new_tokens=25, n_draft=n_draft)
    assert np.array_equal(ids, generate(target, TARGET, prompt,
                                        max_new_tokens=25)[0])
    emitted = stats["accepted"] + stats["target_calls"]
    assert emitted == 25 and stats["accepted"] <= stats["drafted"]
    if which == "itself":  # every draft kept: k + 1 tokens per target call
        assert stats["accepted"] == stats["drafted"]
        assert stats["target_calls"] == -(-25 // (n_draft + 1))


def test_a_2d_prompt_gives_2d_ids_and_zero_new_tokens_is_the_prompt(models):
    target, draft, _ = models
    ids, stats = speculative_generate(target, TARGET, draft, DRAFT, [[1, 2]],
                                      max_new_tokens=3, n_draft=2)
    assert ids.shape == (1, 5)
    ids, stats = speculative_generate(target, TARGET, draft, DRAFT, [1, 2],
                                      max_new_tokens=0, n_draft=2)
    assert ids.tolist() == [1, 2] and stats["target_calls"] == 0


TINY_T = ModelConfig(arch="llama", vocab_size=5, d_model=16, n_layers=2,
                     n_heads=2, d_ff=32, max_positions=16)
TINY_D = ModelConfig(arch="llama", vocab_size=5, d_model=8, n_layers=1,
                     n_heads=2, d_ff=16, max_positions=16)
SETTINGS = [dict(temperature=1.0), dict(temperature=0.7),
            dict(temperature=1.0, top_k=3), dict(temperature=1.3, top_p=0.8),
            dict(temperature=0.0)]


@pytest.fixture(scope="module")
def tiny():
    return (init_params(TINY_T, np.random.default_rng(3), std=0.6),
            init_params(TINY_D, np.random.default_rng(4), std=0.6))


@pytest.mark.parametrize("settings", SETTINGS, ids=str)
@pytest.mark.parametrize("k", [1, 2])
def test_every_continuation_is_as_likely_as_under_the_target(tiny, settings, k):
    target, draft = tiny
    p = model_distribution(target, TINY_T, **settings)
    q = model_distribution(draft, TINY_D, **settings)
    want = target_distribution(p, (1, 3), 3)
    got = emitted_distribution(p, q, (1, 3), 3, k)  # 3 > k: the bonus counts
    assert set(got) == set(want)
    assert max(abs(got[c] - want[c]) for c in want) <= TOL


def test_a_draft_that_is_always_wrong_still_gives_the_target(tiny):
    target, _ = tiny
    p = model_distribution(target, TINY_T, temperature=1.0, top_k=2)

    def q(prefix):  # all its mass where the target puts none
        return np.where(p(prefix) > 0, 0.0, 1.0) / np.sum(p(prefix) == 0)
    want = target_distribution(p, (2,), 3)
    got = emitted_distribution(p, q, (2,), 3, 2)
    assert max(abs(got.get(c, 0.0) - want[c]) for c in want) <= TOL


def test_a_wrong_residual_passed_in_changes_the_distribution(tiny):
    # The page's mistake, resampling a rejection from p, passed in as the rule.
    target, draft = tiny
    p = model_distribution(target, TINY_T, temperature=1.0)
    q = model_distribution(draft, TINY_D, temperature=1.0)
    want = target_distribution(p, (1, 3), 3)
    got = emitted_distribution(p, q, (1, 3), 3, 2, residual=lambda p, q: p)
    assert abs(sum(got.values()) - 1) <= TOL
    assert max(abs(got.get(c, 0.0) - want[c]) for c in want) > 1e-3


def test_sampled_rounds_follow_the_enumerated_round(tiny):
    target, draft = tiny
    p = model_distribution(target, TINY_T, temperature=1.0)
    q = model_distribution(draft, TINY_D, temperature=1.0)
    prefix, k, n = (4, 0), 2, 4000
    exact = round_outcomes(p, q, prefix, k)
    rng = np.random.default_rng(5)
    counts = {}
    for _ in range(n):
        drafted = []
        for i in range(k):
            dist = q(prefix + tuple(drafted))
            drafted.append(int(rng.choice(5, p=dist)))
        ps = np.array([p(prefix + tuple(drafted[:i])) for i in range(k + 1)])
        qs = np.array([q(prefix + tuple(drafted[:i])) for i in range(k)])
        block = tuple(int(t) for t in accept_or_reject(ps, qs, np.array(drafted),
                                                         rng))
        counts[block] = counts.get(block, 0) + 1
    assert set(counts) <= set(exact)
    chi2 = sum((counts.get(b, 0) - n * w) ** 2 / (n * w) for b, w in exact.items())
    dof = len(exact) - 1
    assert chi2 < dof + 6 * np.sqrt(2 * dof)  # about 6 standard deviations


# Drafts without weights: prompt lookup and an n-gram table ---------------------------

def test_the_ngram_draft_looks_up_the_prompt_then_backs_off():
    draft = NgramDraft(np.array([0, 1, 2, 0, 1, 3, 0, 1, 3, 4]), 6, n=3)
    # the last two tokens (0, 1) occur earlier: the latest is followed by 5
    assert draft.guess(np.array([0, 1, 4, 0, 1, 5, 0, 1]))[0].tolist() == [5]
    ids, counts = draft.guess(np.array([2, 0, 1]))  # no match: the table
    assert ids.tolist() == [3, 2] and counts.tolist() == [2, 1]
    # no (5, 4), no (4,): the unigram row, most frequent first, ties to the
    # lower id
    ids, counts = draft.guess(np.array([5, 4]))
    assert ids.tolist() == [0, 1, 3, 2, 4] and counts.tolist() == [3, 3, 2, 1, 1]
    no_lookup = NgramDraft(np.array([0, 1, 2, 0, 1, 3, 0, 1, 3]), 6,
                           lookup=False)
    assert no_lookup.guess(np.array([0, 1, 2, 0, 1]))[0].tolist() == [3, 2]
    q = draft.distribution(np.array([2, 0, 1]), temperature=1.0)
    assert np.allclose(q, [0, 0, 1 / 3, 2 / 3, 0, 0])


@pytest.mark.parametrize("settings", SETTINGS, ids=str)
def test_an_ngram_draft_gives_every_continuation_the_targets_probability(
        tiny, settings):
    target, _ = tiny
    draft = NgramDraft(np.random.default_rng(6).integers(0, 5, 40), 5)
    p = model_distribution(target, TINY_T, **settings)

    def q(prefix):
        return draft.distribution(np.array(prefix), **settings)
    want = target_distribution(p, (1, 3, 1), 3)
    got = emitted_distribution(p, q, (1, 3, 1), 3, 2)
    assert max(abs(got.get(c, 0.0) - want[c]) for c in want) <= TOL


@pytest.fixture(scope="module")
def trained():
    params, config = load_checkpoint(SHIPPED / "model.npz", dtype=np.float64)
    with np.load(SHIPPED / "tokens.npz") as data:
        return params, config, data["train"], data["val"]


def test_greedy_speculation_with_an_ngram_draft_is_generate_on_held_out_text(
        trained):
    params, config, train, val = trained
    draft = NgramDraft(train, config.vocab_size)
    for start in (0, 1000, 2000):
        prompt = val[start:start + 24]
        ids, stats = speculate(params, config, draft, prompt,
                               max_new_tokens=30, n_draft=4)
        assert np.array_equal(ids, generate(params, config, prompt,
                                            max_new_tokens=30)[0])
        assert stats["accepted"] + stats["target_calls"] == 30
        assert stats["accepted"] > 0  # the held-out page repeats phrases


def test_speculate_refuses_a_draft_that_cannot_propose(models):
    target, _, _ = models
    with pytest.raises(TypeError, match="draft must have"):
        speculate(target, TARGET, {"blocks.0": 0}, [1, 2], max_new_tokens=3,
                  n_draft=2)
    with pytest.raises(ValueError, match="vocabulary"):
        speculate(target, TARGET, NgramDraft([1, 2, 3], 41), [1, 2],
                  max_new_tokens=3, n_draft=2)


@pytest.mark.parametrize("args, match", [
    (([1, 2], 0), "vocab_size"), (([1, 2], 4, 1), "n must be"),
    (([1], 4), "at least n"), (([[1, 2, 3]], 4), "one dimension"),
    (([1.0, 2.0, 3.0], 4), "integer ids"), (([1, 2, 9], 4), "0..3"),
])
def test_the_ngram_draft_refuses_bad_tokens_by_name(args, match):
    with pytest.raises(ValueError, match=match):
        NgramDraft(*args[:2], **({"n": args[2]} if len(args) > 2 else {}))


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_draft=0), "n_draft"),
    (dict(n_draft=2, max_new_tokens=-1), "max_new_tokens"),
    (dict(n_draft=2, temperature=-1.0), "temperature"),
])
def test_speculative_refuses_bad_settings(models, kwargs, match):
    target, draft, _ = models
    kwargs = {"max_new_tokens": 3} | kwargs
    with pytest.raises(ValueError, match=match):
        speculative_generate(target, TARGET, draft, DRAFT, [1, 2], **kwargs)


def test_speculative_refuses_a_draft_of_another_vocabulary_and_a_batch(models):
    target, _, _ = models
    other = ModelConfig(arch="gpt2", vocab_size=41, d_model=16, n_layers=1,
                        n_heads=2, max_positions=96)
    wrong = init_params(other, np.random.default_rng(0))
    with pytest.raises(ValueError, match="vocabulary"):
        speculative_generate(target, TARGET, wrong, other, [1, 2],
                             max_new_tokens=3, n_draft=2)
    with pytest.raises(ValueError, match="one prompt"):
        speculative_generate(target, TARGET, target, TARGET, [[1, 2], [3, 4]],
                             max_new_tokens=3, n_draft=2)
    with pytest.raises(TypeError, match="rng"):
        speculative_generate(target, TARGET, target, TARGET, [1, 2],
                             max_new_tokens=3, n_draft=2, temperature=1.0)


def test_crop_forgets_the_last_slots_and_refuses_a_window():
    config = TARGET
    params = init_params(config, np.random.default_rng(6), std=0.3)
    cache = KVCache(config.n_layers)
    forward(params, config, np.array([[1, 2, 3, 4, 5]]), cache=cache)
    cache.crop(3)
    logits = forward(params, config, np.array([[9]]), cache=cache)[0, -1]
    full = forward(params, config, np.array([1, 2, 3, 9]))[-1]
    assert len(cache) == 4 and relative(logits, full) <= TOL
    with pytest.raises(ValueError, match="0..4"):
        cache.crop(5)
    with pytest.raises(ValueError, match="window"):
        KVCache(2, window=3).crop(0)


# The paged cache --------------------------------------------------------------------

def prefill(params, config, pool, prompt):
    seq = PagedSequence(pool)
    logits = forward(params, config, np.asarray(prompt)[None],
                     cache=PagedKVCache([seq]))[0]
    return seq, logits


@pytest.mark.parametrize("block_size", range(1, 9))
def test_paged_logits_equal_recomputation_for_ragged_lengths(models, block_size):
    target = models[0]
    rng = np.random.default_rng(block_size)
    prompts = [rng.integers(0, 40, n) for n in (1, 6, 3, 9)]
    extra = rng.integers(0, 40, (4, 4))
    pool = BlockPool(40, block_size, n_layers=2, n_kv_heads=2, d_head=6)
    seqs = []
    for prompt in prompts:
        seq, logits = prefill(target, TARGET, pool, prompt)
        assert relative(logits, forward(target, TARGET, prompt)) <= TOL
        seqs.append(seq)
    cache = PagedKVCache(seqs)
    for j in range(extra.shape[1]):  # decode all four together
        logits = forward(target, TARGET, extra[:, j:j + 1], cache=cache)
        for b, prompt in enumerate(prompts):
            full = forward(target, TARGET, np.append(prompt, extra[b, :j + 1]))
            assert relative(logits[b, -1], full[-1]) <= TOL
    used = sum(len(s.table) for s in seqs)
    assert used == sum(-(-(len(p) + 4) // block_size) for p in prompts)
    assert len(pool.free) == 40 - used


def test_the_gather_reads_the_contiguous_keys_in_table_order():
    rng = np.random.default_rng(7)
    blocks = rng.normal(size=(10, 3, 4, 5))  # (n_blocks, heads, bs, d)
    table = [7, 2, 9]
    want = np.concatenate([blocks[b] for b in table], axis=1)[:, :10]
    assert np.array_equal(gather(blocks, table, 10), want)


def test_prefix_sharing_copies_on_write_and_keeps_outputs(models):
    target = models[0]
    pool = BlockPool(12, 4, n_layers=2, n_kv_heads=2, d_head=6)
    prompt = [3, 1, 4, 1, 5, 9]  # 6 tokens: blocks of 4 and 2
    first, _ = prefill(target, TARGET, pool, prompt)
    second = first.fork()
    assert second.table == first.table and list(pool.refs[first.table]) == [2, 2]
    a = forward(target, TARGET, np.array([[2]]), cache=PagedKVCache([first]))
    assert first.table[0] == second.table[0] != first.table[1]  # copied
    b = forward(target, TARGET, np.array([[6]]), cache=PagedKVCache([second]))
    assert relative(a[0, -1], forward(target, TARGET, prompt + [2])[-1]) <= TOL
    assert relative(b[0, -1], forward(target, TARGET, prompt + [6])[-1]) <= TOL
    assert len(pool.free) == 12 - 3  # one shared block, two private
    first.free()
    assert pool.refs[second.table[0]] == 1 and len(pool.free) == 12 - 2


def test_a_table_pointing_at_a_freed_block_is_refused(models):
    pool = BlockPool(4, 2, n_layers=2, n_kv_heads=2, d_head=6)
    seq, _ = prefill(models[0], TARGET, pool, [1, 2, 3])
    stale = PagedSequence(pool)
    stale.table, stale.length = list(seq.table), seq.length
    seq.free()
    with pytest.raises(ValueError, match="which is free"):
        stale.read(0, 3)


def test_the_pool_refuses_a_block_size_of_zero_and_running_out():
    with pytest.raises(ValueError, match="block_size"):
        BlockPool(4, 0, n_layers=1, n_kv_heads=1, d_head=2)
    pool = BlockPool(1, 2, n_layers=1, n_kv_heads=1, d_head=2)
    pool.allocate()
    with pytest.raises(ValueError, match="all 1 blocks are in use"):
        pool.allocate()


# Batching ---------------------------------------------------------------------------

def requests(seed, n=10):
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.integers(0, 4, n))
    return [Request(int(a), rng.integers(0, 40, int(rng.integers(1, 9))),
                    int(rng.integers(1, 15))) for a in arrivals]


@pytest.mark.parametrize("allocation", ["on_demand", "reserve"])
@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_every_request_gets_the_tokens_it_gets_alone(models, policy, allocation):
    target = models[0]
    batch = requests(8)
    steps = serve(target, TARGET, batch, max_batch=3, n_blocks=12,
                  block_size=4, policy=policy, allocation=allocation)
    for r in batch:
        alone = generate(target, TARGET, r.prompt,
                         max_new_tokens=r.max_new_tokens)[0]
        assert r.tokens == alone[len(r.prompt):].tolist()
        assert r.arrival <= r.admitted <= r.finished < len(steps)
    assert max(steps) <= 3  # tokens per step: at most one per place
    assert sum(steps) == sum(r.max_new_tokens for r in batch)


def test_continuous_batching_takes_fewer_steps_than_static(models):
    target = models[0]
    counts = {}
    for policy in ("continuous", "static"):
        batch = requests(9)
        counts[policy] = len(serve(target, TARGET, batch, max_batch=4,
                                   n_blocks=40, block_size=4, policy=policy))
    assert counts["continuous"] < counts["static"]


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_on_demand_blocks_run_more_requests_at_once_with_the_same_tokens(models, policy):
    """vLLM's allocation: blocks as requests grow, the latest arrival preempted and
    recomputed when the pool runs out. Against reserving each request's final length:
    more requests per step, fewer steps, and every request's tokens are generate's."""
    target, runs = models[0], {}
    for allocation in ("reserve", "on_demand"):
        batch = requests(11, n=14)
        steps = serve(target, TARGET, batch, max_batch=6, n_blocks=9, block_size=4,
                      policy=policy, allocation=allocation)
        for r in batch:
            alone = generate(target, TARGET, r.prompt, max_new_tokens=r.max_new_tokens)[0]
            assert r.tokens == alone[len(r.prompt):].tolist()
        assert sum(steps) == sum(r.max_new_tokens for r in batch)
        runs[allocation] = steps, sum(r.preempted for r in batch)
    (reserve, none), (demand, preempted) = runs["reserve"], runs["on_demand"]
    assert none == 0 and preempted > 0
    assert max(demand) > max(reserve) and len(demand) < len(reserve)


def test_serve_refuses_a_request_longer_than_the_cache(models):
    target = models[0]
    with pytest.raises(ValueError, match="request 0 is longer than the cache"):
        serve(target, TARGET, [Request(0, np.arange(8), 10)], max_batch=2,
              n_blocks=4, block_size=4)
    with pytest.raises(ValueError, match="block_size"):
        serve(target, TARGET, [Request(0, np.arange(8), 10)], max_batch=2,
              n_blocks=4, block_size=0)
    with pytest.raises(ValueError, match="allocation must be 'on_demand' or 'reserve'"):
        serve(target, TARGET, [Request(0, np.arange(8), 10)], max_batch=2,
              n_blocks=8, block_size=4, allocation="lazy")
    served = [Request(0, np.arange(3), 2)]
    serve(target, TARGET, served, max_batch=2, n_blocks=8, block_size=4)
    with pytest.raises(ValueError, match="request 0 was served before"):
        serve(target, TARGET, served, max_batch=2, n_blocks=8, block_size=4)


def assert_alone(params, config, batch):
    for r in batch:
        alone = generate(params, config, r.prompt, max_new_tokens=r.max_new_tokens)[0]
        assert r.tokens == alone[len(r.prompt):].tolist()
        assert len(r.emitted) == len(r.tokens)


def mixed(seed):
    """Four short requests decoding, then a prompt of 40 tokens arrives."""
    rng = np.random.default_rng(seed)
    short = [Request(i, rng.integers(0, 40, 3), 20) for i in range(4)]
    return short + [Request(6, rng.integers(0, 40, 40), 5)]


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_chunked_prefill_keeps_the_tokens_and_bounds_each_steps_work(models, policy):
    target, runs = models[0], {}
    for chunk in (None, 8):
        batch, work = mixed(12), []
        steps = serve(target, TARGET, batch, max_batch=5, n_blocks=40, block_size=4,
                      policy=policy, prefill_chunk=chunk, work=work)
        assert_alone(target, TARGET, batch)
        assert sum(steps) == sum(r.max_new_tokens for r in batch)
        assert sum(work) == sum(len(r.prompt) + r.max_new_tokens - 1 for r in batch)
        runs[chunk] = work, batch[-1]
    (whole, long_whole), (chunked, long_chunked) = runs[None], runs[8]
    assert max(whole) >= 40 and max(chunked) <= 8 + 5
    if policy == "continuous":  # its prefill takes 5 steps of 8 tokens
        assert long_chunked.emitted[0] - long_whole.emitted[0] == 4


def test_chunked_prefill_under_preemption_keeps_the_tokens(models):
    target = models[0]
    batch = requests(11, n=14)
    serve(target, TARGET, batch, max_batch=6, n_blocks=9, block_size=4, prefill_chunk=3)
    assert_alone(target, TARGET, batch)
    assert sum(r.preempted for r in batch) > 0


def system_prompted(seed, n=6):
    """n requests: the same system prompt of 13 tokens, then their own."""
    rng = np.random.default_rng(seed)
    system = rng.integers(0, 40, 13)
    return [Request(2 * i, np.concatenate([system, rng.integers(0, 40, 1 + i % 4)]),
                    6) for i in range(n)]


@pytest.mark.parametrize("allocation", ["on_demand", "reserve"])
def test_a_cached_system_prompt_is_not_computed_again(models, allocation):
    target, work = models[0], {}
    for cached in (False, True):
        batch, prefix, w = system_prompted(13), PrefixCache() if cached else None, []
        serve(target, TARGET, batch, max_batch=3, n_blocks=30, block_size=4,
              prefix_cache=prefix, work=w, allocation=allocation)
        assert_alone(target, TARGET, batch)
        work[cached] = sum(w)
    # 13 tokens: 3 full blocks; the first request computes them, the 5 others
    # not (the one with 4 tokens of its own looks up a fourth block, not cached)
    assert (prefix.looked_up, prefix.found) == (19, 15)
    assert work[False] - work[True] == 15 * 4


def test_the_prefix_cache_gives_blocks_back_when_the_pool_runs_out(models):
    target, prefix = models[0], PrefixCache()
    batch = system_prompted(14, n=8) + requests(15, n=8)
    serve(target, TARGET, batch, max_batch=4, n_blocks=10, block_size=4,
          prefix_cache=prefix, prefill_chunk=5)
    assert_alone(target, TARGET, batch)
    assert prefix.found > 0 and prefix.evicted > 0
    assert sum(r.preempted for r in batch) > 0


def test_a_prefix_cache_reused_across_pools_is_refused(models):
    target, prefix = models[0], PrefixCache()
    serve(target, TARGET, system_prompted(1, n=2), max_batch=2, n_blocks=12,
          block_size=4, prefix_cache=prefix)
    with pytest.raises(ValueError, match="prefix_cache must be a new PrefixCache"):
        serve(target, TARGET, system_prompted(1, n=2), max_batch=2, n_blocks=12,
              block_size=4, prefix_cache=prefix)
    with pytest.raises(ValueError, match="prefill_chunk must be a positive"):
        serve(target, TARGET, system_prompted(1, n=2), max_batch=2, n_blocks=12,
              block_size=4, prefill_chunk=0)


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_serving_mla_pages_its_latent_and_equals_generate(policy):
    """A DeepSeek-V3 (MLA) model is served from a pool of its latent cache: per token and
    layer kv_lora_rank + qk_rope_head_dim numbers, and every request's tokens are
    generate's (tests/package/test_latent_attention.py: and Hugging Face's)."""
    params = init_params(MLA, np.random.default_rng(3), std=0.3)
    pool = pool_for(MLA, 12, 4)
    assert pool.keys.shape == (2, 12, 1, 4, 5) and pool.values.shape == (2, 12, 1, 4, 4)
    batch = requests(10)
    steps = serve(params, MLA, batch, max_batch=3, n_blocks=12, block_size=4,
                  policy=policy)
    for r in batch:
        alone = generate(params, MLA, r.prompt, max_new_tokens=r.max_new_tokens)[0]
        assert r.tokens == alone[len(r.prompt):].tolist()
    assert sum(steps) == sum(r.max_new_tokens for r in batch)


def test_a_pool_sized_for_other_keys_is_refused_by_name():
    params = init_params(MLA, np.random.default_rng(3), std=0.3)
    pool = BlockPool(8, 4, n_layers=2, n_kv_heads=3, d_head=9)  # keys and values
    with pytest.raises(ValueError, match=r"k \(1, 3, 5\) and v \(1, 3, 4\) do not fit"
                                         r".*pool_for"):
        prefill(params, MLA, pool, [1, 2, 3])
    with pytest.raises(ValueError, match="d_value must be a positive integer"):
        BlockPool(8, 4, n_layers=2, n_kv_heads=3, d_head=9, d_value=0)


# An int8 KV cache -------------------------------------------------------------------

def test_quantize_keeps_each_number_within_half_a_step_of_its_row():
    x = np.random.default_rng(16).normal(size=(2, 3, 5, 8)) * [[[[1]], [[1e-3]],
                                                                 [[50]]]]
    x[0, 0, 0] = 0.0  # a zero row: scale 1, codes 0
    codes, scales = quantize(x)
    assert codes.dtype == np.int8 and scales.dtype == np.float16
    assert scales.shape == (2, 3, 5, 1) and np.abs(codes).max() == 127
    top = np.abs(x).max(-1, keepdims=True)
    error = np.abs(dequantize(codes, scales, np.float64) - x)
    assert np.all(error <= scales / 2 + top * 2.0 ** -10)  # float16 scales
    assert dequantize(codes, scales, np.float32).dtype == np.float32


def test_the_int8_cache_halves_float16_and_keeps_greedy_tokens(trained):
    params, config, _, val = trained
    for start in (0, 1000, 2000):
        logits = {}
        for cache_type in (KVCache, Int8KVCache):
            seen = []
            ids = generate(params, config, val[start:start + 32], max_new_tokens=40,
                           cache_type=cache_type,
                           on_step=lambda step, last: seen.append(last))
            logits[cache_type] = ids, np.array(seen)
        (ids, exact), (ids8, drift) = logits[KVCache], logits[Int8KVCache]
        assert np.array_equal(ids, ids8)
        assert 0 < np.abs(drift - exact).max() <= 0.01 * np.abs(exact).max()
    cache = Int8KVCache(config.n_layers)
    forward(params, config, val[None, :50], cache=cache)
    d_head = config.d_model // config.n_heads
    float16 = 2 * config.n_layers * config.n_kv_heads * d_head * 2 * 50
    assert cache.nbytes() == float16 * (d_head + 2) / (2 * d_head)


def test_the_int8_cache_crops_and_slides_as_the_float_cache_does(models):
    target = models[0]
    ids = np.random.default_rng(17).integers(0, 40, (2, 30))
    for window in (None, 6):
        caches = [KVCache(2, window=window), Int8KVCache(2, window=window)]
        logits = [forward(target, TARGET, ids, cache=c) for c in caches]
        logits = [np.concatenate([x, forward(target, TARGET, ids[:, :3], cache=c)],
                                 axis=1) for x, c in zip(logits, caches)]
        assert relative(logits[1], logits[0]) <= 0.02
        assert caches[1].keys[0].shape == caches[0].keys[0].shape
        assert caches[1].key_scales[1].shape[-2] == caches[0].keys[1].shape[-2]
    cache = Int8KVCache(2)
    forward(target, TARGET, ids, cache=cache)
    cache.crop(10)
    assert cache.keys[1].shape[-2] == cache.value_scales[1].shape[-2] == 10
    again = forward(target, TARGET, ids[:, 10:12], cache=cache)
    assert relative(again, forward(target, TARGET, ids[:, :12])[:, 10:]) <= 0.02


# Split-KV ---------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 3, 8, 37, 64])
def test_split_kv_equals_full_attention_with_masked_chunks(chunk):
    rng = np.random.default_rng(chunk)
    q = rng.normal(size=(2, 3, 1, 8))
    k, v = rng.normal(size=(2, 3, 37, 8)), rng.normal(size=(2, 3, 37, 5))
    mask = rng.random((2, 3, 1, 37)) < 0.6
    mask[..., 8:24] = False  # whole chunks masked for chunk <= 8
    mask[0, 1] = False       # a query that sees nothing: zeros
    for m in (None, mask):
        got = split_kv_attention(q, k, v, chunk=chunk, mask=m)
        assert np.abs(got - attention(q, k, v, mask=m)).max() <= TOL
    assert not split_kv_attention(q, k, v, chunk=chunk, mask=mask)[0, 1].any()


@pytest.mark.parametrize("chunk", [1, 4, 37])
def test_split_kv_adds_a_float_mask_as_attention_does(chunk):
    # Issue 38, 3.1: a float mask was read as booleans in the chunks' lse.
    rng = np.random.default_rng(chunk)
    q = rng.normal(size=(2, 3, 2, 8))
    k, v = rng.normal(size=(2, 3, 37, 8)), rng.normal(size=(2, 3, 37, 5))
    allowed = rng.random((2, 3, 2, 37)) < 0.6
    allowed[0, 1] = False  # a head that sees nothing: zeros
    masks = {"boolean": allowed,
             "0/-inf": np.where(allowed, 0.0, -np.inf),
             "soft bias": rng.normal(size=(2, 3, 2, 37)),
             "bias broadcast over queries": rng.normal(size=(37,)),
             "one column broadcast over keys": allowed[..., :1]}
    for name, m in masks.items():
        got = split_kv_attention(q, k, v, chunk=chunk, mask=m)
        gap = np.abs(got - attention(q, k, v, mask=m)).max()
        assert gap <= TOL, (name, gap)


def test_split_kv_with_no_keys_gives_zeros_as_attention_does():
    # Issue 38, 4.15: zero keys raised "not enough values to unpack".
    q = np.ones((2, 3, 8))
    k, v = np.ones((2, 0, 8)), np.ones((2, 0, 5))
    got = split_kv_attention(q, k, v, chunk=4)
    want = attention(q, k, v)
    assert got.shape == want.shape == (2, 3, 5) and not got.any()
    with pytest.raises(ValueError, match="split_kv_attention: k and v"):
        split_kv_attention(q, k, np.ones((2, 1, 5)), chunk=4)


def test_split_kv_keeps_the_dtype_as_attention_does():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(4, n, 8)).astype(np.float16)
               for n in (1, 20, 20))
    got = split_kv_attention(q, k, v, chunk=6)
    want = attention(q, k, v)
    assert got.dtype == want.dtype == np.float16
    assert np.abs(got.astype(float) - want).max() <= 1e-3


def test_the_merged_lse_is_the_full_lse_even_far_from_zero():
    rng = np.random.default_rng(11)
    q = rng.normal(size=(4, 1, 6)) * 30  # scores in the hundreds
    k, v = rng.normal(size=(4, 20, 6)) * 30, rng.normal(size=(4, 20, 3))
    _, full = chunk_attention(q, k, v)
    parts = [chunk_attention(q, k[:, s:s + 7], v[:, s:s + 7]) for s in (0, 7, 14)]
    out, lse = merge_chunks(*map(np.stack, zip(*parts)))
    assert np.all(np.isfinite(out)) and np.abs(lse - full).max() <= 1e-12 * 1e3
    with pytest.raises(ValueError, match="chunk"):
        split_kv_attention(q, k, v, chunk=0)
