"""DataLoader throughput, ember against PyTorch: samples that cost about 1 ms of NumPy work each, batches of 64,
``num_workers`` 0 and 2.

The workloads have the suite's shape (``WORKLOADS``: ``build(lib, scale, device)`` returns a Case whose step is
one full pass over a fresh loader, worker start-up included, as a training epoch pays it). To run them in the
suite, end benchmarks/workloads.py with ``from bench_dataloader import WORKLOADS as _DATALOADER`` and
``WORKLOADS += _DATALOADER``; the suite's rows then give ember/torch at each worker count, and each side's
speed-up is its 0-worker median over its 2-worker median. The dataset is plain Python and NumPy, the same object for both
frameworks: only the loader differs (and each framework's default_collate, which turns the arrays into tensors).

Run alone: python benchmarks/bench_dataloader.py [--threads N] [--rounds N] [--passes N] [--scale F] [--no-torch]
Each round times, in a fresh process each, ember then torch at 0 workers, then ember then torch at 2 workers
(one untimed warm-up pass, then the median of ``--passes`` passes); the table gives every side's median over the
rounds, ember/torch, and each framework's speed-up of 2 workers over 0.
"""
from __future__ import annotations

import sys

from _harness import DEFAULT_THREADS, pin_threads, threads_from_argv, timed_batch

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or a framework is imported

import argparse  # noqa: E402 - the thread pools must be sized first
import importlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from workloads import Case, Workload, shrink  # noqa: E402

BATCH = 64
SAMPLES = 512  # per pass at scale 1: 8 batches
SORTED = 32768  # float32 values sorted per sample: about 1 ms on one core
WORKER_COUNTS = (0, 2)


class BusyImages:
    """Sample i: a 3x32x32 float32 image and a label, after sorting ``SORTED`` random values (about 1 ms)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        values = np.sort(np.random.default_rng(i).standard_normal(SORTED, dtype=np.float32))
        return values[:3 * 32 * 32].reshape(3, 32, 32), i % 10


def loader_pass(workers: int):
    """The workload builder for a pass at ``workers`` workers."""
    def build(lib: Any, scale: float, device: str) -> Case:
        samples = shrink(SAMPLES, scale, least=BATCH)
        dataset = BusyImages(samples)

        def one_pass() -> None:
            for _images, _labels in lib.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=workers):
                pass
        return Case(one_pass, samples, f"samples={samples} batch={BATCH} workers={workers}")
    return build


WORKLOADS = [Workload(f"loader_w{n}", f"DataLoader pass, ~1 ms/sample, {n} workers", "samples/s",
                      loader_pass(n)) for n in WORKER_COUNTS]


def time_side(lib_name: str, workers: int, scale: float, passes: int) -> dict:
    """In this process: ``lib_name``'s pass at ``workers`` workers, warmed once, then its median of ``passes``."""
    lib = importlib.import_module(lib_name)
    lib.set_num_threads(threads_from_argv(sys.argv[1:]))
    case = loader_pass(workers)(lib, scale, "cpu")
    case.step()
    return {"median_s": statistics.median(timed_batch(case.step, 1) for _ in range(passes)), "samples": case.work}


def run_side(lib_name: str, workers: int, args: argparse.Namespace) -> dict:
    """``time_side`` in a fresh process (neither framework shares a process with the other)."""
    command = [sys.executable, __file__, "--side", lib_name, str(workers), "--threads", str(args.threads),
               "--scale", str(args.scale), "--passes", str(args.passes)]
    done = subprocess.run(command, cwd=Path(__file__).parent, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return json.loads(done.stdout.splitlines()[-1])


def speedups(medians: dict[tuple[str, int], float]) -> dict[str, float]:
    """Each framework's pass time at 0 workers over its time at the largest worker count."""
    most = max(WORKER_COUNTS)
    return {lib: medians[(lib, 0)] / medians[(lib, most)] for lib, n in medians if n == 0 and (lib, most) in medians}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per framework and worker count")
    parser.add_argument("--passes", type=int, default=3, help="timed passes in each process")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the samples per pass")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--side", nargs=2, metavar=("LIB", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(time_side(args.side[0], int(args.side[1]), args.scale, args.passes)))
        return 0
    libs = ["ember"] if args.no_torch else ["ember", "torch"]
    samples: dict[tuple[str, int], list[float]] = {(lib, n): [] for lib in libs for n in WORKER_COUNTS}
    work = 0
    for _ in range(args.rounds):
        for n in WORKER_COUNTS:
            for lib in libs:
                result = run_side(lib, n, args)
                if "error" in result:
                    print(f"{lib} at {n} workers: {result['error']}")
                    return 1
                samples[(lib, n)].append(result["median_s"])
                work = result["samples"]
    medians = {key: statistics.median(values) for key, values in samples.items()}
    print(f"DataLoader pass: {work} samples of ~1 ms NumPy work, batch {BATCH}, {args.threads} threads, "
          f"median of {args.rounds} rounds x {args.passes} passes")
    print(f"{'workers':>8s} {'ember ms':>10s} {'torch ms':>10s} {'e/t':>6s} {'ember samples/s':>16s}")
    for n in WORKER_COUNTS:
        ours, theirs = medians[("ember", n)], medians.get(("torch", n))
        ratio = f"{ours / theirs:6.2f}" if theirs else f"{'-':>6s}"
        torch_ms = f"{theirs * 1e3:10.1f}" if theirs else f"{'-':>10s}"
        print(f"{n:8d} {ours * 1e3:10.1f} {torch_ms} {ratio} {work / ours:16.0f}")
    gains = speedups(medians)
    print("speed-up of 2 workers over 0: " + ", ".join(f"{lib} {gain:.2f}x" for lib, gain in gains.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
