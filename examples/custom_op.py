"""A custom layer with its own Numba kernels: a squared ReLU with a learnable per-feature scale.

Run: python examples/custom_op.py [--device cpu|cuda] [--steps 60] [--hidden 64] [--bench-rows 4096]

    y = scale * relu(x) ** 2          (scale has one entry per feature, the last dim of x)
    dL/dx     = 2 * scale * relu(x) * g
    dL/dscale = sum over rows of relu(x) ** 2 * g

Forward and backward each run one fused kernel: ``numba.njit(parallel=True)`` loops for CPU tensors and
``numba.cuda.jit`` grid-stride loops for CUDA tensors. The script checks the gradients with gradcheck, trains a
small digits classifier that uses the layer, times it against the same layer written in plain ember ops, and
prints the profiler's table. docs/extending.md walks through it.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable, Sequence

import numpy as np

import ember  # first: ember picks Numba's threading layer and kernel cache folder before Numba starts
import ember.nn.functional as F
from ember import nn
from ember.autograd import Function, gradcheck
from ember.profiler import profile, record_function
from ember.examples.digits import load_digits
from numba import config, cuda, get_num_threads, njit, prange

# Under the CUDA simulator every GPU thread runs as Python: the defaults shrink so `--device cuda` stays quick.
SIMULATED = bool(config.ENABLE_CUDASIM)


# ------------------------------------------------------------------------------------------ CPU kernels
# Kernels take flat contiguous 1-D arrays and the feature count ``cols`` (the same signature on both backends). The
# CPU kernels index 2-D views of them: LLVM vectorises ``x[i, j]`` loops, not ``x[i * cols + j]`` ones (~20x slower).
@njit(parallel=True, cache=True, nogil=True)
def forward_cpu(x, scale, out, cols):
    rows = x.size // cols
    x, out = x.reshape(rows, cols), out.reshape(rows, cols)
    for i in prange(rows):
        for j in range(cols):
            r = max(x[i, j], 0)
            out[i, j] = scale[j] * r * r


@njit(parallel=True, cache=True, nogil=True)
def backward_cpu(x, scale, g, grad_x, grad_scale, cols, chunks):
    rows = x.size // cols
    x, g, grad_x = x.reshape(rows, cols), g.reshape(rows, cols), grad_x.reshape(rows, cols)
    partial = np.zeros((chunks, cols), x.dtype)  # a row of grad_scale sums per chunk of rows: no write races
    for c in prange(chunks):
        acc = partial[c]
        for i in range(c * rows // chunks, (c + 1) * rows // chunks):
            for j in range(cols):
                r = max(x[i, j], 0)
                grad_x[i, j] = 2 * scale[j] * r * g[i, j]
                acc[j] += r * r * g[i, j]
    for j in range(cols):
        grad_scale[j] = partial[:, j].sum()


# ------------------------------------------------------------------------------------------ CUDA kernels
@cuda.jit
def forward_cuda(x, scale, out, cols):
    for k in range(cuda.grid(1), x.size, cuda.gridsize(1)):  # grid-stride loop: any grid covers any size
        r = max(x[k], 0)
        out[k] = scale[k % cols] * r * r


@cuda.jit
def backward_cuda(x, scale, g, grad_x, grad_scale, cols):
    rows = x.size // cols
    for j in range(cuda.grid(1), cols, cuda.gridsize(1)):  # one thread per feature walks down its column
        acc = 0.0
        for i in range(rows):
            k = i * cols + j
            r = max(x[k], 0)
            grad_x[k] = 2 * scale[j] * r * g[k]
            acc += r * r * g[k]
        grad_scale[j] = acc


def flat(t: ember.Tensor):
    """A contiguous tensor's memory as a 1-D array: NumPy on the CPU, a Numba device array on CUDA (no copy)."""
    storage = t._array  # an ndarray, or on CUDA ember's DeviceStorage (flat buffer + offset + shape + strides)
    if t.is_cuda:
        return storage.buffer[storage.offset:storage.offset + storage.numel]
    return storage.reshape(-1)


def launch(n: int) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over n items, with ember's caps (tiny under the simulator)."""
    from ember.kernels.cuda.launch import grid

    return grid(n)


