"""blocked_attention: equal to the plain attention and to PyTorch's SDPA, in bounded memory.

Tolerances: 1e-12 in float64 and 1e-5 in float32 (absolute, on outputs of order 1).
"""

import tracemalloc
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attention.blocked as blocked_module
from attention import attention, blocked_attention, logsumexp
from attention._blas_threads import _bundled_openblas, single_threaded_blas, thread_map
from attention.blocked import key_tiles
from attention.masks import causal_mask

TOL = {np.float64: 1e-12, np.float32: 1e-5}


@pytest.fixture(params=[np.float64, np.float32], ids=["float64", "float32"])
def dtype(request):
    return request.param


def draw(rng, dtype, *shapes):
    return [rng.normal(size=s).astype(dtype) for s in shapes]


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0))


# (batch, n_q, n_k, d, d_v, block_q, block_k): ragged last tiles in both directions,
# one-token sequences, more queries than keys and fewer, tiles larger than the input.
SHAPES = [
    ((), 1, 1, 4, 4, 8, 8),
    ((), 1, 9, 4, 3, 4, 4),
    ((), 9, 1, 4, 3, 4, 4),
    ((), 37, 53, 8, 5, 8, 16),
    ((2, 3), 17, 17, 8, 8, 5, 7),
    ((2,), 40, 13, 6, 6, 16, 4),
    ((), 13, 40, 6, 6, 4, 16),
    ((3,), 64, 64, 16, 16, 16, 16),
    ((), 20, 20, 8, 8, 64, 64),
]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[0] + s[1:3])))
def test_equals_plain_attention_on_random_shapes(shape, causal, dtype):
    batch, n_q, n_k, d, d_v, bq, bk = shape
    q, k, v = draw(np.random.default_rng(n_q * 100 + n_k), dtype,
                   batch + (n_q, d), batch + (n_k, d), batch + (n_k, d_v))
    ours = blocked_attention(q, k, v, causal=causal, block_q=bq, block_k=bk)
    plain = attention(q, k, v, causal=causal)
    assert ours.dtype == dtype and ours.shape == plain.shape
    assert max_diff(ours, plain) <= TOL[dtype]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_equals_plain_attention_with_a_boolean_mask_and_fully_masked_rows(causal, dtype):
    rng = np.random.default_rng(7)
    q, k, v = draw(rng, dtype, (2, 3, 21, 8), (2, 3, 29, 8), (2, 3, 29, 5))
    mask = rng.random((2, 1, 21, 29)) < 0.3  # broadcast over the 3 heads
    mask[0, 0, 4] = False  # query 4 of batch 0 may attend to nothing
    mask[1, 0, :, 10:] = False  # batch 1 sees keys 0..9 only
    ours = blocked_attention(q, k, v, mask=mask, causal=causal, block_q=4, block_k=6)
    assert max_diff(ours, attention(q, k, v, mask=mask, causal=causal)) <= TOL[dtype]
    assert np.all(ours[0, :, 4] == 0)


def test_rows_with_no_allowed_key_are_exact_zeros_not_nan(dtype):
    q, k, v = draw(np.random.default_rng(8), dtype, (6, 4), (10, 4), (10, 4))
    mask = np.zeros((6, 10), dtype=bool)
    mask[::2, 3] = True  # odd rows see nothing at all
    out = blocked_attention(q, k, v, mask=mask, block_q=2, block_k=3)
    assert not np.any(np.isnan(out))
    assert np.all(out[1::2] == 0)
    assert max_diff(out[::2], np.broadcast_to(v[3], (3, 4))) <= TOL[dtype]


def test_causal_with_more_queries_than_keys_gives_zeros_for_queries_before_the_first_key(dtype):
    # Bottom-right alignment: query i sits at position n_k - n_q + i = i - 4 here.
    q, k, v = draw(np.random.default_rng(9), dtype, (10, 4), (6, 4), (6, 4))
    out = blocked_attention(q, k, v, causal=True, block_q=3, block_k=2)
    assert np.all(out[:4] == 0)
    assert max_diff(out, attention(q, k, v, causal=True)) <= TOL[dtype]


def test_leading_dims_broadcast_like_plain_attention(dtype):
    # One key/value head shared by 4 query heads: broadcast, never copied.
    q, k, v = draw(np.random.default_rng(10), dtype, (2, 4, 9, 8), (2, 1, 12, 8), (1, 12, 3))
    ours = blocked_attention(q, k, v, block_q=4, block_k=5)
    assert ours.shape == (2, 4, 9, 3)
    assert max_diff(ours, attention(q, k, v)) <= TOL[dtype]


