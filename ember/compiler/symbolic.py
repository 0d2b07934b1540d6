"""Symbolic scalars: the kernel body of a fused chain written by running the ops on stand-ins.

A ``Sym`` stands for one element of a tensor inside a generated kernel. It has the Tensor methods that the op
declarations' gradients use (``g * y``, ``(1 - x * x).rsqrt()``, ``g * (y > 0)``, ``masked_fill``...), and each
call appends one line to the kernel body (``t7 = np.float32(s.mul(t3, t5))``) instead of computing. So the
forward of a chain is its ops applied to ``Sym``s, and its backward is each op's declared gradient
(``ember.opcodes``) applied to ``Sym``s: the fused backward is derived from the same declarations as the eager one,
never written twice.

Types follow eager ember exactly: promotion is ``dtypes.result_type_of`` (a ``Sym`` carries its tensor's dtype and
number of dims, which torch's promotion reads), each op's compute and result dtypes come from its Function
(``select``) or the declaration's result rule, operands are cast to the compute dtype and the result rounded to the
result dtype, and Python numbers become literals of the compute dtype, as ``as_array`` makes them. What a ``Sym``
cannot express (integer arithmetic, an op of the tensor layer it does not model) raises ``NotFusible``, and the op
is left out of the chain.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .. import opcodes as op
from ..kernels.common.activations import grad_function
from ..kernels.common.elementwise import BINARY as BINARY_SCALARS, UNARY as UNARY_SCALARS
from ..tensor import dtypes, elementwise

__all__ = ["Builder", "NotFusible", "Sym", "activation", "binary", "cast", "unary"]

FLOATS = (dtypes.float32, dtypes.float64)
# the dtypes a kernel computes in: floats, and bool for the logical ops on masks
COMPUTE = FLOATS + (dtypes.bool,)
_NUMPY_NAMES = {"float32": "np.float32", "float64": "np.float64", "bool": "np.bool_", "int64": "np.int64",
                "int32": "np.int32", "int16": "np.int16", "int8": "np.int8", "uint8": "np.uint8"}


class NotFusible(Exception):
    """The op (with these dtypes) has no fused form; it runs as its own op."""


class _Meta:
    """What ``dtypes.result_type_of`` reads of a tensor's array: its dtype and number of dims."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, dtype: np.dtype, ndim: int) -> None:
        self.dtype, self.ndim = dtype, ndim


class Builder:
    """The lines of one kernel body, in order: each new ``Sym`` is one assignment."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def emit(self, expr: str, dt: dtypes.dtype, ndim: int, requires_grad: bool = False) -> "Sym":
        name = f"t{self._count}"
        self._count += 1
        self.lines.append(f"{name} = {expr}")
        return Sym(self, name, dt, ndim, requires_grad)

    def named(self, name: str, dt: dtypes.dtype, ndim: int, requires_grad: bool = False) -> "Sym":
        """A ``Sym`` for a value the kernel reads (an operand element, a gradient)."""
        return Sym(self, name, dt, ndim, requires_grad)


def _literal(value: Any, dt: dtypes.dtype) -> str:
    """``value`` as a literal of ``dt`` (rounded once, as ``np.asarray(value, dt)`` rounds it)."""
    if dt is dtypes.bool:
        return "True" if value else "False"
    if dt.is_floating_point:
        return f"{_NUMPY_NAMES[dt.name]}({float(value)!r})"
    return f"{_NUMPY_NAMES[dt.name]}({int(value)!r})"


def _numpy_name(dt: dtypes.dtype) -> str:
    found = _NUMPY_NAMES.get(dt.name)
    if found is None:
        raise NotFusible(f"no kernel type for {dt.name}")
    return found


def cast(x: Any, dt: dtypes.dtype) -> str:
    """Operand ``x`` (a ``Sym`` or a Python number) as an expression of dtype ``dt``."""
    if not isinstance(x, Sym):
        if isinstance(x, (bool, np.bool_)) and dt.is_floating_point:
            x = float(x)
        return _literal(x, dt)
    if x.dtype is dt:
        return x.name
    if dt is dtypes.bool:
        return f"({x.name} != 0)"
    return f"{_numpy_name(dt)}({x.name})"


def _rounded(expr: str, cdt: dtypes.dtype, rdt: dtypes.dtype) -> str:
    """A scalar function's value stored as ``rdt``: floats are rounded to it (a scalar function may widen)."""
    if rdt is dtypes.bool:
        return expr if cdt is dtypes.bool else f"np.bool_({expr})"
    return f"{_numpy_name(rdt)}({expr})"


