"""GPU throughput: ember's CUDA backend against PyTorch CUDA, each workload written once for either framework.

Run: python benchmarks/gpu.py [--repeats N] [--scale F] [--only NAME,...] [--budget S] [--json PATH]

Every workload is a function of the framework module (``import ember as torch`` style) and runs on
``device="cuda"``. A step is timed with the device synchronised before and after each batch of calls; the first
call is reported apart as ember's cold time (Numba compiles then the kernels no earlier workload of the run
needed). Without PyTorch, or without PyTorch CUDA (always so under Numba's simulator), ember's figures stand
alone. TF32 is switched off in PyTorch so both sides compute in float32. Rates count each input read and each
output written once (a*b+c moves 4 arrays), the same for both frameworks, so they rank rather than measure
memory traffic. ``--scale`` shrinks every workload (element counts and batches by about F, matrix, channel and
feature dims by a root of it) for smoke runs under the simulator. ``--json`` is rewritten after every workload,
so a run cut short by a timeout still leaves the figures measured so far.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import ember
from _harness import median_time, ratio_row

DEVICE = "cuda"
# A timed batch runs the step this many seconds or more (so short steps are not lost in timer noise) ...
BATCH_S = 0.005
# ... but never more than this many calls.
MAX_NUMBER = 200


@dataclass(frozen=True)
class Case:
    """A built workload: the step to time, the work one step does (in its rate's unit), the sizes used."""
    step: Callable[[], object]
    work: float
    sizes: str


@dataclass(frozen=True)
class Workload:
    """A named benchmark: ``build(lib, scale)`` makes its tensors and model with framework ``lib``."""
    name: str
    label: str
    unit: str
    build: Callable[[Any, float], Case]


@dataclass(frozen=True)
class Timing:
    """One framework's figures for one workload."""
    cold_s: float
    median_s: float
    rate: float
    number: int
    repeats: int


def shrink(base: int, scale: float, share: float = 1.0, least: int = 1) -> int:
    """``base * scale ** share`` rounded, at least ``least``: ``share`` is this dim's part of the scaling."""
    return max(least, round(base * scale ** share))


def _gigabytes(elements: int, passes: int) -> float:
    """GB moved when ``passes`` float32 arrays of ``elements`` are each read or written once."""
    return 4 * elements * passes / 1e9


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


def elementwise(lib: Any, scale: float) -> Case:
    n = shrink(16 * 2**20, scale)
    a, b, c = (lib.randn(n, device=DEVICE) for _ in range(3))
    return Case(lambda: a * b + c, _gigabytes(n, 4), f"n={n}")


def gelu(lib: Any, scale: float) -> Case:
    n = shrink(4 * 2**20, scale)
    x = lib.randn(n, device=DEVICE)
    return Case(lambda: lib.nn.functional.gelu(x, approximate="tanh"), _gigabytes(n, 2), f"n={n}")


def _square(lib: Any, scale: float) -> tuple[Any, int]:
    """The reductions' 4096x4096 input (side shrunk by the square root of ``scale``)."""
    side = shrink(4096, scale, 0.5)
    return lib.randn(side, side, device=DEVICE), side


def sum_dim1(lib: Any, scale: float) -> Case:
    x, side = _square(lib, scale)
    return Case(lambda: x.sum(1), _gigabytes(side * side, 1), f"{side}x{side}")


def sum_all(lib: Any, scale: float) -> Case:
    x, side = _square(lib, scale)
    return Case(lambda: x.sum(), _gigabytes(side * side, 1), f"{side}x{side}")


def softmax(lib: Any, scale: float) -> Case:
    rows, cols = shrink(4096, scale, 0.5), shrink(1024, scale, 0.5)
    x = lib.randn(rows, cols, device=DEVICE)
    return Case(lambda: x.softmax(-1), _gigabytes(rows * cols, 2), f"{rows}x{cols}")


def matmul(lib: Any, scale: float) -> Case:
    n = shrink(1024, scale, 1 / 3)
    a, b = lib.randn(n, n, device=DEVICE), lib.randn(n, n, device=DEVICE)
    return Case(lambda: a @ b, 2 * n**3 / 1e9, f"{n}^3")


def conv2d(lib: Any, scale: float) -> Case:
    batch, c1, c2 = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3), shrink(64, scale, 1 / 3)
    side = shrink(28, scale, 1 / 6, least=5)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, c1, 3), nn.Conv2d(c1, c2, 3)).to(DEVICE)
    x = lib.randn(batch, 1, side, side, device=DEVICE)
    return Case(_backward_step(model, lambda: model(x)), batch, f"batch {batch}, 1->{c1}->{c2}, {side}x{side}")


