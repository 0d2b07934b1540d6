"""Elementwise tensor ops: promotion, broadcasting, kernels, and their gradients.

Every unary and binary op is a ``Function`` class made from its declaration in ``ember.opcodes``: the op code,
how it types its result, what its backward reads and the backward formula, written in tensor ops (so it is
itself differentiable). ``unary(name, x)`` and ``binary(name, a, b)`` run them by name; the Tensor methods and
torch functions that call them are made in ``methods`` and ``elementwise_functions``. The functions written out
here are the ones with more to them (``add``'s ``alpha``, ``div``'s ``rounding_mode``, the predicates) and the
ternary ops.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import opcodes as op
from ..opcodes import BOOL, FLOAT, FLOAT_ONLY, INT_ONLY, SAME  # noqa: F401 - how an op types its result
from ..kernels.common.quiet import quietly
from ..autograd import dual_levels, function as _function
from ..autograd.function import NO_RECORD, Function, must_apply
from ..autograd.tangents import total_tangent
from ..autograd.grad_mode import is_grad_enabled
from . import autocast_policy, dtypes
from ._dispatch import as_array, backend, broadcast_shapes, compute_dtype, empty_like_layout, on_device, shape_of, \
    sum_to_shape
from .tensor import Tensor, _check_inplace, _check_no_internal_overlap
from .out_arg import with_out
from .views import rebase_history
from .arguments import tensor_args
from .interop import ndarray_operator


def _float_of(dt: dtypes.dtype) -> dtypes.dtype:
    return dt if dt.is_floating_point else dtypes.get_default_dtype()


def _dtype_name(dt: dtypes.dtype) -> str:
    return dtypes.SCALAR_TYPE_NAMES[dt.name]


def _types(name: str, kind: str, promoted: dtypes.dtype) -> tuple[dtypes.dtype, dtypes.dtype]:
    """(dtype the kernel computes in, dtype of the result) for an op of ``kind``."""
    if kind == FLOAT:
        result = _float_of(promoted)
        return compute_dtype(result), result
    if kind == BOOL:
        return compute_dtype(promoted), dtypes.bool
    if (kind == INT_ONLY and promoted.is_floating_point) or (kind == FLOAT_ONLY and not promoted.is_floating_point):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(promoted)}\'')
    return compute_dtype(promoted), promoted


# The host's elementwise kernels, for the fast paths that run on two NumPy arrays only (``backend()`` of no
# device operand is the host's).
_HOST = backend().elementwise


def _refuse(cls: type, dt: dtypes.dtype) -> None:
    raise NotImplementedError(f'"{cls.kernel}_cpu" not implemented for \'{_dtype_name(dt)}\'')


def _run(kernel: Callable, code: int, arrays: list[np.ndarray], shape: tuple[int, ...], cdt: dtypes.dtype,
         rdt: dtypes.dtype) -> np.ndarray:
    """Run ``kernel(code, *arrays, out)`` into a fresh array, converting from the compute dtype if needed."""
    template = next((a for a in arrays if a.shape == shape), None)
    store_dt = dtypes.bool if rdt is dtypes.bool else cdt
    result = empty_like_layout(template, shape, store_dt, like=next((a for a in arrays if on_device(a)), None),
                               operands=arrays)
    kernel(code, *arrays, result)
    # narrowing to float16 may overflow: inf is the result (as in torch), not a NumPy warning
    return result if store_dt is rdt else quietly(result.astype, rdt.np)


# ----------------------------------------------------------------------------- unary
def _class_name(d: op.Elementwise) -> str:
    """torch's node stem: ``Exp``, ``FloorDivide``; ops of ``torch.special`` only are ``SpecialEntr``."""
    name = d.name.capitalize() if d.arity == 1 else d.name.title().replace("_", "")
    return "Special" + name if d.special and not d.function and not d.method else name