# ------------------------------------------------------------------------------------------ autograd
def check_inputs(x: ember.Tensor, scale: ember.Tensor) -> None:
    """Bad input never reaches a kernel: shapes, dtypes and devices are checked here, torch-style."""
    if scale.dim() != 1 or x.dim() == 0 or x.shape[-1] != scale.shape[0]:
        raise RuntimeError(f"scaled_squared_relu: scale of shape {list(scale.shape)} does not match the last dim of "
                           f"input of shape {list(x.shape)}")
    if x.dtype != scale.dtype or x.dtype not in (ember.float32, ember.float64):
        raise TypeError(f"scaled_squared_relu: expected float32 or float64 input and scale of one dtype, got "
                        f"{x.dtype} and {scale.dtype}")
    if x.device != scale.device:
        raise RuntimeError(f"scaled_squared_relu: input on {x.device} and scale on {scale.device}")


class ScaledSquaredReLU(Function):
    """y = scale * relu(x) ** 2, one fused kernel each way."""

    @staticmethod
    def forward(ctx, x: ember.Tensor, scale: ember.Tensor) -> ember.Tensor:
        check_inputs(x, scale)
        x, scale = x.contiguous(), scale.contiguous()
        out = ember.empty_like(x)
        cols = scale.shape[0]
        if x.is_cuda:
            forward_cuda[launch(x.numel())](flat(x), flat(scale), flat(out), cols)
        elif x.numel():
            forward_cpu(flat(x), flat(scale), flat(out), cols)
        ctx.save_for_backward(x, scale)
        return out

    @staticmethod
    def backward(ctx, g: ember.Tensor) -> tuple:
        x, scale = ctx.saved_tensors
        grad_x, grad_scale = ScaledSquaredReLUGrad.apply(g, x, scale)
        return (grad_x if ctx.needs_input_grad[0] else None), (grad_scale if ctx.needs_input_grad[1] else None)


