"""The optimizers' state tensors: zero-filled buffers shaped like a parameter, the 0-d ``step`` counter, and
one-element tensor hyper-parameters read out as Python numbers."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor.dtypes import get_default_dtype
from ..tensor.tensor import Tensor

__all__ = ["advance_step", "new_step", "zeros_state", "to_scalar"]


def zeros_state(param: Tensor, fill: float = 0.0) -> Tensor:
    """A state buffer shaped and typed like ``param`` (C-contiguous), filled with ``fill``."""
    return Tensor._make(np.full(param._array.shape, fill, dtype=param._array.dtype, like=param._array))


def new_step(value: float = 0.0) -> Tensor:
    """The 0-d ``step`` counter torch keeps in optimizer state (default float dtype)."""
    return Tensor._make(np.array(value, dtype=get_default_dtype().np))


def advance_step(step: Tensor) -> float:
    """``step += 1`` in place; the new count as a Python float."""
    a = step._array
    value = float(a) + 1.0
    a[()] = value
    step._version.value += 1
    return value


def to_scalar(x: Any) -> Any:
    """A one-element Tensor hyper-parameter (e.g. ``lr``) as a Python number; others unchanged."""
    return x.item() if isinstance(x, Tensor) else x
