"""The checks of the backend contract (``ember.kernels.contract``), written once for every backend.

``tests/test_backend_contract.py`` runs them on the CPU backend (also with ``NUMBA_DISABLE_JIT=1``) and
``tests/cuda/test_device_contract.py`` on the CUDA backend (the simulator, or a real GPU). A backend is described
by an ``ArrayBackend``: its kernel package and how a host array becomes one of its arrays and back. Every check
computes the same thing on host NumPy arrays and on the backend's arrays and compares the two.
"""
from __future__ import annotations

import functools
import inspect
import operator
from types import ModuleType, SimpleNamespace
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

from ember import opcodes as op
from ember.kernels import contract
from ember.kernels import cpu as cpu_kernels


class ArrayBackend(NamedTuple):
    """A kernel backend under test: its package, its array type and the copies between it and the host."""

    name: str
    kernels: ModuleType
    array_type: type
    to_array: Callable[[np.ndarray], Any]
    to_host: Callable[[Any], np.ndarray]

    def family(self, name: str) -> ModuleType:
        """Kernel family ``name``, reached as the tensor layer reaches it: an attribute of the backend package."""
        return getattr(self.kernels, name)


CPU = ArrayBackend("cpu", cpu_kernels, np.ndarray, np.array, np.asarray)


# ------------------------------------------------------------------------------------------ comparing
def _host(backend: ArrayBackend, value: Any) -> Any:
    """``value`` with every backend array in it copied to the host."""
    if isinstance(value, backend.array_type):
        return backend.to_host(value)
    if isinstance(value, tuple):
        return tuple(_host(backend, v) for v in value)
    return value


def _assert_same(got: Any, want: Any, where: str) -> None:
    """Equal values and kinds: arrays by dtype, shape and value (NaN equal, float64 to 1e-12), the rest by ==."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (where, got, want)
        for g, w in zip(got, want):
            _assert_same(g, w, where)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        got_arr, want_arr = np.asarray(got), np.asarray(want)
        assert got_arr.dtype == want_arr.dtype, (where, got_arr.dtype, want_arr.dtype)
        assert got_arr.shape == want_arr.shape, (where, got_arr.shape, want_arr.shape)
        if want_arr.dtype.kind == "f":
            np.testing.assert_allclose(got_arr, want_arr, rtol=1e-12, atol=1e-300, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(got_arr, want_arr, err_msg=where)
        return
    assert type(got) is type(want) and got == want, (where, got, want)


def _check_case(backend: ArrayBackend, where: str, case: Callable[[SimpleNamespace], Any]) -> None:
    """Run ``case`` on the host operands and on the backend's: results agree, and arrays stay the backend's."""
    host = _operands(lambda a: a)
    want = case(host)
    got = case(_operands(backend.to_array))
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if isinstance(w, np.ndarray):
            assert isinstance(g, backend.array_type), (where, type(g))
    _assert_same(_host(backend, got), want, where)


def _operands(convert: Callable[[np.ndarray], Any]) -> SimpleNamespace:
    """The small arrays every case computes on, made by ``convert`` (float64 unless named otherwise)."""
    f = np.array([[0.5, -1.25, 2.0], [3.5, -0.75, 1.5]])
    p = np.array([[1.5, 0.25, 2.0], [0.5, 3.0, 1.25]])
    arrays = {
        "f": f,  # signed, no zeros
        "p": p,  # positive
        "g1": p + 1.0,  # at least 1
        "u": f / 4.0,  # inside (-1, 1)
        "z": np.array([[0.0, 1.0, 0.0], [2.0, 0.0, -3.0]]),  # with zeros
        "inf": np.array([[np.inf, -np.inf, 1.0], [np.nan, 0.0, -2.0]]),
        "i": np.array([[6, -4, 9], [12, 5, -8]], np.int64),
        "j": np.array([[4, 6, 3], [8, 2, 3]], np.int64),  # positive, below 64 (shift counts)
        "perm": np.array([[2, 0, 1], [1, 2, 0]], np.int64),  # indices along dim 1, no repeats
    }
    return SimpleNamespace(**{name: convert(a) for name, a in arrays.items()})


# ------------------------------------------------------------------------------------------ core functions
def check_core_signatures(backend: ArrayBackend) -> None:
    """Every core function exists with the contract's parameters."""
    assert isinstance(backend.kernels, contract.Backend)
    for name in contract.CONTRACT:
        expected = list(inspect.signature(getattr(contract.Backend, name)).parameters)[1:]
        assert list(inspect.signature(getattr(backend.kernels, name)).parameters) == expected, name


