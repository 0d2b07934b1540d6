"""ember against PyTorch, side by side: every workload, the machine's ceilings, start-up.

Run: python benchmarks/suite.py [--device cpu|cuda] [--threads N] [--repeats N] [--budget S] [--scale F]
                                [--only NAME,...] [--no-torch] [--no-limits] [--solo-check] [--json PATH]

Each workload (benchmarks/workloads.py) is written once as a function of the framework module. For each one the
suite starts two fresh worker processes (benchmarks/_worker.py), one per framework, so that neither framework's
thread pools, allocator or native libraries share a process with the other's (sharing one slowed torch down).
Each worker builds the workload, takes a first (cold: fresh process, kernels from the disk cache) call, picks a
batch long enough to time and runs one warm-up batch; then the suite asks for timed batches in ALTERNATION (ember
batch, torch batch, ember batch, ...) so that a noisy neighbour slows both alike. Each side's figure is its median
batch. Both run at the same thread count (``--threads``, 2 by default), set in
each worker's environment for OpenMP, OpenBLAS, MKL and Numba before any of them is imported, then by
``torch.set_num_threads`` and ``ember.set_num_threads``. ``--solo-check`` times torch's MLP step once more in a
worker with no ember process beside it, to show that its figure in the suite is torch's figure alone.

On the CPU a ``limits`` section comes first: memory copy bandwidth with 1 and N threads (NumPy's copyto over parts
of large float32 arrays in Python threads: it releases the GIL) and peak float32 GEMM through NumPy's BLAS; each
GB/s (GFLOP/s) workload then shows its share of the copy bandwidth at N threads (of peak GEMM). A ``startup``
section last runs fresh processes that import the framework, build the MLP workload and take one step: ember with
an empty and with a warm kernel cache, PyTorch once. The header line names the ember package the workers import
(PYTHONPATH decides it).

``--device cuda`` runs on the GPU against PyTorch CUDA (TF32 off, so both compute in float32), with the device
synchronised around every timed batch; under Numba's simulator use a tiny ``--scale``. Without PyTorch (or
``--no-torch``) ember's figures stand alone. ``--json`` is rewritten after every section and workload, so a run
cut short (gpu_check.sh sends SIGINT) keeps what it measured.
"""
from __future__ import annotations

import sys

from _harness import DEFAULT_THREADS, THREAD_VARIABLES, pin_threads, threads_from_argv, timed_batch

if __name__ == "__main__":
    pin_threads(threads_from_argv(sys.argv[1:]))  # before numpy, numba or torch is imported

import argparse  # noqa: E402 - the thread pools must be sized first
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from contextlib import contextmanager, suppress  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Iterator  # noqa: E402

import numpy as np  # noqa: E402

from workloads import WORKLOADS, Case, Workload, shrink  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parent
WORKER = BENCHMARKS / "_worker.py"
# A timed batch runs the step this many seconds or more (so short steps are not lost in timer noise) ...
BATCH_S = 0.005
# ... but never more than this many calls.
MAX_NUMBER = 200
# Fewest timed batches per side (when --repeats allows), even past the budget: a median needs a few.
MIN_ROUNDS = 3
# Pause before each timed batch: after a parallel region the other side's worker threads (torch's OpenMP, ember's
# TBB) keep spinning for a few milliseconds (~5-8 ms measured here), which would bill the next side for them.
SETTLE_S = 0.02
STARTUP = "startup"
MLP = next(w for w in WORKLOADS if w.name == "mlp")