class _Unary(Function):
    """Base of one-input ops; ``_unary_class`` sets the attributes from the op's declaration."""

    code: int = -1
    kind: str = SAME
    kernel = ""  # the op in torch's dtype errors ('"frac_cpu" not implemented for ...')
    grad: Callable | None = None
    uses_input = True    # the backward reads the input (saved)
    uses_output = False  # the backward reads the result (saved)
    checks_inputs = False  # some input dtypes have a rule of their own (``unary`` applies these four)
    refuses: tuple[str, ...] = ()  # input dtypes torch has no kernel for
    integer_identity = False  # integers come back unchanged
    bool_error = ""  # torch's error for a bool input
    bool_as_int64 = False  # a bool input computes as int64

    @classmethod
    def forward(cls, ctx, x: Tensor) -> Any:
        cdt, rdt = _types(cls.kernel, cls.kind, x.dtype)
        arr = as_array(x, cdt)
        result = Tensor._make(_run(backend(x).unary, cls.code, [arr], arr.shape, cdt, rdt))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x if cls.uses_input else None, result if cls.uses_output else None)
        return result

    @classmethod
    def backward(cls, ctx, g: Tensor) -> Tensor:
        if cls.grad is None:
            raise RuntimeError(f"the derivative for '{cls.kernel}' is not implemented.")
        x, y = ctx.saved_tensors
        return cls.grad(x, y, g)

    @classmethod
    def jvp_rule(cls, args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: the backward formula ``g * f'(x)`` taken at ``g = t``."""
        if cls.grad is None:
            raise RuntimeError(f"the derivative for '{cls.kernel}' is not implemented.")
        return cls.grad(args[0], outputs[0], tangents[0])


def _unary_class(d: op.Unary) -> type:
    attrs = {"code": d.code, "kind": d.result, "kernel": d.name.replace("_", ""),
             "grad": staticmethod(d.grad) if d.grad else None,
             "uses_input": d.grad_reads_input, "uses_output": d.grad_reads_output,
             "checks_inputs": bool(d.refuses or d.integer_identity or d.bool_error or d.bool_as_int64),
             "refuses": d.refuses, "integer_identity": d.integer_identity, "bool_error": d.bool_error,
             "bool_as_int64": d.bool_as_int64}
    cls = type(_class_name(d), (_Unary,), attrs)
    cls.__doc__ = f"Elementwise {d.name}."
    return cls


# The unary ops with a Function (``GENERATED``, ``WRITTEN`` and ``INTERNAL`` declarations), by name.
UNARY_OPS: dict[str, op.Unary] = {d.name: d for d in op.UNARY if d.surface != op.KERNEL}
_UNARY_CLASSES = {name: _unary_class(d) for name, d in UNARY_OPS.items()}


@tensor_args
@with_out
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - torch's name
    """Round half to even, at ``decimals`` digits after the point (as torch: scale, round, unscale; float16 and
    bfloat16 in float32, rounded once)."""
    if decimals == 0:
        return unary("round", input)
    if input.dtype.compute is not input.dtype:
        return round(input.to(input.dtype.compute), decimals=decimals).to(input.dtype)
    scale = 10.0 ** decimals
    return unary("round", input * scale) / scale


def _check_tensor(name: str, x: Any) -> Tensor:
    """``x`` when it is a tensor; torch's TypeError naming ``name`` otherwise."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return x


def unary(name: str, x: Any) -> Tensor:
    """Apply the unary op ``name`` to tensor ``x``."""
    _check_tensor(name, x)
    if autocast_policy.ACTIVE and autocast_policy.covers(name, x):
        return autocast_policy.run(name, unary, name, x)
    cls = _UNARY_CLASSES[name]
    if cls.checks_inputs:  # one attribute test for the ops without such rules
        dt = x.dtype
        if dt.name in cls.refuses:
            _refuse(cls, dt)
        if cls.integer_identity and not dt.is_floating_point:
            return x.clone()
        if dt is dtypes.bool:
            if cls.bool_error:
                raise RuntimeError(cls.bool_error)
            if cls.bool_as_int64:  # torch squares as pow(x, 2), and bool ** int is int64
                x = x.to(dtypes.int64)
    if must_apply(x):
        return cls.apply(x)
    return cls.forward(NO_RECORD, x)


def _predicate(code: int, x: Tensor, integer_value: bool) -> Tensor:
    """isnan/isinf/...: bool results with no gradient; integers have a fixed answer."""
    if not x.dtype.is_floating_point:
        return Tensor._make(np.full(x._array.shape, integer_value, dtype=np.bool_, like=x._array))
    arr = as_array(x, compute_dtype(x.dtype))
    out = np.empty(arr.shape, dtype=np.bool_, like=arr)
    backend(x).unary(code, arr, out)
    return Tensor._make(out)


@tensor_args
def isnan(x: Tensor) -> Tensor:
    """Which elements are NaN."""
    return _predicate(op.ISNAN, x, False)


@tensor_args
def isinf(x: Tensor) -> Tensor:
    """Which elements are +inf or -inf."""
    return _predicate(op.ISINF, x, False)


@tensor_args
@with_out
def isposinf(x: Tensor) -> Tensor:
    """Which elements are +inf."""
    return _predicate(op.ISPOSINF, x, False)


@tensor_args
@with_out
def isneginf(x: Tensor) -> Tensor:
    """Which elements are -inf."""
    return _predicate(op.ISNEGINF, x, False)


@tensor_args
def isfinite(x: Tensor) -> Tensor:
    """Which elements are neither NaN nor infinite."""
    return _predicate(op.ISFINITE, x, True)


@tensor_args
@with_out
def signbit(x: Tensor) -> Tensor:
    """Which elements have the sign bit set (-0.0 included)."""
    if not x.dtype.is_floating_point:
        return binary("lt", x, 0)
    return _predicate(op.SIGNBIT, x, False)


@tensor_args
@with_out(cast=True)
def logical_not(x: Tensor) -> Tensor:
    """Elementwise ``not`` (result is bool)."""
    out = np.empty(x._array.shape, dtype=np.bool_, like=x._array)
    backend(x).unary(op.LOGICAL_NOT, as_array(x, compute_dtype(x.dtype)), out)
    return Tensor._make(out)


@tensor_args
@with_out
def bitwise_not(x: Tensor) -> Tensor:
    """Elementwise bit inversion (logical not for bool)."""
    if x.dtype is dtypes.bool:
        return logical_not(x)
    _types("bitwise_not", INT_ONLY, x.dtype)
    out = np.empty_like(x._array)
    backend(x).unary(op.BITWISE_NOT, x._array, out)
    return Tensor._make(out)


# ----------------------------------------------------------------------------- binary
class _Binary(Function):
    """Base of two-input ops; either input may be a Python number."""

    code: int = -1
    kind: str = SAME
    grad: Callable | None = None
    uses_output = False
    uses_inputs = True  # add and sub need neither input for their gradient: nothing is saved for them
    exact_scalar = ""  # which one-element operands keep their value (see ``opcodes.Binary.exact_scalar``)

    @classmethod
    def compute(cls, a: Any, b: Any) -> np.ndarray:
        """The result array, with promotion, broadcasting and validation (no autograd)."""
        x, y = getattr(a, "_array", None), getattr(b, "_array", None)
        if type(x) is np.ndarray and type(y) is np.ndarray and x.shape == y.shape and x.dtype == y.dtype and x.ndim:
            code = _same_dtype_code(cls, x.dtype)
            out = None if code is None else _HOST.binary_same_layout(code, x, y)
            if out is not None:
                return out
        promoted = dtypes.result_type_of((a, b))
        code, cdt, rdt = cls.select(promoted)
        shape = broadcast_shapes(shape_of(a) or (), shape_of(b) or (), op=cls.kernel)
        if promoted.compute is promoted:
            arrays = [as_array(a, cdt), as_array(b, cdt)]
        else:  # float16 or bfloat16, computed in float32: the operands are rounded to that dtype first, as in torch
            keep_a = cls.exact_scalar == op.EITHER and x is None
            keep_b = cls.exact_scalar and (y is None or y.ndim == 0)
            arrays = [as_array(a, cdt) if keep_a else _rounded_operand(a, promoted, cdt),
                      as_array(b, cdt) if keep_b else _rounded_operand(b, promoted, cdt)]
        cls.validate(a, b, arrays, cdt)
        return _run(backend(a, b).binary, code, arrays, shape, cdt, rdt)

    @classmethod
    def forward(cls, ctx, a: Any, b: Any) -> Any:
        out = cls.compute(a, b)
        result = Tensor._make(out)
        if ctx.needs_input_grad:
            sa = a._array.shape if isinstance(a, Tensor) else None  # shape_of, inline: this runs for every op
            sb = b._array.shape if isinstance(b, Tensor) else None
            shape = out.shape
            # None: both operands had the result's shape (nothing to un-broadcast, and three fewer tuples kept
            # alive per graph node for the garbage collector to walk)
            ctx.shapes = None if sa == shape and sb == shape else (sa, sb)
            if cls.uses_inputs:
                ctx.save_for_backward(a if isinstance(a, Tensor) else None, b if isinstance(b, Tensor) else None,
                                      result if cls.uses_output else None)
                ctx.scalars = (None if isinstance(a, Tensor) else a, None if isinstance(b, Tensor) else b)
        return result

    @classmethod
    def select(cls, promoted: dtypes.dtype) -> tuple[int, dtypes.dtype, dtypes.dtype]:
        """The op code and (compute, result) dtypes for a promoted input dtype."""
        cdt, rdt = _types(cls.kernel, cls.kind, promoted)
        return cls.code, cdt, rdt

    @classmethod
    def validate(cls, a: Any, b: Any, arrays: list[np.ndarray], cdt: dtypes.dtype) -> None:
        """Reject inputs the kernel must never see."""

    @classmethod
    def backward(cls, ctx, g: Tensor) -> tuple:
        a = b = y = None
        if cls.uses_inputs:
            a, b, y = ctx.saved_tensors
            a = ctx.scalars[0] if a is None else a
            b = ctx.scalars[1] if b is None else b
        ga, gb = cls.grad(a, b, y, g, ctx.needs_input_grad)
        shapes = ctx.shapes
        if shapes is None:
            return ga, gb
        return sum_to_shape(ga, shapes[0]) if ga is not None else None, \
            sum_to_shape(gb, shapes[1]) if gb is not None else None

    @classmethod
    def jvp_rule(cls, args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: each operand's backward formula at its tangent broadcast to the output, summed."""
        a, b = args
        out = outputs[0]
        parts = []
        for i, t in enumerate(tangents):
            if t is not None:
                g = t if t.shape == out.shape else t.expand(tuple(out.shape))
                parts.append(cls.grad(a, b, out, g, (i == 0, i == 1))[i])
        return total_tangent(parts, out)


def _rounded_operand(x: Any, narrow: dtypes.dtype, cdt: dtypes.dtype) -> Any:
    """Operand ``x`` (a tensor or a number) of an op whose operands promote to float16/bfloat16 ``narrow``, in the
    compute dtype ``cdt``: first rounded to ``narrow`` unless it already is of it (torch casts every operand to the
    common dtype, so ``bf16 + 1.7`` adds bfloat16's 1.703125)."""
    if isinstance(x, Tensor) and x._array.dtype == narrow.np:
        return as_array(x, cdt)
    return as_array(x, narrow).astype(cdt.np)


_SAME_DTYPE_CODES: dict[tuple[type, str], int | None] = {}


def _same_dtype_code(cls: type, np_dtype: np.dtype) -> int | None:
    """The op code when ``cls`` on two tensors of ``np_dtype`` computes and returns that dtype with nothing to
    validate (so the same-layout fast path applies); None otherwise. Worked out once per class and dtype."""
    key = (cls, np_dtype.char)  # hashing a character is cheaper than hashing a dtype
    if key not in _SAME_DTYPE_CODES:
        try:
            code, cdt, rdt = cls.select(dtypes.to_dtype(np_dtype))
        except (NotImplementedError, RuntimeError, TypeError):
            code, cdt, rdt = None, None, None
        plain = cls.validate.__func__ is _Binary.validate.__func__
        _SAME_DTYPE_CODES[key] = code if plain and cdt is rdt and cdt is not None and cdt.np == np_dtype else None
    return _SAME_DTYPE_CODES[key]


def _check_int_divisor(cls, a, b, arrays, cdt):
    if not cdt.is_floating_point and arrays[1].size and not np.all(arrays[1]):
        raise RuntimeError("ZeroDivisionError")


def _int_or_float(int_code: int):
    """A ``select`` for ops whose integer operands run another kernel (``int_code``)."""
    def select(cls, promoted):
        cdt, rdt = _types(cls.kernel, SAME, promoted)
        return (cls.code if cdt.is_floating_point else int_code), cdt, rdt
    return select


def _by_float_width(codes: dict[dtypes.dtype, int]):
    """A ``select`` for ops with one kernel per float width (``codes``; the class's own code for the others)."""
    def select(cls, promoted):
        cdt, rdt = _types(cls.kernel, cls.kind, promoted)
        return codes.get(rdt, cls.code), cdt, rdt
    return select


def _refusing(select: Callable, refused: tuple[str, ...]):
    """``select`` that first refuses the promoted dtypes torch has no kernel for (gcd's bool)."""
    def checked(cls, promoted):
        if promoted.name in refused:
            _refuse(cls, promoted)
        return select(cls, promoted)
    return checked


def _pow_validate(cls, a, b, arrays, cdt):
    # only a negative Python-number exponent is refused: a tensor of negative exponents gives torch's integer results
    if not cdt.is_floating_point and not isinstance(b, Tensor) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


# Float powers torch computes by cheaper ops (its pow_tensor_scalar_optimized), so ember matches it bit for bit
# and skips the transcendental ``pow``: x**2 = x*x, x**3 = x*x*x (one pass), x**0.5 = sqrt(x), x**-1 = 1/x.
_POW_SHORTCUTS: dict[float, Callable[[Tensor], np.ndarray]] = {
    2.0: lambda x: _BINARY_CLASSES["mul"].compute(x, x),
    3.0: lambda x: _run(backend(x).unary, op.CUBE, [x._array], x._array.shape, x.dtype, x.dtype),
    0.5: lambda x: _UNARY_CLASSES["sqrt"].forward(NO_RECORD, x)._array,
    -1.0: lambda x: _BINARY_CLASSES["div"].compute(1.0, x),
}


def _square(x: Tensor) -> Tensor:
    return Tensor._make(_BINARY_CLASSES["mul"].compute(x, x))


# The bfloat16 powers torch computes in bfloat16 steps, each product rounded: x**3 = (x*x)*x, x**-2 = 1/(x*x) (its
# other shortcuts round once, as the plain kernel does).
_BFLOAT16_POW_STEPS: dict[float, Callable[[Tensor], np.ndarray]] = {
    3.0: lambda x: _BINARY_CLASSES["mul"].compute(_square(x), x),
    -2.0: lambda x: _BINARY_CLASSES["div"].compute(1.0, _square(x)),
}


def _pow_compute(cls, a, b):
    """``a ** b``, through ``_POW_SHORTCUTS`` for a float32/float64 tensor and one of their exponents (and
    ``_BFLOAT16_POW_STEPS`` for bfloat16)."""
    if isinstance(a, Tensor) and type(b) in (int, float):
        dt = a.dtype
        shortcut = _POW_SHORTCUTS.get(float(b)) if dt in (dtypes.float32, dtypes.float64) else \
            _BFLOAT16_POW_STEPS.get(float(b)) if dt is dtypes.bfloat16 else None
        if shortcut is not None:
            return shortcut(a)
    return _Binary.compute.__func__(cls, a, b)


# What a written op does beyond its declaration (pow: the negative-exponent check and the shortcuts).
_BINARY_OVERRIDES = {"pow": {"validate": _pow_validate, "compute": _pow_compute}}


def _binary_rules(d: op.Binary) -> dict[str, Callable]:
    """The ``select``/``validate``/``compute`` methods that ``d``'s declaration (and ``_BINARY_OVERRIDES``) ask for."""
    rules: dict[str, Callable] = {}
    if d.integer:
        rules["select"] = _int_or_float(op.BINARY_BY_NAME[d.integer].code)
    elif d.widths:
        rules["select"] = _by_float_width({getattr(dtypes, dt): op.BINARY_BY_NAME[kernel].code
                                           for dt, kernel in d.widths})
    if d.refuses:
        rules["select"] = _refusing(rules.get("select", _Binary.select.__func__), d.refuses)
    if d.int_divisor:
        rules["validate"] = _check_int_divisor
    rules.update(_BINARY_OVERRIDES.get(d.name, {}))
    return rules


def _binary_class(d: op.Binary) -> type:
    attrs = {"code": d.code, "kind": d.result, "kernel": d.name.replace("_", ""),
             "grad": staticmethod(d.grad) if d.grad else None,
             "uses_output": d.grad_reads_output, "uses_inputs": d.grad_reads_input, "exact_scalar": d.exact_scalar,
             **{k: classmethod(v) for k, v in _binary_rules(d).items()}}
    cls = type(_class_name(d), (_Binary,), attrs)
    cls.__doc__ = f"Elementwise {d.name} of two operands."
    return cls


# The binary ops with a Function, by name.
BINARY_OPS: dict[str, op.Binary] = {d.name: d for d in op.BINARY if d.surface != op.KERNEL}
_BINARY_CLASSES = {name: _binary_class(d) for name, d in BINARY_OPS.items()}


def _check_operand(name: str, x: Any, position: int) -> None:
    if not isinstance(x, (Tensor, int, float, bool, np.number, np.bool_)):
        raise TypeError(
            f"{name}(): argument '{'input' if position == 1 else 'other'}' (position {position}) must be "
            f"Tensor or Number, not {type(x).__name__}"
        )


# Ops whose operands must both be tensors (torch has no Scalar overload for them).
_TENSOR_ONLY = frozenset(name for name, d in BINARY_OPS.items() if d.tensor_only)


def _check_tensor_operands(name: str, a: Any, b: Any) -> None:
    for position, (arg, x) in enumerate((("input", a), ("other", b)), start=1):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(x).__name__}")