_X = np.array([[0.5, -1.25, 2.0], [3.5, -0.75, 1.5]])  # the core functions' input
_INTS = np.array([3, 1, 3, 0, 3, 1], np.int64)


def _core_results(backend: ArrayBackend) -> dict:
    """Each core function run once on small inputs into outputs allocated here, copied back to the host."""
    kernels, a, x, ints = backend.kernels, backend.to_array, _X, _INTS
    results = {}

    def run(name: str, call: Callable, *outs: np.ndarray) -> None:
        arrays = [a(o) for o in outs]
        call(*arrays)
        results[name] = tuple(backend.to_host(o) for o in arrays)

    run("unary", lambda o: kernels.unary(op.NEG, a(x), o), np.empty_like(x))
    run("binary", lambda o: kernels.binary(op.MUL, a(x), a(x[0]), o), np.empty_like(x))
    run("ternary", lambda o: kernels.ternary(op.CLAMP, a(x), a(np.array(0.0)), a(np.array(1.75)), o),
        np.empty_like(x))
    run("reduce", lambda o: kernels.reduce(op.R_SUM, a(x), (0,), o), np.empty((1, 3)))
    run("arg_reduce", lambda v, i: kernels.arg_reduce(op.A_MAX, a(x), 1, v, i), np.empty((2, 1)),
        np.empty((2, 1), np.int64))
    run("scan", lambda o: kernels.scan(op.S_SUM, a(x), 1, o), np.empty_like(x))
    run("scan_indices", lambda v, i: kernels.scan_indices(op.S_MAX, a(x), 1, v, i), np.empty_like(x),
        np.empty(x.shape, np.int64))
    run("matmul", lambda o: kernels.matmul(a(x[None]), a(x.T[None].copy()), o), np.empty((1, 2, 2)))
    run("scatter", lambda o: kernels.scatter("sum", o, a(np.array([1, 3, 1], np.int64)), a(np.array([1.0, 2.0, 4.0]))),
        np.zeros(4))
    run("sort", lambda v, i: kernels.sort(a(x), 1, False, v, i), np.empty_like(x), np.empty(x.shape, np.int64))
    run("topk", lambda v, i: kernels.topk(a(x), 2, 1, True, v, i), np.empty((2, 2)), np.empty((2, 2), np.int64))
    run("kthvalue", lambda v, i: kernels.kthvalue(a(x), 2, 1, v, i), np.empty((2, 1)), np.empty((2, 1), np.int64))
    run("mode", lambda v, i: kernels.mode(a(ints[None].astype(np.float64)), 1, v, i), np.empty((1, 1)),
        np.empty((1, 1), np.int64))
    run("searchsorted", lambda o: kernels.searchsorted(a(np.array([[-1.0, 0.5, 2.0]])), a(x), False, None, o),
        np.empty(x.shape, np.int64))
    run("bincount", lambda o: kernels.bincount(a(ints), None, o), np.zeros(5, np.int64))
    run("histc", lambda o: kernels.histc(a(x.reshape(-1)), -2.0, 4.0, o), np.zeros(3))
    return results


def _core_expected() -> dict:
    """What NumPy gives for ``_core_results``' calls."""
    x = _X
    order = np.argsort(x, 1, kind="stable")
    cummax = np.maximum.accumulate(x, 1)
    return {
        "unary": (-x,), "binary": (x * x[0],), "ternary": (np.clip(x, 0.0, 1.75),),
        "reduce": (x.sum(0, keepdims=True),),
        "arg_reduce": (x.max(1, keepdims=True), x.argmax(1)[:, None]),
        "scan": (np.cumsum(x, 1),),
        "scan_indices": (cummax, np.array([[0, 0, 2], [0, 0, 0]])),
        "matmul": ((x @ x.T)[None],),
        "scatter": (np.array([0.0, 5.0, 0.0, 2.0]),),
        "sort": (np.take_along_axis(x, order, 1), order),
        "topk": (np.array([[2.0, 0.5], [3.5, 1.5]]), np.array([[2, 0], [0, 2]])),
        "kthvalue": (np.array([[0.5], [1.5]]), np.array([[0], [2]])),
        "mode": (np.array([[3.0]]), np.array([[4]])),
        "searchsorted": (np.array([np.searchsorted([-1.0, 0.5, 2.0], row) for row in x]),),
        "bincount": (np.bincount(_INTS, minlength=5),),
        "histc": (np.histogram(x, 3, (-2.0, 4.0))[0].astype(np.float64),),
    }