@dataclass
class Contender:
    """One framework's side of one workload, in this process: its case, batch size, timed samples, or the error
    that ended it. The suite runs one in each worker process (benchmarks/_worker.py) and drives it as a Remote."""
    name: str
    lib: Any
    sync: Callable[[], object] | None
    case: Case | None = None
    cold_s: float = 0.0
    warm_s: float = 0.0
    number: int = 1
    samples: list[float] = field(default_factory=list)
    error: dict | None = None

    def attempt(self, action: Callable[..., object], *args: Any) -> None:
        """``action(*args)`` unless this side already failed; an exception becomes its error (the other goes on)."""
        if self.error is not None:
            return
        try:
            action(*args)
        except Exception as exc:  # noqa: BLE001 - a failing side is reported in its row, the rest goes on
            self.error = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=-6)}

    def prepare(self, workload: Workload, scale: float, device: str) -> None:
        """Build the case, time a cold and a warm call, size the batch, run one untimed warm-up batch."""
        self.lib.manual_seed(0)
        self.case = workload.build(self.lib, scale, device)
        self.cold_s = timed_batch(self.case.step, 1, self.sync)
        self.warm_s = max(timed_batch(self.case.step, 1, self.sync), 1e-9)
        self.number = max(1, min(MAX_NUMBER, int(BATCH_S / self.warm_s)))
        timed_batch(self.case.step, self.number, self.sync)

    def time_batch(self) -> None:
        self.samples.append(timed_batch(self.case.step, self.number, self.sync))

    def result(self, workload: Workload) -> dict:
        """This side's JSON entry: cold time, median, derived figure, batch shape; or its error."""
        if self.error is not None:
            return self.error
        median = statistics.median(self.samples)
        return {"cold_s": self.cold_s, "median_s": median, "figure": workload.figure(self.case.work, median),
                "number": self.number, "repeats": len(self.samples), "sizes": self.case.sizes}


