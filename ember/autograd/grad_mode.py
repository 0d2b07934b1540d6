"""Grad-mode switches, as torch's: context managers that also decorate functions and generator functions.

``no_grad``, ``enable_grad`` and ``inference_mode`` decorate with or without parentheses (``@no_grad`` and
``@no_grad()``); ``set_grad_enabled(mode)`` takes effect at once when called, and restores the previous mode at
the end of a ``with`` block. A decorated generator runs its body in the mode on every resumption, and its caller
gets its own mode back at each ``yield``.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from .._grad_state import count_inference_block, state as _state

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


def is_grad_enabled() -> bool:
    """Whether ops record the graph for backward in this thread."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = mode


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active in this thread."""
    return _state.inference


def decorate(make_context: Callable[[], Any], func: Callable) -> Callable:
    """``func`` run inside a fresh context from ``make_context()`` on each call; a generator function's body runs
    inside one on each resumption (its caller's modes hold between the ``yield``s)."""
    if inspect.isgeneratorfunction(func):
        return _generator_in(make_context, func)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with make_context():
            return func(*args, **kwargs)

    return wrapper


def _generator_in(make_context: Callable[[], Any], func: Callable) -> Callable:
    @functools.wraps(func)
    def generator(*args: Any, **kwargs: Any) -> Any:
        gen = func(*args, **kwargs)
        resume = functools.partial(gen.send, None)
        while True:
            try:
                with make_context():
                    item = resume()
            except StopIteration as stop:
                return stop.value
            try:
                sent = yield item
            except GeneratorExit:
                with make_context():
                    gen.close()
                raise
            except BaseException as error:  # thrown in by the caller: the body sees it, in the mode
                resume = functools.partial(gen.throw, error)
            else:
                resume = functools.partial(gen.send, sent)

    return generator


class _GradModeContext:
    """Base of the grad-mode contexts: enter sets the mode, exit restores the previous one; calling one on a
    function decorates it."""

    def _mode(self) -> bool:
        raise NotImplementedError  # each subclass says which mode it sets

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set_enabled(self._mode())

    def __exit__(self, *exc: Any) -> None:
        _set_enabled(self._prev)

    def __call__(self, func: Callable) -> Callable:
        return decorate(self.clone, func)

    def clone(self) -> "_GradModeContext":
        """A fresh context with the same setting (each decorated call enters its own)."""
        return self.__class__()


class _NoArgumentContext(_GradModeContext):
    """A context that also decorates without parentheses: ``@no_grad`` is ``@no_grad()``."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoArgumentContext):
    """Disable graph recording: ops inside create no backward nodes."""

    def _mode(self) -> bool:
        return False


class enable_grad(_NoArgumentContext):
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

    def __call__(self, func: Callable) -> Callable:
        _set_enabled(self._prev)  # used as a decorator: only the decorated calls change mode
        return super().__call__(func)

    def clone(self) -> "set_grad_enabled":
        return set_grad_enabled(self.mode)


class inference_mode(_GradModeContext):
    """``no_grad`` for code that will never need gradients: tensors made inside are inference tensors
    (``is_inference()``), which later recorded ops may not save for backward. ``inference_mode(False)`` turns it
    off inside an outer block (and, as in torch, turns grad mode on)."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # ``@inference_mode`` without parentheses

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def _mode(self) -> bool:
        return not self.mode

    def __enter__(self) -> None:
        self._prev_inference = is_inference_mode_enabled()
        _state.inference = self.mode
        count_inference_block(1)
        super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _state.inference = self._prev_inference
        count_inference_block(-1)

    def clone(self) -> "inference_mode":
        return inference_mode(self.mode)