def _ndim(*xs: Any) -> int:
    return max((x.ndim for x in xs if isinstance(x, Sym)), default=0)


def _grad(*xs: Any) -> bool:
    return any(isinstance(x, Sym) and x.requires_grad for x in xs)


def _builder(*xs: Any) -> Builder:
    return next(x.builder for x in xs if isinstance(x, Sym))


def _check_operand(x: Any) -> None:
    if isinstance(x, Sym):
        return
    if not isinstance(x, numbers.Number) or isinstance(x, complex):
        raise NotFusible(f"operand of type {type(x).__name__}")


# -------------------------------------------------------------------------------------------------- the ops
_UNARY_TYPES = elementwise._types  # (compute, result) dtype of a unary op: the eager rule itself
# float32 forms LLVM vectorises (libm's are scalar calls, several times slower in a loop): the fused activations'
# own (``kernels.common.activations``: tanh about 2 ulp, exp about 1 ulp), which the eager activation kernels use
_VECTOR_FLOAT32 = {"tanh": "act.vtanh", "exp": "act.vexp", "sigmoid": "act.sigmoid", "erfc": "act.verfc"}


def unary(name: str, x: "Sym") -> "Sym":
    """The declared unary op ``name`` of ``x``, typed as ``elementwise.unary`` types it."""
    d = op.UNARY_BY_NAME[name]
    dt = x.dtype
    if dt.name in d.refuses or (dt is dtypes.bool and (d.bool_error or d.bool_as_int64)):
        raise NotFusible(f"{name} of {dt.name}")
    if d.integer_identity and not dt.is_floating_point:
        return x  # rounding an integer gives it back (eager clones it)
    try:
        cdt, rdt = _UNARY_TYPES(name, d.result, dt)
    except NotImplementedError as exc:
        raise NotFusible(str(exc)) from None
    if cdt not in FLOATS:
        raise NotFusible(f"{name} computes in {cdt.name}")
    scalar = _VECTOR_FLOAT32.get(d.name) if cdt is dtypes.float32 else None
    expr = f"{scalar or 's.' + UNARY_SCALARS[d.code]}({cast(x, cdt)})"
    return x.builder.emit(_rounded(expr, cdt, rdt), rdt, x.ndim, x.requires_grad and rdt.is_floating_point)


def binary(name: str, a: Any, b: Any) -> "Sym":
    """The declared binary op ``name`` of ``a`` and ``b`` (``Sym``s or numbers), typed by its Function's
    ``select`` over torch's promotion, as ``elementwise.binary`` types it."""
    _check_operand(a)
    _check_operand(b)
    cls = elementwise._BINARY_CLASSES[name]
    promoted = dtypes.result_type_of((a, b))
    try:
        code, cdt, rdt = cls.select(promoted)
    except (NotImplementedError, RuntimeError) as exc:
        raise NotFusible(str(exc)) from None
    if cdt not in COMPUTE or (cdt is dtypes.bool and rdt is not dtypes.bool):
        raise NotFusible(f"{name} computes in {cdt.name}")
    expr = f"s.{BINARY_SCALARS[code]}({cast(a, cdt)}, {cast(b, cdt)})"
    return _builder(a, b).emit(_rounded(expr, cdt, rdt), rdt, _ndim(a, b), _grad(a, b) and rdt.is_floating_point)


