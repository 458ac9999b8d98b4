"""Chapter 11's practice reference for the scheduler step, on states worked by hand."""

from attention.practice.ch11 import schedule_reference


def test_growth_that_fits_and_an_admission():
    # blocks of 4: requests 1 (4 tokens) and 3 (8) are at a block's edge and take one
    # block each; 1 block is left, enough for request 4's 4-token prompt
    assert schedule_reference([(1, 4), (2, 5), (3, 8)], [(4, 4)], 3, 4, 8) == (
        [(1, 5), (2, 6), (3, 9), (4, 4)], [], 0)


def test_preemption_takes_the_latest_arrivals_first_and_admits_nobody():
    # 2 blocks needed, none free: request 4 (1 block) is not enough, request 3
    # (2 blocks) too; both go to the head of the queue in arrival order
    assert schedule_reference([(1, 8), (2, 8), (3, 5), (4, 1)], [(5, 1)], 0, 4, 8) == (
        [(1, 9), (2, 9)], [(3, 5), (4, 1), (5, 1)], 1)


def test_admission_stops_at_the_head_that_does_not_fit_and_at_max_batch():
    assert schedule_reference([(1, 5)], [(2, 12), (3, 1)], 2, 4, 8) == (
        [(1, 6)], [(2, 12), (3, 1)], 2)
    assert schedule_reference([(1, 3)], [(2, 1), (3, 2), (4, 1)], 50, 4, 3) == (
        [(1, 4), (2, 1), (3, 2)], [(4, 1)], 48)


def test_expected_tokens_is_the_exact_enumeration_of_a_round():
    """Distributions that do not depend on the context: the closed form equals the
    sum over every outcome of one round (``round_outcomes``) of its length times
    its probability."""
    import numpy as np

    from attention.practice.ch11 import expected_tokens_reference
    from attention.serving.exact import round_outcomes

    rng = np.random.default_rng(0)
    k, V = 3, 4
    p, q = rng.dirichlet(np.ones(V), size=k + 1), rng.dirichlet(np.ones(V), size=k)
    outcomes = round_outcomes(lambda prefix: p[len(prefix)], lambda prefix: q[len(prefix)],
                              (), k)
    exact = sum(len(block) * w for block, w in outcomes.items())
    assert abs(expected_tokens_reference(p, q) - exact) <= 1e-12


def test_reusable_blocks_are_what_the_package_s_prefix_cache_finds():
    """Every cached list inserted into a PrefixCache (block ids from a counter, a
    pool that only shares), then the prompt looked up: the count of blocks found is
    the reference's."""
    import itertools
    from types import SimpleNamespace

    import numpy as np

    from attention.practice.ch11 import reusable_reference
    from attention.serving.prefix import PrefixCache

    rng = np.random.default_rng(4)
    for _ in range(200):
        block_size = int(rng.integers(1, 5))
        base = rng.integers(0, 3, size=int(rng.integers(2, 14)))  # 3 tokens: many ties
        cached = [np.concatenate([base[:int(rng.integers(0, len(base) + 1))],
                                  rng.integers(0, 3, size=int(rng.integers(0, 6)))])
                  for _ in range(int(rng.integers(0, 4)))]
        cache = PrefixCache()
        cache.pool = SimpleNamespace(block_size=block_size, share=lambda block: None)
        ids = itertools.count()
        for earlier in cached:
            cache.insert(earlier.astype(np.int64), ids)
        found = cache.match(base.astype(np.int64))
        assert len(found) == reusable_reference(base.tolist(), [c.tolist() for c in cached],
                                                block_size)


def test_written_slots_are_read_back_by_gather():
    import numpy as np

    from attention.practice.ch11 import write_reference
    from attention.serving.paged import gather

    rng = np.random.default_rng(5)
    blocks = rng.normal(size=(10, 2, 4, 3))
    table = np.array([7, 2, 9, 0])
    new = rng.normal(size=(2, 6, 3))
    pool = write_reference(blocks, table, 5, new)
    assert np.array_equal(gather(pool, table, 11)[:, 5:], new)
    assert np.array_equal(gather(pool, table, 5), gather(blocks, table, 5))  # untouched
    assert np.array_equal(np.delete(pool, table, axis=0), np.delete(blocks, table, axis=0))
