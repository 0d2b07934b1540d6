"""The channels_last memory format against contiguous, ember against PyTorch: conv2d alone and CNN training steps.

Run: python benchmarks/bench_channels_last.py [--threads N] [--repeats N] [--budget S] [--scale F] [--only NAME,...]

The workloads are written as the suite's are (benchmarks/workloads.py), each in a ``contiguous`` and a
``channels_last`` twin: the input and every 4-d parameter are converted with ``contiguous(memory_format=...)``
before timing, so both frameworks run the same layouts.

- ``conv2d_*``: one 3x3 conv2d (batch 64, 16 -> 32 channels, 32x32, padding 1), forward and backward (input,
  weight and bias gradients);
- ``mnist_cnn_*``: PyTorch's MNIST network (workloads.py ``_mnist_net``: conv 32, conv 64, max pool, fc 128) on
  batch 64 of 3x32x32 inputs, an Adadelta training step;
- ``resnet_blocks_*``: a stem conv and two residual blocks (conv-batchnorm-relu twice, identity skip, 32
  channels), global average pooling and a linear head, batch 64 of 3x32x32, an SGD step.

Each runs in the suite's workers (benchmarks/_worker.py: a fresh process per framework and workload, timed batches
in alternation, medians); each worker adds ``WORKLOADS`` below to the suite's list first. To run them in the
suite, end benchmarks/workloads.py with ``from bench_channels_last import WORKLOADS as _CHANNELS_LAST`` and
``WORKLOADS += _CHANNELS_LAST``.
"""
from __future__ import annotations

import sys

from _harness import pin_threads, threads_from_argv

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

import functools  # noqa: E402 - the thread pools must be sized first
from typing import Any  # noqa: E402

from workloads import Case, Workload, _mnist_net, _train_step, shrink  # noqa: E402

FORMATS = ("contiguous", "channels_last")


def _in_format(lib: Any, t: Any, fmt: str) -> Any:
    return t.contiguous(memory_format=getattr(lib, "channels_last" if fmt == "channels_last" else
                                              "contiguous_format"))


def _model_in_format(lib: Any, model: Any, fmt: str) -> Any:
    """Every 4-d parameter in ``fmt`` (what ``Module.to(memory_format=)`` does), set through ``.data``."""
    for p in model.parameters():
        if p.dim() == 4:
            p.data = _in_format(lib, p.data, fmt)
    return model


def conv2d_step(lib: Any, scale: float, device: str, fmt: str) -> Case:
    """conv2d forward and backward, input and weight in ``fmt``."""
    batch, side = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3, least=4)
    c_in, c_out = shrink(16, scale, 1 / 3), shrink(32, scale, 1 / 3)
    x = _in_format(lib, lib.randn(batch, c_in, side, side, device=device), fmt).requires_grad_()
    w = _in_format(lib, lib.randn(c_out, c_in, 3, 3, device=device), fmt).requires_grad_()
    b = lib.randn(c_out, device=device, requires_grad=True)

    def step() -> None:
        x.grad = w.grad = b.grad = None
        lib.nn.functional.conv2d(x, w, b, padding=1).sum().backward()

    return Case(step, batch, f"batch {batch}, {c_in}->{c_out} ch, {side}x{side}, 3x3, {fmt}")


def mnist_step(lib: Any, scale: float, device: str, fmt: str) -> Case:
    """The MNIST network on 3-channel 32x32 inputs (its first conv widened to 3 input channels)."""
    batch, c1, c2 = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3), shrink(64, scale, 1 / 3)
    hidden, side = shrink(128, scale, 1 / 3), shrink(32, scale, 1 / 6, least=6)
    model = _mnist_net(lib, c1, c2, hidden, side)
    model.conv1 = lib.nn.Conv2d(3, c1, 3, 1)
    model = _model_in_format(lib, model.to(device), fmt)
    optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)
    x = _in_format(lib, lib.randn(batch, 3, side, side, device=device), fmt)
    y = lib.randint(0, 10, (batch,), device=device)
    step = _train_step(optimizer, lambda: lib.nn.functional.nll_loss(model(x), y))
    return Case(step, batch, f"batch {batch}, conv {c1}/{c2}, fc {hidden}, 3x{side}x{side}, {fmt}")


def _resnet(lib: Any, width: int, blocks: int) -> Any:
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width)

        def forward(self, x: Any) -> Any:
            out = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(out)) + x)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, width, 3, padding=1)
            self.blocks = nn.Sequential(*[Block() for _ in range(blocks)])
            self.head = nn.Linear(width, 10)

        def forward(self, x: Any) -> Any:
            x = self.blocks(F.relu(self.stem(x)))
            return self.head(lib.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return Net()


def resnet_step(lib: Any, scale: float, device: str, fmt: str) -> Case:
    """A small ResNet block stack, an SGD training step."""
    batch, width, side = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3), shrink(32, scale, 1 / 6, least=6)
    model = _model_in_format(lib, _resnet(lib, width, 2).to(device), fmt)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = _in_format(lib, lib.randn(batch, 3, side, side, device=device), fmt)
    y = lib.randint(0, 10, (batch,), device=device)
    step = _train_step(optimizer, lambda: lib.nn.functional.cross_entropy(model(x), y))
    return Case(step, batch, f"batch {batch}, width {width}, 2 blocks, 3x{side}x{side}, {fmt}")


WORKLOADS = [
    workload
    for fmt in FORMATS
    for workload in (
        Workload(f"conv2d_{fmt}", f"conv2d fwd+bwd b64 16->32 32x32 {fmt}", "samples/s",
                 functools.partial(conv2d_step, fmt=fmt)),
        Workload(f"mnist_cnn_{fmt}", f"MNIST CNN step b64 3x32x32 {fmt}", "samples/s",
                 functools.partial(mnist_step, fmt=fmt)),
        Workload(f"resnet_blocks_{fmt}", f"ResNet blocks step b64 3x32x32 {fmt}", "samples/s",
                 functools.partial(resnet_step, fmt=fmt)),
    )
]


if __name__ == "__main__":
    import standalone

    raise SystemExit(standalone.main(__file__, WORKLOADS, sys.argv[1:], description=__doc__.splitlines()[0]))
