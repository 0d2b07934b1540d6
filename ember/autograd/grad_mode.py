"""Grad-mode switches: context managers that also work as decorators, as in torch."""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

class _ThreadModes(threading.local):
    """Per-thread modes; the class attributes are every new thread's defaults (read without a getattr default:
    every op asks)."""

    enabled = True
    inference = False


_state = _ThreadModes()


def is_grad_enabled() -> bool:
    """Whether ops record the graph for backward in this thread."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = mode


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active in this thread."""
    return _state.inference


class _GradModeContext:
    """Base of the grad-mode contexts: enter sets a mode, exit restores the previous one."""

    def _mode(self) -> bool:
        raise NotImplementedError  # each subclass says which mode it sets

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set_enabled(self._mode())

    def __exit__(self, *exc: Any) -> None:
        _set_enabled(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self) -> "_GradModeContext":
        return self.__class__()


class no_grad(_GradModeContext):
    """Disable graph recording: ops inside create no backward nodes."""

    def _mode(self) -> bool:
        return False


class enable_grad(_GradModeContext):
    """Enable graph recording, e.g. inside a ``no_grad`` block."""

    def _mode(self) -> bool:
        return True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode``; as a call it takes effect at once (like torch), as a block it restores on exit."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def _mode(self) -> bool:
        return self.mode

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: Callable) -> Callable:
        _set_enabled(self._prev)  # used as a decorator: only the decorated calls change mode
        return super().__call__(fn)

    def clone(self) -> "_GradModeContext":
        return _Block(self.mode)


class _Block(_GradModeContext):
    """A plain block that sets a fixed mode on entry."""

    def __init__(self, mode: bool) -> None:
        self.mode = mode

    def _mode(self) -> bool:
        return self.mode

    def clone(self) -> "_Block":
        return _Block(self.mode)


class inference_mode(_GradModeContext):
    """Like ``no_grad`` for code that will never need gradients (``mode=False`` turns it off)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def _mode(self) -> bool:
        return is_grad_enabled() if not self.mode else False

    def __enter__(self) -> None:
        self._prev_inference = is_inference_mode_enabled()
        _state.inference = self.mode
        super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _state.inference = self._prev_inference

    def clone(self) -> "inference_mode":
        return inference_mode(self.mode)
