"""``Parameter`` and ``Buffer``: tensors that a Module registers when they are assigned as attributes."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import dtypes
from ..tensor.tensor import Tensor


def _storage_of(data: Tensor | None) -> Tensor:
    if data is None:
        return Tensor._make(np.empty((0,), dtype=dtypes.get_default_dtype().np))
    if not isinstance(data, Tensor):
        raise TypeError(f"Parameter/Buffer data must be a Tensor, got {type(data).__name__}")
    return data


class Parameter(Tensor):
    """A leaf tensor that is a module's learnable weight: assigning it to a Module attribute registers it.

    It shares storage (and the version counter) with ``data``, like torch's.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        data = _storage_of(data)
        p = Tensor._make.__func__(cls, data._array, version=data._version)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> "Parameter":
        p = type(self)(Tensor._make(self._array.copy()), self.requires_grad)
        if self.grad is not None:
            p.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_parameter, (type(self), self._array.copy(), self.requires_grad))


def _rebuild_parameter(cls: type, array: np.ndarray, requires_grad: bool) -> Parameter:
    return cls(Tensor._make(array), requires_grad)


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (lazy modules); ``materialize`` gives it storage."""

    def materialize(self, shape: tuple[int, ...], device: Any = None, dtype: dtypes.dtype | None = None) -> None:
        """Allocate uninitialised storage of ``shape`` and turn into a plain ``Parameter``."""
        dt = dtype or dtypes.get_default_dtype()
        self._array = np.empty(tuple(shape), dtype=dt.np)
        self.__class__ = Parameter

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class Buffer(Tensor):
    """A tensor that, assigned to a Module attribute, is registered as a buffer (``persistent`` decides whether
    ``state_dict`` holds it)."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> "Buffer":
        data = _storage_of(data)
        b = Tensor._make.__func__(cls, data._array, version=data._version)
        b._requires_grad = data._requires_grad
        b.persistent = persistent
        return b

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        pass


class UninitializedBuffer(Buffer):
    """A buffer whose shape is not known yet (lazy modules)."""

    def materialize(self, shape: tuple[int, ...], device: Any = None, dtype: dtypes.dtype | None = None) -> None:
        """Allocate uninitialised storage of ``shape`` and turn into a plain ``Buffer``."""
        dt = dtype or dtypes.get_default_dtype()
        self._array = np.empty(tuple(shape), dtype=dt.np)
        self.__class__ = Buffer


def is_lazy(t: Any) -> bool:
    """Whether ``t`` is an uninitialized parameter or buffer."""
    return isinstance(t, (UninitializedParameter, UninitializedBuffer))
