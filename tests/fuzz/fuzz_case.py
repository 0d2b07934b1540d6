"""One fuzz call: build the same inputs for ember and torch, run an op on both, and judge ember against torch.

torch is the oracle for the value (dtype, shape, NaN-aware values) and for the exception family. A verdict is
``None`` when ember agrees, else a line saying what went wrong; the caller reports it with the case's ``describe``.
"""
from __future__ import annotations

import builtins
import inspect
import linecache
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
from numba.core.dispatcher import Dispatcher

import ember
import ember.nn.functional as ember_F
import torch.nn.functional as torch_F

# ---- the two libraries behind one face ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lib:
    """What an op's call needs from a library: the top namespace, nn.functional and optim."""
    name: str
    t: Any
    F: Any
    optim: Any


EMBER = Lib("ember", ember, ember_F, ember.optim)
TORCH = Lib("torch", torch, torch_F, torch.optim)

# ---- inputs ---------------------------------------------------------------------------------------------------------

LAYOUTS = ("contiguous", "transpose", "step2", "expand", "reversed")


@dataclass(frozen=True)
class Arg:
    """A tensor argument: its logical values and the memory layout both libraries build it with."""
    array: np.ndarray
    layout: str = "contiguous"

    def describe(self) -> str:
        body = np.array2string(self.array, precision=9, separator=",", threshold=64, max_line_width=10_000)
        return f"tensor({body}, dtype={self.array.dtype}, shape={self.array.shape}, layout={self.layout})"


def _from_array(lib: Lib, arr: np.ndarray):
    return ember.tensor(arr.copy()) if lib is EMBER else torch.tensor(arr.copy())


def build(lib: Lib, arg: Arg):
    """The tensor for ``arg`` in ``lib``: same values, and (where torch can express it) the same strides."""
    arr, layout = arg.array, arg.layout
    if layout == "contiguous" or arr.ndim == 0:
        return _from_array(lib, arr)
    if layout == "transpose":
        return _from_array(lib, np.ascontiguousarray(arr.T)).permute(*reversed(range(arr.ndim)))
    if layout == "step2":
        return _from_array(lib, np.repeat(arr, 2, axis=0))[::2]
    if layout == "expand":  # the strategy made every row equal to the first
        return _from_array(lib, arr[:1]).expand(*arr.shape) if arr.shape[0] else _from_array(lib, arr)
    if layout == "reversed":  # negative strides: ember only (torch has none)
        if lib is TORCH:
            return _from_array(lib, arr)
        rev = tuple(slice(None, None, -1) for _ in range(arr.ndim))
        return ember.from_numpy(np.ascontiguousarray(arr[rev])[rev])
    raise ValueError(layout)


@dataclass(frozen=True)
class DtypeArg:
    """A dtype argument, named once and built as each library's own dtype object."""
    name: str

    def describe(self) -> str:
        return f"dtype.{self.name}"


@dataclass
class Case:
    """An op and its arguments: tensors (``Arg``) anywhere in ``args``/``kwargs``, and plain Python values."""
    op: str
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def describe(self) -> str:
        parts = [_describe(a) for a in self.args] + [f"{k}={_describe(v)}" for k, v in self.kwargs.items()]
        return f"{self.op}({', '.join(parts)})"


