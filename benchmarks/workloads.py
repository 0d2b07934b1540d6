"""The suite's workloads, each written once as a function of the framework module (``import ember as torch`` style).

``build(lib, scale, device)`` makes a workload's tensors and model with framework ``lib`` on ``device`` and returns
the step to time. This module imports no framework itself, so a fresh start-up probe that uses it loads only the
framework it measures. ``scale`` shrinks every workload (element counts and batches by about ``scale``; matrix,
channel and feature dims by a root of it) for smoke runs. Work is counted the same for both frameworks: each
input read and each output written once (a*b+c moves 4 arrays), so GB/s figures rank rather than measure traffic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Case:
    """A built workload: the step to time, the work one step does (in its figure's unit), the sizes used."""
    step: Callable[[], object]
    work: float
    sizes: str


@dataclass(frozen=True)
class Workload:
    """A named benchmark and the unit of its derived figure.

    A figure is work per second, except for an ``inverse`` workload (per-op overhead), whose figure is the
    microseconds one unit of work takes.
    """
    name: str
    label: str
    unit: str
    build: Callable[[Any, float, str], Case]
    inverse: bool = False

    def figure(self, work: float, median_s: float) -> float:
        """The derived figure of a step doing ``work`` in ``median_s`` seconds."""
        return median_s / work * 1e6 if self.inverse else work / median_s


def shrink(base: int, scale: float, share: float = 1.0, least: int = 1) -> int:
    """``base * scale ** share`` rounded, at least ``least``: ``share`` is this dim's part of the scaling."""
    return max(least, round(base * scale ** share))


def _gigabytes(elements: int) -> float:
    """GB of ``elements`` float32 values read or written once."""
    return 4 * elements / 1e9


def _train_step(optimizer: Any, loss: Callable[[], Any]) -> Callable[[], None]:
    """One optimisation step: clear gradients, backward through ``loss()``, update."""
    def step() -> None:
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()
    return step


def _backward_step(module: Any, output: Callable[[], Any]) -> Callable[[], None]:
    """Forward and backward without an optimiser: clear ``module``'s gradients, backward through a sum."""
    def step() -> None:
        module.zero_grad()
        output().sum().backward()
    return step


def elementwise(lib: Any, scale: float, device: str) -> Case:
    n = shrink(16 * 2**20, scale)
    a, b, c = (lib.randn(n, device=device) for _ in range(3))
    return Case(lambda: a * b + c, _gigabytes(4 * n), f"n={n}")


def gelu_tanh(lib: Any, x: Any) -> Any:
    """The tanh approximation of GELU written out in framework ops (a chain of elementwise kernels, not F.gelu)."""
    return 0.5 * x * (1 + lib.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu(lib: Any, scale: float, device: str) -> Case:
    n = shrink(4 * 2**20, scale)
    x = lib.randn(n, device=device)
    return Case(lambda: gelu_tanh(lib, x), _gigabytes(2 * n), f"n={n}")


def _square(lib: Any, scale: float, device: str) -> tuple[Any, int]:
    """The reductions' 4096x4096 input (side shrunk by the square root of ``scale``)."""
    side = shrink(4096, scale, 0.5)
    return lib.randn(side, side, device=device), side


def sum_dim1(lib: Any, scale: float, device: str) -> Case:
    x, side = _square(lib, scale, device)
    return Case(lambda: x.sum(1), _gigabytes(side * side + side), f"{side}x{side}")


def sum_all(lib: Any, scale: float, device: str) -> Case:
    x, side = _square(lib, scale, device)
    return Case(lambda: x.sum(), _gigabytes(side * side + 1), f"{side}x{side}")


def softmax(lib: Any, scale: float, device: str) -> Case:
    rows, cols = shrink(4096, scale, 0.5), shrink(1024, scale, 0.5)
    x = lib.randn(rows, cols, device=device)
    return Case(lambda: x.softmax(-1), _gigabytes(2 * rows * cols), f"{rows}x{cols}")


def matmul(lib: Any, scale: float, device: str) -> Case:
    n = shrink(1024, scale, 1 / 3)
    a, b = lib.randn(n, n, device=device), lib.randn(n, n, device=device)
    return Case(lambda: a @ b, 2 * n**3 / 1e9, f"{n}^3")


def conv2d(lib: Any, scale: float, device: str) -> Case:
    batch, c1, c2 = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3), shrink(64, scale, 1 / 3)
    side = shrink(28, scale, 1 / 6, least=5)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, c1, 3), nn.Conv2d(c1, c2, 3)).to(device)
    x = lib.randn(batch, 1, side, side, device=device)
    return Case(_backward_step(model, lambda: model(x)), batch, f"batch {batch}, 1->{c1}->{c2}, {side}x{side}")


def mlp(lib: Any, scale: float, device: str) -> Case:
    batch = shrink(128, scale, 1 / 3)
    widths = [shrink(w, scale, 1 / 3) for w in (784, 512, 256)]
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.ReLU(), nn.Linear(widths[1], widths[2]), nn.ReLU(),
                          nn.Linear(widths[2], 10)).to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(batch, widths[0], device=device)
    y = lib.randint(0, 10, (batch,), device=device)
    step = _train_step(optimizer, lambda: F.cross_entropy(model(x), y))
    return Case(step, batch, f"batch {batch}, {'-'.join(map(str, widths))}-10")


