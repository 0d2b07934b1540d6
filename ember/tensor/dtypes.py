"""ember's dtypes and PyTorch's type-promotion rules (which differ from NumPy's)."""
from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ..kernels.common.dtypes import BFLOAT16 as _NP_BFLOAT16, compute_dtype as _kernel_compute_dtype


class dtype:
    """A tensor element type, printed and compared like ``torch.dtype``.

    Besides torch's attributes it carries torch's two spellings of it in messages, ``scalar_type_name`` (the
    ScalarType: "Float", as in "torch.FloatTensor") and ``cpp_type_name`` (the C++ type: "float"), and
    ``compute``, the dtype kernels compute it in (float32 for float16 and bfloat16, else itself).
    """

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "_category", "scalar_type_name",
                 "cpp_type_name", "compute")

    def __init__(self, name: str, np_dtype: Any, category: int, scalar_type_name: str, cpp_type_name: str) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == _FLOAT
        self.is_signed = category == _FLOAT or (category == _INT and self.np.kind == "i")
        self._category = category
        self.scalar_type_name = scalar_type_name
        self.cpp_type_name = cpp_type_name

    @property
    def is_complex(self) -> bool:
        return False

    def to_real(self) -> "dtype":
        return self

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


_BOOL, _INT, _FLOAT = 0, 1, 2

bool = dtype("bool", np.bool_, _BOOL, "Bool", "bool")  # noqa: A001 - torch's name
uint8 = dtype("uint8", np.uint8, _INT, "Byte", "unsigned char")
int8 = dtype("int8", np.int8, _INT, "Char", "signed char")
int16 = dtype("int16", np.int16, _INT, "Short", "short int")
int32 = dtype("int32", np.int32, _INT, "Int", "int")
int64 = dtype("int64", np.int64, _INT, "Long", "long int")
float16 = dtype("float16", np.float16, _FLOAT, "Half", "c10::Half")
bfloat16 = dtype("bfloat16", _NP_BFLOAT16, _FLOAT, "BFloat16", "c10::BFloat16")
float32 = dtype("float32", np.float32, _FLOAT, "Float", "float")
float64 = dtype("float64", np.float64, _FLOAT, "Double", "double")

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
FLOAT_DTYPES = (float16, bfloat16, float32, float64)
_BY_NP = {d.np: d for d in ALL_DTYPES}
_BY_NAME = {d.name: d for d in ALL_DTYPES}
for _d in ALL_DTYPES:  # the kernels' rule, on NumPy dtypes, written in ember.kernels.common.dtypes
    _d.compute = _BY_NP[_kernel_compute_dtype(_d.np)]
# torch's two spellings of a dtype in its messages, by ember name: the ScalarType name and the C++ type name
SCALAR_TYPE_NAMES = {d.name: d.scalar_type_name for d in ALL_DTYPES}
CPP_TYPE_NAMES = {d.name: d.cpp_type_name for d in ALL_DTYPES}
ALIASES = {
    "float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
    "short": int16, "uint8": uint8, "bool": bool,
}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def compute_dtype(dt: dtype) -> dtype:
    """The dtype kernels compute ``dt`` in (``dt.compute``): float16 and bfloat16 are widened to float32, as
    torch's CPU kernels do, and the result is rounded back once."""
    return dt.compute


def from_numpy_dtype(np_dtype: Any) -> dtype:
    """The ember dtype of a NumPy dtype; TypeError for ones ember does not hold."""
    try:
        found = _BY_NP.get(np_dtype)  # an array's own dtype: one lookup, no np.dtype() call
        return found if found is not None else _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


_default_dtype = float32


def get_default_dtype() -> dtype:
    """The floating dtype that Python floats and float-producing ops on ints become."""
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (float32 or float64; float16 as torch allows)."""
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_dtype = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` cast to safely, by torch's table."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    return _BY_NP[np.promote_types(a.np, b.np)]


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: casting must not lower the category (float->int, int->bool)."""
    return from_._category <= to._category


def scalar_dtype(value: Any) -> dtype:
    """The dtype a Python number takes when it stands alone (bool, int64 or the default float)."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return bool
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default_dtype
    raise TypeError(f"expected a number, got {type(value).__name__}")


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """torch's combine_categories: a lower-priority operand only counts if it raises the category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(tensor1: Any, tensor2: Any) -> dtype:
    """The dtype an op on these two operands (tensors or numbers) produces, by torch's promotion."""
    return result_type_of((tensor1, tensor2))


def result_type_of(operands) -> dtype:
    """Result dtype of an op over tensors and Python numbers, by torch's three priority groups.

    Dimensioned tensors outrank 0-dim tensors, which outrank Python numbers; a
    lower group only matters when its category (bool < int < float) is higher.
    """
    if len(operands) == 2:
        a, b = getattr(operands[0], "_array", None), getattr(operands[1], "_array", None)
        if a is not None and b is not None and a.dtype == b.dtype and a.ndim and b.ndim:
            return _BY_NP[a.dtype]
    dim_result = zero_result = wrapped_result = None
    for op in operands:
        arr = getattr(op, "_array", None)
        if arr is not None:
            d = _BY_NP[arr.dtype]
            if arr.ndim > 0:
                dim_result = d if dim_result is None else promote_types(dim_result, d)
            else:
                zero_result = d if zero_result is None else promote_types(zero_result, d)
        elif op is not None:
            d = scalar_dtype(op)
            wrapped_result = d if wrapped_result is None else promote_types(wrapped_result, d)
    result = _combine(dim_result, _combine(zero_result, wrapped_result))
    if result is None:
        raise TypeError("result_type needs at least one tensor or number")
    return result


def to_dtype(value: Any) -> dtype:
    """Accept an ember dtype, a NumPy dtype, a Python type or a name and return an ember dtype."""
    if isinstance(value, dtype):
        return value
    if value is float:  # torch maps Python's float type to double
        return float64
    if value is int:
        return int64
    if value is builtins.bool:
        return bool
    if isinstance(value, str):
        name = value.replace("torch.", "").replace("ember.", "")
        if name in _BY_NAME:
            return _BY_NAME[name]
        if name in ALIASES:
            return ALIASES[name]
    try:
        return from_numpy_dtype(value)
    except TypeError:
        raise TypeError(f"invalid dtype: {value!r}") from None


_C10_TYPE_NAMES = {"int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t",
                   "float64": "double", "float32": "float", "float16": "c10::Half",
                   "bfloat16": "c10::BFloat16"}


def check_number_fits(value: Any, dt: dtype) -> None:
    """torch's check when a Python number is written into a tensor of ``dt``: out-of-range values (NaN and inf for
    integers) raise instead of wrapping; a negative integer may wrap into an unsigned dtype, as in c10."""
    if dt is bool or isinstance(value, (builtins.bool, np.bool_)):
        return
    if dt.is_floating_point:
        limits = np.finfo(dt.np)
        number = float(value)
        overflows = math.isfinite(number) and not float(limits.min) <= number <= float(limits.max)
    elif isinstance(value, (int, np.integer)):
        limits = np.iinfo(dt.np)
        lowest = -int(limits.max) if limits.min == 0 else int(limits.min)
        overflows = not lowest <= int(value) <= int(limits.max)
    else:
        limits = np.iinfo(dt.np)
        overflows = not float(limits.min) <= float(value) <= float(limits.max)   # NaN fails too
    if overflows:
        raise RuntimeError(f"value cannot be converted to type {_C10_TYPE_NAMES[dt.name]} without overflow")
