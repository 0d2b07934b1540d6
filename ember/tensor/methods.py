"""Bind the tensor ops as ``Tensor`` methods and operators, with torch's names: the one place ``Tensor`` gets them.

Importing this module binds every method of the tensor layer (``bind`` runs once, at the bottom): the ops, the
activations torch has as tensor ops (``x.softmax(1)``, ``activation_ops.py``) and autograd's ``backward`` and
gradient hooks (``autograd_methods.py``). It imports nothing above the tensor layer; ``ember.linalg``, the one
layer above with methods of its own (``x.det()``), hands them to ``bind_methods``. Every method gets its argument
guard here (``arguments.method_args``): the ones defined in the ``Tensor`` class body too.
"""
from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np

from .. import opcodes as op
from . import activation_ops, autograd_methods, closeness, composite, contractions, conversion, elementwise as ew, \
    indexing, joins, legacy_types, matmul as mm, nan_reduce, pinned, predicates, quantile, random_ops, \
    reduce as red, scatter_views, shape_utils, sorting, splits, view_copies, views
from .arguments import method_args, unguarded
from .tensor import Tensor
from . import blas_like, host_callables, index_reduce, renorm, special_math, statistics
from . import interop


def _method(fn: Callable, name: str) -> Callable:
    """``fn`` as a method, with the method's argument guard: plain functions bind directly (no extra call frame),
    others get a wrapper. A function given ``out=`` binds without it (torch's methods take none). Operators
    (dunder names) stay unguarded (see ``_guard_class_methods``)."""
    fn = unguarded(fn)
    fn = getattr(fn, "without_out", fn)
    if getattr(fn, "__name__", None) != name or getattr(fn, "__code__", None) is None:
        fn = _method_wrapper(fn, name)
    return fn if name.startswith("__") else method_args(fn)


def _method_wrapper(fn: Callable, name: str) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn  # its signature: the argument guard names fn's parameters (and their NumPy aliases)
    return method


def _inplace_of(name: str, fn: Callable) -> Callable:
    """The in-place method ``name_``: ``fn(self, *args)`` written back into ``self``."""
    fn = unguarded(fn)
    return _method(lambda self, *args, **kw: ew.inplace(self, name, lambda s: fn(s, *args, **kw)), name + "_")


def _comparison(fn: Callable, name: str) -> Callable:
    """``==``/``!=``: elementwise for tensors, numbers and NumPy arrays, Python's identity rule for anything else
    (e.g. None)."""
    def compare(self: Tensor, other: Any) -> Any:
        if isinstance(other, (Tensor, int, float, bool, np.number, np.bool_, np.ndarray)):
            return fn(self, other)
        return NotImplemented

    compare.__name__ = name
    return compare


def _reflected(fn: Callable, name: str) -> Callable:
    fn = unguarded(fn)
    return _method(lambda self, other: fn(other, self), name)


# The elementwise ops whose methods are made here from their declarations, and those written out (``ew.add``'s
# ``alpha``, ``ew.round``'s ``decimals``; ``composite`` binds its own logaddexp).
_GENERATED = [d for d in (*op.UNARY, *op.BINARY) if d.surface == op.GENERATED and d.method]
_WRITTEN = {"add": ew.add, "sub": ew.sub, "mul": ew.mul, "div": ew.div, "pow": ew.pow, "floor_divide": ew.floor_divide,
            "round": ew.round}
_ELEMENTWISE = {**op.UNARY_BY_NAME, **op.BINARY_BY_NAME}
# torch's other names of methods (and of their in-place forms)
ALIASES = {alias: d.name for d in _ELEMENTWISE.values() if d.method and d.surface in (op.GENERATED, op.WRITTEN)
           for alias in d.aliases}


def _unary_by_name(name: str) -> Callable:
    def method(self: Any) -> Tensor:
        return ew.unary(name, self)

    method.__name__ = method.__qualname__ = name
    return method


def _unary_inplace(name: str) -> Callable:
    """``x.name_()`` of a unary op reached by name (no arguments to pass on)."""
    return _method(lambda self: ew.inplace(self, name, lambda s: ew.unary(name, s)), name + "_")


def _binary_by_name(name: str) -> Callable:
    def method(a: Any, b: Any) -> Tensor:  # not ``other``, whose NumPy name ``x2`` would need a guard frame
        return ew.binary(name, a, b)

    method.__name__ = method.__qualname__ = name
    return method


def bind_methods(methods: dict[str, Callable]) -> None:
    """Attach ``methods`` (name -> function taking the tensor first) to ``Tensor``, each with its guard."""
    for name, fn in methods.items():
        setattr(Tensor, name, _method(fn, name))


def _guard_class_methods() -> None:
    """The argument guard of the methods the ``Tensor`` class body defines (``x.size(axis=0)``). Operators (dunder
    names) stay unwrapped: ``x + y`` pays no extra frame, and torch answers a wrong operand type there with
    NotImplemented anyway."""
    for name, value in list(vars(Tensor).items()):
        if not name.startswith("_") and isinstance(value, types.FunctionType):
            setattr(Tensor, name, method_args(value))


