"""All-reduce of 4 KB and 16 MB float32 tensors on 2 processes: ember (MPI) against PyTorch's gloo.

Run: python benchmarks/bench_collectives.py [--threads N] [--repeats N]

Each framework gets two fresh processes (its own ``multiprocessing`` spawn, a rendezvous on a free loopback
port); rank 0 times ``repeats`` batches of all-reduces (each batch long enough to time, after a warm-up batch)
and reports the median latency and the bus bandwidth (bytes over latency). The ranks stay in lockstep because
every batch is the same number of all-reduces on both. The last column is ember's latency over torch's.
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

import argparse  # noqa: E402 - the thread pools must be sized first
import importlib  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from ember.distributed.run import free_loopback_port  # noqa: E402  (a port for the ranks' rendezvous)

SIZES = {"4 KB": 1024, "16 MB": 4 * 2**20}
CALLS = {"4 KB": 400, "16 MB": 8}
JOIN_TIMEOUT_S = 300.0



def _rank(rank: int, lib_name: str, port: int, repeats: int, results) -> None:
    lib = importlib.import_module(lib_name)
    dist = lib.distributed
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo")
    for label, n in SIZES.items():
        tensor = lib.ones(n)
        calls = CALLS[label]
        batches = []
        for batch in range(repeats + 1):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(calls):
                dist.all_reduce(tensor)
            if batch:  # the first batch warms up
                batches.append((time.perf_counter() - start) / calls)
        if rank == 0:
            results.put((label, statistics.median(batches)))
    dist.destroy_process_group()


def measure(lib_name: str, repeats: int) -> dict[str, float]:
    """Median seconds per all-reduce, by size, for one framework on two fresh processes."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_loopback_port()
    ranks = [context.Process(target=_rank, args=(r, lib_name, port, repeats, results)) for r in range(2)]
    for process in ranks:
        process.start()
    try:
        figures = dict(results.get(timeout=JOIN_TIMEOUT_S) for _ in SIZES)
    finally:
        for process in ranks:
            process.join(timeout=JOIN_TIMEOUT_S)
            if process.is_alive():
                process.kill()
                process.join()
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    ember_s, torch_s = measure("ember", args.repeats), measure("torch", args.repeats)
    print(f"{'all_reduce f32, 2 ranks':<24}{'ember us':>11}{'torch us':>11}{'ember GB/s':>12}{'torch GB/s':>12}"
          f"{'ember/torch':>13}")
    for label, n in SIZES.items():
        bytes_ = 4 * n
        print(f"{label:<24}{ember_s[label] * 1e6:>11.1f}{torch_s[label] * 1e6:>11.1f}"
              f"{bytes_ / ember_s[label] / 1e9:>12.2f}{bytes_ / torch_s[label] / 1e9:>12.2f}"
              f"{ember_s[label] / torch_s[label]:>13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
