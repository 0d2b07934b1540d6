"""The fuzz pass, run as its own process: ``python fuzz_child.py --progress FILE --report FILE [--ops a,b]``.

Before each call it writes the case to the progress file (flushed), so when a call kills the interpreter the parent
can name it. At the end it writes a JSON report: counts (calls, valid, invalid, exceptions by type, per op) and
every mismatch with its case.
"""
from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import os
import sys
import time

from hypothesis import HealthCheck, given, seed, settings, strategies as st

from fuzz_case import HARD, Op, family, raised_in_kernel, run_case
from fuzz_ops import BOUNDSCHECK_OPS, OPS

MAX_FAILURES_PER_OP = 3
CRASH_OP = os.environ.get("EMBER_FUZZ_CRASH_OP")


class Recorder:
    """Counts calls and collects failures; writes each case to the progress file before it runs."""

    def __init__(self, progress_path: str, boundscheck: bool):
        self.progress = open(progress_path, "w", buffering=1)
        self.boundscheck = boundscheck
        self.calls = 0
        self.invalid = 0
        self.exceptions: collections.Counter = collections.Counter()
        self.per_op: collections.Counter = collections.Counter()
        self.failures: list[dict] = []
        self.failed = {severity: collections.Counter() for severity in ("hard", "soft")}
        self.seconds: dict[str, float] = {}

    def begin(self, name: str, case) -> str:
        """Write the case to the progress file (flushed: it must be there if the call kills the interpreter)."""
        text = case.describe()
        self.progress.write(f"CASE {name}: {text}\n")
        self.progress.flush()
        return text

    def run(self, op: Op, case) -> None:
        text = self.begin(op.name, case)
        if op.name == CRASH_OP:
            faulthandler._sigsegv()   # the self-test of crash reporting: die the way a bad kernel would
        verdict, ours, theirs = run_case(op, case)
        self.calls += 1
        self.per_op[op.name] += 1
        if theirs.error is not None:
            self.invalid += 1
        if ours.error is not None:
            self.exceptions[family(ours.error)] += 1
            if self.boundscheck and raised_in_kernel(ours.error):
                verdict = HARD, "a kernel indexed out of bounds (IndexError from compiled code under NUMBA_BOUNDSCHECK)"
        if verdict is None:
            return
        severity, problem = verdict
        self.failed[severity][op.name] += 1
        if self.failed[severity][op.name] <= MAX_FAILURES_PER_OP:
            self.failures.append({"op": op.name, "severity": severity, "case": text, "problem": problem})

    def report(self, seconds: float) -> dict:
        return {"calls": self.calls, "invalid": self.invalid, "valid": self.calls - self.invalid,
                "exceptions": dict(self.exceptions), "per_op": dict(self.per_op), "hard_per_op": dict(self.failed["hard"]),
                "soft_per_op": dict(self.failed["soft"]), "hard": sum(self.failed["hard"].values()),
                "soft": sum(self.failed["soft"].values()),
                "seconds_per_op": self.seconds, "failures": self.failures,
                "seconds": round(seconds, 1), "boundscheck": self.boundscheck}


def fuzz_op(op: Op, recorder: Recorder, examples: int, base_seed: int) -> None:
    """``examples`` Hypothesis draws of ``op``'s cases, seeded by the op's name (the same calls every run)."""
    @seed(base_seed + sum(map(ord, op.name)) * 7919)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data):
        recorder.run(op, data.draw(op.cases, label="case"))
    one()


def pass_parser(examples_env: str, examples: int) -> argparse.ArgumentParser:
    """The arguments of every pass script: its progress and report files, examples per op, and the seed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--progress", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--examples", type=int, default=int(os.environ.get(examples_env, str(examples))))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("EMBER_FUZZ_SEED", "0")))
    return parser


def fuzz_all(ops: list, recorder: Recorder, examples: int, base_seed: int) -> float:
    """Fuzz each op in turn, timing each; returns the seconds it all took ("DONE" ends the progress file)."""
    start = time.perf_counter()
    for op in ops:
        began = time.perf_counter()
        fuzz_op(op, recorder, examples, base_seed)
        recorder.seconds[op.name] = round(time.perf_counter() - began, 2)
    recorder.progress.write("DONE\n")
    return time.perf_counter() - start


def main() -> int:
    parser = pass_parser("EMBER_FUZZ_EXAMPLES", 6)
    parser.add_argument("--ops", default="", help="comma-separated op names, or 'boundscheck' for that subset")
    args = parser.parse_args()
    names = list(BOUNDSCHECK_OPS) if args.ops == "boundscheck" else [n for n in args.ops.split(",") if n]
    ops = [OPS[n] for n in names] if names else list(OPS.values())
    recorder = Recorder(args.progress, boundscheck=os.environ.get("NUMBA_BOUNDSCHECK") == "1")
    seconds = fuzz_all(ops, recorder, args.examples, args.seed)
    with open(args.report, "w") as fh:
        json.dump(recorder.report(seconds), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