def _check_sub_operands(a: Any, b: Any) -> None:
    """torch refuses bool operands in subtraction (a tensor or a Python bool)."""
    a_bool, b_bool = _is_bool(a), _is_bool(b)
    if a_bool and b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if a_bool or b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
            "use the `~` or `logical_not()` operator instead."
        )


def binary(name: str, a: Any, b: Any) -> Tensor:
    """Apply the binary op ``name`` with broadcasting and torch's type promotion."""
    if autocast_policy.ACTIVE and autocast_policy.covers(name, (a, b)):
        return autocast_policy.run(name, binary, name, a, b)
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):  # two tensors: the common case needs no check
        if name in _TENSOR_ONLY:
            _check_tensor_operands(name, a, b)
        try:
            _check_operand(name, a, 1)
            _check_operand(name, b, 2)
        except TypeError:
            result = ndarray_operator(name, a, b)  # a NumPy array operand: what torch's operators give
            if result is None:
                raise
            return result
    if name == "sub":
        _check_sub_operands(a, b)
    cls = _BINARY_CLASSES[name]
    if must_apply(a, b) if cls.grad is not None else _function._APPLY_WRAPPERS:  # ops without a gradient record nothing
        return cls.apply(a, b)
    return Tensor._make(cls.compute(a, b))


