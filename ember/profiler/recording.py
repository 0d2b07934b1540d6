"""Recording while a profile is active: every ``Function.apply``, backward node, ``record_function`` region and
Numba compile opens an event on its thread's stack and closes it when done.

The hooks (``add_apply_wrapper`` on ``Function.apply``, the engine's node wrapper, a ``numba:compile`` listener)
are installed when recording starts and removed when it stops, so ember runs unwatched at full speed otherwise.
"""
from __future__ import annotations

import functools
import itertools
import os
import re
import threading
import time
import traceback
from typing import Any, Callable, Iterable

from ..autograd import engine, function
from ..cuda import Event, current_device
from ..tensor.tensor import Tensor
from .events import COMPILE_PREFIX, FunctionEvent

_ACTIVE: "Recorder | None" = None
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_TORCH_SPELLINGS = {"MatMul": "matmul"}  # where snake case would read differently from torch's op name


@functools.lru_cache(maxsize=None)
def op_name(cls: type) -> str:
    """An op's row name: ``ember::`` plus the snake-cased class name for ember's ops (Mul -> ember::mul,
    ScatterReduce -> ember::scatter_reduce); a user's own Function keeps its class name."""
    if not cls.__module__.startswith("ember."):
        return cls.__name__
    name = cls.__name__.lstrip("_")
    words = _TORCH_SPELLINGS.get(name) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return "ember::" + words.lower()


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor)


def _tensors_in(inputs: Iterable) -> Iterable:
    for value in inputs:
        if isinstance(value, (list, tuple)):
            yield from (v for v in value if _is_tensor(v))
        elif _is_tensor(value):
            yield value


def _input_shapes(inputs: Iterable) -> list:
    """torch's ``input_shapes``: the shape of each tensor argument, ``[]`` for anything else."""
    return [list(v.shape) if _is_tensor(v) else [] for v in inputs]


def _user_stack() -> list[str]:
    """The calling Python frames outside ember, innermost first, as ``file(line): function``."""
    frames = traceback.extract_stack()[:-1]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)
            if not os.path.abspath(f.filename).startswith(_EMBER_DIR)]


