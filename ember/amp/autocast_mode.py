"""``torch.autocast`` and the autocast state functions: regions where covered ops run in lower precision.

The state (per thread and device type) and the per-op policy live in ``ember.tensor.autocast_policy``, read by
the ops themselves; this module is torch's API over it: the ``autocast`` context manager and decorator, the
``ember.is_autocast_enabled``/``get_autocast_dtype``/... functions, and ``custom_fwd``/``custom_bwd`` for custom
``autograd.Function``s.
"""
from __future__ import annotations

import collections.abc
import functools
import warnings
from typing import Any, Callable

import numpy as np

from ..tensor import autocast_policy as policy
from ..tensor import dtypes
from ..tensor.device import device as _device
from ..tensor.tensor import Tensor
from ..cuda import is_available as _cuda_available

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "is_autocast_enabled",
           "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype"]

_AVAILABLE = ("cpu", "cuda")
_SUPPORTED = (dtypes.bfloat16, dtypes.float16)


def _device_type(device_type: Any) -> str:
    """``device_type`` checked as torch's parser does (an unknown name is its RuntimeError)."""
    return _device(device_type).type


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast works on ``device_type`` ("cpu" and "cuda" here, as in a CPU or CUDA build of torch)."""
    return _device_type(device_type) in _AVAILABLE


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (CUDA when None, as torch's older form)."""
    return policy.state.enabled.get("cuda" if device_type is None else _device_type(device_type), False)


def set_autocast_enabled(device_type: Any, enabled: Any = None) -> None:
    """Switch autocast on or off for ``device_type`` in this thread (one argument: CUDA's, torch's older form)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}")
    policy.set_enabled(_device_type(device_type), enabled)


def get_autocast_dtype(device_type: str) -> dtypes.dtype:
    """The lower-precision dtype of autocast on ``device_type`` in this thread (bfloat16 on the CPU, float16 on
    CUDA until set)."""
    device_type = _device_type(device_type)
    return policy.state.dtype.get(device_type) or policy.default_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype: dtypes.dtype) -> None:
    """Set the lower-precision dtype of autocast on ``device_type`` in this thread."""
    policy.state.dtype[_device_type(device_type)] = dtypes.to_dtype(dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether casts of weights are cached within an autocast region (this thread)."""
    return policy.state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Switch the weight-cast cache on or off (this thread)."""
    policy.state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached weight casts (done when the outermost autocast region exits)."""
    policy.clear_cache()


def autocast_increment_nesting() -> int:
    """One more autocast region entered in this thread; the new depth."""
    policy.state.nesting += 1
    return policy.state.nesting


def autocast_decrement_nesting() -> int:
    """One autocast region left in this thread; the new depth (0 when the outermost one is left)."""
    policy.state.nesting -= 1
    return policy.state.nesting


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: ``is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: ``set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> dtypes.dtype:
    """Deprecated: ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: dtypes.dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> dtypes.dtype:
    """Deprecated: ``get_autocast_dtype("cuda")``."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: dtypes.dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cuda", dtype)``."""
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


class autocast:  # noqa: N801 - torch's name
    """A region (context manager or decorator) in which the ops autocast covers run in an op-specific dtype:
    matmul, linear and convolutions in ``dtype`` (default: ``get_autocast_dtype(device_type)``, bfloat16 on the CPU,
    float16 on CUDA), losses (and on CUDA softmax, norms, exp, log, ...) in float32, joins in the widest input
    dtype; see ``ember.tensor.autocast_policy``. Regions nest (an inner ``enabled=False`` switches it off), the
    state is per thread, and casts of weights are cached until the outermost region exits when
    ``cache_enabled`` (default: ``is_autocast_cache_enabled()``)."""

    def __init__(self, device_type: str, dtype: dtypes.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtypes.to_dtype(dtype)
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled and device_type == "cuda" and not _cuda_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            enabled = False
        elif enabled and self.fast_dtype not in _SUPPORTED:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self) -> "autocast":
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use "
                            "autocast as a context manager? For example:\n    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value: Any, device_type: str, dtype: dtypes.dtype) -> Any:
    """``value`` with its floating tensors on ``device_type`` (not float64) cast to ``dtype``, looking into
    mappings and iterables (strings and NumPy arrays pass as they are)."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not dtypes.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def _check_device_type(device_type: Any) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: dtypes.dtype | None = None) -> Callable:
    """Decorator for a custom ``Function``'s ``forward``: it records the autocast state for ``custom_bwd``; with
    ``cast_inputs``, inside an autocast region its floating tensor arguments are cast to that dtype and it runs
    with autocast off (outside a region it runs as it is)."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_region = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if not in_region:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorator for a custom ``Function``'s ``backward``: it runs with the autocast state its ``forward`` (under
    ``custom_fwd``) ran with."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
