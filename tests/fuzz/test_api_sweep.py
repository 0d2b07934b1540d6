"""The API sweep (issue 8): every public callable, called with random valid and invalid arguments, returns or raises
an Exception; it never kills the interpreter, hangs, raises a BaseException or raises from inside compiled code.

The sweep runs in a child process (``sweep_child.py``) like the op table's pass. It also counts, without failing,
where torch raises and ember returns (a possibly missing argument check) and where an internal exception type
leaked, and prints the top offenders of both.

* EMBER_SWEEP_EXAMPLES: calls per callable (CI default is short; raise it for a long local sweep)
* EMBER_FUZZ_SEED: another fixed seed
"""
from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

import numba
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fuzz_case import Outcome, raised_in_compiled_code  # noqa: E402 - after the skip: they import torch
from fuzz_runner import run_child  # noqa: E402
from sweep_api import DENIED, public_callables, targets  # noqa: E402
from sweep_child import HARD, LEAK, SOFT, verdict  # noqa: E402

TOOL = Path(__file__).resolve().parents[2] / "tools" / "api_coverage.py"
spec = importlib.util.spec_from_file_location("api_coverage", TOOL)
api_coverage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api_coverage)

SWEPT_FLOOR = 0.98   # of the torch names ember has (tools/api_coverage.py): the deny-list stays a short exception
TOP = 15


def torch_names_ember_has() -> set[str]:
    """The names api_coverage counts as covered, spelled the sweep's way ("F.conv2d", "Tensor.add_")."""
    labels = {"torch": "ember", "torch.Tensor": "Tensor", "torch.linalg": "linalg", "torch.nn.functional": "F"}
    return {f"{labels[label]}.{name}" for label, wanted, missing in api_coverage.compare(torch)
            for name in wanted - missing}


def print_summary(result: dict, denied: dict) -> None:
    print(f"\n[api sweep] {result['callables']} callables swept, {len(denied)} denied "
          f"({', '.join(sorted(denied))}); {result['calls']} calls in {result['seconds']} s, torch raised on "
          f"{result['invalid']}; ember exceptions by type {result['exceptions']}; hard failures {result['hard']}")
    for severity, what in ((SOFT, "torch raises, ember returns"), (LEAK, "internal exception type leaked")):
        per_op = collections.Counter(result[f"{severity}_per_op"])
        print(f"[api sweep] {what}: {sum(per_op.values())} calls of {len(per_op)} callables; top {TOP}: "
              f"{per_op.most_common(TOP)}")


def test_api_sweep(tmp_path):
    """The fixed-seed sweep over every public callable: no hard failure, and (nearly) everything is swept."""
    swept, denied = targets(torch)
    covered = torch_names_ember_has()
    reached = covered & {t.name for t in swept}
    print(f"\n[api sweep] reaches {len(reached)} of the {len(covered)} torch names ember has")
    assert len(reached) >= SWEPT_FLOOR * len(covered), sorted(covered - reached)
    result = run_child(tmp_path, "sweep", "sweep_child.py", [], {})
    print_summary(result, denied)
    assert result["callables"] == len(swept) and result["calls"] >= len(swept)
    hard = [f for f in result["failures"] if f["severity"] == HARD]
    assert not hard, "\n\n".join(f"{f['op']}: {f['problem']}\n  call: {f['case'][:2000]}" for f in hard[:10])


def test_deny_list_names_real_callables():
    """Every denied name is one the sweep would otherwise call (a stale entry hides nothing and misleads)."""
    assert set(DENIED) <= set(public_callables())


@numba.njit(cache=False)
def _int_divide(a, b):
    return a // b


def _divide_unchecked(a, b):
    return _int_divide(a, b)


def _divide_checked(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return _int_divide(a, b)


@pytest.mark.parametrize("call, compiled", [(_divide_unchecked, True), (_divide_checked, False),
                                            (lambda a, b: np.empty(-1), False)])
def test_raised_in_compiled_code(call, compiled):
    """An exception from inside a Numba function is told apart from a Python check and from NumPy refusing."""
    with pytest.raises(Exception) as info:
        call(np.int64(1), np.int64(0))
    assert raised_in_compiled_code(info.value) is compiled


@pytest.mark.parametrize("ours, torch_error, severity", [
    (Outcome(error=SystemExit(3)), None, HARD),
    (Outcome(error=ValueError("bad")), None, None),
    (Outcome(result=1), RuntimeError("torch refuses"), SOFT),
    (Outcome(result=1), NotImplementedError("no kernel"), None),
    (Outcome(error=AttributeError("'int' object has no attribute 'ndim'")), TypeError("x"), LEAK),
])
def test_verdict(ours, torch_error, severity):
    """What the sweep fails on (a BaseException escaping), counts (torch refuses, an internal type) or accepts."""
    found = verdict(ours, Outcome(error=torch_error))
    assert (found and found[0]) == severity