def check_core_values(backend: ArrayBackend) -> None:
    """Every core function computes what NumPy does on a small input."""
    results = _core_results(backend)
    expected = _core_expected()
    assert sorted(results) == sorted(contract.CONTRACT)
    for name in contract.CONTRACT:
        _assert_same(results[name], tuple(np.asarray(e, r.dtype) for e, r in zip(expected[name], results[name])),
                     name)


# ------------------------------------------------------------------------------------------ kernel families
def _parameters(function: Callable) -> list[tuple]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def check_family(backend: ArrayBackend, family: str) -> None:
    """Kernel family ``family`` is a module of the backend holding its functions with the CPU's parameters."""
    mine, reference = backend.family(family), CPU.family(family)
    for name in contract.KERNEL_FAMILIES[family]:
        assert name in reference.__all__ and name in mine.__all__, (family, name)
        assert _parameters(getattr(mine, name)) == _parameters(getattr(reference, name)), (family, name)


# ------------------------------------------------------------------------------------------ the array surface
def _copy_into(a: Any, write: Callable[[Any], None]) -> Any:
    """A copy of ``a`` after ``write`` changed it in place."""
    out = a.copy()
    write(out)
    return out


def _filled(a: Any) -> Any:
    """``a`` (just allocated, its values undefined) filled with ones, so its kind, shape and dtype can be compared."""
    a.fill(1)
    return a


FUNCTION_CASES: dict[str, Callable[[SimpleNamespace], Any]] = {
    "empty": lambda a: (_filled(np.empty((2, 3), np.float32, like=a.f)), _filled(np.empty(4, like=a.f))),
    "zeros": lambda a: np.zeros((2, 2), np.int64, like=a.f),
    "ones": lambda a: np.ones(3, like=a.f),
    "full": lambda a: (np.full((2, 1), 7, like=a.f), np.full(2, 0.5, np.float32, like=a.f)),
    "empty_like": lambda a: (_filled(np.empty_like(a.f)), _filled(np.empty_like(a.f, np.int32))),
    "zeros_like": lambda a: np.zeros_like(a.i),
    "ones_like": lambda a: np.ones_like(a.f, np.float32),
    "full_like": lambda a: np.full_like(a.f, 2.5),
    "copyto": lambda a: _copy_into(a.f, lambda out: np.copyto(out, a.p)),
    "ascontiguousarray": lambda a: (np.ascontiguousarray(a.f.T, like=a.f),
                                    np.ascontiguousarray(a.f, np.float32, like=a.f)),
    "concatenate": lambda a: (np.concatenate([a.f, a.p]), np.concatenate([a.f, a.p], axis=1)),
    "stack": lambda a: np.stack([a.f, a.p], axis=1),
    "tile": lambda a: np.tile(a.f, (2, 1)),
    "repeat": lambda a: (np.repeat(a.f, 2, axis=1), np.repeat(a.f, [1, 0, 2], axis=1)),
    "roll": lambda a: (np.roll(a.f, 1, axis=1), np.roll(a.f, -1)),
    "shape": lambda a: np.shape(a.f),
    "ndim": lambda a: np.ndim(a.f),
    "size": lambda a: (np.size(a.f), np.size(a.f, 1)),
    "reshape": lambda a: np.reshape(a.f, (3, 2)),
    "ravel": lambda a: np.ravel(a.f.T),
    "transpose": lambda a: np.transpose(a.f),
    "moveaxis": lambda a: np.moveaxis(np.reshape(a.f, (1, 2, 3)), 0, 2),
    "swapaxes": lambda a: np.swapaxes(a.f, 0, 1),
    "squeeze": lambda a: np.squeeze(np.reshape(a.f, (1, 6))),
    "expand_dims": lambda a: np.expand_dims(a.f, 1),
    "broadcast_to": lambda a: np.broadcast_to(a.f[:1], (4, 3)),
    "flip": lambda a: np.flip(a.f, 1),
    "diagonal": lambda a: np.diagonal(a.f),
    "where": lambda a: np.where(a.f > 0, a.f, a.p),
    "take_along_axis": lambda a: np.take_along_axis(a.f, a.perm, 1),
    "put_along_axis": lambda a: _copy_into(a.f, lambda out: np.put_along_axis(out, a.perm, a.p, 1)),
    "tril": lambda a: np.tril(a.f),
    "triu": lambda a: np.triu(a.f, 1),
    "nonzero": lambda a: np.nonzero(a.z),
    "flatnonzero": lambda a: np.flatnonzero(a.z),
    "argwhere": lambda a: np.argwhere(a.z),
    "all": lambda a: (np.all(a.p > 0), np.all(a.f > 0, axis=1)),
    "any": lambda a: (np.any(a.f > 3), np.any(a.f > 3, axis=0)),
    "max": lambda a: (np.max(a.f), np.max(a.f, axis=0)),
    "min": lambda a: (np.min(a.i), np.min(a.f, axis=1)),
    "amax": lambda a: np.amax(a.f, axis=1),
    "amin": lambda a: np.amin(a.f, axis=0),
    "cumsum": lambda a: (np.cumsum(a.f, axis=1), np.cumsum(a.i)),
    "cumprod": lambda a: np.cumprod(a.f, axis=0),
    "isposinf": lambda a: np.isposinf(a.inf),
    "isneginf": lambda a: np.isneginf(a.inf),
    "array_equal": lambda a: (np.array_equal(a.f, a.f), np.array_equal(a.f, a.p)),
    "array_equiv": lambda a: (np.array_equiv(a.f[:1], np.broadcast_to(a.f[:1], (2, 3))), np.array_equiv(a.f, a.p)),
    "shares_memory": lambda a: (np.shares_memory(a.f, a.f[1]), np.shares_memory(a.f, a.p)),
    "may_share_memory": lambda a: (np.may_share_memory(a.f[:, 1:], a.f), np.may_share_memory(a.f, a.p)),
    "result_type": lambda a: (np.result_type(a.f, np.float32), np.result_type(a.i, a.f)),
}

