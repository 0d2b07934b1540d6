"""ember.compile against eager ember, eager PyTorch and torch.compile, on the blocks compilation is for.

Run: python benchmarks/bench_compile.py [--threads N] [--repeats N] [--budget S] [--scale F] [--only NAME,...]

The workloads are written as the suite's are (benchmarks/workloads.py), once per block, with an eager and a
compiled variant: the compiled one wraps the block in ``lib.compile``, so the ember side runs ``ember.compile``
(capture, fused elementwise kernels) and the torch side ``torch.compile`` (inductor, which needs a C++ compiler:
when it fails the torch side of that row says why). Blocks, each a forward and backward step:

- ``gelu_mlp``: a transformer MLP block, LayerNorm, Linear(d, 4d), tanh-GELU, Linear(4d, d), residual;
- ``layernorm_residual``: ``h = x + y; h + LayerNorm(h) * 0.5``;
- ``lstm_cell``: one LSTM cell step written in ops (two matmuls, the bias, the four gates, the state update);
- ``mlp_step``: the suite's MLP training step (784-512-256-10, SGD with momentum, cross entropy), model compiled;

and, forward only on 4M float32 elements, ``gelu_chain``: the tanh-GELU expression (8 elementwise ops), against
``one_pass`` (``x * 2``: one read, one write), so the compiled chain's time in passes over memory is shown.

Each workload runs in the suite's workers (benchmarks/_worker.py: a fresh process per framework and workload,
timed batches in alternation, medians); each worker adds ``WORKLOADS`` below to the suite's list first. To run
them in the suite, end benchmarks/workloads.py with ``from bench_compile import WORKLOADS as _COMPILE`` and
``WORKLOADS += _COMPILE``. The summary after the rows puts each block's four figures side by side.
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

import functools  # noqa: E402 - the thread pools must be sized first
from typing import Any, Callable  # noqa: E402

from workloads import Case, Workload, _backward_step, _gigabytes, _train_step, gelu_tanh, mlp, shrink  # noqa: E402


def _maybe_compiled(lib: Any, block: Any, compiled: bool) -> Any:
    return lib.compile(block) if compiled else block


def _gelu_mlp_block(lib: Any, width: int) -> Any:
    nn, F = lib.nn, lib.nn.functional

    class GeluMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(F.gelu(self.fc1(self.norm(x)), approximate="tanh"))

    return GeluMLP()


def gelu_mlp(lib: Any, scale: float, device: str, compiled: bool) -> Case:
    tokens, width = shrink(2048, scale, 1 / 2), shrink(256, scale, 1 / 4)
    block = _gelu_mlp_block(lib, width).to(device)
    run = _maybe_compiled(lib, block, compiled)
    x = lib.randn(tokens, width, device=device, requires_grad=True)
    return Case(_backward_step(block, lambda: run(x)), tokens, f"{tokens} tokens, {width}->{4 * width}->{width}")


def layernorm_residual(lib: Any, scale: float, device: str, compiled: bool) -> Case:
    rows, width = shrink(4096, scale, 1 / 2), shrink(1024, scale, 1 / 2)
    norm = lib.nn.LayerNorm(width).to(device)

    def block(x: Any, y: Any) -> Any:
        h = x + y
        return h + norm(h) * 0.5

    run = _maybe_compiled(lib, block, compiled)
    x, y = (lib.randn(rows, width, device=device, requires_grad=True) for _ in range(2))
    return Case(_backward_step(norm, lambda: run(x, y)), rows, f"{rows}x{width}")


def _lstm_cell(lib: Any, x: Any, h: Any, c: Any, w: Any, u: Any, b: Any) -> tuple[Any, Any]:
    gates = x @ w + h @ u + b
    i, f, g, o = gates.chunk(4, 1)
    c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
    return lib.sigmoid(o) * lib.tanh(c), c


def lstm_cell(lib: Any, scale: float, device: str, compiled: bool) -> Case:
    batch, features, hidden = shrink(64, scale, 1 / 3), shrink(256, scale, 1 / 3), shrink(512, scale, 1 / 3)
    w = (lib.randn(features, 4 * hidden, device=device) * 0.05).requires_grad_()
    u = (lib.randn(hidden, 4 * hidden, device=device) * 0.05).requires_grad_()
    b = lib.zeros(4 * hidden, device=device, requires_grad=True)
    x, h, c = (lib.randn(batch, n, device=device) for n in (features, hidden, hidden))
    run = _maybe_compiled(lib, functools.partial(_lstm_cell, lib), compiled)

    def step() -> None:
        for p in (w, u, b):
            p.grad = None
        new_h, new_c = run(x, h, c, w, u, b)
        (new_h.sum() + new_c.sum()).backward()

    return Case(step, batch, f"batch {batch}, in {features}, hidden {hidden}")


def mlp_step(lib: Any, scale: float, device: str, compiled: bool) -> Case:
    if not compiled:
        return mlp(lib, scale, device)
    batch = shrink(128, scale, 1 / 3)
    widths = [shrink(w, scale, 1 / 3) for w in (784, 512, 256)]
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.ReLU(), nn.Linear(widths[1], widths[2]), nn.ReLU(),
                          nn.Linear(widths[2], 10)).to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    run = lib.compile(model)
    x = lib.randn(batch, widths[0], device=device)
    y = lib.randint(0, 10, (batch,), device=device)
    return Case(_train_step(optimizer, lambda: F.cross_entropy(run(x), y)), batch,
                f"batch {batch}, {'-'.join(map(str, widths))}-10")


def gelu_chain(lib: Any, scale: float, device: str, compiled: bool) -> Case:
    n = shrink(4 * 2**20, scale)
    x = lib.randn(n, device=device)
    run = _maybe_compiled(lib, functools.partial(gelu_tanh, lib), compiled)
    return Case(lambda: run(x), _gigabytes(2 * n), f"n={n}, 8 ops")


def one_pass(lib: Any, scale: float, device: str) -> Case:
    n = shrink(4 * 2**20, scale)
    x = lib.randn(n, device=device)
    return Case(lambda: x * 2.0, _gigabytes(2 * n), f"n={n}")


_BLOCKS: list[tuple[str, str, str, Callable[..., Case]]] = [
    ("gelu_mlp", "GELU-MLP block 2048x256 fwd+bwd", "samples/s", gelu_mlp),
    ("layernorm_residual", "LayerNorm + residual 4096x1024 fwd+bwd", "samples/s", layernorm_residual),
    ("lstm_cell", "LSTM cell step b64 256->512 fwd+bwd", "samples/s", lstm_cell),
    ("mlp_step", "MLP 784-512-256-10 SGD-m step b128", "samples/s", mlp_step),
    ("gelu_chain", "tanh-GELU expression 4M f32 fwd", "GB/s", gelu_chain),
]

WORKLOADS = [Workload(f"{name}{suffix}", f"{label}{tag}", unit, functools.partial(build, compiled=compiled))
             for name, label, unit, build in _BLOCKS
             for suffix, tag, compiled in (("", "", False), ("_compiled", " compiled", True))]
WORKLOADS.append(Workload("one_pass", "x * 2, 4M f32 (one pass)", "GB/s", one_pass))


def _summary(rows: dict[str, tuple[dict, dict | None]]) -> list[str]:
    """Per block: ember eager, ember compiled, torch eager, torch compiled (ms per step) and the ratios; the
    compiled chain's cost in passes over memory."""
    def ms(side: dict | None) -> float | None:
        return side["median_s"] * 1e3 if side and "error" not in side else None

    def cell(value: float | None, spec: str = "10.3f") -> str:
        return f"{'-':>10s}" if value is None else f"{value:{spec}}"

    lines = ["", f"{'block':22s} {'ember':>10s} {'ember cmp':>10s} {'torch':>10s} {'torch cmp':>10s} "
                 f"{'cmp/eager':>10s} {'ember/torch cmp':>16s}"]
    for name, *_ in _BLOCKS:
        eager, compiled = rows.get(name), rows.get(f"{name}_compiled")
        if not eager or not compiled:
            continue
        e, ec, t, tc = ms(eager[0]), ms(compiled[0]), ms(eager[1]), ms(compiled[1])
        speedup = ec / e if e and ec else None
        versus = ec / tc if ec and tc else None
        lines.append(f"{name:22s} {cell(e)} {cell(ec)} {cell(t)} {cell(tc)} {cell(speedup, '10.2f')} "
                     f"{cell(versus, '16.2f')}")
    if "gelu_chain_compiled" in rows and "one_pass" in rows:
        chain, single = ms(rows["gelu_chain_compiled"][0]), ms(rows["one_pass"][0])
        eager = ms(rows.get("gelu_chain", (None,))[0])
        if chain and single:
            lines.append(f"8-op fused chain: {chain / single:.2f} passes over memory compiled"
                         + (f", {eager / single:.2f} eager" if eager else "")
                         + f" (one pass, x * 2: {single:.3f} ms)")
    return lines


if __name__ == "__main__":
    import standalone

    raise SystemExit(standalone.main(__file__, WORKLOADS, sys.argv[1:], summary=_summary,
                                     description=__doc__.splitlines()[0]))