class Recorder:
    """The events of one trace, and the per-thread stacks of the calls still open."""

    def __init__(self, record_shapes: bool = False, with_stack: bool = False, time_cuda: bool = False) -> None:
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.time_cuda = time_cuda
        self.events: list[FunctionEvent] = []
        self._origin_ns = time.perf_counter_ns()
        self._ids = itertools.count()
        self._local = threading.local()
        self._device_spans: list[tuple[FunctionEvent, Any, Any]] = []
        self._device_origin: tuple[Any, float] | None = None  # a timing Event and the host time it was recorded
        self._removers: list[Callable[[], None]] = []

    def now_us(self) -> float:
        return (time.perf_counter_ns() - self._origin_ns) / 1000.0

    def _open(self) -> list[FunctionEvent]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def begin(self, name: str, kind: str, inputs: Iterable = ()) -> FunctionEvent:
        """Open an event on this thread; bookkeeping happens before the clock starts."""
        shapes = _input_shapes(inputs) if self.record_shapes and kind in ("op", "backward") else None
        stack = _user_stack() if self.with_stack else None
        event = FunctionEvent(next(self._ids), name, threading.get_native_id(), 0.0, kind, shapes, stack)
        open_events = self._open()
        event.cpu_parent = open_events[-1] if open_events else None
        open_events.append(event)
        event.start_us = self.now_us()
        return event

    def end(self, event: FunctionEvent) -> None:
        """Close ``event``: stop its clock, attach it to the call it ran inside."""
        event.end_us = self.now_us()
        open_events = self._open()
        if open_events and open_events[-1] is event:
            open_events.pop()
        elif event in open_events:
            open_events.remove(event)
        if event.cpu_parent is not None:
            event.cpu_parent.append_cpu_child(event)
        self.events.append(event)

    def run(self, name: str, kind: str, inputs: Iterable, call: Callable[[], Any]) -> Any:
        """``call()`` recorded as one event (timed on the device too when it works on CUDA tensors)."""
        event = self.begin(name, kind, inputs)
        device_start = self._device_start(inputs)
        try:
            return call()
        finally:
            if device_start is not None:
                self._device_end(event, device_start)
            self.end(event)

    def _device_start(self, inputs: Iterable) -> Any:
        if not self.time_cuda or not any(t.is_cuda for t in _tensors_in(inputs)):
            return None
        if self._device_origin is None:
            origin = Event(enable_timing=True)
            origin.record()
            self._device_origin = (origin, self.now_us())
        start = Event(enable_timing=True)
        start.record()
        return start

    def _device_end(self, event: FunctionEvent, start: Any) -> None:
        end = Event(enable_timing=True)
        end.record()
        event.device_index = current_device()
        self._device_spans.append((event, start, end))

    def _resolve_device_times(self) -> None:
        """CUDA times from the event pairs, read once at the end so no op waits for the device meanwhile."""
        for event, start, end in self._device_spans:
            origin, origin_us = self._device_origin
            event.cuda_time_total = start.elapsed_time(end) * 1000.0
            event.device_start_us = origin_us + origin.elapsed_time(start) * 1000.0
        self._device_spans = []

    def start(self) -> None:
        """Install the hooks and make this the active recorder (profiles do not nest)."""
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("ember.profiler: the profiler is already enabled; profiles cannot be nested")
        _ACTIVE = self
        remove_apply = function.add_apply_wrapper(functools.partial(_watch_apply, self))
        previous_node_wrapper = engine.set_node_wrapper(functools.partial(_watch_node, self))
        self._removers = [remove_apply, lambda: engine.set_node_wrapper(previous_node_wrapper),
                          _listen_for_compiles(self)]

    def stop(self) -> list[FunctionEvent]:
        """Remove the hooks; returns the events in start order."""
        global _ACTIVE
        for remove in reversed(self._removers):
            remove()
        self._removers = []
        _ACTIVE = None
        self._resolve_device_times()
        return sorted(self.events, key=lambda e: (e.start_us, e.id))


def _watch_apply(recorder: Recorder, cls: type, args: tuple, kwargs: dict, proceed: Callable) -> Any:
    return recorder.run(op_name(cls), "op", args, lambda: proceed(args, kwargs))


def _watch_node(recorder: Recorder, call: Callable, node: Any, grads: list) -> Any:
    return recorder.run(node.name(), "backward", grads, lambda: call(node, grads))


def _listen_for_compiles(recorder: Recorder) -> Callable[[], None]:
    """Record each Numba compile (a cache miss; cache loads are not compiles) as a ``numba::compile`` row.

    numba-cuda 0.30's CUDA dispatcher broadcasts no compile event, so CUDA kernel compiles stay in their op's time.
    """
    from numba.core import event as numba_event

    class CompileListener(numba_event.Listener):
        def __init__(self) -> None:
            self._local = threading.local()

        def _open(self) -> list:
            if not hasattr(self._local, "events"):
                self._local.events = []
            return self._local.events

        def on_start(self, event: Any) -> None:
            function = event.data["dispatcher"].py_func
            self._open().append(recorder.begin(COMPILE_PREFIX + function.__qualname__, "compile"))

        def on_end(self, event: Any) -> None:
            if self._open():
                recorder.end(self._open().pop())

    listener = CompileListener()
    numba_event.register("numba:compile", listener)
    return lambda: numba_event.unregister("numba:compile", listener)


class record_function:
    """A named region of user code, shown as its own row: ``with record_function("name"):`` or as a decorator.

    ``args`` (torch's optional annotation string) is accepted and not shown.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._recorder: Recorder | None = None
        self._event: FunctionEvent | None = None

    def __enter__(self) -> "record_function":
        self._recorder = _ACTIVE
        if self._recorder is not None:
            self._event = self._recorder.begin(self.name, "user")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._event is not None:
            self._recorder.end(self._event)
            self._event = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)

        return recorded