METHOD_CASES: dict[str, Callable[[SimpleNamespace], Any]] = {
    "shape": lambda a: a.f.shape,
    "dtype": lambda a: (a.f.dtype, a.i.dtype),
    "ndim": lambda a: a.f.ndim,
    "size": lambda a: a.f.size,
    "itemsize": lambda a: a.i.itemsize,
    "nbytes": lambda a: a.f.nbytes,
    "flags": lambda a: (a.f.flags.c_contiguous, a.f.T.flags.c_contiguous, a.f.flags.writeable),
    "T": lambda a: a.f.T,
    "reshape": lambda a: (a.f.reshape(3, 2), a.f.reshape((6,)), a.f.T.reshape(-1)),
    "transpose": lambda a: (a.f.transpose(), a.f.transpose(1, 0)),
    "squeeze": lambda a: a.f.reshape(1, 6).squeeze(),
    "view": lambda a: a.f.view(),
    "__getitem__": lambda a: (a.f[1], a.f[:, ::2], a.f[None, 1:], a.f[..., 0], a.f[np.array([1, 0])],
                              a.f[a.f > 0]),
    "astype": lambda a: (a.f.astype(np.float32), a.f.astype(np.int64)),
    "copy": lambda a: a.f.T.copy(),
    "fill": lambda a: _copy_into(a.f, lambda out: out.fill(3.0)),
    "__setitem__": lambda a: _copy_into(a.f, _writes),
    "item": lambda a: a.f[1, 2].item(),
    "tolist": lambda a: a.f.tolist(),
    "__len__": lambda a: len(a.f),
    "__bool__": lambda a: (bool(a.f[0, 0] > 0), bool(a.f[0, 1] > 0)),
    "sum": lambda a: (a.f.sum(), a.f.sum(axis=0), a.i.sum(axis=1, keepdims=True)),
    "any": lambda a: ((a.f > 3).any(), (a.f > 3).any(axis=1)),
    "all": lambda a: ((a.p > 0).all(), (a.f > 0).all(axis=0)),
    "min": lambda a: (a.f.min(), a.f.min(axis=1)),
    "max": lambda a: (a.i.max(), a.f.max(axis=0)),
}


def _writes(out: Any) -> None:
    out[0] = 9.0
    out[:, 1] = np.array([-1.0, -2.0])
    out[np.array([1]), np.array([2])] = 5.0


