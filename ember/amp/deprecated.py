"""The deprecated per-device spellings torch keeps: ``torch.cpu.amp.autocast``, ``torch.cuda.amp.GradScaler``, ...

Each is ``ember.amp``'s class with the device type fixed, warning torch's FutureWarning when made;
``ember.cpu.amp`` and ``ember.cuda.amp`` hold them.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from ..tensor import dtypes
from . import autocast_mode, grad_scaler

__all__ = ["device_autocast", "device_grad_scaler", "cuda_custom_bwd", "cuda_custom_fwd"]


def _warn(old: str, new: str) -> None:
    warnings.warn(f"`torch.{old}(args...)` is deprecated. Please use `torch.{new}` instead.", FutureWarning,
                  stacklevel=3)


def device_autocast(device_type: str, default: dtypes.dtype, module: str) -> type:
    """``module``'s ``autocast``: ``ember.amp.autocast(device_type, ...)`` with dtype ``default`` unless given."""
    def __init__(self, enabled: bool = True, dtype: dtypes.dtype = default, cache_enabled: bool = True) -> None:
        _warn(f"{device_type}.amp.autocast", f"amp.autocast('{device_type}', args...)")
        autocast_mode.autocast.__init__(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    doc = f"Deprecated: ``ember.amp.autocast(\"{device_type}\", ...)``."
    return type("autocast", (autocast_mode.autocast,), {"__init__": __init__, "__doc__": doc, "__module__": module})


def device_grad_scaler(device_type: str, module: str) -> type:
    """``module``'s ``GradScaler``: ``ember.amp.GradScaler(device_type, ...)``."""
    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        _warn(f"{device_type}.amp.GradScaler", f"amp.GradScaler('{device_type}', args...)")
        grad_scaler.GradScaler.__init__(self, device_type, init_scale, growth_factor, backoff_factor, growth_interval,
                                        enabled)

    doc = f"Deprecated: ``ember.amp.GradScaler(\"{device_type}\", ...)``."
    return type("GradScaler", (grad_scaler.GradScaler,), {"__init__": __init__, "__doc__": doc, "__module__": module})


def cuda_custom_fwd(fwd: Callable | None = None, *, cast_inputs: dtypes.dtype | None = None) -> Callable:
    """Deprecated: ``ember.amp.custom_fwd(..., device_type="cuda")``."""
    _warn("cuda.amp.custom_fwd", "amp.custom_fwd(args..., device_type='cuda')")
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def cuda_custom_bwd(bwd: Callable) -> Any:
    """Deprecated: ``ember.amp.custom_bwd(..., device_type="cuda")``."""
    _warn("cuda.amp.custom_bwd", "amp.custom_bwd(args..., device_type='cuda')")
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
