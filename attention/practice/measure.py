"""Measuring what a verdict claims about how an answer computes, not only what it returns.

* ``peak_memory``: the largest memory a call allocated (``tracemalloc``, which NumPy
  reports its arrays to), for "without forming the Jacobian" and "block by block".
* ``BlockStream``: blocks handed out one at a time, for "in one pass". It can be walked
  through once; when the next block is taken, the one before is overwritten with NaN, so
  an answer that keeps blocks to read them again later computes NaN, and one that keeps
  copies shows in its peak memory.
* ``poisoned``: an array whose entries an answer must not read are NaN, for "reads only
  the tiles it may see".
* ``Counted``: an array that counts the FLOPs of every matrix product it takes part in
  (2 per multiply-add), for a FLOPs estimate measured on a real forward pass.
"""

from __future__ import annotations

import functools
import tracemalloc

import numpy as np

from attention.practice.verdict import call


def peak_memory(fn, *args, **kwargs):
    """Call the reader's function (as ``verdict.call`` does); return (result, problem,
    the peak bytes allocated during the call, the check's copies of the inputs excluded)."""
    if not callable(fn):
        return (*call(fn), 0)
    box = {}

    def measured(*a, **k):
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            return fn(*a, **k)
        finally:
            box["peak"] = tracemalloc.get_traced_memory()[1] - base
            if started:
                tracemalloc.stop()

    try:  # the reader's parameter names, for what call says about changed inputs
        functools.update_wrapper(measured, fn)
    except (AttributeError, TypeError):
        pass
    result, problem = call(measured, *args, **kwargs)
    return result, problem, box.get("peak", 0)


def kib(n_bytes) -> str:
    return f"{n_bytes / 1024:,.0f} KiB"


class BlockStream:
    """Blocks of an array handed out one by one (see the module's docstring)."""

    def __init__(self, blocks):
        self._blocks = [np.array(b) for b in blocks]  # the check's own copies
        self.passes = 0
        self.kept = False  # set when a block was read after the next one was taken

    def __iter__(self):
        self.passes += 1
        if self.passes > 1:
            return iter(())
        return self._walk()

    def _walk(self):
        previous = None
        for block in self._blocks:
            handed = block.copy()  # allocated while the answer runs: counted in its peak
            if previous is not None:
                previous[...] = np.nan  # read it again later, and the answer gets NaN
            yield handed
            previous = handed

    def __deepcopy__(self, memo):  # verdict.call copies inputs; a stream is one object
        return self

    def __repr__(self):
        return f"<a stream of {len(self._blocks)} blocks; loop over it once>"


def poisoned(a, rows_from):
    """A copy of ``a`` whose rows from ``rows_from`` on are NaN: an answer that reads
    them (even to multiply by a zero weight) gets NaN in its result."""
    out = np.array(a, copy=True)
    out[rows_from:] = np.nan
    return out


class Counted(np.ndarray):
    """An array whose matrix products (``@``, ``np.matmul``) add 2 x multiply-adds to
    ``Counted.flops``; every other ufunc runs as on a plain array. What it computes
    with stays Counted, so the weights of a model, viewed as Counted, count every
    product with them. (An array converted back with ``np.asarray`` stops counting.)"""

    flops = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [i.view(np.ndarray) if isinstance(i, Counted) else i for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, Counted) else o
                                  for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if ufunc is np.matmul and method == "__call__":
            Counted.flops += 2 * int(np.size(result)) * int(np.shape(plain[0])[-1])
        return result.view(Counted) if isinstance(result, np.ndarray) else result
