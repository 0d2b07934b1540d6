"""``torch.autograd.Variable``: the pre-0.4 wrapper, kept so old scripts run.

Since torch 0.4 every tensor is a Variable: ``Variable(t, requires_grad=True)`` returns a new tensor sharing
``t``'s storage, cut from ``t``'s graph, and ``isinstance(t, Variable)`` is true for every tensor.
"""
from __future__ import annotations

import warnings
from typing import Any
from ..tensor.tensor import Tensor
from ..tensor.creation import empty

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` detached, as a plain Tensor."""

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
