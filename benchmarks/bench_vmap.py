"""Per-sample gradients against PyTorch: ``vmap(grad(loss), in_dims=(None, 0, 0))`` of a small MLP beside the
Python loop that computes one example's gradient at a time.

Run: python benchmarks/bench_vmap.py [--threads N] [--repeats N] [--budget S] [--scale F] [--only NAME,...]

The model is torch.func's per-sample-gradient tutorial's kind: an MLP 64-128-10 with ReLU, cross entropy, batch 64,
its parameters handed to ``lib.func.functional_call`` as a dict. Each workload's step computes every example's
gradient of every parameter:

- ``per_sample_grad_vmap``: ``lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))`` over the batch;
- ``per_sample_grad_loop``: a Python loop over the examples, each ``lib.func.grad(loss)`` of one, stacked.

The ratio of the two within one framework is what vmap buys (torch batches the whole MLP into one pass; ember's
vmap is a per-example loop today, so its two figures should be close); across frameworks, ember/torch.
Each runs in the suite's workers (benchmarks/_worker.py: a fresh process per framework and workload, timed batches
in alternation, medians). To run them in the suite, end benchmarks/workloads.py with
``from bench_vmap import WORKLOADS as _VMAP`` and ``WORKLOADS += _VMAP``.
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

import functools  # noqa: E402 - the thread pools must be sized first
import importlib  # noqa: E402
import warnings  # noqa: E402
from typing import Any  # noqa: E402

from workloads import Case, Workload, shrink  # noqa: E402


def per_sample_grads(lib: Any, scale: float, device: str, mode: str) -> Case:
    """Every example's parameter gradients of the MLP; ``mode`` "vmap" or "loop"."""
    batch = shrink(64, scale, 1 / 2)
    widths = [shrink(w, scale, 1 / 2) for w in (64, 128)]
    nn, F = lib.nn, lib.nn.functional
    func = importlib.import_module(lib.__name__ + ".func")  # torch.func / ember.func, imported or not yet
    model = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.ReLU(), nn.Linear(widths[1], 10)).to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = lib.randn(batch, widths[0], device=device)
    y = lib.randint(0, 10, (batch,), device=device)

    def loss(p: dict, sample: Any, target: Any) -> Any:
        return F.cross_entropy(func.functional_call(model, p, (sample.unsqueeze(0),)), target.unsqueeze(0))

    per_example = func.grad(loss)
    batched = func.vmap(per_example, in_dims=(None, 0, 0))

    first = next(iter(params))  # a step returns one tensor (the suite checks it); all gradients are computed

    def vmapped() -> Any:
        return batched(params, x, y)[first]

    def looped() -> Any:
        grads = [per_example(params, x[i], y[i]) for i in range(batch)]
        return {k: lib.stack([g[k] for g in grads]) for k in params}[first]

    warnings.filterwarnings("ignore", message="There is a performance drop")
    return Case(vmapped if mode == "vmap" else looped, batch, f"batch {batch}, {'-'.join(map(str, widths))}-10, {mode}")


WORKLOADS = [
    Workload("per_sample_grad_vmap", "per-sample grads MLP vmap(grad) b64", "samples/s",
             functools.partial(per_sample_grads, mode="vmap")),
    Workload("per_sample_grad_loop", "per-sample grads MLP loop of grad b64", "samples/s",
             functools.partial(per_sample_grads, mode="loop")),
]


if __name__ == "__main__":
    import standalone

    raise SystemExit(standalone.main(__file__, WORKLOADS, sys.argv[1:], description=__doc__.splitlines()[0]))