def power(a: Any, b: Any) -> "Sym":
    """``a ** b`` as eager ember computes it: a float32/float64 tensor to the number 2, 3, 0.5 or -1 by the
    cheaper ops of ``elementwise._POW_SHORTCUTS`` (torch's results bit for bit), else the ``pow`` kernel."""
    if isinstance(a, Sym) and type(b) in (int, float) and a.dtype in FLOATS \
            and float(b) in elementwise._POW_SHORTCUTS:
        e = float(b)
        if e == 2.0:
            return binary("mul", a, a)
        if e == 3.0:
            expr = f"s.cube({a.name})"
            return a.builder.emit(_rounded(expr, a.dtype, a.dtype), a.dtype, a.ndim, a.requires_grad)
        if e == 0.5:
            return unary("sqrt", a)
        return binary("div", 1.0, a)
    return binary("pow", a, b)


def where(condition: "Sym", a: Any, b: Any) -> "Sym":
    """``a`` where ``condition`` holds, else ``b``, promoted as ``ember.where``."""
    if not isinstance(condition, Sym) or condition.dtype is not dtypes.bool:
        raise NotFusible("where needs a bool condition")
    _check_operand(a)
    _check_operand(b)
    rdt = dtypes.result_type_of((a, b))
    if rdt not in COMPUTE:
        raise NotFusible(f"where in {rdt.name}")
    expr = f"s.where({condition.name}, {cast(a, rdt)}, {cast(b, rdt)})"
    return _builder(condition, a, b).emit(expr, rdt, _ndim(condition, a, b), _grad(a, b) and rdt.is_floating_point)


def to(x: "Sym", dt: dtypes.dtype) -> "Sym":
    """``x.to(dt)``: a cast (``Cast``)."""
    dt = dtypes.to_dtype(dt)
    if dt is x.dtype:
        return x
    _numpy_name(dt)
    return x.builder.emit(cast(x, dt), dt, x.ndim, x.requires_grad and dt.is_floating_point)


def activation(name: str, x: "Sym", params: tuple) -> "Sym":
    """The fused activation ``name`` (``kernels.common.activations``) of floating ``x``."""
    if x.dtype not in FLOATS:
        raise NotFusible(f"activation of {x.dtype.name}")
    cdt = dtypes.compute_dtype(x.dtype)
    args = ", ".join([cast(x, cdt)] + [_literal(p, cdt) for p in _padded(params)])
    return x.builder.emit(_rounded(f"act.{name}({args})", cdt, x.dtype), x.dtype, x.ndim, x.requires_grad)


def activation_grad(name: str, x: "Sym", y: "Sym", g: "Sym", params: tuple) -> "Sym":
    """``g * f'(x)`` of the fused activation ``name``, by its scalar gradient (written in ``y`` for the ones
    whose backward reads the output), as the fused backward kernel computes it."""
    cdt = dtypes.compute_dtype(x.dtype)
    arg = y if op.ACTIVATIONS_BY_NAME[name].grad_reads_output else x
    args = ", ".join([cast(arg, cdt), cast(to(g, x.dtype), cdt)] + [_literal(p, cdt) for p in _padded(params)])
    return x.builder.emit(_rounded(f"act.{grad_function(name)}({args})", cdt, x.dtype), x.dtype, g.ndim,
                          g.requires_grad)


def _padded(params: tuple) -> tuple:
    return tuple(params) + (0.0,) * (3 - len(params))


