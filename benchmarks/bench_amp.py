"""Mixed precision against PyTorch: the suite's MLP training step under autocast bfloat16, beside its float32 and
pure-bfloat16 forms.

Run: python benchmarks/bench_amp.py [--threads N] [--repeats N] [--budget S] [--scale F] [--only NAME,...]

The workloads are written as the suite's are (benchmarks/workloads.py: the MLP 784-512-256-10, SGD with momentum,
cross entropy, batch 128), each a full training step:

- ``mlp_autocast_bf16``: forward and loss inside ``lib.autocast(device, dtype=lib.bfloat16)`` (float32 weights,
  products in bfloat16, the loss in float32), backward and the step outside, as torch's AMP recipe;
- ``mlp_bf16``: the model and its input cast to bfloat16 (``model.bfloat16()``), no autocast;
- ``mlp_f32``: the suite's float32 step, for the cost of the casts.

Each runs in the suite's workers (benchmarks/_worker.py: a fresh process per framework and workload, timed batches
in alternation, medians); each worker adds ``WORKLOADS`` below to the suite's list first. To run them in the
suite, end benchmarks/workloads.py with ``from bench_amp import WORKLOADS as _AMP`` and ``WORKLOADS += _AMP``.
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

import contextlib  # noqa: E402 - the thread pools must be sized first
import functools  # noqa: E402
from typing import Any  # noqa: E402

from workloads import Case, Workload, shrink  # noqa: E402


def mlp_step(lib: Any, scale: float, device: str, mode: str) -> Case:
    """The suite's MLP training step; ``mode`` "autocast" (bfloat16 autocast around forward and loss), "bf16"
    (a bfloat16 model and input) or "f32"."""
    batch = shrink(128, scale, 1 / 3)
    widths = [shrink(w, scale, 1 / 3) for w in (784, 512, 256)]
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.ReLU(), nn.Linear(widths[1], widths[2]), nn.ReLU(),
                          nn.Linear(widths[2], 10)).to(device)
    x = lib.randn(batch, widths[0], device=device)
    if mode == "bf16":
        model, x = model.bfloat16(), x.bfloat16()
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    y = lib.randint(0, 10, (batch,), device=device)

    def region() -> Any:
        return lib.autocast(device, dtype=lib.bfloat16) if mode == "autocast" else contextlib.nullcontext()

    def step() -> None:
        optimizer.zero_grad()
        with region():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return Case(step, batch, f"batch {batch}, {'-'.join(map(str, widths))}-10, {mode}")


WORKLOADS = [
    Workload("mlp_autocast_bf16", "MLP step b128 autocast bf16", "samples/s",
             functools.partial(mlp_step, mode="autocast")),
    Workload("mlp_bf16", "MLP step b128 bf16 model", "samples/s", functools.partial(mlp_step, mode="bf16")),
    Workload("mlp_f32", "MLP step b128 f32", "samples/s", functools.partial(mlp_step, mode="f32")),
]


if __name__ == "__main__":
    import standalone

    raise SystemExit(standalone.main(__file__, WORKLOADS, sys.argv[1:], description=__doc__.splitlines()[0]))
