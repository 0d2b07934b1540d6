"""Shared timing helpers: medians of repeats, ember and PyTorch measured in the same run."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def median_time(fn: Callable[[], object], number: int, repeats: int = 7,
                sync: Callable[[], object] | None = None) -> float:
    """Median seconds per call of ``fn`` over ``repeats`` batches of ``number`` calls (after one warm-up batch).

    ``sync`` (e.g. ``torch.cuda.synchronize``) is called before and after every batch, so work an asynchronous
    device still has queued is counted in the batch that launched it.
    """
    wait = sync or (lambda: None)
    for _ in range(number):
        fn()
    samples = []
    for _ in range(repeats):
        wait()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        wait()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def load_torch(threads: int):
    """PyTorch (CPU) set to ``threads`` threads, or None when it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    return torch


def ratio_row(name: str, ember_s: float, torch_s: float | None, unit_scale: float = 1e6, unit: str = "us") -> str:
    """One table row: workload, both medians, and ember/torch."""
    if torch_s is None:
        return f"{name:42s} ember {ember_s * unit_scale:9.2f} {unit}   torch        -         ratio    -"
    return (f"{name:42s} ember {ember_s * unit_scale:9.2f} {unit}   torch {torch_s * unit_scale:9.2f} {unit}   "
            f"ratio {ember_s / torch_s:6.2f}")
