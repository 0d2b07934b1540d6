"""The API sweep, run as its own process: ``python sweep_child.py --progress FILE --report FILE [--only a,b]``.

Every swept callable (``sweep_api``) gets Hypothesis-drawn argument lists (``sweep_args``). ember must return or
raise an Exception: a hard failure is a dead interpreter or a call past CALL_LIMIT_S (the parent names the call from
the progress file), a BaseException that is not an Exception, or an exception from inside compiled code. Where torch
has the callable it runs the same call; the cases where torch raises and ember returns (a possibly missing argument
check) and internal exception types that leaked (numba's, AssertionError, ...) are counted, not failed.
"""
from __future__ import annotations

import collections
import faulthandler
import json
import resource
import sys

import torch

from fuzz_case import EMBER, HARD, SOFT, TORCH, Outcome, execute, internal_error, raised_in_compiled_code
from fuzz_child import MAX_FAILURES_PER_OP, Recorder, fuzz_all, pass_parser
from sweep_api import Target, targets

CALL_LIMIT_S = 60            # a call still running after this hangs (cold Numba compiles take seconds, not this)
MEMORY_LIMIT = 4 << 30       # address space: a size that slipped through fails fast instead of filling the machine
LEAK = "leak"


def attempt(target: Target, case, lib) -> Outcome:
    """``execute`` (which catches every Exception), also catching what escapes it except KeyboardInterrupt."""
    try:
        return execute(target, case, lib)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: B036 - a BaseException escaping a call is what the sweep looks for
        return Outcome(error=exc)


def verdict(ours: Outcome, theirs: Outcome | None) -> tuple[str, str] | None:
    """HARD for a crash-like exception, SOFT where torch raises and ember returns, LEAK for an internal exception
    type, else None."""
    error, torch_error = ours.error, theirs.error if theirs else None
    if error is None:
        if torch_error is None or isinstance(torch_error, NotImplementedError):
            return None
        return SOFT, f"torch raises {type(torch_error).__name__}({str(torch_error).splitlines()[0][:200]})"
    if not isinstance(error, Exception):
        return HARD, f"a {type(error).__name__} escaped (not an Exception): {error}"
    if raised_in_compiled_code(error):
        return HARD, f"{type(error).__name__} raised inside compiled code: {error}"
    leaked = internal_error(error, torch_error)
    return (LEAK, leaked) if leaked else None


class SweepRecorder(Recorder):
    """The op table's recorder, judging by the sweep's rules and counting exceptions by their exact type."""

    def __init__(self, progress_path: str):
        super().__init__(progress_path, boundscheck=False)
        self.failed[LEAK] = collections.Counter()

    def run(self, target: Target, case) -> None:
        text = self.begin(target.name, case)
        faulthandler.dump_traceback_later(CALL_LIMIT_S, exit=True)
        theirs = attempt(target, case, TORCH) if target.in_torch else None
        ours = attempt(target, case, EMBER)
        faulthandler.cancel_dump_traceback_later()
        self.calls += 1
        self.per_op[target.name] += 1
        if theirs is not None and theirs.error is not None:
            self.invalid += 1
        if ours.error is not None:
            self.exceptions[type(ours.error).__name__] += 1
        found = verdict(ours, theirs)
        if found is None:
            return
        severity, problem = found
        self.failed[severity][target.name] += 1
        if self.failed[severity][target.name] <= MAX_FAILURES_PER_OP:
            self.failures.append({"op": target.name, "severity": severity, "case": text[:3000], "problem": problem})

    def report(self, seconds: float) -> dict:
        result = super().report(seconds)
        result.update(leak=sum(self.failed[LEAK].values()), leak_per_op=dict(self.failed[LEAK]))
        return result


def main() -> int:
    parser = pass_parser("EMBER_SWEEP_EXAMPLES", 5)
    parser.add_argument("--only", default="", help="comma-separated callables (e.g. ember.add,Tensor.add_)")
    args = parser.parse_args()
    swept, denied = targets(torch)
    if args.only:
        swept = [t for t in swept if t.name in args.only.split(",")]
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, resource.getrlimit(resource.RLIMIT_AS)[1]))
    recorder = SweepRecorder(args.progress)
    result = recorder.report(fuzz_all(swept, recorder, args.examples, args.seed))
    result.update(callables=len(swept), denied=denied, without_torch=[t.name for t in swept if not t.in_torch])
    with open(args.report, "w") as fh:
        json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