@settings(max_examples=60, deadline=None)
@given(
    n_q=st.integers(1, 30), n_k=st.integers(1, 30), d=st.integers(1, 9),
    block_q=st.integers(1, 12), block_k=st.integers(1, 12),
    causal=st.booleans(), masked=st.booleans(), seed=st.integers(0, 2**16),
)
def test_property_equals_plain_attention_for_any_tiling(n_q, n_k, d, block_q, block_k,
                                                        causal, masked, seed):
    rng = np.random.default_rng(seed)
    q, k, v = draw(rng, np.float64, (2, n_q, d), (2, n_k, d), (2, n_k, d))
    mask = rng.random((n_q, n_k)) < 0.5 if masked else None
    ours = blocked_attention(q, k, v, mask=mask, causal=causal, block_q=block_q, block_k=block_k)
    assert max_diff(ours, attention(q, k, v, mask=mask, causal=causal)) <= 1e-12


def torch_sdpa(q, k, v, mask=None, is_causal=False):
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    return F.scaled_dot_product_attention(*t, attn_mask=m, is_causal=is_causal).numpy()


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_matches_torch_sdpa_with_4d_inputs(causal, dtype):
    q, k, v = draw(np.random.default_rng(11), dtype, (2, 4, 200, 64), (2, 4, 200, 64), (2, 4, 200, 64))
    ours = blocked_attention(q, k, v, causal=causal, block_q=64, block_k=48)
    assert max_diff(ours, torch_sdpa(q, k, v, is_causal=causal)) <= TOL[dtype]


def test_matches_torch_sdpa_with_a_boolean_mask_including_empty_rows(dtype):
    rng = np.random.default_rng(12)
    q, k, v = draw(rng, dtype, (1, 2, 33, 16), (1, 2, 45, 16), (1, 2, 45, 8))
    mask = rng.random((1, 2, 33, 45)) < 0.2
    mask[0, 1, 5] = False
    ours = blocked_attention(q, k, v, mask=mask, block_q=8, block_k=8)
    assert max_diff(ours, torch_sdpa(q, k, v, mask)) <= TOL[dtype]


def test_float32_in_float32_out_and_float64_in_float64_out(dtype):
    q, k, v = draw(np.random.default_rng(13), dtype, (5, 64), (7, 64), (7, 64))
    assert blocked_attention(q, k, v, block_q=2, block_k=3).dtype == dtype


def test_np_sqrt_of_a_python_number_would_promote_float32_to_float64():
    # The trap this module avoids: a float64 NumPy scalar promotes a float32 array.
    x = np.ones(3, dtype=np.float32)
    assert (x / np.sqrt(64)).dtype == np.float64
    assert (x * np.float32(1 / 8)).dtype == np.float32


class _DtypeSpy:
    """Stands in for the module's ``np``: every array going in or out of a NumPy
    function must have the allowed float dtype (booleans and integers pass)."""

    def __init__(self, allowed):
        self.allowed = allowed
        self.seen = 0

    def check(self, value):
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f":
            self.seen += 1
            assert value.dtype == self.allowed, f"a {value.dtype} value inside blocked_attention"

    def __getattr__(self, name):
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr

        def spied(*args, **kwargs):
            for value in (*args, *kwargs.values()):
                self.check(value)
            result = attr(*args, **kwargs)
            self.check(result)
            return result

        return spied


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_no_float64_intermediates_for_float32_inputs(monkeypatch, causal):
    rng = np.random.default_rng(14)
    q, k, v = draw(rng, np.float32, (2, 40, 64), (2, 50, 64), (2, 50, 64))
    mask = rng.random((40, 50)) < 0.7
    spy = _DtypeSpy(np.float32)
    monkeypatch.setattr(blocked_module, "np", spy)
    out = blocked_attention(q, k, v, mask=mask, causal=causal, block_q=16, block_k=16, workers=1)
    monkeypatch.undo()
    assert spy.seen > 50  # the spy really saw the tile loop's arrays
    assert out.dtype == np.float32
    assert max_diff(out, attention(q, k, v, mask=mask, causal=causal)) <= 1e-5


def test_causal_key_tiles_above_the_diagonal_are_never_read():
    # NaN in the values of keys 8..15. A computed tile multiplies them by weights of
    # exactly 0 and 0 * NaN = NaN: queries 0..7 stay finite only if the tile of keys
    # 8..15 is never touched for them.
    q, k, v = draw(np.random.default_rng(15), np.float64, (16, 4), (16, 4), (16, 4))
    v[8:] = np.nan
    out = blocked_attention(q, k, v, causal=True, block_q=8, block_k=8)
    assert np.all(np.isfinite(out[:8]))
    assert max_diff(out[:8], attention(q[:8], k[:8], v[:8], causal=True)) <= 1e-12