class ScaledSquaredReLUGrad(Function):
    """The backward kernel as a Function of its own: ``apply`` wraps what it returns into tensors on x's device.
    It has no backward, so a second derivative through the layer raises instead of being silently wrong."""

    @staticmethod
    def forward(ctx, g: ember.Tensor, x: ember.Tensor, scale: ember.Tensor) -> tuple:
        if x.numel() == 0:
            return ember.zeros_like(x), ember.zeros_like(scale)
        g = g.contiguous()
        grad_x, grad_scale = ember.empty_like(x), ember.empty_like(scale)
        cols = scale.shape[0]
        if x.is_cuda:
            backward_cuda[launch(cols)](flat(x), flat(scale), flat(g), flat(grad_x), flat(grad_scale), cols)
        else:
            chunks = max(1, min(get_num_threads(), x.numel() // cols))
            backward_cpu(flat(x), flat(scale), flat(g), flat(grad_x), flat(grad_scale), cols, chunks)
        return grad_x, grad_scale


def scaled_squared_relu_plain(x: ember.Tensor, scale: ember.Tensor) -> ember.Tensor:
    """The same layer in plain ember ops: the reference the kernels are checked and timed against."""
    return scale * F.relu(x) ** 2


class SquaredReLU(nn.Module):
    """The layer: ``scale * relu(x) ** 2`` with a learnable scale per feature."""

    def __init__(self, features: int, scale: float = 0.5) -> None:
        super().__init__()
        self.scale = nn.Parameter(ember.full((features,), scale))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return ScaledSquaredReLU.apply(x, self.scale)


# ------------------------------------------------------------------------------------------ the four checks
def check_gradients(device: str) -> bool:
    """gradcheck in float64 against finite differences, on ``device`` (so it checks that device's kernels)."""
    ember.manual_seed(0)
    x = ember.randn(5, 3, dtype=ember.float64, device=device, requires_grad=True)
    scale = ember.randn(3, dtype=ember.float64, device=device, requires_grad=True)
    ok = gradcheck(ScaledSquaredReLU.apply, (x, scale))
    print(f"gradcheck (float64, {device}): {'passed' if ok else 'FAILED'}")
    return ok


def kernel_vs_plain(device: str, rows: int, cols: int) -> float:
    """Largest difference between the kernel layer and the plain-ops layer over the output and both gradients,
    relative to each one's largest value (float32 sums over many rows round differently in a different order)."""
    ember.manual_seed(1)
    x = ember.randn(rows, cols, device=device)
    scale = ember.rand(cols, device=device)
    g = ember.randn(rows, cols, device=device)
    results = []
    for layer in (ScaledSquaredReLU.apply, scaled_squared_relu_plain):
        xi, si = x.clone().requires_grad_(), scale.clone().requires_grad_()
        y = layer(xi, si)
        y.backward(g)
        results.append((y.detach(), xi.grad, si.grad))
    diff = max(float((a - b).abs().max() / b.abs().max().clamp(min=1)) for a, b in zip(*results))
    print(f"kernel layer vs plain ops ({rows}x{cols} float32): largest difference {diff:.1e} (relative to the "
          "largest value)")
    return diff


def load_data(device: str, n: int) -> tuple[ember.Tensor, ember.Tensor]:
    """The first ``n`` digits images, flattened and standardised, with their labels."""
    images, labels = load_digits()
    images = images[:n].reshape(n, -1)
    images = (images - images.mean()) / images.std()
    return ember.tensor(images, device=device), ember.tensor(labels[:n], device=device)


def train(device: str, steps: int, hidden: int, n: int) -> list[float]:
    """Full-batch Adam on a Linear - SquaredReLU - Linear digits classifier; the loss after every step."""
    ember.manual_seed(0)
    images, labels = load_data(device, n)
    model = nn.Sequential(nn.Linear(64, hidden), SquaredReLU(hidden), nn.Linear(hidden, 10)).to(device)
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"training on {n} digits ({device}): loss {losses[0]:.4f} -> {losses[-1]:.4f} in {steps} steps")
    return losses


def seconds_per_call(fn: Callable[[], None], repeats: int, device: str) -> float:
    """Best time of ``fn`` over ``repeats`` calls, after one warm-up call (which compiles). CUDA kernels run
    asynchronously: the clock stops only when the device has finished."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if device == "cuda":
            ember.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def compare_speed(device: str, rows: int, cols: int, repeats: int) -> float:
    """Forward + backward time of the plain-ops layer over the kernel layer (above 1: the kernels are faster)."""
    x = ember.randn(rows, cols, device=device, requires_grad=True)
    scale = ember.rand(cols, device=device, requires_grad=True)

    def step(layer: Callable) -> Callable[[], None]:
        return lambda: layer(x, scale).sum().backward()

    kernel = seconds_per_call(step(ScaledSquaredReLU.apply), repeats, device)
    plain = seconds_per_call(step(scaled_squared_relu_plain), repeats, device)
    note = " (the simulator runs GPU threads as Python: not a speed measurement)" if device == "cuda" and SIMULATED \
        else ""
    print(f"forward+backward on {rows}x{cols}: kernels {1e3 * kernel:.2f} ms, plain ops {1e3 * plain:.2f} ms, "
          f"plain / kernels = {plain / kernel:.2f}x{note}")
    return plain / kernel


def show_profile(device: str, hidden: int) -> str:
    """The profiler's table for one training step: the custom Functions appear as rows named after their class."""
    layer = SquaredReLU(hidden).to(device)
    x = ember.randn(8, hidden, device=device)
    layer(x).sum().backward()  # warm-up: first calls load or compile kernels, which the table would show
    with profile() as prof:
        with record_function("squared_relu_step"):
            layer(x).sum().backward()
    table = prof.key_averages().table(sort_by="cpu_time_total")
    print(table)
    return table


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    small = SIMULATED  # the simulator needs tiny sizes; on a real GPU or the CPU the defaults are real work
    parser.add_argument("--steps", type=int, default=3 if small else 60)
    parser.add_argument("--hidden", type=int, default=4 if small else 64)
    parser.add_argument("--images", type=int, default=16 if small else 1000, help="digits images to train on")
    parser.add_argument("--bench-rows", type=int, default=8 if small else 4096)
    parser.add_argument("--bench-cols", type=int, default=4 if small else 256)
    parser.add_argument("--repeats", type=int, default=1 if small else 20)
    args = parser.parse_args(argv)
    return {
        "gradcheck": check_gradients(args.device),
        "max_difference": kernel_vs_plain(args.device, args.bench_rows, args.bench_cols),
        "losses": train(args.device, args.steps, args.hidden, args.images),
        "speedup": compare_speed(args.device, args.bench_rows, args.bench_cols, args.repeats),
        "profile": show_profile(args.device, args.hidden),
    }


if __name__ == "__main__":
    main()
