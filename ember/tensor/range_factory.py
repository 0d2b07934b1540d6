"""``ember.range``: torch's deprecated inclusive range (in its own module: the name would hide Python's ``range``
from the code around it)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._user_warnings import warn_user
from .creation import _dtype_or_default, _finish, _number
from .device import factory_device
from .out_arg import with_out
from .tensor import Tensor
from .arguments import tensor_args

__all__ = ["range"]


@tensor_args
@with_out(dtype_from_out=True)
def range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, layout: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:  # noqa: A001 - torch's name
    """Deprecated in torch (it warns): ``start`` to ``end`` *inclusive* every ``step``, in the default float dtype
    unless ``dtype`` says otherwise. ``arange`` is the replacement (its end is exclusive)."""
    warn_user("torch.range is deprecated and will be removed in a future release because its behavior is "
              "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
              "[start, end).")
    start, end, step = _number(start), _number(end), _number(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if any(not math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = math.floor((end - start) / step) + 1
    dt = _dtype_or_default(dtype)
    array = (start + step * np.arange(count, dtype=np.float64)).astype(dt.np)
    return _finish(array, requires_grad, factory_device(device))