def _is_bool(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype is dtypes.bool or isinstance(x, (bool, np.bool_))


def _scaled_sum(name: str, input: Any, other: Any, alpha: Any) -> Tensor:
    """``input + alpha * other`` (``name`` "add") or ``input - alpha * other`` ("sub"), with torch's alpha rules:
    no float alpha for integral operands, and a bool result takes alpha as a bool. float16 and bfloat16 operands
    and alpha are rounded to their dtype and the whole sum computed in float32 and rounded once, as torch's kernel
    does (not ``alpha * other`` rounded first)."""
    promoted = dtypes.result_type_of((input, other))
    if not promoted.is_floating_point and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if name == "sub":
        _check_sub_operands(input, other)  # before ``alpha * other`` turns a bool into a number
    if promoted.compute is promoted:
        return binary(name, input, mul(other, bool(alpha) if promoted is dtypes.bool else alpha))
    wide = promoted.compute

    def widened(x: Any) -> Any:
        return x.to(promoted).to(wide) if isinstance(x, Tensor) else float(promoted.np.type(x))

    return binary(name, widened(input), mul(widened(other), widened(alpha))).to(promoted)


@tensor_args
@with_out(cast=True)
def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other``."""
    if type(alpha) is not int or alpha != 1:  # the default costs one test: ``x + y`` comes through here
        return _scaled_sum("add", input, other, alpha)
    return binary("add", input, other)


def add_into(total: Tensor, other: Tensor) -> bool:
    """``total += other`` in place, recording nothing, for the backward engine's sums of gradients only it holds:
    done for host tensors of one shape and a non-bool dtype; False, with nothing done, for any other pair (the
    engine then adds out of place)."""
    return _HOST.add_into(total._array, other._array)


@tensor_args
@with_out(cast=True)
def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``."""
    if type(alpha) is not int or alpha != 1:
        return _scaled_sum("sub", input, other, alpha)
    return binary("sub", input, other)


@tensor_args
@with_out(cast=True)
def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product."""
    return binary("mul", input, other)


@tensor_args
@with_out(cast=True)
def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """True division, or ``rounding_mode`` "trunc" / "floor" (integer results stay integer)."""
    if rounding_mode is None:
        if not isinstance(input, Tensor) and isinstance(other, Tensor) and other.dtype.compute is not other.dtype:
            return mul(unary("reciprocal", other), input)  # ``number / half``: torch's __rtruediv__, rounded twice
        return binary("div", input, other)
    if rounding_mode == "trunc":
        return binary("trunc_divide", input, other)
    if rounding_mode == "floor":
        return binary("floor_divide", input, other)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


@tensor_args
@with_out(cast=True)
def floor_divide(input: Any, other: Any) -> Tensor:
    """Division rounded towards minus infinity (Python's ``//``)."""
    return binary("floor_divide", input, other)


@tensor_args
@with_out(cast=True)
def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - torch's name
    """``input ** exponent`` with torch's promotion (int ** negative int raises; a Python int exponent that an
    integer tensor's dtype cannot hold raises, as in torch, instead of wrapping)."""
    _check_scalar_fits(input, exponent)
    return binary("pow", input, exponent)


def _check_scalar_fits(t: Any, number: Any) -> None:
    """torch's overflow error when Python int ``number`` meets integer tensor ``t`` of a dtype too narrow for it."""
    if isinstance(t, Tensor) and isinstance(number, int) and not isinstance(number, bool) \
            and not t.dtype.is_floating_point and t.dtype is not dtypes.bool:
        dtypes.check_number_fits(number, t.dtype)


def where(condition: Tensor, input: Any, other: Any) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (with broadcasting and promotion)."""
    return Where.apply(condition, input, other)


class Where(Function):
    """Elementwise selection between two operands."""

    @staticmethod
    def forward(ctx, condition, a, b):
        if not isinstance(condition, Tensor) or condition.dtype is not dtypes.bool:
            raise RuntimeError(
                f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                f"{_dtype_name(condition.dtype) if isinstance(condition, Tensor) else type(condition).__name__}"
            )
        rdt = dtypes.result_type_of((a, b))
        cdt = compute_dtype(rdt)
        shape = broadcast_shapes(condition.shape, shape_of(a) or (), shape_of(b) or (), op="where")
        arrays = [condition._array, as_array(a, cdt), as_array(b, cdt)]
        out = _run(backend(a, b).ternary, op.WHERE, arrays, shape, cdt, rdt)
        if ctx.needs_input_grad:
            ctx.condition = condition
            ctx.shapes = (shape_of(a), shape_of(b))
        return out

    @staticmethod
    def backward(ctx, g):
        zero = g.new_zeros(())
        ga = sum_to_shape(where(ctx.condition, g, zero), ctx.shapes[0]) if ctx.needs_input_grad[1] else None
        gb = sum_to_shape(where(ctx.condition, zero, g), ctx.shapes[1]) if ctx.needs_input_grad[2] else None
        return None, ga, gb

    @staticmethod
    def jvp_rule(args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: the tangents selected as the values are (zero for an operand without one)."""
        _, ta, tb = tangents
        return total_tangent([where(args[0], 0.0 if ta is None else ta, 0.0 if tb is None else tb)], outputs[0])


class Clamp(Function):
    """Elementwise clamp to [min, max]; bounds may be numbers, tensors or None."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        rdt = dtypes.result_type_of((x, lo, hi))
        _check_clamp_dtype(rdt, lo, hi)
        cdt = compute_dtype(rdt)
        lowest, highest = _dtype_limits(cdt)
        lo_a = as_array(lo, cdt) if lo is not None else np.array(lowest, cdt.np)
        hi_a = as_array(hi, cdt) if hi is not None else np.array(highest, cdt.np)
        shape = broadcast_shapes(x.shape, shape_of(lo) or (), shape_of(hi) or (), op="clamp")
        arrays = [as_array(x, cdt), lo_a, hi_a]
        out = _run(backend(x).ternary, op.CLAMP, arrays, shape, cdt, rdt)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, lo if isinstance(lo, Tensor) else None, hi if isinstance(hi, Tensor) else None)
            ctx.bounds = (lo, hi)
        return out

    @staticmethod
    def backward(ctx, g):
        x, lo_t, hi_t = ctx.saved_tensors
        lo = lo_t if lo_t is not None else ctx.bounds[0]
        hi = hi_t if hi_t is not None else ctx.bounds[1]
        inside = (x >= lo) if lo is not None else None
        if hi is not None:
            inside = (x <= hi) if inside is None else inside & (x <= hi)
        n = ctx.needs_input_grad
        gx = sum_to_shape(g * inside, x.shape) if n[0] else None
        glo = sum_to_shape(g * (x < lo_t), lo_t.shape) if lo_t is not None and n[1] else None
        ghi = sum_to_shape(g * (x > hi_t), hi_t.shape) if hi_t is not None and n[2] else None
        return gx, glo, ghi


def _dtype_limits(dt: dtypes.dtype) -> tuple[Any, Any]:
    """The lowest and highest value of ``dt`` (the bound an absent clamp limit stands for)."""
    if dt.is_floating_point:
        return -np.inf, np.inf
    if dt is dtypes.bool:
        return False, True
    info = np.iinfo(dt.np)
    return info.min, info.max


def _check_clamp_dtype(rdt: dtypes.dtype, lo: Any, hi: Any) -> None:
    """torch clamps bool only against one tensor bound; number bounds and two tensor bounds have no kernel."""
    if rdt is not dtypes.bool:
        return
    bounds = [b for b in (lo, hi) if b is not None]
    if len(bounds) == 1 and isinstance(bounds[0], Tensor):
        return
    if isinstance(bounds[0], Tensor):
        kernel = "clamp_cpu"
    elif len(bounds) == 2:
        kernel = "clamp_scalar_cpu"
    else:
        kernel = "clamp_min_scalar_cpu" if hi is None else "clamp_max_scalar_cpu"
    raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


@tensor_args
@with_out
def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's names
    """Limit values to [min, max] (NaN propagates)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if min is not None and max is not None and isinstance(min, Tensor) != isinstance(max, Tensor):
        raise TypeError(f"clamp(): min and max must both be tensors or both be numbers, got min="
                        f"{type(min).__name__} and max={type(max).__name__}")
    _check_scalar_fits(input, min)
    _check_scalar_fits(input, max)
    return Clamp.apply(input, min, max)


class Lerp(Function):
    """``start + weight * (end - start)``, exact at weight 0 and 1."""

    @staticmethod
    def forward(ctx, start, end, weight):
        rdt = dtypes.result_type_of((start, end))
        cdt = compute_dtype(rdt)
        shape = broadcast_shapes(start.shape, end.shape, shape_of(weight) or (), op="lerp")
        arrays = [as_array(start, cdt), as_array(end, cdt), as_array(weight, cdt)]
        out = _run(backend(start).ternary, op.LERP, arrays, shape, cdt, rdt)
        if ctx.needs_input_grad:
            ctx.save_for_backward(start, end, weight if isinstance(weight, Tensor) else None)
            ctx.weight = weight
        return out

    @staticmethod
    def backward(ctx, g):
        start, end, w_t = ctx.saved_tensors
        w = w_t if w_t is not None else ctx.weight
        n = ctx.needs_input_grad
        gs = sum_to_shape(g * (1 - w), start.shape) if n[0] else None
        ge = sum_to_shape(g * w, end.shape) if n[1] else None
        gw = sum_to_shape(g * (end - start), w_t.shape) if w_t is not None and n[2] else None
        return gs, ge, gw


def _check_lerp_dtypes(input: Tensor, end: Any, weight: Any) -> None:
    """torch's lerp computes in ``input``'s dtype: ``end`` (and a weight tensor of dim > 0) must match it."""
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and other.dtype is not input.dtype and (name == "end" or other.ndim):
            raise RuntimeError(f"lerp: expected dtype {dtypes.CPP_TYPE_NAMES[input.dtype.name]} for `{name}` but got "
                               f"dtype {dtypes.CPP_TYPE_NAMES[other.dtype.name]}")


@tensor_args
@with_out(cast=True)
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """Linear interpolation between ``input`` and ``end``."""
    _check_lerp_dtypes(input, end, weight)
    return Lerp.apply(input, end, weight)


def _addc(op: str, combine: Callable, input: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    """``input + combine(value * tensor1, tensor2)`` as torch computes it: in the compute dtype of all three tensors'
    dtype (float32 for float16, so a float64 ``input`` keeps the product in float64), ``value`` cast to that dtype
    first (0.5 is 0 for integers), rounded to the result dtype once at the end. torch fuses the multiply-add of
    addcmul, which this rounds twice: at most an ulp off."""
    dt = dtypes.result_type_of((input, tensor1, tensor2))
    if dt is dtypes.bool:
        raise NotImplementedError(f'"{op}_cpu_out" not implemented for \'Bool\'')
    wide = compute_dtype(dt)
    scale = float(value) if dt.is_floating_point else int(value)
    t1 = tensor1.to(wide)
    return add(input, combine(t1 if scale == 1 else mul(t1, scale), tensor2.to(wide))).to(dt)


@tensor_args
@with_out(cast=True)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("addcmul", input):
        return autocast_policy.run("addcmul", addcmul, input, tensor1, tensor2, value=value)
    return _addc("addcmul", mul, input, tensor1, tensor2, value)


@tensor_args
@with_out(cast=True)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("addcdiv", input):
        return autocast_policy.run("addcdiv", addcdiv, input, tensor1, tensor2, value=value)
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
            "a true division of tensor1 and tensor2."
        )
    return _addc("addcdiv", div, input, tensor1, tensor2, value)


@tensor_args
@with_out
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN and infinities by finite numbers (the dtype's extremes by default)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    info = np.finfo(input.dtype.np)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    result = where(isnan(input), nan, input)
    result = where(isposinf(input), posinf, result)
    return where(isneginf(input), neginf, result)


# ----------------------------------------------------------------------------- in place
def inplace(self: Tensor, name: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """Make ``self`` hold ``compute(self)``'s result, with torch's checks and autograd rebasing.

    With autograd on, ``compute`` sees a copy of the old value that stands in
    ``self``'s place in the graph (so backward can still use the old value),
    and ``self`` then takes over the result's place in the graph.
    """
    _check_inplace(self, name + "_")
    recording = is_grad_enabled()
    before = _snapshot(self) if recording else self
    if recording and _function._APPLY_WRAPPERS:
        dual_levels.carry_tangent(self, before)
    result = compute(before)
    if result.shape != self.shape:
        raise RuntimeError(
            f"{name}_(): output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    if not dtypes.can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"{name}_(): result type {_dtype_name(result.dtype)} can't be cast to the desired output "
                           f"type {_dtype_name(self.dtype)}")
    _check_no_internal_overlap(self)
    np.copyto(self._array, result._array, casting="unsafe")
    self._version.value += 1
    if _function._APPLY_WRAPPERS:
        dual_levels.after_inplace(self, result)
    if recording and result._requires_grad:
        rebase_history(self, result)
    return self


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t``'s current value at ``t``'s position in the graph."""
    snap = Tensor._make(t._array.copy(), requires_grad=t._requires_grad)
    snap._grad_fn, snap._output_nr = t._grad_fn, t._output_nr
    return snap


# ---- composite elementwise functions (real tensors) ---------------------------------------------------------------
def _as_float(x: Tensor) -> Tensor:
    """``x`` itself when floating, else converted to the default float dtype (torch's rule for these functions)."""
    return x.to(_float_of(x.dtype))


@tensor_args
@with_out(cast=True)
def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (integer and bool inputs give the default float dtype)."""
    return mul(_as_float(_check_tensor("deg2rad", input)), math.pi / 180.0)


@tensor_args
@with_out(cast=True)
def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees (integer and bool inputs give the default float dtype)."""
    return mul(_as_float(_check_tensor("rad2deg", input)), 180.0 / math.pi)


@tensor_args
@with_out(cast=True)
def angle(input: Tensor) -> Tensor:
    """The argument of each (real) element: pi for negatives, 0 otherwise, NaN kept; a float result."""
    x = _as_float(_check_tensor("angle", input))
    return where(x.isnan(), x, mul((x < 0).to(x.dtype), math.pi))  # pi rounded once, in x's dtype


@tensor_args
def positive(input: Tensor) -> Tensor:
    """``input`` itself, as unary ``+`` (torch refuses bool tensors)."""
    if _check_tensor("positive", input).dtype is dtypes.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input
