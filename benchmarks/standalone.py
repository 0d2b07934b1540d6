"""Running one benchmark file on its own: the suite's workers and measurement, knowing that file's workloads too.

A bench file (``bench_amp.py``, ...) declares ``WORKLOADS`` as the suite's are (benchmarks/workloads.py) and ends
with ``raise SystemExit(standalone.main(__file__, WORKLOADS, sys.argv[1:]))``. The file is started again as each
framework's worker (``--side NAME DEVICE THREADS``): that worker adds the file's workloads to the suite's list, then
serves the suite's protocol (benchmarks/_worker.py). Each workload gets a fresh pair of workers, timed in
alternation, medians printed as the suite prints them.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Callable

from workloads import Workload

Rows = dict[str, tuple[dict, "dict | None"]]


def side(extra: list[Workload], name: str, device: str, threads: int) -> int:
    """One framework's worker: the suite's, knowing ``extra`` too (unless the suite has them already)."""
    import _worker
    import workloads

    known = {w.name for w in workloads.WORKLOADS}
    workloads.WORKLOADS.extend(w for w in extra if w.name not in known)
    return _worker.main(name, device, threads)


def measure_all(script: str, chosen: list[Workload], args: argparse.Namespace) -> Rows:
    """Every chosen workload measured on fresh ember and torch workers started through ``script``; rows printed."""
    import suite

    class Side(suite.Remote):
        """A suite worker started through the bench file, so that it knows the workloads there."""

        def __init__(self, name: str, device: str, threads: int) -> None:
            self.name, self.warm_s, self.number, self.error, self.info = name, 0.0, 1, None, None
            self.process = subprocess.Popen([sys.executable, str(Path(script).resolve()), "--side", name, device,
                                             str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    rows: Rows = {}
    print(suite.HEADER)
    for workload in chosen:
        sides = [Side(name, args.device, args.threads) for name in ("ember", "torch")]
        try:
            for remote in sides:
                remote.wait_ready()
            ours, theirs = suite.measure(sides, workload, args.scale, args.device, args.repeats, args.budget)
        finally:
            for remote in sides:
                remote.close()
        rows[workload.name] = (ours, theirs)
        print(suite.format_row(workload, ours, theirs), flush=True)
    return rows


def main(script: str, extra: list[Workload], argv: list[str], *, repeats: int = 7, budget: float = 5.0,
         summary: Callable[[Rows], list[str]] | None = None, description: str = "") -> int:
    """The bench file's command line: ``--side`` for a worker, else measure (``--only`` picks workloads)."""
    if argv[:1] == ["--side"]:
        return side(extra, argv[1], argv[2], int(argv[3]))
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--budget", type=float, default=budget, help="seconds of timed batches per workload")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--only", help="comma-separated workload names: " + ",".join(w.name for w in extra))
    args = parser.parse_args(argv)
    chosen = [w for w in extra if not args.only or w.name in args.only.split(",")]
    rows = measure_all(script, chosen, args)
    if summary is not None:
        print("\n".join(summary(rows)))
    return 0
