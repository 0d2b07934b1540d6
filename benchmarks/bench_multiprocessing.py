"""A 64 MB tensor through a multiprocessing Queue to another process and back: ember against PyTorch.

Run: python benchmarks/bench_multiprocessing.py [--threads N] [--repeats N] [--budget S] [--scale F]

The workload (``queue_round_trip``) is written as the suite's are (benchmarks/workloads.py): ``build(lib, scale,
device)`` starts an echo process with ``lib.multiprocessing`` (fork), shares one float32 tensor of 16M elements and
returns the step: put the tensor in a Queue, get it back from the echo process's Queue. Both frameworks send a
shared tensor as a handle to its shared memory, so a step costs the two handle transfers, whatever the size; the
figure is the effective bandwidth (twice the tensor's bytes over the round trip's latency). Run alone, this script
drives the suite's own workers (benchmarks/_worker.py, one fresh process per framework, timed batches in
alternation, medians): each worker adds ``WORKLOADS`` below to the suite's list first. To run it in the suite,
end benchmarks/workloads.py with ``from bench_multiprocessing import WORKLOADS as _MULTIPROCESSING`` and
``WORKLOADS += _MULTIPROCESSING``.
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

from typing import Any  # noqa: E402 - the thread pools must be sized first

from workloads import Case, Workload, shrink  # noqa: E402

ROUND_TRIP_TIMEOUT_S = 60.0


def _echo(inbox: Any, outbox: Any) -> None:
    """The other process: send every tensor back until None arrives."""
    while True:
        item = inbox.get()
        if item is None:
            return
        outbox.put(item)
        del item


def queue_round_trip(lib: Any, scale: float, device: str) -> Case:
    n = shrink(16 * 2**20, scale)
    context = lib.multiprocessing.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    echo = context.Process(target=_echo, args=(inbox, outbox), daemon=True)  # ended with the worker
    echo.start()
    tensor = lib.randn(n, device=device).share_memory_()

    def step() -> None:
        inbox.put(tensor)
        outbox.get(timeout=ROUND_TRIP_TIMEOUT_S)

    return Case(step, 2 * 4 * n / 1e9, f"{4 * n / 2**20:.0f} MB f32")


WORKLOADS = [Workload("queue_round_trip", "64 MB tensor Queue round trip", "GB/s", queue_round_trip)]


if __name__ == "__main__":
    import standalone

    raise SystemExit(standalone.main(__file__, WORKLOADS, sys.argv[1:], repeats=15, budget=20.0,
                                     description=__doc__.splitlines()[0]))
