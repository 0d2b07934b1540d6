"""Anomaly detection for autograd, as ``torch.autograd.detect_anomaly`` / ``set_detect_anomaly``.

While it is on, every recorded op keeps the traceback of its forward call on its
node (``grad_fn``), and the backward engine checks what each node returns: a NaN
raises ``RuntimeError("Function 'DivBackward0' returned nan values in its 0th output.")``
and any error raised in a node's backward is preceded by a warning that shows
the forward traceback of the op that made that node. Off, it costs one global
check per recorded op and one per backward call.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from . import function as _function
from .grad_mode import decorate

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _function._ANOMALY


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward results for NaN."""
    return _function._ANOMALY_CHECK_NAN


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    _function._ANOMALY = bool(enabled)
    _function._ANOMALY_CHECK_NAN = bool(check_nan)


class detect_anomaly:
    """Context manager (or decorator) that turns anomaly detection on; ``check_nan`` makes NaN in backward an error."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
            "for debugging.",
            stacklevel=2,
        )

    def _fresh(self) -> "detect_anomaly":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return detect_anomaly(self.check_nan)

    def __call__(self, func: Callable) -> Callable:
        """Decorate ``func`` (a generator function too): each call runs in anomaly mode."""
        return decorate(self._fresh, func)

    def __enter__(self) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off now; as a context manager, the previous setting returns on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.mode = mode
        self.check_nan = check_nan
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
