"""``ember.futures``: torch.futures: a thread-safe Future completed once, with chained callbacks.

RPC calls (``ember.distributed.rpc.rpc_async``) complete these from a transport thread while user code waits or
chains ``then`` callbacks, so every state change happens under one condition variable and callbacks run outside it.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Generic, List, Optional, TypeVar

T = TypeVar("T")
S = TypeVar("S")

__all__ = ["Future", "collect_all", "wait_all"]


class Future(Generic[T]):
    """The result of an asynchronous computation: completed once with a value or an exception."""

    def __init__(self, *, devices: Optional[list] = None) -> None:
        self._devices = list(devices or [])
        self._cond = threading.Condition()
        self._completed = False
        self._result: Any = None
        self._exception: Optional[BaseException] = None
        self._callbacks: List[Callable[["Future[T]"], None]] = []

    def done(self) -> bool:
        """Whether the future holds a value or an exception (callbacks may still be running)."""
        with self._cond:
            return self._completed

    def wait(self, timeout: Optional[float] = None) -> T:
        """Block until complete and return the value, or raise the stored exception."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._completed, timeout):
                raise RuntimeError(f"Future.wait: not completed within {timeout} s")
        return self.value()

    def value(self) -> T:
        """The value of a completed future; raises its exception if it failed."""
        with self._cond:
            if not self._completed:
                raise RuntimeError("Future.value: the future is not completed yet (call wait())")
            if self._exception is not None:
                raise self._exception
            return self._result

    def set_result(self, result: T) -> None:
        """Complete with ``result`` and run the callbacks; a future completes only once."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete with an exception that ``wait``/``value`` raise."""
        if not isinstance(result, BaseException):
            raise TypeError(f"Future.set_exception: expected an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, result: Any, exception: Optional[BaseException]) -> None:
        with self._cond:
            if self._completed:
                raise RuntimeError("Future can only be marked completed once.")
            self._result, self._exception, self._completed = result, exception, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback: Callable[["Future[T]"], None]) -> None:
        """Run ``callback(self)`` when complete (now, if already complete); its result is discarded."""
        with self._cond:
            if not self._completed:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[["Future[T]"], S]) -> "Future[S]":
        """A new future completed with ``callback(self)``, or with a RuntimeError naming what the callback raised."""
        chained: Future[S] = Future(devices=self._devices)

        def run(fut: "Future[T]") -> None:
            try:
                chained.set_result(callback(fut))
            except Exception as exc:  # torch wraps a callback's error in RuntimeError naming it
                error = RuntimeError(f"Got the following error when running the callback: "
                                     f"{type(exc).__name__}: {exc}")
                error.__cause__ = exc
                chained.set_exception(error)

        self.add_done_callback(run)
        return chained

    def __repr__(self) -> str:
        return f"Future(done={self.done()})"


def collect_all(futures: List[Future]) -> Future[List[Future]]:
    """A future completed with the list of ``futures`` once all of them are complete (failed ones included)."""
    futures = list(futures)
    combined: Future[List[Future]] = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        combined.set_result([])
        return combined

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(futures)

    for fut in futures:
        fut.add_done_callback(one_done)
    return combined


def wait_all(futures: List[Future]) -> List[Any]:
    """Wait for every future and return their values; raises the first failure's exception."""
    return [fut.wait() for fut in collect_all(futures).wait()]