def bind() -> None:
    """Attach every op of the tensor layer to ``Tensor`` (once, when this module is imported)."""
    _guard_class_methods()
    # the functions the methods below call, without their guard (the method has its own)
    where, clamp, lerp, addcmul, addcdiv = map(unguarded, (ew.where, ew.clamp, ew.lerp, ew.addcmul, ew.addcdiv))
    methods = {d.name: (_unary_by_name if d.arity == 1 else _binary_by_name)(d.name) for d in _GENERATED}
    for name, fn in {**methods, **_WRITTEN}.items():
        setattr(Tensor, name, _method(fn, name))
        if _ELEMENTWISE[name].inplace_method:
            by_name = name in methods and _ELEMENTWISE[name].arity == 1
            setattr(Tensor, name + "_", _unary_inplace(name) if by_name else _inplace_of(name, fn))
    for alias, name in ALIASES.items():  # each with its in-place form
        setattr(Tensor, alias, getattr(Tensor, name))
        setattr(Tensor, alias + "_", getattr(Tensor, name + "_"))

    for name, fn in {
        "isnan": ew.isnan, "isinf": ew.isinf, "isfinite": ew.isfinite, "isposinf": ew.isposinf,
        "isneginf": ew.isneginf, "signbit": ew.signbit, "logical_not": ew.logical_not,
        "bitwise_not": ew.bitwise_not, "where": lambda self, cond, other: where(cond, self, other),
        "clamp": ew.clamp, "clip": ew.clamp, "lerp": ew.lerp, "addcmul": ew.addcmul, "addcdiv": ew.addcdiv,
        "nan_to_num": ew.nan_to_num, "deg2rad": ew.deg2rad, "rad2deg": ew.rad2deg, "angle": ew.angle,
        "positive": ew.positive,
        # reductions
        "sum": red.sum, "mean": red.mean, "prod": red.prod, "max": red.max, "min": red.min, "amax": red.amax,
        "amin": red.amin, "argmax": red.argmax, "argmin": red.argmin, "all": red.all, "any": red.any,
        "count_nonzero": red.count_nonzero, "var": red.var, "std": red.std, "norm": red.norm,
        "logsumexp": red.logsumexp, "logcumsumexp": red.logcumsumexp, "cumsum": red.cumsum, "cumprod": red.cumprod,
        "median": red.median, "nanmedian": red.nanmedian, "aminmax": red.aminmax,
        # views
        "view": views.view, "view_as": views.view_as, "reshape": views.reshape, "reshape_as": views.reshape_as,
        "flatten": views.flatten, "unflatten": views.unflatten, "squeeze": views.squeeze,
        "unsqueeze": views.unsqueeze, "permute": views.permute, "transpose": views.transpose,
        "swapaxes": views.transpose, "swapdims": views.transpose, "t": views.t, "expand": views.expand,
        "expand_as": views.expand_as, "broadcast_to": views.broadcast_to, "narrow": views.narrow,
        "select": views.select, "unbind": views.unbind, "split": views.split, "chunk": views.chunk,
        "movedim": views.movedim, "moveaxis": views.movedim, "diagonal": views.diagonal, "unfold": views.unfold,
        "as_strided": views.as_strided, "contiguous": views.contiguous,
        # in-place view ops: the tensor object itself changes shape (torch's names)
        "unsqueeze_": views.unsqueeze_, "squeeze_": views.squeeze_, "t_": views.t_, "transpose_": views.transpose_,
        "swapdims_": views.transpose_, "swapaxes_": views.transpose_, "as_strided_": views.as_strided_,
        "resize_": views.resize_, "resize_as_": views.resize_as_, "set_": views.set_,
        # products
        "matmul": mm.matmul, "mm": mm.mm, "bmm": mm.bmm, "dot": mm.dot, "mv": mm.mv, "outer": mm.outer,
        "ger": mm.outer,
        "addmm": mm.addmm,
        # conversion
        "to": conversion.to, "clone": conversion.clone, "float": conversion.float_, "double": conversion.double,
        "half": conversion.half, "long": conversion.long, "int": conversion.int_, "short": conversion.short,
        "bfloat16": conversion.bfloat16,
        "char": conversion.char, "byte": conversion.byte, "bool": conversion.bool_, "type_as": conversion.type_as,
        "copy_": conversion.copy_, "fill_": conversion.fill_, "zero_": conversion.zero_,
        "new_zeros": conversion.new_zeros, "new_ones": conversion.new_ones, "new_empty": conversion.new_empty,
        "new_full": conversion.new_full, "new_tensor": conversion.new_tensor,
        "new_empty_strided": conversion.new_empty_strided,
    }.items():
        setattr(Tensor, name, _method(fn, name))
    Tensor.clamp_ = _method(lambda self, min=None, max=None: ew.inplace(
        self, "clamp", lambda s: clamp(s, min, max)), "clamp_")
    Tensor.clip_ = Tensor.clamp_
    Tensor.lerp_ = _method(lambda self, end, weight: ew.inplace(self, "lerp", lambda s: lerp(s, end, weight)),
                           "lerp_")
    Tensor.addcmul_ = _method(lambda self, t1, t2, value=1: ew.inplace(
        self, "addcmul", lambda s: addcmul(s, t1, t2, value=value)), "addcmul_")
    Tensor.addcdiv_ = _method(lambda self, t1, t2, value=1: ew.inplace(
        self, "addcdiv", lambda s: addcdiv(s, t1, t2, value=value)), "addcdiv_")
    Tensor.clamp_min = _method(lambda self, min: clamp(self, min, None), "clamp_min")
    Tensor.clamp_max = _method(lambda self, max: clamp(self, None, max), "clamp_max")
    for name in ("clamp_min", "clamp_max", "logical_not", "bitwise_not", "deg2rad", "rad2deg", "nan_to_num",
                 "cumsum", "cumprod"):
        setattr(Tensor, name + "_", _inplace_of(name, getattr(Tensor, name)))
    for name in ("uniform_", "normal_", "bernoulli_", "exponential_", "random_", "geometric_", "log_normal_",
                 "cauchy_"):
        setattr(Tensor, name, _method(getattr(random_ops, name), name))
    Tensor.bernoulli = _method(random_ops.bernoulli, "bernoulli")
    Tensor.multinomial = _method(random_ops.multinomial, "multinomial")
    Tensor.cpu = _method(conversion.cpu, "cpu")
    Tensor.cuda = _method(conversion.cuda, "cuda")
    Tensor.pin_memory = _method(pinned.pin_memory, "pin_memory")
    Tensor.is_pinned = _method(pinned.is_pinned, "is_pinned")
    for module in (sorting, indexing, joins, contractions, closeness, composite, nan_reduce, legacy_types,
                   quantile, splits, shape_utils, scatter_views, view_copies, predicates, blas_like, statistics,
                   special_math, renorm, index_reduce, host_callables, activation_ops, autograd_methods):
        bind_methods(module.TENSOR_METHODS)
    Tensor.T = property(views.full_transpose)
    Tensor.mT = property(views.matrix_transpose)
    Tensor.H = property(views.conj_transpose)
    Tensor.mH = property(views.matrix_adjoint)
    # memory exchange (interop.py): DLPack and the CUDA array interface
    Tensor.__dlpack__, Tensor.__dlpack_device__ = interop.dlpack, interop.dlpack_device
    Tensor.__cuda_array_interface__ = property(interop.cuda_array_interface)
    _bind_operators()


