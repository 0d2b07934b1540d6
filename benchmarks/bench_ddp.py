"""A DistributedDataParallel training step of the benchmark MLP on 1 and 2 ranks: ember against torch with gloo.

Run: python benchmarks/bench_ddp.py [--repeats N] [--steps N] [--threads N]

The model and step are the suite's ``mlp`` workload (784-512-256-10, SGD with momentum, batch 128 per rank:
weak scaling), wrapped in each framework's ``DistributedDataParallel`` and run by ``world`` processes started with
the framework's own ``multiprocessing.spawn`` on loopback (ember: its MPI engine under the "gloo" name; torch:
gloo). Each rank pins ``--threads`` threads (default 1: the two ranks share two cores). Rank 0 times ``--repeats``
batches of ``--steps`` steps after a warm-up (a barrier before each batch, so the ranks start together) and the
figure is the median step time. Printed: step time per framework and world size, scaling (2-rank throughput over
1-rank), the ratio ember/torch (lower is better for ember), and on 2 ranks how much of the gradients' all-reduce
the step hides behind backward (the step against the same step under ``no_sync`` and the all-reduce alone).
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    # One thread per rank unless told otherwise: the two ranks share the machine's cores.
    pin_threads(threads_from_argv(sys.argv[1:]) if any(a.startswith("--threads") for a in sys.argv) else 1)

import argparse  # noqa: E402 - the thread pools must be sized first
import datetime  # noqa: E402
import importlib  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from _harness import timed_batch  # noqa: E402
from ember.distributed.run import free_loopback_port  # noqa: E402  (a port for the ranks' rendezvous)

BATCH, WIDTHS = 128, (784, 512, 256)
WARMUP_STEPS = 5
LAUNCH_TIMEOUT_S = 300.0


def _rank(rank: int, lib_name: str, world: int, port: int, repeats: int, steps: int, out: str) -> None:
    lib = importlib.import_module(lib_name)
    dist = lib.distributed
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(rank)
    model = nn.Sequential(nn.Linear(WIDTHS[0], WIDTHS[1]), nn.ReLU(), nn.Linear(WIDTHS[1], WIDTHS[2]), nn.ReLU(),
                          nn.Linear(WIDTHS[2], 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = lib.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(BATCH, WIDTHS[0])
    y = lib.randint(0, 10, (BATCH,))

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        optimizer.step()

    def local_step() -> None:  # the same step without gradient synchronisation
        with ddp.no_sync():
            step()

    flat = lib.zeros(sum(p.numel() for p in model.parameters()))

    def all_reduce_alone() -> None:  # the gradients' all-reduce on its own, one flat tensor
        dist.all_reduce(flat)

    timings: dict[str, list[float]] = {}
    for name, fn in (("step", step), ("local", local_step), ("comm", all_reduce_alone)):
        for _ in range(WARMUP_STEPS):
            fn()
        for _ in range(repeats):
            dist.barrier()
            timings.setdefault(name, []).append(timed_batch(fn, steps))
    if rank == 0:
        with open(out, "wb") as f:
            pickle.dump({k: statistics.median(v) for k, v in timings.items()}, f)
    dist.barrier()
    dist.destroy_process_group()



def measure(lib_name: str, world: int, repeats: int, steps: int) -> dict[str, float]:
    """Median seconds of ``lib_name`` on ``world`` ranks: a DDP step ("step"), the step under ``no_sync``
    ("local") and an all-reduce of all the gradients as one tensor ("comm")."""
    lib = importlib.import_module(lib_name)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "times.pkl")
        ctx = lib.multiprocessing.spawn(_rank, args=(lib_name, world, free_loopback_port(), repeats, steps, out),
                                        nprocs=world, join=False)
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        try:
            while not ctx.join(timeout=max(1.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{lib_name} DDP ranks did not finish within {LAUNCH_TIMEOUT_S} s")
        finally:
            for process in ctx.processes:
                if process.is_alive():
                    process.kill()
                    process.join(5)
        with open(out, "rb") as f:
            return pickle.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="threads per rank")
    args = parser.parse_args()
    results: dict[tuple[str, int], dict[str, float]] = {}
    for world in (1, 2):
        for lib_name in ("ember", "torch"):
            results[lib_name, world] = measure(lib_name, world, args.repeats, args.steps)
    print(f"DDP step, MLP {'-'.join(map(str, WIDTHS))}-10, batch {BATCH} per rank, {args.threads} thread(s) per "
          f"rank, median of {args.repeats} x {args.steps} steps")
    print(f"{'':8}{'1 rank ms':>12}{'2 ranks ms':>12}{'scaling':>10}")
    for lib_name in ("ember", "torch"):
        one, two = results[lib_name, 1]["step"], results[lib_name, 2]["step"]
        print(f"{lib_name:8}{1e3 * one:12.2f}{1e3 * two:12.2f}{2 * one / two:10.2f}")
    for world in (1, 2):
        ratio = results["ember", world]["step"] / results["torch", world]["step"]
        print(f"ember/torch step time, {world} rank(s): {ratio:.2f}")
    print("2 ranks: local step (no_sync), all-reduce of the gradients alone, exposed communication (step - local),"
          " hidden share of the all-reduce (1 - exposed / alone)")
    for lib_name in ("ember", "torch"):
        r = results[lib_name, 2]
        exposed = r["step"] - r["local"]
        print(f"{lib_name:8}local {1e3 * r['local']:.2f} ms, all-reduce {1e3 * r['comm']:.2f} ms, exposed "
              f"{1e3 * exposed:.2f} ms, hidden {max(0.0, 1 - exposed / r['comm']):.0%}")


if __name__ == "__main__":
    main()
