"""Decompositions on CUDA tensors through the host: LAPACK has no Numba kernel, so a CUDA input is copied to the
CPU, factorised there and the results copied back, with one warning per function and process. The copies are
``Tensor.cpu()``/``Tensor.to(device)``, so gradients flow back to the device like any other op's."""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from ..tensor._dispatch import backend
from ..tensor.tensor import Tensor

_WARNED: set[str] = set()


def _cuda_device(values: Any) -> Any:
    """The device of the first CUDA tensor among ``values``, else None."""
    for v in values:
        if isinstance(v, Tensor) and v.is_cuda:
            return v.device
    return None


def _map_tensors(fn: Callable[[Tensor], Tensor], value: Any) -> Any:
    """``fn`` applied to every tensor in ``value`` (a tensor, or a tuple / namedtuple of them)."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, tuple):
        mapped = [_map_tensors(fn, v) for v in value]
        return type(value)(*mapped) if hasattr(value, "_fields") else type(value)(mapped)
    return value


def _warn_once(name: str) -> None:
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(f"ember.linalg.{name}: no CUDA kernel yet, so CUDA inputs are computed on the CPU (LAPACK) and "
                      "the results copied back to the device; this warning is shown once per process",
                      UserWarning, stacklevel=3)


def through_host(fn: Callable) -> Callable:
    """Run ``fn`` on CPU copies of its CUDA tensor arguments and return its results on their device."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        operands = (*args, *kwargs.values())
        device = _cuda_device(operands)
        if device is None:
            return fn(*args, **kwargs)
        backend(*operands)  # torch's error for CUDA and CPU tensors in one call
        _warn_once(fn.__name__)
        to_cpu = functools.partial(_map_tensors, Tensor.cpu)
        result = fn(*map(to_cpu, args), **{k: to_cpu(v) for k, v in kwargs.items()})
        return _map_tensors(lambda t: t.to(device), result)

    return wrapper