def _bind_operators() -> None:
    ops = {
        "__add__": Tensor.add, "__sub__": Tensor.sub, "__mul__": Tensor.mul, "__truediv__": Tensor.div,
        "__floordiv__": Tensor.floor_divide, "__mod__": Tensor.remainder, "__pow__": Tensor.pow,
        "__matmul__": Tensor.matmul, "__and__": Tensor.bitwise_and, "__or__": Tensor.bitwise_or,
        "__xor__": Tensor.bitwise_xor, "__lshift__": Tensor.bitwise_left_shift,
        "__rshift__": Tensor.bitwise_right_shift, "__eq__": Tensor.eq, "__ne__": Tensor.ne, "__lt__": Tensor.lt,
        "__le__": Tensor.le, "__gt__": Tensor.gt, "__ge__": Tensor.ge, "__neg__": Tensor.neg,
        "__abs__": Tensor.abs, "__invert__": Tensor.bitwise_not,
        "__iadd__": Tensor.add_, "__isub__": Tensor.sub_, "__imul__": Tensor.mul_, "__itruediv__": Tensor.div_,
        "__ifloordiv__": Tensor.floor_divide_, "__imod__": Tensor.remainder_, "__ipow__": Tensor.pow_,
        "__iand__": Tensor.bitwise_and_, "__ior__": Tensor.bitwise_or_, "__ixor__": Tensor.bitwise_xor_,
    }
    for name, fn in ops.items():
        setattr(Tensor, name, unguarded(fn))
    Tensor.__eq__ = _comparison(unguarded(Tensor.eq), "__eq__")
    Tensor.__ne__ = _comparison(unguarded(Tensor.ne), "__ne__")
    Tensor.__pos__ = lambda self: self
    Tensor.__getitem__ = indexing.getitem
    Tensor.__setitem__ = indexing.setitem
    reflected = {
        "__radd__": ew.add, "__rsub__": ew.sub, "__rmul__": ew.mul, "__rtruediv__": ew.div,
        "__rfloordiv__": ew.floor_divide, "__rmod__": lambda a, b: ew.binary("remainder", a, b),
        "__rpow__": ew.pow, "__rmatmul__": mm.matmul,
        "__rand__": lambda a, b: ew.binary("bitwise_and", a, b), "__ror__": lambda a, b: ew.binary("bitwise_or", a, b),
        "__rxor__": lambda a, b: ew.binary("bitwise_xor", a, b),
    }
    for name, fn in reflected.items():
        setattr(Tensor, name, _reflected(fn, name))


bind()
