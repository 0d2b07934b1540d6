"""``torch.use_deterministic_algorithms`` and its flags: one process-wide setting, read where ops pick kernels.

ember's CPU kernels are serial or split work by fixed blocks, so they give the same bits on every run whatever
this says. On CUDA, the ops whose kernels accumulate floats with atomics (scatter-add and everything built on it:
index_add, index_put(accumulate=True), gather/index_select/embedding backward, pooling's max backward, weighted
bincount) switch to deterministic kernels while the mode is on, and cuBLAS products go to ember's own kernel
unless ``CUBLAS_WORKSPACE_CONFIG`` makes cuBLAS reproducible. The ops whose result torch itself leaves undefined
(``put_`` without accumulation, ``max_unpool``) raise torch's RuntimeError on every device, or warn with
``warn_only=True``. With the mode on, ``empty`` fills its memory as torch does (NaN, or the dtype's largest
integer) while ``ember.utils.deterministic.fill_uninitialized_memory`` is True.

This module sits below everything (kernels read it too) and imports nothing of ember.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "alert_not_deterministic", "uninitialized_fill"]

_enabled = False
_warn_only = False
fill_uninitialized_memory = True  # read and set through ember.utils.deterministic


def _check_bool(value: Any, name: str, position: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"_set_deterministic_algorithms(): argument '{name}'{position} must be bool, not "
                        f"{type(value).__name__}")
    return bool(value)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make ops use deterministic algorithms (``mode=True``); an op that has none raises RuntimeError, or warns
    when ``warn_only`` is True."""
    global _enabled, _warn_only
    _enabled = _check_bool(mode, "mode", " (position 1)")
    _warn_only = _check_bool(warn_only, "warn_only", "")


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in force."""
    return _enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ops without a deterministic implementation warn instead of raising."""
    return _warn_only


_DEBUG_MODES = ("default", "warn", "error")


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """The same setting as a level: "default"/0 (off), "warn"/1 (on, warn only), "error"/2 (on)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        level = _DEBUG_MODES.index(debug_mode)
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
        level = debug_mode
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    use_deterministic_algorithms(level > 0, warn_only=level == 1)


def get_deterministic_debug_mode() -> int:
    """0 when the mode is off, 1 when it only warns, 2 when it raises."""
    return 0 if not _enabled else (1 if _warn_only else 2)


def alert_not_deterministic(op: str) -> None:
    """Called by an op that has no deterministic implementation: torch's RuntimeError (or warning) when the mode
    is on, nothing otherwise."""
    if not _enabled:
        return
    if _warn_only:
        warnings.warn(f"{op} does not have a deterministic implementation, but you set "
                      "'torch.use_deterministic_algorithms(True, warn_only=True)'.", UserWarning, stacklevel=3)
        return
    raise RuntimeError(f"{op} does not have a deterministic implementation, but you set "
                       "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this "
                       "operation, or you can use the 'warn_only=True' option, if that's acceptable for your "
                       "application.")


def uninitialized_fill(np_dtype: Any) -> Any:
    """What ``empty`` fills a new tensor of ``np_dtype`` with: None (leave it uninitialised) unless the mode and
    ``fill_uninitialized_memory`` are on, then NaN for floats, True for bool, else the largest integer."""
    if not (_enabled and fill_uninitialized_memory):
        return None
    kind = np.dtype(np_dtype).kind
    if kind in "fV":  # V: bfloat16 (ml_dtypes' type)
        return np.nan
    if kind == "b":
        return True
    return np.iinfo(np_dtype).max