def _mnist_net(lib: Any, c1: int, c2: int, hidden: int, side: int) -> Any:
    """PyTorch's MNIST example network, for ``side``x``side`` inputs."""
    nn, F = lib.nn, lib.nn.functional
    pooled = (side - 4) // 2

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, c1, 3, 1), nn.Conv2d(c1, c2, 3, 1)
            self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.fc1, self.fc2 = nn.Linear(c2 * pooled * pooled, hidden), nn.Linear(hidden, 10)

        def forward(self, x: Any) -> Any:
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = F.relu(self.fc1(lib.flatten(self.dropout1(x), 1)))
            return F.log_softmax(self.fc2(self.dropout2(x)), dim=1)

    return Net()


def mnist_cnn(lib: Any, scale: float, device: str) -> Case:
    batch, c1, c2 = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3), shrink(64, scale, 1 / 3)
    hidden, side = shrink(128, scale, 1 / 3), shrink(28, scale, 1 / 6, least=6)
    model = _mnist_net(lib, c1, c2, hidden, side).to(device)
    optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)
    x = lib.randn(batch, 1, side, side, device=device)
    y = lib.randint(0, 10, (batch,), device=device)
    step = _train_step(optimizer, lambda: lib.nn.functional.nll_loss(model(x), y))
    return Case(step, batch, f"batch {batch}, conv {c1}/{c2}, fc {hidden}, {side}x{side}")


def lstm(lib: Any, scale: float, device: str) -> Case:
    seq, batch = shrink(35, scale, 1 / 4), shrink(20, scale, 1 / 4)
    features, hidden = shrink(64, scale, 1 / 4), shrink(256, scale, 1 / 4)
    model = lib.nn.LSTM(features, hidden).to(device)
    x = lib.randn(seq, batch, features, device=device)
    step = _backward_step(model, lambda: model(x)[0])
    return Case(step, batch, f"seq {seq}, batch {batch}, in {features}, hidden {hidden}")


def _add_chain(lib: Any, scale: float, device: str, requires_grad: bool) -> Case:
    """``ops`` chained adds on 1-element tensors (and backward through them when ``requires_grad``)."""
    ops = shrink(1000, scale, 1 / 3, least=10)
    start = lib.ones(1, device=device, requires_grad=requires_grad)
    step_size = lib.ones(1, device=device, requires_grad=requires_grad)

    def chain() -> Any:
        x = start
        for _ in range(ops):
            x = x + step_size
        return x

    step = (lambda: chain().backward()) if requires_grad else chain
    return Case(step, ops, f"{ops} adds")


def overhead_grad(lib: Any, scale: float, device: str) -> Case:
    return _add_chain(lib, scale, device, requires_grad=True)


def overhead_nograd(lib: Any, scale: float, device: str) -> Case:
    return _add_chain(lib, scale, device, requires_grad=False)


WORKLOADS = [
    Workload("elementwise", "elementwise a*b+c 16M f32", "GB/s", elementwise),
    Workload("gelu", "tanh-GELU expression 4M f32 fwd", "GB/s", gelu),
    Workload("sum_dim1", "sum dim 1 4096x4096 f32", "GB/s", sum_dim1),
    Workload("sum_all", "full sum 4096x4096 f32", "GB/s", sum_all),
    Workload("softmax", "softmax last dim 4096x1024 f32", "GB/s", softmax),
    Workload("matmul", "matmul 1024^3 f32", "GFLOP/s", matmul),
    Workload("conv2d", "conv2d 1->32->64 3x3 fwd+bwd b64 28x28", "samples/s", conv2d),
    Workload("mlp", "MLP 784-512-256-10 SGD-m step b128", "samples/s", mlp),
    Workload("mnist_cnn", "MNIST CNN Adadelta step b64", "samples/s", mnist_cnn),
    Workload("lstm", "LSTM 64->256 seq35 b20 fwd+bwd", "samples/s", lstm),
    Workload("overhead_grad", "1000 chained 1-elem adds fwd+bwd", "us/op", overhead_grad, inverse=True),
    Workload("overhead_nograd", "1000 chained 1-elem adds fwd, no grad", "us/op", overhead_nograd, inverse=True),
]

# workloads kept in files of their own, appended to the suite's list
from bench_amp import WORKLOADS as _AMP  # noqa: E402
from bench_channels_last import WORKLOADS as _CHANNELS_LAST  # noqa: E402
from bench_dataloader import WORKLOADS as _DATALOADER  # noqa: E402
from bench_multiprocessing import WORKLOADS as _MULTIPROCESSING  # noqa: E402
from bench_vmap import WORKLOADS as _VMAP  # noqa: E402

WORKLOADS += _MULTIPROCESSING + _DATALOADER + [w for w in _AMP if w.name != "mlp_f32"] + _CHANNELS_LAST + _VMAP  # mlp_f32: "mlp"