def test_key_tiles_plan_for_a_causal_square():
    # 4 query tiles x 4 key tiles of 4: 10 computed (4 of them on the diagonal), 6 skipped.
    plan = [key_tiles(q0, 4, 16, 4) for q0 in range(0, 16, 4)]
    assert [len(tiles) for tiles in plan] == [1, 2, 3, 4]
    assert [sum(diag for *_, diag in tiles) for tiles in plan] == [1, 1, 1, 1]
    assert key_tiles(None, 4, 10, 4) == [(0, 4, False), (4, 8, False), (8, 10, False)]


def test_threads_give_the_same_result_as_one_thread():
    q, k, v = draw(np.random.default_rng(16), np.float64, (3, 300, 32), (3, 300, 32), (3, 300, 32))
    one = blocked_attention(q, k, v, causal=True, block_q=32, block_k=64, workers=1)
    many = blocked_attention(q, k, v, causal=True, block_q=32, block_k=64, workers=4)
    assert max_diff(one, many) <= 1e-12


def test_blas_thread_count_is_restored_after_the_threaded_section():
    functions = _bundled_openblas()
    if not functions:
        pytest.skip("NumPy's bundled OpenBLAS not found: nothing is changed")
    get, _ = functions
    before = get()
    with single_threaded_blas():
        assert get() == 1
    assert get() == before


def test_thread_map_runs_every_item_and_raises_what_a_task_raises():
    for workers in (1, 3):
        seen = []
        with thread_map(workers) as run_all:
            run_all(seen.append, range(10))
        assert sorted(seen) == list(range(10))

        def fail(item):
            if item == 7:
                raise KeyError(item)

        with pytest.raises(KeyError), thread_map(workers) as run_all:
            run_all(fail, range(10))


@pytest.mark.parametrize("shape, workers, rows", [
    ((8, 4096, 8), 2, 1024),  # 32 query tiles of the largest size
    ((1, 4096, 8), 2, 1024),  # 4 tiles: two for each thread
    ((1, 2048, 8), 2, 512),   # 1,024 rows would leave each thread one tile
    ((1, 300, 8), 2, 256),    # never below 256 rows
    ((1, 2048, 8), 1, 1024),  # one thread: two tiles are enough
])
def test_default_query_tiles_are_large_but_give_each_thread_two(monkeypatch, shape,
                                                               workers, rows):
    tile_rows = []
    real = blocked_module._attend_query_tile

    def spy(q_tile, *args, **kwargs):
        tile_rows.append(q_tile.shape[0])
        return real(q_tile, *args, **kwargs)

    monkeypatch.setattr(blocked_module, "_attend_query_tile", spy)
    q = np.random.default_rng(20).standard_normal(shape, dtype=np.float32)
    blocked_attention(q, q, q, workers=workers)
    assert max(tile_rows) == rows
    assert blocked_module.BLOCK_Q == 1024


@pytest.mark.parametrize("bad", [0, -4])
def test_block_sizes_must_be_positive(bad):
    q = np.zeros((4, 2))
    with pytest.raises(ValueError, match="block_q"):
        blocked_attention(q, q, q, block_q=bad)
    with pytest.raises(ValueError, match="block_k"):
        blocked_attention(q, q, q, block_k=bad)


def test_bad_shapes_raise_the_plain_attention_errors():
    with pytest.raises(ValueError, match="share their last dim"):
        blocked_attention(np.zeros((3, 4)), np.zeros((3, 5)), np.zeros((3, 5)))