def _describe(v: Any) -> str:
    if isinstance(v, (Arg, DtypeArg)):
        return v.describe()
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_describe(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


def materialize(lib: Lib, v: Any):
    """``v`` with every ``Arg`` replaced by a tensor of ``lib`` (lists and tuples kept)."""
    if isinstance(v, Arg):
        return build(lib, v)
    if isinstance(v, DtypeArg):
        return getattr(lib.t, v.name)
    if isinstance(v, list):
        return [materialize(lib, x) for x in v]
    if isinstance(v, tuple):
        return tuple(materialize(lib, x) for x in v)
    if isinstance(v, dict):
        return {k: materialize(lib, x) for k, x in v.items()}
    return v


def tensors_in(v: Any) -> list:
    """Every tensor in a materialized argument structure, in order."""
    if isinstance(v, (ember.Tensor, torch.Tensor)):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in tensors_in(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in tensors_in(x)]
    return []


# ---- ops ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """A public API entry point under test.

    call(lib, *args, **kwargs) runs it; ``cases`` is a Hypothesis strategy of ``Case``; ``project`` maps a result
    to what is compared (e.g. only the values of topk, whose tie order is unspecified); ``degree`` scales the
    absolute tolerance by the input magnitude to that power (2 for products); ``out`` says it takes ``out=``.
    """
    name: str
    call: Callable
    cases: Any
    project: Callable | None = None
    degree: int = 1
    out: bool = False
    family: str = ""


# ---- judging --------------------------------------------------------------------------------------------------------

EXCEPTION_FAMILIES = (IndexError, TypeError, ValueError, RuntimeError)
BOUNDSCHECK_MESSAGE = "index is out of bounds"   # what Numba raises from a kernel compiled with boundscheck


def family(exc: BaseException) -> str:
    """torch's exception class family of ``exc`` (NotImplementedError and torch's own errors are RuntimeErrors)."""
    for cls in EXCEPTION_FAMILIES:
        if isinstance(exc, cls):
            return cls.__name__
    return type(exc).__name__


def internal_error(exc: BaseException, torch_exc: BaseException | None) -> str | None:
    """Why ``exc`` is not an acceptable user-facing error (an internal one leaked), or None. torch's own choice is
    acceptable (F.embedding raises an AssertionError for a bad padding_idx)."""
    kind = type(exc)
    if torch_exc is not None and type(torch_exc) is kind:
        return None
    if kind.__module__.split(".")[0] in ("numba", "llvmlite", "numpy"):
        return f"a {kind.__module__}.{kind.__name__} leaked: {exc}"
    if isinstance(exc, (AssertionError, SystemError, AttributeError, KeyError, ZeroDivisionError, NameError,
                        UnboundLocalError, RecursionError, MemoryError, OverflowError)):
        return f"an internal {kind.__name__} leaked: {exc}"
    if not isinstance(exc, EXCEPTION_FAMILIES):
        return f"a {kind.__name__} is not one of torch's exception types: {exc}"
    return None


def raised_in_kernel(exc: BaseException) -> bool:
    """True for Numba's boundscheck IndexError (a compiled kernel indexed out of bounds), not a Python check.

    A compiled frame has no Python line of its own, so the innermost Python frame is the one that called the
    kernel; an argument check raises from a ``raise`` statement in Python.
    """
    if not isinstance(exc, IndexError) or str(exc) != BOUNDSCHECK_MESSAGE:
        return False
    tb = _innermost(exc)
    if tb is None:
        return True
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip()
    return not line.startswith("raise")


def _innermost(exc: BaseException):
    """The traceback entry of the innermost Python frame ``exc`` passed through (None if it has none)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


DOTTED_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")


def raised_in_compiled_code(exc: BaseException) -> bool:
    """True when ``exc`` came out of a Numba-compiled function (any exception, not only boundscheck's).

    A compiled frame has no Python frame, so the innermost Python frame is the caller, stopped in the expression
    that called the dispatcher; a Python argument check, or NumPy refusing an argument, stops elsewhere.
    """
    tb = _innermost(exc)
    if tb is None:
        return False
    frame = tb.tb_frame
    return any(isinstance(_resolve(name, frame), Dispatcher)
               for name in DOTTED_NAME.findall(_failing_source(frame.f_code, tb.tb_lasti)))


