"""``Tensor.apply_`` and ``Tensor.map_``: a Python callable run on every element, in place (CPU tensors only, no
autograd), with torch's conversions of the callable's results to the tensor's dtype."""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from . import dtypes
from .tensor import Tensor
from .._settings import typename


def _check_target(op: str, t: Tensor, fn: Any) -> None:
    if t._array.__class__ is not np.ndarray:
        raise TypeError(f"{op} is only implemented on CPU tensors")
    if t.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")


def _converter(dt: dtypes.dtype) -> Callable[[Any], Any]:
    """How torch turns a callable's result into an element of ``dt``: a real number for floats, an integer (a float
    truncated, past int64 an overflow) for integers, a truth value for bool."""
    if dt.is_floating_point:
        def to_float(value: Any) -> float:
            if not isinstance(value, (int, float, np.number)):
                raise TypeError(f"must be real number, not {type(value).__name__}")
            return float(value)
        return to_float
    if dt is dtypes.bool:
        return bool

    def to_int(value: Any) -> int:
        number = int(value) if isinstance(value, (float, np.floating)) else operator.index(value)
        if not -2 ** 63 <= number < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")
        return number
    return to_int


def _write(t: Tensor, results: list) -> Tensor:
    convert = _converter(t.dtype)
    wide = np.float64 if t.dtype.is_floating_point else np.bool_ if t.dtype is dtypes.bool else np.int64
    values = np.array([convert(r) for r in results], dtype=wide)
    with np.errstate(over="ignore"):  # narrower integers wrap and float16 overflows to inf, as torch's casts do
        t._array[...] = values.astype(t._array.dtype).reshape(t._array.shape)
    t._version.value += 1
    return t


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002 - torch's name
    """Replace each element ``v`` by ``callable(v)`` (``v`` a Python number), in place; slow, CPU only."""
    _check_target("apply_", self, callable)
    return _write(self, [callable(v) for v in self._array.reshape(-1).tolist()])


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
    """Replace each element ``a`` by ``callable(a, b)`` with ``b`` the element of ``tensor`` (broadcast to this
    tensor's shape, of its dtype) at the same place, in place; slow, CPU only."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'other' (position 1) must be Tensor, not {type(tensor).__name__}")
    if tensor.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() instead.")
    _check_target("map_", self, callable)
    if tensor.dtype is not self.dtype:
        raise TypeError(f"map_: expected {typename(self)} for 'other' (got {typename(tensor)})")
    others = tensor.expand(self.shape)._array.reshape(-1).tolist()
    return _write(self, [callable(a, b) for a, b in zip(self._array.reshape(-1).tolist(), others)])


TENSOR_METHODS: dict[str, Callable] = {"apply_": apply_, "map_": map_}

__all__ = ["apply_", "map_"]