def mlp(lib: Any, scale: float) -> Case:
    batch = shrink(128, scale, 1 / 3)
    widths = [shrink(w, scale, 1 / 3) for w in (784, 512, 256)]
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.ReLU(), nn.Linear(widths[1], widths[2]), nn.ReLU(),
                          nn.Linear(widths[2], 10)).to(DEVICE)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(batch, widths[0], device=DEVICE)
    y = lib.randint(0, 10, (batch,), device=DEVICE)
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


def mnist_cnn(lib: Any, scale: float) -> Case:
    batch, c1, c2 = shrink(64, scale, 1 / 3), shrink(32, scale, 1 / 3), shrink(64, scale, 1 / 3)
    hidden, side = shrink(128, scale, 1 / 3), shrink(28, scale, 1 / 6, least=6)
    model = _mnist_net(lib, c1, c2, hidden, side).to(DEVICE)
    optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)
    x = lib.randn(batch, 1, side, side, device=DEVICE)
    y = lib.randint(0, 10, (batch,), device=DEVICE)
    step = _train_step(optimizer, lambda: lib.nn.functional.nll_loss(model(x), y))
    return Case(step, batch, f"batch {batch}, conv {c1}/{c2}, fc {hidden}, {side}x{side}")


def lstm(lib: Any, scale: float) -> Case:
    seq, batch = shrink(35, scale, 1 / 4), shrink(20, scale, 1 / 4)
    features, hidden = shrink(64, scale, 1 / 4), shrink(256, scale, 1 / 4)
    model = lib.nn.LSTM(features, hidden).to(DEVICE)
    x = lib.randn(seq, batch, features, device=DEVICE)
    step = _backward_step(model, lambda: model(x)[0])
    return Case(step, batch, f"seq {seq}, batch {batch}, in {features}, hidden {hidden}")


WORKLOADS = [
    Workload("elementwise", "elementwise a*b+c 16M f32", "GB/s", elementwise),
    Workload("gelu", "tanh-GELU 4M f32 fwd", "GB/s", gelu),
    Workload("sum_dim1", "sum dim 1 4096x4096 f32", "GB/s", sum_dim1),
    Workload("sum_all", "full sum 4096x4096 f32", "GB/s", sum_all),
    Workload("softmax", "softmax last dim 4096x1024 f32", "GB/s", softmax),
    Workload("matmul", "matmul 1024^3 f32", "GFLOP/s", matmul),
    Workload("conv2d", "conv2d 1->32->64 3x3 fwd+bwd b64 28x28", "samples/s", conv2d),
    Workload("mlp", "MLP 784-512-256-10 SGD-m step b128", "samples/s", mlp),
    Workload("mnist_cnn", "MNIST CNN Adadelta step b64", "samples/s", mnist_cnn),
    Workload("lstm", "LSTM 64->256 seq35 b20 fwd+bwd", "seq/s", lstm),
]


def load_torch_cuda() -> Any:
    """PyTorch with a usable CUDA device and TF32 off (a float32 comparison), or None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def _timed_call(step: Callable[[], object], sync: Callable[[], object]) -> float:
    """Seconds of one synchronised call of ``step``."""
    sync()
    start = time.perf_counter()
    step()
    sync()
    return time.perf_counter() - start


def measure(lib: Any, workload: Workload, scale: float, repeats: int, budget_s: float) -> tuple[Timing, str]:
    """Cold call, then the median over at most ``repeats`` batches, fewer when they would outrun ``budget_s``."""
    lib.manual_seed(0)
    case = workload.build(lib, scale)
    sync = lib.cuda.synchronize
    cold = _timed_call(case.step, sync)
    warm = max(_timed_call(case.step, sync), 1e-9)
    number = max(1, min(MAX_NUMBER, int(BATCH_S / warm)))
    fitting = int(budget_s / (warm * number)) - 1  # median_time runs one untimed warm-up batch first
    batches = max(1, min(repeats, fitting))
    median = median_time(case.step, number, batches, sync=sync)
    return Timing(cold, median, case.work / median, number, batches), case.sizes


def _release(lib: Any) -> None:
    """Hand the previous workload's device memory back before the next one allocates."""
    gc.collect()
    lib.cuda.empty_cache()