def _failing_source(code, lasti: int) -> str:
    """The source text of the expression whose bytecode at ``lasti`` raised."""
    first, last, start, end = list(code.co_positions())[lasti // 2]
    if first is None:
        return ""
    lines = [linecache.getline(code.co_filename, n) for n in range(first, (last or first) + 1)]
    if start is not None and end is not None:
        lines[-1] = lines[-1][:end]
        lines[0] = lines[0][start:]
    return "".join(lines)


def _resolve(dotted: str, frame) -> Any:
    """The object a dotted name means in ``frame`` (None when it is not there), looked up statically: no property
    or ``__getattr__`` runs, so looking changes nothing."""
    head, *rest = [part.strip() for part in dotted.split(".")]
    for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
        if head in scope:
            value = scope[head]
            break
    else:
        return None
    for part in rest:
        value = inspect.getattr_static(value, part, None)
    return value


@dataclass
class Outcome:
    """What one library did with a case: its result or exception, and its input tensors afterwards."""
    result: Any = None
    error: BaseException | None = None
    inputs: list = field(default_factory=list)


def execute(op: Op, case: Case, lib: Lib, **extra) -> Outcome:
    args, kwargs = materialize(lib, case.args), materialize(lib, case.kwargs)
    outcome = Outcome(inputs=tensors_in((args, kwargs)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            outcome.result = op.call(lib, *args, **kwargs, **extra)
        except Exception as exc:  # judged below
            outcome.error = exc
    return outcome


def flatten(result: Any) -> list:
    """A result as a flat list of comparable leaves: ('tensor', ndarray, dtype name) or ('value', python value)."""
    if isinstance(result, ember.Tensor):
        return [("tensor", np.asarray(result.numpy()), result.dtype.name)]
    if isinstance(result, torch.Tensor):
        return [("tensor", result.detach().numpy(), str(result.dtype).split(".")[-1])]
    if isinstance(result, (list, tuple)):
        return [leaf for r in result for leaf in flatten(r)]
    if isinstance(result, (torch.Size, ember.Size)):
        return [("value", tuple(result))]
    return [("value", result)]


def magnitude(case: Case) -> float:
    """The largest finite absolute input value (at least 1): absolute tolerances scale with it."""
    biggest = 1.0
    for arr in [a.array for a in _args_of(case)]:
        if arr.dtype.kind == "f" and arr.size:
            finite = np.abs(arr[np.isfinite(arr)])
            if finite.size:
                biggest = max(biggest, float(finite.max()))
    return biggest


def _args_of(v: Any) -> list:
    if isinstance(v, Case):
        return _args_of(v.args) + _args_of(v.kwargs)
    if isinstance(v, Arg):
        return [v]
    if isinstance(v, (list, tuple)):
        return [a for x in v for a in _args_of(x)]
    if isinstance(v, dict):
        return [a for x in v.values() for a in _args_of(x)]
    return []


TOLERANCE = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def compare_leaves(ours: list, theirs: list, scale: float) -> str | None:
    if len(ours) != len(theirs):
        return f"{len(ours)} results, torch gives {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a[0] != b[0]:
            return f"result {i}: {a[0]} where torch gives {b[0]}"
        if a[0] == "value":
            same = a[1] == b[1] or (isinstance(a[1], float) and np.isnan(a[1]) and np.isnan(b[1]))
            if not same:
                return f"result {i}: {a[1]!r} where torch gives {b[1]!r}"
            continue
        problem = compare_arrays(a[1], a[2], b[1], b[2], scale)
        if problem:
            return f"result {i}: {problem}"
    return None


def compare_arrays(ours: np.ndarray, our_dtype: str, theirs: np.ndarray, their_dtype: str, scale: float):
    if our_dtype != their_dtype:
        return f"dtype {our_dtype}, torch gives {their_dtype}"
    if ours.shape != theirs.shape:
        return f"shape {ours.shape}, torch gives {theirs.shape}"
    if ours.dtype.kind in "biu" or ours.dtype.kind != "f":
        if not np.array_equal(ours, theirs):
            return f"values differ:\n  ember {ours!r}\n  torch {theirs!r}"
        return None
    rtol = TOLERANCE.get(our_dtype, 1e-12) * 50
    try:
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=rtol,
                                   atol=rtol * scale, equal_nan=True)
    except AssertionError as exc:
        return f"values differ:{exc}"
    return None


# A soft difference is an argument check that disagrees with torch (ember stricter, more lenient, or raising another
# exception family); it is counted and listed, and fails the pass only in strict mode. Everything else is hard: a wrong
# value, dtype or shape, an internal exception, a changed input, a write outside an out= view, a crash.
SOFT, HARD = "soft", "hard"


def judge(op: Op, case: Case, ours: Outcome, theirs: Outcome, originals: list) -> tuple[str, str] | None:
    """None when ember behaved as torch did, else (SOFT or HARD, what differs)."""
    if ours.error is not None:
        leaked = internal_error(ours.error, theirs.error)
        if leaked:
            return HARD, leaked
        changed = compare_inputs(ours.inputs, originals, "a call that raised changed input")
        if changed:
            return HARD, changed
        if theirs.error is None:
            return SOFT, f"ember raised {type(ours.error).__name__}({ours.error}) where torch returns a result"
        if family(ours.error) != family(theirs.error):
            return SOFT, (f"ember raised {type(ours.error).__name__}({ours.error}); torch raises "
                          f"{type(theirs.error).__name__}({str(theirs.error).splitlines()[0]})")
        return None
    if isinstance(theirs.error, NotImplementedError):
        return None   # torch lacks a kernel for this dtype; ember having one is no fault
    if theirs.error is not None:
        return SOFT, (f"ember returned a result where torch raises "
                      f"{type(theirs.error).__name__}({str(theirs.error).splitlines()[0]})")
    project = op.project or (lambda r: r)
    scale = magnitude(case) ** op.degree
    problem = compare_leaves(flatten(project(ours.result)), flatten(project(theirs.result)), scale)
    if problem:
        return HARD, problem
    after = [leaf[1] for t in theirs.inputs for leaf in flatten(t)]
    problem = compare_inputs(ours.inputs, after, "input after the call", scale)
    return (HARD, problem) if problem else None


def compare_inputs(tensors: list, expected: list, what: str, scale: float = 1.0) -> str | None:
    """Inputs are compared with what torch left in its own (unchanged unless the op is in-place)."""
    for i, (t, want) in enumerate(zip(tensors, expected)):
        problem = compare_arrays(np.asarray(t.numpy()), t.dtype.name, want, t.dtype.name, scale)
        if problem:
            return f"{what} {i}: {problem}"
    return None


def check_out(op: Op, case: Case, expected: Any) -> tuple[str, str] | None:
    """Call with ``out=`` a strided view into a sentinel-filled buffer: the result lands in the view, nothing else
    in the buffer changes (a kernel writing past its output would show here)."""
    if not isinstance(expected, torch.Tensor) or expected.dtype == torch.bool:
        return None
    dtype = getattr(ember, str(expected.dtype).split(".")[-1])
    shape, numel = tuple(expected.shape), expected.numel()
    sentinel = 77
    buffer = ember.full((2 * numel + 2,), sentinel, dtype=dtype)
    strides = [2] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    out = buffer.as_strided(shape, tuple(strides), 1)
    ours = execute(op, case, EMBER, out=out)
    if ours.error is not None:
        return HARD, f"out= call raised {type(ours.error).__name__}: {ours.error}"
    if ours.result is not out:
        return HARD, "out= call did not return its out tensor"
    problem = compare_arrays(np.asarray(out.numpy()), out.dtype.name, expected.numpy(), out.dtype.name,
                             magnitude(case) ** op.degree)
    if problem:
        return HARD, f"out= result: {problem}"
    untouched = np.ones(2 * numel + 2, dtype=bool)
    untouched[1:1 + 2 * numel:2] = False
    if not (buffer.numpy()[untouched] == sentinel).all():
        return HARD, "out= call wrote outside its output view"
    return None


def run_case(op: Op, case: Case) -> tuple[tuple[str, str] | None, Outcome, Outcome]:
    """Run ``case`` on both libraries; returns (verdict, ember outcome, torch outcome)."""
    originals = [np.asarray(a.array).copy() for a in _args_of(case)]
    theirs = execute(op, case, TORCH)
    ours = execute(op, case, EMBER)
    verdict = judge(op, case, ours, theirs, originals)
    if verdict is None and op.out and theirs.error is None:
        verdict = check_out(op, case, theirs.result)
    return verdict, ours, theirs