class Remote:
    """A Contender in a fresh worker process of its own: the same steps as requests over a pipe (see _worker.py)."""

    def __init__(self, name: str, device: str, threads: int) -> None:
        self.name, self.warm_s, self.number, self.error = name, 0.0, 1, None
        self.process = subprocess.Popen([sys.executable, str(WORKER), name, device, str(threads)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info: dict | None = None

    def _reply(self) -> dict:
        line = self.process.stdout.readline()
        return json.loads(line) if line else {"error": f"worker exited with status {self.process.wait()}"}

    def _ask(self, **request: Any) -> dict:
        with suppress(BrokenPipeError):  # it has exited: _reply says with what status
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        return self._reply()

    def wait_ready(self) -> None:
        """Read the worker's first line: what it loaded (``info``), or why it could not (this side's error)."""
        hello = self._reply()
        self.info = hello.get("ready")
        if self.info is None:
            self.error = {"error": hello.get("absent") or hello["error"]}

    def attempt(self, action: Callable[..., object], *args: Any) -> None:
        if self.error is None:
            action(*args)

    def _update(self, reply: dict) -> None:
        if "error" in reply:
            self.error = reply
        else:
            self.warm_s, self.number = reply["warm_s"], reply["number"]

    def prepare(self, workload: Workload, scale: float, device: str) -> None:
        """As Contender.prepare, in the worker (``device`` is the one it was started on)."""
        self._update(self._ask(op="prepare", workload=workload.name, scale=scale))

    def time_batch(self) -> None:
        self._update(self._ask(op="batch"))

    def result(self, workload: Workload) -> dict:
        """As Contender.result, from the worker (which knows ``workload`` since prepare)."""
        return self.error or self._ask(op="result")

    def close(self) -> None:
        """End the worker (the end of its input), killing it if it lingers."""
        with suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def started(names: list[str], device: str, threads: int) -> Iterator[list[Remote]]:
    """Fresh workers for the frameworks ``names``, started together (their imports overlap), ended afterwards."""
    remotes = []
    try:
        remotes.extend(Remote(name, device, threads) for name in names)
        for remote in remotes:
            remote.wait_ready()
        yield remotes
    finally:
        for remote in remotes:
            remote.close()


def rounds_within(contenders: list[Contender | Remote], repeats: int, budget_s: float) -> int:
    """Timed rounds for this workload: ``repeats``, fewer when the slowest side's batches would outrun ``budget_s``."""
    slowest = max(c.warm_s * c.number for c in contenders)
    return min(repeats, max(MIN_ROUNDS, int(budget_s / slowest)))


def measure(contenders: list[Contender | Remote], workload: Workload, scale: float, device: str, repeats: int,
            budget_s: float) -> list[dict]:
    """Every side prepared in turn, then their timed batches in alternation; one result per side."""
    for contender in contenders:
        contender.attempt(contender.prepare, workload, scale, device)
    ready = [c for c in contenders if c.error is None]
    for _ in range(rounds_within(ready, repeats, budget_s) if ready else 0):
        for contender in ready:
            time.sleep(SETTLE_S)
            contender.attempt(contender.time_batch)
    return [c.result(workload) for c in contenders]


def copy_bandwidth(elements: int, threads: int, repeats: int) -> float:
    """GB/s (bytes read plus written) of ``np.copyto`` between float32 arrays, split among ``threads`` threads."""
    source = np.ones(elements, np.float32)
    target = np.zeros_like(source)
    bounds = np.linspace(0, elements, threads + 1).astype(int)
    parts = [(target[lo:hi], source[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    with ThreadPoolExecutor(threads) as pool:
        def copy_all() -> None:
            list(pool.map(lambda part: np.copyto(*part), parts))
        copy_all()
        seconds = statistics.median(timed_batch(copy_all, 1) for _ in range(repeats))
    return 2 * source.nbytes / seconds / 1e9


def gemm_peak(side: int, repeats: int) -> float:
    """GFLOP/s of a float32 ``side``^3 matrix product through NumPy's BLAS (its threads as pinned)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((side, side), dtype=np.float32) for _ in range(2))
    out = np.empty_like(a)
    np.matmul(a, b, out=out)
    seconds = statistics.median(timed_batch(lambda: np.matmul(a, b, out=out), 1) for _ in range(repeats))
    return 2 * side**3 / seconds / 1e9


def measure_limits(threads: int, scale: float, repeats: int) -> dict:
    """The machine's ceilings: copy bandwidth at 1, 2 and ``threads`` threads, peak float32 GEMM."""
    elements, side = shrink(64 * 2**20, scale, least=4096), shrink(2048, scale, 1 / 3, least=16)
    counts = sorted({1, 2, threads})
    return {"copy_GBps": {str(n): copy_bandwidth(elements, n, repeats) for n in counts},
            "gemm_GFLOPps": gemm_peak(side, repeats), "threads": threads, "copy_elements": elements,
            "gemm_side": side}


def ceilings(limits: dict | None) -> dict[str, float]:
    """The ceiling each workload unit is compared with: copy bandwidth at the run's threads, peak GEMM."""
    if not limits:
        return {}
    return {"GB/s": limits["copy_GBps"][str(limits["threads"])], "GFLOP/s": limits["gemm_GFLOPps"]}


def _threads(count: int | str) -> str:
    return f"{count} thread{'' if int(count) == 1 else 's'}"


def format_limits(limits: dict) -> list[str]:
    copies = ", ".join(f"{_threads(n)} {bw:.2f} GB/s" for n, bw in limits["copy_GBps"].items())
    return [f"limits: copy bandwidth (read+write, {limits['copy_elements']} f32) {copies}",
            f"limits: peak f32 GEMM {limits['gemm_side']}^3 through NumPy's BLAS {limits['gemm_GFLOPps']:.1f} GFLOP/s"
            f" ({_threads(limits['threads'])})"]


PROBE = """
import time
start = time.perf_counter()
import {lib} as lib
imported = time.perf_counter()
from workloads import mlp
lib.manual_seed(0)
mlp(lib, {scale!r}, {device!r}).step()
if {device!r} == "cuda":
    lib.cuda.synchronize()
print(imported - start, time.perf_counter() - imported)
"""


def startup_probe(lib: str, device: str, scale: float, cache_dir: str | None = None) -> dict:
    """A fresh process imports ``lib``, builds the MLP workload and steps once: its wall, import and step seconds.

    It runs in benchmarks/, where it finds ``workloads`` and where no ember package beside the current directory
    can shadow the one PYTHONPATH names.
    """
    env = dict(os.environ)
    if cache_dir is not None:
        env.update(NUMBA_CACHE_DIR=cache_dir, EMBER_CACHE_DIR=cache_dir)
    script = PROBE.format(lib=lib, scale=scale, device=device)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=BENCHMARKS, capture_output=True, text=True,
                          timeout=900)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"}
    import_s, step_s = map(float, done.stdout.split()[-2:])
    return {"wall_s": wall, "import_s": import_s, "first_step_s": step_s}


def measure_startup(device: str, scale: float, with_torch: bool) -> dict:
    """ember with an empty then a warm kernel cache, PyTorch in one fresh process (None without it)."""
    with tempfile.TemporaryDirectory(prefix="ember-startup-") as cache:
        empty = startup_probe("ember", device, scale, cache)
        warm = startup_probe("ember", device, scale, cache)
    return {"ember_empty_cache": empty, "ember_warm_cache": warm,
            "torch": startup_probe("torch", device, scale) if with_torch else None}


def _cell(value: float | None, spec: str, width: int) -> str:
    return f"{'-':>{width}s}" if value is None else f"{value:{width}{spec}}"


def _share(figure: float | None, ceiling: float | None) -> str | None:
    return None if figure is None or ceiling is None else f"{figure / ceiling:.0%}"


HEADER = (f"{'workload':40s} {'ember ms':>10s} {'torch ms':>10s} {'e/t':>6s} {'ember':>9s} {'torch':>9s} "
          f"{'unit':9s} {'share e/t':>11s} {'cold s':>7s}")


def format_row(workload: Workload, ours: dict, theirs: dict | None, ceiling: float | None = None) -> str:
    """The table row: both medians (ms per step), ember/torch, both derived figures, their share of the
    machine's ceiling, ember's cold first call; failures at the end."""
    sides = (("ember", ours), ("torch", theirs))
    failed = "; ".join(f"{who} {side['error']}" for who, side in sides if side is not None and "error" in side)
    if "error" in ours:
        return f"{workload.label:40s} ERROR {failed}"
    torch_ok = theirs is not None and "error" not in theirs
    torch_ms = theirs["median_s"] * 1e3 if torch_ok else None
    torch_figure = theirs["figure"] if torch_ok else None
    ratio = ours["median_s"] / theirs["median_s"] if torch_ok else None
    shares = [_share(ours["figure"], ceiling), _share(torch_figure, ceiling)]
    share = "/".join(s or "-" for s in shares) if shares[0] else "-"
    row = (f"{workload.label:40s} {ours['median_s'] * 1e3:10.3f} {_cell(torch_ms, '.3f', 10)} "
           f"{_cell(ratio, '.2f', 6)} {ours['figure']:9.4g} {_cell(torch_figure, '.4g', 9)} {workload.unit:9s} "
           f"{share:>11s} {ours['cold_s']:7.2f}")
    return row + (f"   ERROR {failed}" if failed else "")


def format_startup(startup: dict) -> list[str]:
    """Rows of the start-up section: process wall seconds, ember/torch, and where the time went."""
    theirs = startup["torch"] if startup["torch"] and "error" not in startup["torch"] else None
    lines = [f"{'start-up: import, MLP, 1 step':40s} {'ember s':>10s} {'torch s':>10s} {'e/t':>6s}"
             "   import + first step (ember; torch)"]
    for key, label in (("ember_empty_cache", "empty kernel cache"), ("ember_warm_cache", "warm kernel cache")):
        ours = startup[key]
        if "error" in ours:
            lines.append(f"{label:40s} ERROR ember {ours['error']}")
            continue
        ratio = ours["wall_s"] / theirs["wall_s"] if theirs else None
        detail = f"{ours['import_s']:.2f} + {ours['first_step_s']:.2f}"
        if theirs:
            detail += f"; {theirs['import_s']:.2f} + {theirs['first_step_s']:.2f}"
        lines.append(f"{label:40s} {ours['wall_s']:10.2f} {_cell(theirs and theirs['wall_s'], '.2f', 10)} "
                     f"{_cell(ratio, '.2f', 6)}   {detail}")
    if startup["torch"] and "error" in startup["torch"]:
        lines.append(f"{'':40s} ERROR torch {startup['torch']['error']}")
    return lines


def _write_json(path: Path, report: dict) -> None:
    """Replace ``path`` atomically: a reader (or a killed run) never sees half a file."""
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(report, indent=2))
    os.replace(partial, path)


def _selected(only: str | None, parser: argparse.ArgumentParser) -> tuple[list[Workload], bool]:
    """The workloads ``--only`` names (all by default), and whether it names the start-up section."""
    if not only:
        return WORKLOADS, True
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {w.name: w for w in WORKLOADS}
    unknown = [n for n in names if n not in known and n != STARTUP]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join([*known, STARTUP])}")
    return [known[n] for n in names if n != STARTUP], STARTUP in names


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help="threads for both frameworks and the BLAS (set before they load)")
    parser.add_argument("--repeats", type=int, default=7, help="most timed batches per workload and framework")
    parser.add_argument("--budget", type=float, default=3.0,
                        help="seconds of timed batches per workload and framework (fewer repeats beyond it)")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink sizes (e.g. 0.001 under the simulator)")
    parser.add_argument("--only", help="comma-separated names: " + ",".join([w.name for w in WORKLOADS] + [STARTUP]))
    parser.add_argument("--no-torch", action="store_true", help="ember alone even where PyTorch is installed")
    parser.add_argument("--no-limits", action="store_true", help="skip measuring the CPU's ceilings")
    parser.add_argument("--solo-check", action="store_true",
                        help="also time torch's MLP step with no ember process beside it (adds mlp to --only)")
    parser.add_argument("--json", type=Path, help="write the figures here (rewritten as the run goes)")
    return parser


def _header(args: argparse.Namespace, ours: dict, theirs: dict | None) -> dict:
    """The report's first entries, from what the ember and torch workers said they loaded."""
    on_cuda = args.device == "cuda"
    threads = {"requested": args.threads, "ember": ours["threads"], "torch": theirs and theirs["threads"],
               "environment": {name: os.environ.get(name) for name in THREAD_VARIABLES}}
    return {"device": args.device, "device_name": ours["device_name"] if on_cuda else "cpu",
            "simulator": ours["simulator"] if on_cuda else False, "threads": threads, "scale": args.scale,
            "repeats": args.repeats, "budget_s": args.budget, "order": "alternating",
            "processes": "a fresh worker per framework and workload", "ember": ours["version"],
            "ember_file": ours["file"], "torch": theirs and theirs["version"], "limits": None, "workloads": [],
            "solo_check": None, "startup": None}


def bench_row(workload: Workload, frameworks: list[str], args: argparse.Namespace, ceiling: float | None) -> dict:
    """Measure ``workload`` in fresh workers, ember and torch alternating; print its row, return its JSON entry."""
    with started(frameworks, args.device, args.threads) as sides:
        results = measure(sides, workload, args.scale, args.device, args.repeats, args.budget)
    ours, theirs = results[0], results[1] if len(results) > 1 else None
    print(format_row(workload, ours, theirs, ceiling), flush=True)
    torch_ok = theirs is not None and "error" not in ours and "error" not in theirs
    return {"name": workload.name, "label": workload.label, "unit": workload.unit, "ember": ours, "torch": theirs,
            "ratio": ours["median_s"] / theirs["median_s"] if torch_ok else None,
            "share_of_ceiling": _shares(ours, theirs, ceiling)}


def _shares(ours: dict, theirs: dict | None, ceiling: float | None) -> dict | None:
    """Each measured side's figure as a fraction of the machine's ceiling for its unit (None without one)."""
    if ceiling is None:
        return None
    sides = {"ember": ours, "torch": theirs}
    return {name: side["figure"] / ceiling for name, side in sides.items() if side is not None and "error" not in side}


def solo_check(args: argparse.Namespace, in_suite: dict) -> dict:
    """Torch's MLP step in a worker with no ember process beside it, next to its figure in the suite's MLP row."""
    with started(["torch"], args.device, args.threads) as sides:
        (alone,) = measure(sides, MLP, args.scale, args.device, args.repeats, args.budget)
    return {"suite": in_suite, "alone": alone}


def format_solo_check(check: dict) -> str:
    sides = [check["suite"], check["alone"]]
    failed = "; ".join(side["error"] for side in sides if "error" in side)
    if failed:
        return f"solo check: torch MLP step ERROR {failed}"
    suite_ms, alone_ms = (side["median_s"] * 1e3 for side in sides)
    return (f"solo check: torch MLP step {suite_ms:.3f} ms in the suite, {alone_ms:.3f} ms alone "
            f"(suite/alone {suite_ms / alone_ms:.2f})")


def run_sections(args: argparse.Namespace, workloads: list[Workload], with_startup: bool, report: dict,
                 frameworks: list[str]) -> None:
    """The sections in order, each printed and saved as soon as it is measured (``report`` fills as it goes)."""
    save = (lambda: _write_json(args.json, report)) if args.json else (lambda: None)
    if args.device == "cpu" and not args.no_limits:
        report["limits"] = measure_limits(args.threads, args.scale, args.repeats)
        print("\n".join(format_limits(report["limits"])), flush=True)
        save()
    print(HEADER)
    for workload in workloads:
        ceiling = ceilings(report["limits"]).get(workload.unit)
        report["workloads"].append(bench_row(workload, frameworks, args, ceiling))
        save()
    if args.solo_check and "torch" in frameworks:
        in_suite = next(entry["torch"] for entry in report["workloads"] if entry["name"] == MLP.name)
        report["solo_check"] = solo_check(args, in_suite)
        print(format_solo_check(report["solo_check"]), flush=True)
        save()
    if with_startup:
        report["startup"] = measure_startup(args.device, args.scale, "torch" in frameworks)
        print("\n".join(format_startup(report["startup"])))
        save()


def run(args: argparse.Namespace, workloads: list[Workload], with_startup: bool) -> int:
    """Ask a first pair of workers what they load, print the run's header line, then the sections; 2 when ember
    cannot run on the device, 130 when interrupted."""
    with started(["ember"] if args.no_torch else ["ember", "torch"], args.device, args.threads) as sides:
        ours, theirs = sides[0].info, sides[-1].info if len(sides) > 1 else None
    if ours is None:
        hint = " (install numba-cuda on a GPU machine, or set NUMBA_ENABLE_CUDASIM=1)" if args.device == "cuda" else ""
        print(f"ember: {sides[0].error['error']}{hint}")
        return 2
    frameworks = ["ember", "torch"] if theirs else ["ember"]
    report = _header(args, ours, theirs)
    alternation = (f"timed batches alternate ember, torch ({SETTLE_S * 1e3:.0f} ms settle before each), "
                   "a process each" if theirs else "ember alone")
    print(f"device {report['device_name']}   threads {args.threads}   scale {args.scale}   "
          f"torch {report['torch'] or 'absent'}   {alternation}   ember from {Path(ours['file']).parent}")
    try:
        run_sections(args, workloads, with_startup, report, frameworks)
    except KeyboardInterrupt:  # a time budget ran out (gpu_check.sh sends SIGINT): say where, keep the rest
        print(f"interrupted after {len(report['workloads'])} workload(s); the figures so far are in --json")
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.threads < 1 or not 0 < args.scale <= 1:
        parser.error("--repeats and --threads must be >= 1 and --scale in (0, 1]")
    if args.solo_check and args.no_torch:
        parser.error("--solo-check times torch: drop --no-torch")
    workloads, with_startup = _selected(args.only, parser)
    if args.solo_check and MLP not in workloads:
        workloads.append(MLP)
    return run(args, workloads, with_startup)


if __name__ == "__main__":
    raise SystemExit(main())