_INTEGER_UFUNCS = {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift", "gcd", "lcm"}
# operands inside each ufunc's domain (the simulator runs device math as Python, which raises outside it)
_UNARY_OPERAND = {"log": "p", "log2": "p", "log10": "p", "log1p": "p", "sqrt": "p", "arccosh": "g1", "arcsin": "u",
                  "arccos": "u", "arctanh": "u", "isnan": "inf", "isinf": "inf", "isfinite": "inf", "signbit": "z"}


def ufunc_case(name: str) -> Callable[[SimpleNamespace], Any]:
    """A case calling ufunc ``name`` on arrays, on an array and a number, and with ``out=``."""
    ufunc = getattr(np, name)
    if name == "matmul":
        return lambda a: (ufunc(a.f, a.p.T), ufunc(a.f, a.p[0]))
    if ufunc.nin == 1:
        operand = "i" if name in _INTEGER_UFUNCS else _UNARY_OPERAND.get(name, "f")
        return lambda a: (ufunc(getattr(a, operand)),
                          ufunc(getattr(a, operand), out=np.empty_like(ufunc(getattr(a, operand)))))
    if name in _INTEGER_UFUNCS:
        return lambda a: (ufunc(a.i, a.j), ufunc(a.i, 3))
    if name == "power":
        return lambda a: (ufunc(a.p, a.f), ufunc(a.p, 2.0), ufunc(a.i, 2))
    return lambda a: (ufunc(a.f, a.p), ufunc(a.f, 2.0), ufunc(a.f, a.p, out=np.empty_like(ufunc(a.f, a.p))))


# Python's operators and the ufunc each one is (NumPy's operator mixin).
OPERATORS: dict[Callable, str] = {
    operator.add: "add", operator.sub: "subtract", operator.mul: "multiply", operator.truediv: "divide",
    operator.floordiv: "floor_divide", operator.mod: "remainder", operator.pow: "power", operator.matmul: "matmul",
    operator.and_: "bitwise_and", operator.or_: "bitwise_or", operator.xor: "bitwise_xor",
    operator.lshift: "left_shift", operator.rshift: "right_shift", operator.lt: "less", operator.le: "less_equal",
    operator.eq: "equal", operator.ne: "not_equal", operator.gt: "greater", operator.ge: "greater_equal",
    operator.neg: "negative", operator.pos: "positive", operator.abs: "absolute", operator.invert: "invert",
    operator.iadd: "add", operator.imul: "multiply",
}


def operator_case(function: Callable) -> Callable[[SimpleNamespace], Any]:
    """A case applying Python operator ``function`` to arrays (and an array and a number)."""
    name = OPERATORS[function]
    if function in (operator.neg, operator.pos, operator.abs):
        return lambda a: function(a.f)
    if function is operator.invert:
        return lambda a: function(a.i)
    if function in (operator.iadd, operator.imul):
        return lambda a: _copy_into(a.f, lambda out: function(out, a.p))
    if name in _INTEGER_UFUNCS:
        return lambda a: (function(a.i, a.j), function(a.i, 2))
    if function is operator.matmul:
        return lambda a: function(a.f, a.p.T)
    if function is operator.pow:
        return lambda a: (function(a.p, a.f), function(a.f, 2), function(2.0, a.p))
    return lambda a: (function(a.f, a.p), function(a.p, 2.0), function(3.0, a.p))


def check_function(backend: ArrayBackend, name: str) -> None:
    """NumPy function ``name`` of the array surface runs on the backend's arrays and gives NumPy's result."""
    _check_case(backend, f"numpy.{name}", FUNCTION_CASES[name])


def check_method(backend: ArrayBackend, name: str) -> None:
    """ndarray method or attribute ``name`` of the array surface works on the backend's arrays as on NumPy's."""
    _check_case(backend, f"ndarray.{name}", METHOD_CASES[name])


def check_ufunc(backend: ArrayBackend, name: str) -> None:
    """Ufunc ``name`` of the array surface runs on the backend's arrays (and numbers) and gives NumPy's result."""
    _check_case(backend, f"numpy.{name}", ufunc_case(name))


def check_operator(backend: ArrayBackend, function: Callable) -> None:
    """Python operator ``function`` on the backend's arrays is its ufunc, with NumPy's result."""
    assert OPERATORS[function] in contract.ARRAY_UFUNCS
    _check_case(backend, f"operator.{function.__name__}", operator_case(function))


# ------------------------------------------------------------------------------------------ all of it
def contract_checks() -> list:
    """Every check of the contract, one ``check(backend)`` per pytest param, named after what it checks."""
    checks = [pytest.param(check_core_signatures, id="core-signatures"),
              pytest.param(check_core_values, id="core-values")]
    checks += [pytest.param(functools.partial(check_family, family=f), id=f"family-{f}")
               for f in contract.KERNEL_FAMILIES]
    checks += [pytest.param(functools.partial(check_function, name=n), id=f"numpy.{n}")
               for n in contract.ARRAY_FUNCTIONS]
    checks += [pytest.param(functools.partial(check_ufunc, name=n), id=f"ufunc.{n}") for n in contract.ARRAY_UFUNCS]
    checks += [pytest.param(functools.partial(check_method, name=n), id=f"ndarray.{n}")
               for n in contract.ARRAY_METHODS]
    checks += [pytest.param(functools.partial(check_operator, function=f), id=f"operator.{f.__name__}")
               for f in OPERATORS]
    return checks
