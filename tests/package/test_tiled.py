"""tiled_attention, chapter 5's plain blocked kernel: equal to the plain attention, to the
tuned blocked_attention and to PyTorch's SDPA; causal tiles above the diagonal are skipped.

Tolerances: 1e-12 in float64 and 1e-5 in float32 (absolute, on outputs of order 1).
"""

import tracemalloc

import numpy as np
import pytest

import attention.tiled as tiled_module
from attention import attention, blocked_attention
from attention.tiled import tiled_attention
from tests.package.test_blocked import SHAPES, TOL, _DtypeSpy, draw, max_diff, torch_sdpa


@pytest.fixture(params=[np.float64, np.float32], ids=["float64", "float32"])
def dtype(request):
    return request.param


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[0] + s[1:3])))
def test_equals_plain_and_tuned_blocked_attention_on_random_shapes(shape, causal, dtype):
    batch, n_q, n_k, d, d_v, bq, bk = shape
    q, k, v = draw(np.random.default_rng(n_q * 100 + n_k), dtype,
                   batch + (n_q, d), batch + (n_k, d), batch + (n_k, d_v))
    ours = tiled_attention(q, k, v, causal=causal, block_q=bq, block_k=bk)
    plain = attention(q, k, v, causal=causal)
    assert ours.dtype == dtype and ours.shape == plain.shape
    assert max_diff(ours, plain) <= TOL[dtype]
    assert max_diff(ours, blocked_attention(q, k, v, causal=causal)) <= TOL[dtype]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_matches_torch_sdpa_with_4d_inputs(causal, dtype):
    q, k, v = draw(np.random.default_rng(21), dtype, *[(2, 4, 200, 64)] * 3)
    ours = tiled_attention(q, k, v, causal=causal, block_q=64, block_k=48)
    assert max_diff(ours, torch_sdpa(q, k, v, is_causal=causal)) <= TOL[dtype]


def test_leading_dims_broadcast_like_plain_attention():
    # one key/value head shared by three query heads
    q, k, v = draw(np.random.default_rng(22), np.float64, (2, 3, 30, 8), (2, 1, 30, 8),
                   (1, 1, 30, 4))
    ours = tiled_attention(q, k, v, causal=True, block_q=8, block_k=8)
    assert ours.shape == (2, 3, 30, 4)
    assert max_diff(ours, attention(q, k, v, causal=True)) <= 1e-12


def test_causal_with_more_queries_than_keys_gives_zeros_before_the_first_key():
    q, k, v = draw(np.random.default_rng(23), np.float64, (9, 4), (4, 4), (4, 4))
    out = tiled_attention(q, k, v, causal=True, block_q=2, block_k=3)
    assert np.all(out[:5] == 0)  # queries 0..4 sit at positions -5..-1
    assert max_diff(out, attention(q, k, v, causal=True)) <= 1e-12


def test_causal_key_tiles_above_the_diagonal_are_never_read():
    # NaN in the values of keys 8..15: a tile that were computed for queries 0..7
    # would multiply them by weights of 0, and 0 * NaN = NaN.
    q, k, v = draw(np.random.default_rng(24), np.float64, (16, 4), (16, 4), (16, 4))
    v[8:] = np.nan
    out = tiled_attention(q, k, v, causal=True, block_q=8, block_k=8)
    assert np.isfinite(out[:8]).all()
    assert max_diff(out[:8], attention(q[:8], k[:8], v[:8], causal=True)) <= 1e-12


def test_causal_computes_about_half_the_scores(monkeypatch):
    # Count the scores that go through the exponential: n² without a mask; with it,
    # the tiles on and below the diagonal: (1 + 2 + ... + 8) of 64 tiles = 56.25%.
    n, tile = 1024, 128
    q, k, v = draw(np.random.default_rng(25), np.float64, (n, 16), (n, 16), (n, 16))
    counted = {}
    for causal in (False, True):
        seen = []
        spy = _DtypeSpy(np.float64)

        def exp(x, spy_exp=spy.exp):
            seen.append(x.size if x.shape[-1] > 1 else 0)  # not alpha (bq, 1)
            return spy_exp(x)

        spy.exp = exp
        monkeypatch.setattr(tiled_module, "np", spy)
        tiled_attention(q, k, v, causal=causal, block_q=tile, block_k=tile)
        monkeypatch.undo()
        counted[causal] = sum(seen)
    assert counted[False] == n * n
    assert counted[True] == 36 * tile * tile  # 8 * 9 / 2 tiles of 64


def test_no_float64_intermediates_for_float32_inputs(monkeypatch):
    q, k, v = draw(np.random.default_rng(26), np.float32, (2, 40, 64), (2, 50, 64),
                   (2, 50, 64))
    spy = _DtypeSpy(np.float32)
    monkeypatch.setattr(tiled_module, "np", spy)
    out = tiled_attention(q, k, v, causal=True, block_q=16, block_k=16)
    monkeypatch.undo()
    assert spy.seen > 20 and out.dtype == np.float32
    assert max_diff(out, attention(q, k, v, causal=True)) <= 1e-5


def test_memory_is_a_few_tiles_not_the_score_matrix():
    # Plain attention at n = 4096 holds 64 MiB score matrices; one 512 x 512 float32
    # tile is 1 MiB.
    n, d = 4096, 64
    q, k, v = draw(np.random.default_rng(27), np.float32, (n, d), (n, d), (n, d))
    tracemalloc.start()
    try:
        out = tiled_attention(q, k, v, causal=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - out.nbytes < 8 * 2**20, f"{(peak - out.nbytes) / 2**20:.1f} MiB"


@pytest.mark.parametrize("bad", [0, -4, 2.0, None])
def test_block_sizes_must_be_positive_integers(bad):
    q = np.zeros((4, 2))
    with pytest.raises(ValueError, match="block_q"):
        tiled_attention(q, q, q, block_q=bad)
    with pytest.raises(ValueError, match="block_k"):
        tiled_attention(q, q, q, block_k=bad)


def test_bad_shapes_raise_the_plain_attention_errors():
    with pytest.raises(ValueError, match="share their last dim"):
        tiled_attention(np.zeros((3, 4)), np.zeros((3, 5)), np.zeros((3, 5)))
