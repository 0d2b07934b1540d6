"""Bind the tensor ops as ``Tensor`` methods and operators, with torch's names."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import closeness, composite, contractions, conversion, elementwise as ew, indexing, joins, legacy_types, \
    matmul as mm, nan_reduce, pinned, predicates, quantile, random_ops, reduce as red, scatter_views, \
    shape_utils, sorting, splits, view_copies, views
from .tensor import Tensor
from . import blas_like, host_callables, index_reduce, renorm, special_math, statistics


def _method(fn: Callable, name: str) -> Callable:
    """``fn`` as a method: plain functions bind directly (no extra call frame), others get a wrapper. A function
    given ``out=`` binds without it (torch's methods take none)."""
    fn = getattr(fn, "without_out", fn)
    if getattr(fn, "__name__", None) == name and getattr(fn, "__code__", None) is not None:
        return fn

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn  # its signature: the argument guard names fn's parameters (and their NumPy aliases)
    return method


def _unary_method(name: str) -> Callable:
    return _method(lambda self: ew.unary(name, self), name)


def _unary_inplace(name: str) -> Callable:
    return _method(lambda self: ew.inplace(self, name, lambda s: ew.unary(name, s)), name + "_")


def _inplace_of(name: str, fn: Callable) -> Callable:
    """The in-place method ``name_``: ``fn(self, *args)`` written back into ``self``."""
    return _method(lambda self, *args, **kw: ew.inplace(self, name, lambda s: fn(s, *args, **kw)), name + "_")


def _comparison(fn: Callable, name: str) -> Callable:
    """``==``/``!=``: elementwise for tensors and numbers, Python's identity rule for anything else (e.g. None)."""
    def compare(self: Tensor, other: Any) -> Any:
        if isinstance(other, (Tensor, int, float, bool, np.number, np.bool_)):
            return fn(self, other)
        return NotImplemented

    compare.__name__ = name
    return compare


def _reflected(fn: Callable, name: str) -> Callable:
    return _method(lambda self, other: fn(other, self), name)


# torch's other names of methods (and of their in-place forms)
ALIASES = {
    "absolute": "abs", "negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "fix": "trunc", "multiply": "mul", "divide": "div", "subtract": "sub",
    "true_divide": "div", "arctan2": "atan2", "greater": "gt", "less": "lt", "greater_equal": "ge",
    "less_equal": "le", "not_equal": "ne", "sgn": "sign",  # sgn is sign on real tensors
}


def bind() -> None:
    """Attach every op to ``Tensor`` (called once when ember is imported)."""
    for name in ew.UNARY_OPS:
        setattr(Tensor, name, _unary_method(name))
        setattr(Tensor, name + "_", _unary_inplace(name))
    Tensor.round = _method(ew.round, "round")

    binaries = {
        "add": ew.add, "sub": ew.sub, "mul": ew.mul, "div": ew.div, "pow": ew.pow, "floor_divide": ew.floor_divide,
        "remainder": lambda a, b: ew.binary("remainder", a, b), "fmod": lambda a, b: ew.binary("fmod", a, b),
        "atan2": lambda a, b: ew.binary("atan2", a, b), "hypot": lambda a, b: ew.binary("hypot", a, b),
        "maximum": lambda a, b: ew.binary("maximum", a, b), "minimum": lambda a, b: ew.binary("minimum", a, b),
        "fmax": lambda a, b: ew.binary("fmax", a, b), "fmin": lambda a, b: ew.binary("fmin", a, b),
        "copysign": lambda a, b: ew.binary("copysign", a, b), "xlogy": lambda a, b: ew.binary("xlogy", a, b),
        "eq": lambda a, b: ew.binary("eq", a, b), "ne": lambda a, b: ew.binary("ne", a, b),
        "lt": lambda a, b: ew.binary("lt", a, b), "le": lambda a, b: ew.binary("le", a, b),
        "gt": lambda a, b: ew.binary("gt", a, b), "ge": lambda a, b: ew.binary("ge", a, b),
        "logical_and": lambda a, b: ew.binary("logical_and", a, b),
        "logical_or": lambda a, b: ew.binary("logical_or", a, b),
        "logical_xor": lambda a, b: ew.binary("logical_xor", a, b),
        "bitwise_and": lambda a, b: ew.binary("bitwise_and", a, b),
        "bitwise_or": lambda a, b: ew.binary("bitwise_or", a, b),
        "bitwise_xor": lambda a, b: ew.binary("bitwise_xor", a, b),
        "bitwise_left_shift": lambda a, b: ew.binary("bitwise_left_shift", a, b),
        "bitwise_right_shift": lambda a, b: ew.binary("bitwise_right_shift", a, b),
        "gcd": lambda a, b: ew.binary("gcd", a, b), "lcm": lambda a, b: ew.binary("lcm", a, b),
        "nextafter": lambda a, b: ew.binary("nextafter", a, b),
    }
    for name, fn in binaries.items():
        setattr(Tensor, name, _method(fn, name))
        setattr(Tensor, name + "_", _inplace_of(name, fn))
    for alias, name in ALIASES.items():  # each with its in-place form
        setattr(Tensor, alias, getattr(Tensor, name))
        setattr(Tensor, alias + "_", getattr(Tensor, name + "_"))

    for name, fn in {
        "isnan": ew.isnan, "isinf": ew.isinf, "isfinite": ew.isfinite, "isposinf": ew.isposinf,
        "isneginf": ew.isneginf, "signbit": ew.signbit, "logical_not": ew.logical_not,
        "bitwise_not": ew.bitwise_not, "where": lambda self, cond, other: ew.where(cond, self, other),
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
        "char": conversion.char, "byte": conversion.byte, "bool": conversion.bool_, "type_as": conversion.type_as,
        "copy_": conversion.copy_, "fill_": conversion.fill_, "zero_": conversion.zero_,
        "new_zeros": conversion.new_zeros, "new_ones": conversion.new_ones, "new_empty": conversion.new_empty,
        "new_full": conversion.new_full, "new_tensor": conversion.new_tensor,
        "new_empty_strided": conversion.new_empty_strided,
    }.items():
        setattr(Tensor, name, _method(fn, name))
    Tensor.clamp_ = _method(lambda self, min=None, max=None: ew.inplace(
        self, "clamp", lambda s: ew.clamp(s, min, max)), "clamp_")
    Tensor.clip_ = Tensor.clamp_
    Tensor.lerp_ = _method(lambda self, end, weight: ew.inplace(self, "lerp", lambda s: ew.lerp(s, end, weight)),
                           "lerp_")
    Tensor.addcmul_ = _method(lambda self, t1, t2, value=1: ew.inplace(
        self, "addcmul", lambda s: ew.addcmul(s, t1, t2, value=value)), "addcmul_")
    Tensor.addcdiv_ = _method(lambda self, t1, t2, value=1: ew.inplace(
        self, "addcdiv", lambda s: ew.addcdiv(s, t1, t2, value=value)), "addcdiv_")
    Tensor.clamp_min = _method(lambda self, min: ew.clamp(self, min, None), "clamp_min")
    Tensor.clamp_max = _method(lambda self, max: ew.clamp(self, None, max), "clamp_max")
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
    from .. import linalg

    for module in (sorting, linalg, indexing, joins, contractions, closeness, composite, nan_reduce, legacy_types,
                   quantile, splits, shape_utils, scatter_views, view_copies, predicates, blas_like, statistics,
                   special_math, renorm, index_reduce, host_callables):
        for name, fn in module.TENSOR_METHODS.items():
            setattr(Tensor, name, _method(fn, name))
    from ..linalg.norms import dist

    Tensor.dist = _method(dist, "dist")
    Tensor.T = property(views.full_transpose)
    Tensor.mT = property(views.matrix_transpose)
    Tensor.H = property(views.conj_transpose)
    Tensor.mH = property(views.matrix_adjoint)
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
        setattr(Tensor, name, fn)
    Tensor.__eq__ = _comparison(Tensor.eq, "__eq__")
    Tensor.__ne__ = _comparison(Tensor.ne, "__ne__")
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
