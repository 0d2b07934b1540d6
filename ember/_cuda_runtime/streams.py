"""CUDA streams and events (``torch.cuda.Stream``, ``Event``, ``current_stream``, ``stream``).

An ember ``Stream`` wraps a Numba stream (``numba_stream``, what a launcher passes as ``kernel[grid, block,
stream]``). Each thread has a current stream (the device's default stream until a ``with ember.cuda.stream(s)``
block); ember's launchers queue their kernels on it. Numba's simulator runs everything synchronously and its
events keep no time, so under the simulator an ``Event`` with ``enable_timing=True`` also notes the host clock
when recorded, and ``elapsed_time`` reports that.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Iterator

from .._cuda_context import using
from .availability import _lazy_init, is_simulator
from .device import device as device_type
from .gpus import _device_index

_local = threading.local()
_default_streams: dict[int, "Stream"] = {}


class Stream:
    """An ordered queue of device work on one device. ``Stream()`` makes a new (non-default) stream."""

    def __init__(self, device: Any = None, priority: int = 0, _numba_stream: Any = None) -> None:
        cuda = _lazy_init()
        self.device_index = _device_index(device)
        self.priority = priority
        if _numba_stream is None:
            with using(self.device_index):  # a stream belongs to the context it is made in
                _numba_stream = cuda.stream()
        self.numba_stream = _numba_stream

    @property
    def device(self) -> Any:
        return device_type("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` value (0 for the default stream and under the simulator)."""
        handle = getattr(self.numba_stream, "handle", None)
        try:
            return int(handle) if handle is not None else 0
        except TypeError:
            return int(getattr(handle, "value", 0) or 0)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        with using(self.device_index):
            self.numba_stream.synchronize()

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        return self.record_event().query()

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one when None) at the current end of this stream."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        """Make later work on this stream wait until ``event`` has completed."""
        event.wait(self)

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work on this stream wait for all work queued so far on ``stream``."""
        self.wait_event(stream.record_event())

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return self.numba_stream is other.numba_stream

    def __hash__(self) -> int:
        return id(self.numba_stream)

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


def default_stream(device: Any = None) -> Stream:
    """The device's default (legacy null) stream."""
    cuda = _lazy_init()
    index = _device_index(device)
    found = _default_streams.get(index)
    if found is None:
        with using(index):
            found = _default_streams[index] = Stream(index, _numba_stream=cuda.default_stream())
    return found


def current_stream(device: Any = None) -> Stream:
    """This thread's current stream on ``device`` (the default stream unless a ``stream`` block set another)."""
    index = _device_index(device)
    current = getattr(_local, "streams", {}).get(index)
    return current if current is not None else default_stream(index)


def set_stream(stream: Stream) -> None:
    """Make ``stream`` current on its device for this thread."""
    if not hasattr(_local, "streams"):
        _local.streams = {}
    _local.streams[stream.device_index] = stream


@contextlib.contextmanager
def stream(stream: Stream | None) -> Iterator[Stream | None]:
    """``with ember.cuda.stream(s): ...`` queues ember's kernels on ``s`` inside the block (None: no change)."""
    if stream is None:
        yield None
        return
    previous = current_stream(stream.device_index)
    set_stream(stream)
    try:
        yield stream
    finally:
        set_stream(previous)


class Event:
    """A marker in a stream: ``record`` it, then ``synchronize``/``query`` it or time the gap to another."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError("ember.cuda.Event: interprocess events are not supported")
        cuda = _lazy_init()
        self.enable_timing = enable_timing
        self.blocking = blocking
        self._event = cuda.event() if is_simulator() else cuda.event(timing=enable_timing)
        self._recorded = False
        self._host_time = 0.0

    def record(self, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream`` (the current stream when None)."""
        stream = current_stream() if stream is None else stream
        self._event.record(stream.numba_stream)
        self._recorded = True
        if is_simulator():
            self._host_time = time.perf_counter()

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` (the current stream when None) wait for this event."""
        stream = current_stream() if stream is None else stream
        self._event.wait(stream.numba_stream)

    def synchronize(self) -> None:
        """Block the host until the work before this event's record has finished."""
        if self._recorded:
            self._event.synchronize()

    def query(self) -> bool:
        """Whether the work before this event's record has finished (True if never recorded)."""
        if not self._recorded or is_simulator():
            return True
        return bool(self._event.query())

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event's record and ``end_event``'s (both need ``enable_timing=True``)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        end_event.synchronize()
        if is_simulator():
            return (end_event._host_time - self._host_time) * 1000.0
        return float(self._event.elapsed_time(end_event._event))

    def __repr__(self) -> str:
        return f"<ember.cuda.Event recorded={self._recorded} enable_timing={self.enable_timing}>"


__all__ = ["Stream", "Event", "default_stream", "current_stream", "set_stream", "stream"]