def run_side(lib: Any, workload: Workload, scale: float, repeats: int, budget_s: float) -> dict:
    """One framework's result for ``workload`` as a JSON-ready dict; an exception becomes an ``error`` entry."""
    try:
        timing, sizes = measure(lib, workload, scale, repeats, budget_s)
        return {**asdict(timing), "sizes": sizes}
    except Exception as exc:  # noqa: BLE001 - a failing workload is reported in its row, the others go on
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=-6)}
    finally:
        _release(lib)


def format_row(workload: Workload, ours: dict, theirs: dict | None) -> str:
    """The table row: both medians and their ratio (harness style), ember's cold time, both rates."""
    sides = (("ember", ours), ("torch", theirs))
    failed = "; ".join(f"{who} {side['error']}" for who, side in sides if side is not None and "error" in side)
    if "error" in ours:
        return f"{workload.label:42s} ERROR {failed}"
    torch_ok = theirs is not None and "error" not in theirs
    row = ratio_row(workload.label, ours["median_s"], theirs["median_s"] if torch_ok else None, 1e3, "ms")
    torch_rate = f"{theirs['rate']:10.4g}" if torch_ok else f"{'-':>10s}"
    row += f"   cold {ours['cold_s']:7.2f} s   rate {ours['rate']:10.4g} / {torch_rate} {workload.unit}"
    return row + (f"   ERROR {failed}" if failed else "")


def _ratio(ours: dict, theirs: dict | None) -> float | None:
    if theirs is None or "error" in ours or "error" in theirs:
        return None
    return ours["median_s"] / theirs["median_s"]


def _write_json(path: Path, report: dict) -> None:
    """Replace ``path`` atomically: a reader (or a killed run) never sees half a file."""
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(report, indent=2))
    os.replace(partial, path)


def _selected(only: str | None, parser: argparse.ArgumentParser) -> list[Workload]:
    if not only:
        return WORKLOADS
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {w.name: w for w in WORKLOADS}
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names]


def bench_row(workload: Workload, torch: Any, args: argparse.Namespace) -> dict:
    """Measure ``workload`` with ember (and torch when present), print its row, return its JSON entry."""
    ours = run_side(ember, workload, args.scale, args.repeats, args.budget)
    theirs = run_side(torch, workload, args.scale, args.repeats, args.budget) if torch is not None else None
    print(format_row(workload, ours, theirs), flush=True)
    return {"name": workload.name, "label": workload.label, "unit": workload.unit, "ember": ours, "torch": theirs,
            "ratio": _ratio(ours, theirs)}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10, help="most timed batches per workload and framework")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink sizes (e.g. 0.001 under the simulator)")
    parser.add_argument("--only", help="comma-separated workload names: " + ",".join(w.name for w in WORKLOADS))
    parser.add_argument("--budget", type=float, default=3.0,
                        help="seconds of timed batches per workload and framework (fewer repeats beyond it)")
    parser.add_argument("--json", type=Path, help="write the figures here (rewritten after every workload)")
    return parser


def main() -> int:
    parser = _parser()
    args = parser.parse_args()
    if args.repeats < 1 or not 0 < args.scale <= 1:
        parser.error("--repeats must be >= 1 and --scale in (0, 1]")
    workloads = _selected(args.only, parser)
    if not ember.cuda.is_available():
        print("ember: no CUDA device (install numba-cuda on a GPU machine, or set NUMBA_ENABLE_CUDASIM=1)")
        return 2
    torch = load_torch_cuda()
    report = {"device": ember.cuda.get_device_name(), "simulator": ember.cuda.is_simulator(), "scale": args.scale,
              "repeats": args.repeats, "budget_s": args.budget, "ember": ember.__version__,
              "torch": torch.__version__ if torch is not None else None, "workloads": []}
    print(f"device {report['device']}   scale {args.scale}   torch {report['torch'] or 'absent: ember alone'}")
    print("workload, median ms per step (ember, torch), ratio ember/torch, ember first call, rate (ember / torch)")
    for workload in workloads:
        try:
            report["workloads"].append(bench_row(workload, torch, args))
        except KeyboardInterrupt:  # a time budget ran out (gpu_check.sh sends SIGINT): say where, keep the rest
            print(f"interrupted while measuring {workload.name}; {len(report['workloads'])} workload(s) done")
            return 130
        if args.json:
            _write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
