"""Benchmark plumbing that must not import the numeric libraries: thread pinning and batch timing.

The thread count has to reach OpenMP, OpenBLAS, MKL and Numba through the environment before numpy, numba or
torch is imported, so a script reads ``--threads`` from its raw argv and pins it before its other imports.
"""
from __future__ import annotations

import os
import time
from typing import Callable

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
DEFAULT_THREADS = 2


def threads_from_argv(argv: list[str]) -> int:
    """``--threads N`` or ``--threads=N`` from a raw argv (the default when absent or malformed: argparse says why)."""
    for index, arg in enumerate(argv):
        value = arg.partition("=")[2] if arg.startswith("--threads=") else None
        if arg == "--threads" and index + 1 < len(argv):
            value = argv[index + 1]
        if value is not None:
            return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_THREADS
    return DEFAULT_THREADS


def pin_threads(threads: int) -> None:
    """Set every native thread pool's size in the environment (read when those libraries load)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)


def timed_batch(fn: Callable[[], object], number: int, sync: Callable[[], object] | None = None) -> float:
    """Seconds per call over one batch of ``number`` calls of ``fn``.

    ``sync`` (e.g. ``torch.cuda.synchronize``) is called before and after the batch, so work an asynchronous
    device still has queued is counted in the batch that launched it.
    """
    wait = sync or (lambda: None)
    wait()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    wait()
    return (time.perf_counter() - start) / number