def test_memory_beyond_inputs_and_output_is_one_copy_of_k_and_v_plus_tiles_at_32k_tokens():
    # Plain attention would need a 32768 x 32768 float32 score matrix: 4 GiB.
    n, d = 32_768, 64
    q, k, v = draw(np.random.default_rng(17), np.float32, (n, d), (n, d), (n, d))
    tracemalloc.start()
    try:
        out = blocked_attention(q, k, v)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    staged = 2 * n * (d + 1) * 4  # [k, 1] and [v, 1]
    tiles = peak - out.nbytes - staged
    assert tiles < 16 * 2**20, f"{tiles / 2**20:.1f} MiB beyond the output and staged k, v"
    rows = np.arange(0, n, 4099)  # spot-check a few rows against plain attention
    assert max_diff(out[rows], attention(q[rows], k, v)) <= 1e-5


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_scores_rising_far_above_the_running_max_redo_the_tile_carefully(monkeypatch, causal,
                                                                           dtype):
    # The first keys set each row's first shift; the later keys score up to ~200 higher.
    # Without the max of each tile, exp(score - shift) would overflow: the query tile
    # must be redone the careful way, and the result still be exact.
    rng = np.random.default_rng(18)
    first = blocked_module.FIRST_KEYS
    q, k, v = draw(rng, dtype, (2, first + 16, 8), (2, first + 16, 8), (2, first + 16, 4))
    k[:, first:] *= 60
    calls = []
    real = blocked_module._attend_query_tile

    def spy(*args, **kwargs):
        calls.append(kwargs.get("always_careful", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(blocked_module, "_attend_query_tile", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the discarded first try does not warn
        ours = blocked_attention(q, k, v, causal=causal, block_q=8, block_k=8, workers=1)
    assert any(calls), "no query tile was redone"
    assert np.all(np.isfinite(ours))
    # Scores reach about 240, where float32 numbers lie 1.5e-5 apart, so plain attention
    # in float32 is itself 1.2e-5 off here: we are held to the float64 result instead.
    exact = attention(*(x.astype(np.float64) for x in (q, k, v)), causal=causal)
    assert max_diff(ours, exact) <= TOL[dtype]


def test_a_boolean_mask_zeroes_blocked_keys_even_when_their_scores_would_overflow(dtype):
    # Blocked keys with huge scores: exp overflows to inf, and inf * 0 = nan in the fast
    # path. The careful redo must give exactly what plain attention gives.
    rng = np.random.default_rng(19)
    q, k, v = draw(rng, dtype, (16, 8), (32, 8), (32, 4))
    k[20:] *= 1000
    mask = np.ones((16, 32), dtype=bool)
    mask[:, 20:] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = blocked_attention(q, k, v, mask=mask, block_q=4, block_k=8)
    assert max_diff(ours, attention(q, k, v, mask=mask)) <= TOL[dtype]


def test_the_first_shift_is_each_rows_highest_score_over_keys_every_row_sees():
    rng = np.random.default_rng(21)
    q_ext = np.zeros((5, 4))  # [q * scale * log2 e, -shift]: 5 queries, d = 3
    q_ext[:, :3] = rng.standard_normal((5, 3))
    k_ext = np.ones((50, 4))  # [k, 1]
    k_ext[:, :3] = rng.standard_normal((50, 3))
    first = blocked_module.FIRST_KEYS
    for first_pos, seen in [(None, first), (3, 4), (100, first)]:
        q, m = q_ext.copy(), np.full(5, -np.inf)
        assert blocked_module._first_shift(q, k_ext, m, first_pos)
        expected = (q_ext[:, :3] @ k_ext[:seen, :3].T).max(axis=1)
        assert np.array_equal(m, expected) and np.array_equal(q[:, 3], -expected)
    # Row 0 sees no key (causal, more queries than keys), or a score is not finite:
    # nothing is set, and the tile takes the careful way.
    k_inf = k_ext.copy()
    k_inf[2, 0] = np.inf
    for keys, first_pos in [(k_ext, -1), (k_inf, None)]:
        q, m = q_ext.copy(), np.full(5, -np.inf)
        assert not blocked_module._first_shift(q, keys, m, first_pos)
        assert np.all(m == -np.inf) and np.all(q[:, 3] == 0)


@pytest.mark.parametrize("exponential", [(np.exp, 1.0), (np.exp2, blocked_module.LOG2_E)],
                         ids=["base-e", "base-2"])
def test_both_exponentials_give_plain_attention_and_its_log_sum_exp(monkeypatch, exponential,
                                                                    dtype):
    # Each process keeps the faster of np.exp and np.exp2 for the dtype; whichever this
    # machine picks, the other must be exact too: no mask, a float mask (with -inf), a
    # boolean one, causal, and the log-sum-exp a backward pass reads.
    monkeypatch.setattr(blocked_module, "_exponential", lambda dtype: exponential)
    rng = np.random.default_rng(22)
    q, k, v = draw(rng, dtype, (2, 37, 8), (2, 53, 8), (2, 53, 5))
    bias = rng.normal(size=(37, 53)).astype(dtype)
    bias[3, :20] = -np.inf
    scores = q.astype(np.float64) @ k.astype(np.float64).swapaxes(-1, -2) / np.sqrt(8)
    for mask, causal in [(None, False), (None, True), (bias, False), (bias > 0, True)]:
        ours, lse = blocked_attention(q, k, v, mask=mask, causal=causal, return_lse=True,
                                      block_q=8, block_k=16)
        assert max_diff(ours, attention(q, k, v, mask=mask, causal=causal)) <= TOL[dtype]
        floating = mask is not None and mask.dtype != bool
        allowed = mask if mask is not None and not floating else np.ones((37, 53), bool)
        if causal:
            allowed = allowed & causal_mask(37, 53)
        expected = logsumexp(np.where(allowed, scores + (mask if floating else 0),
                                      -np.inf), axis=-1)
        assert max_diff(np.where(np.isinf(expected), 0, lse),
                        np.where(np.isinf(expected), 0, expected)) <= 10 * TOL[dtype]
        assert np.array_equal(np.isinf(lse), np.isinf(expected))

