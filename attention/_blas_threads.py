"""Our own threads, with NumPy's BLAS kept on one thread while they run.

`blocked_attention` runs several query tiles at once in Python threads. If each of
those threads also calls a multithreaded BLAS, the two levels of parallelism nest: on
a 2-core machine, 2 threads x 2 BLAS threads fight over the cores, and OpenBLAS's
spinning workers can make a run ten times slower. So while the threads run, BLAS gets
one thread, and gets its old setting back afterwards.

We call the thread-count functions of the OpenBLAS that NumPy's wheels bundle
(scipy-openblas) through ctypes, which takes microseconds. For another BLAS we use
`threadpoolctl` if it is installed (it scans the loaded libraries each time: milliseconds).
If neither works nothing is changed; in the browser (Pyodide's WebAssembly, one
thread) there is nothing to change.

`thread_map` is how the blocked kernels use this: one thread pool per call.
"""

import contextlib
import ctypes
import glob
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_OPENBLAS = None  # (get, set) functions of NumPy's bundled OpenBLAS, once found


def _bundled_openblas():
    global _OPENBLAS
    if _OPENBLAS is None:
        _OPENBLAS = ()
        libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
        for path in glob.glob(os.path.join(libs, "libscipy_openblas*.so*")):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for suffix in ("64_", "_64_", ""):
                get = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None)
                set_ = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None)
                if get is not None and set_ is not None:
                    set_.argtypes = [ctypes.c_int]
                    _OPENBLAS = (get, set_)
                    break
            if _OPENBLAS:
                break
    return _OPENBLAS


@contextlib.contextmanager
def blas_threads(n):
    """Within this block NumPy's matrix products use n threads (None: leave
    them as they are). Chapter 11's fast decoder picks n by a product's shape:
    one thread for a few rows, where waking and sharing a second costs more
    than it saves, and far more when another process holds the other core."""
    if n is None or sys.platform == "emscripten":  # the browser: one thread
        yield
        return
    functions = _bundled_openblas()  # two ctypes calls: microseconds
    if functions:
        get, set_ = functions
        before = get()
        set_(n)
        try:
            yield
        finally:
            set_(before)
        return
    try:  # another BLAS: threadpoolctl knows them all (but takes milliseconds)
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield


def single_threaded_blas():
    """Within this block NumPy's matrix products use one thread."""
    return blas_threads(1)


@contextlib.contextmanager
def thread_map(workers):
    """A pool of ``workers`` threads for one kernel call, as a map function.

    ``run_all(fn, items)`` calls fn(item) for every item on the pool's threads,
    with BLAS on one thread in each; fn writes its results into arrays, and an
    exception in it is raised here. With one worker the items run in order on
    this thread, and BLAS keeps its own threads.
    """
    if workers <= 1:
        def run_all(fn, items):
            for item in items:
                fn(item)
        yield run_all
        return
    # Our threads already use every core: BLAS in each gets one thread.
    with single_threaded_blas(), ThreadPoolExecutor(workers) as pool:
        def run_all(fn, items):
            for _ in pool.map(fn, items):
                pass  # results are written in place; this re-raises errors
        yield run_all
