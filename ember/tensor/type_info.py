"""``ember.finfo`` and ``ember.iinfo``: the numerical limits of a dtype, as torch reports them.

Scripts read ``finfo(dtype).eps``/``.max``/``.min``/``.tiny`` for clamping and masking and ``iinfo(dtype).max``
for sentinels; the values are NumPy's limits of the dtype's storage type, as Python numbers.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import dtypes

__all__ = ["finfo", "iinfo"]

_DEFAULT = object()  # finfo() without an argument means the default dtype (an explicit None is refused, as torch)


def _dtype_argument(op: str, value: Any) -> dtypes.dtype:
    """``value`` as an ember dtype: a dtype or one of Python's ``float``/``int``/``bool`` (torch's parser takes
    those as float64, int64 and bool); anything else is torch's TypeError."""
    if isinstance(value, dtypes.dtype) or value in (builtins.float, builtins.int, builtins.bool):
        return dtypes.to_dtype(value)
    raise TypeError(f"{op}(): argument 'type' (position 1) must be torch.dtype, not {type(value).__name__}")


class _TypeInfo:
    """What finfo and iinfo share: read-only fields, comparison by dtype, torch's repr."""

    __slots__ = ("bits", "dtype")
    _FIELDS: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name) or name not in self.__slots__ + _TypeInfo.__slots__:
            raise AttributeError(f"attribute '{name}' of 'torch.{type(self).__name__}' objects is not writable")
        object.__setattr__(self, name, value)

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.dtype == other.dtype

    __hash__ = None  # unhashable, as torch's

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name):.6g}" for name in self._FIELDS)
        return f"{type(self).__name__}({fields}, dtype={self.dtype})"


class finfo(_TypeInfo):  # noqa: N801 - torch's name
    """Limits of a floating dtype (the default dtype when called without one): ``bits``, ``eps`` (the gap
    between 1.0 and the next float), ``max``, ``min`` (the most negative), ``tiny`` (= ``smallest_normal``, the
    smallest positive normal number), ``resolution`` (10 ** -digits) and ``dtype`` (its name, e.g. 'float32')."""

    __slots__ = ("eps", "max", "min", "tiny", "smallest_normal", "resolution")
    _FIELDS = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, type: Any = _DEFAULT) -> None:  # noqa: A002 - torch's name
        dt = dtypes.get_default_dtype() if type is _DEFAULT else _dtype_argument("finfo", type)
        if not dt.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(dt.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # in double, as torch (NumPy's is in the dtype itself)
        self.dtype = dt.name


class iinfo(_TypeInfo):  # noqa: N801 - torch's name
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` (Python ints) and ``dtype`` (its name, e.g.
    'int64'). bool has none: TypeError, as in torch."""

    __slots__ = ("max", "min")
    _FIELDS = ("min", "max")

    def __init__(self, type: Any) -> None:  # noqa: A002 - torch's name
        dt = _dtype_argument("iinfo", type)
        if dt is dtypes.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        info = np.iinfo(dt.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dt.name