class Sym:
    """One element of a tensor in a kernel being written (see the module docstring)."""

    __slots__ = ("builder", "name", "dtype", "ndim", "requires_grad", "_array")
    __array_priority__ = 1000  # a NumPy number meeting a Sym defers to the Sym's reflected operators

    def __init__(self, builder: Builder, name: str, dt: dtypes.dtype, ndim: int, requires_grad: bool) -> None:
        self.builder, self.name, self.dtype, self.ndim, self.requires_grad = builder, name, dt, ndim, requires_grad
        self._array = _Meta(dt.np, ndim)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Sym({self.name}: {self.dtype.name})"

    def __bool__(self) -> bool:
        raise NotFusible("a gradient branches on a value")

    # arithmetic, as the Tensor operators
    def __add__(self, other):
        return binary("add", self, other)

    def __radd__(self, other):
        return binary("add", other, self)

    def __sub__(self, other):
        return binary("sub", self, other)

    def __rsub__(self, other):
        return binary("sub", other, self)

    def __mul__(self, other):
        return binary("mul", self, other)

    def __rmul__(self, other):
        return binary("mul", other, self)

    def __truediv__(self, other):
        return binary("div", self, other)

    def __rtruediv__(self, other):
        return binary("div", other, self)

    def __floordiv__(self, other):
        return binary("floor_divide", self, other)

    def __pow__(self, other):
        return power(self, other)

    def __neg__(self):
        return unary("neg", self)

    def __abs__(self):
        return unary("abs", self)

    def __gt__(self, other):
        return binary("gt", self, other)

    def __lt__(self, other):
        return binary("lt", self, other)

    def __ge__(self, other):
        return binary("ge", self, other)

    def __le__(self, other):
        return binary("le", self, other)

    def __eq__(self, other):  # a comparison, as Tensor's
        return binary("eq", self, other)

    def __ne__(self, other):
        return binary("ne", self, other)

    def __and__(self, other):
        return binary("bitwise_and", self, other)

    def __or__(self, other):
        return binary("bitwise_or", self, other)

    # the Tensor methods the declared gradients call
    def pow(self, other):
        return power(self, other)

    def abs(self):
        return unary("abs", self)

    def sign(self):
        return unary("sign", self)

    def exp(self):
        return unary("exp", self)

    def exp2(self):
        return unary("exp2", self)

    def log(self):
        return unary("log", self)

    def log1p(self):
        return unary("log1p", self)

    def sin(self):
        return unary("sin", self)

    def cos(self):
        return unary("cos", self)

    def sinh(self):
        return unary("sinh", self)

    def cosh(self):
        return unary("cosh", self)

    def tanh(self):
        return unary("tanh", self)

    def sigmoid(self):
        return unary("sigmoid", self)

    def sqrt(self):
        return unary("sqrt", self)

    def rsqrt(self):
        return unary("rsqrt", self)

    def digamma(self):
        return unary("digamma", self)

    def isnan(self):
        return unary_predicate("isnan", self)

    def to(self, dt):
        return to(self, dt)

    def where(self, condition, other):
        return where(condition, self, other)

    def polygamma(self, n: int) -> "Sym":
        if n != 1:
            raise NotFusible(f"polygamma({n})")
        return unary("trigamma", self)

    def masked_fill(self, mask: "Sym", value: Any) -> "Sym":
        if isinstance(value, Sym):
            raise NotFusible("masked_fill with a tensor value")
        return where(mask, to_literal(self.builder, value, self.dtype), self)

    def div(self, other: Any, rounding_mode: str | None = None) -> "Sym":
        name = {None: "div", "trunc": "trunc_divide", "floor": "floor_divide"}[rounding_mode]
        return binary(name, self, other)

    def nan_to_num(self, nan: float = 0.0) -> "Sym":
        if self.dtype not in FLOATS:
            return self
        info = np.finfo(self.dtype.np)
        result = where(unary_predicate("isnan", self), nan, self)
        result = where(unary_predicate("isposinf", self), float(info.max), result)
        return where(unary_predicate("isneginf", self), float(info.min), result)

    def new_full(self, size: tuple, value: Any) -> "Sym":
        if tuple(size) != ():
            raise NotFusible("new_full of a shape")
        return to_literal(self.builder, value, self.dtype)


def to_literal(builder: Builder, value: Any, dt: dtypes.dtype) -> Sym:
    """A 0-d constant of ``dt`` (``x.new_full((), value)``, a masked_fill value)."""
    if isinstance(value, float) and not math.isfinite(value) and not dt.is_floating_point:
        raise NotFusible("a non-finite integer")
    return builder.emit(_literal(value, dt), dt, 0)


def unary_predicate(name: str, x: Sym) -> Sym:
    """isnan/isposinf/isneginf of a float ``x`` (a bool)."""
    if x.dtype not in FLOATS:
        raise NotFusible(f"{name} of {x.dtype.name}")
    return x.builder.emit(f"s.{name}({x.name})", dtypes.bool, x.ndim)
