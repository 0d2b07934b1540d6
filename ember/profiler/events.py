"""What a profile recorded: ``FunctionEvent`` (one call), ``FunctionEventAvg`` (calls grouped by name) and
``EventList``, with torch's attribute names so code reading ``torch.profiler`` results reads ember's too.

Times are microseconds (floats), as in torch. Each event knows its parent and children on its thread: self time
is total time minus the children's, so a nested op counts toward the outer op's total but not its self time.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable

# The ``cat`` of each kind of event in a Chrome trace.
TRACE_CATEGORIES = {"op": "cpu_op", "backward": "cpu_op", "user": "user_annotation", "compile": "compile"}
COMPILE_PREFIX = "numba::compile "


def compile_time_total(events: Iterable) -> float:
    """Time the ``numba::compile`` rows among ``events`` spent compiling."""
    return sum(e.self_cpu_time_total for e in events if e.key.startswith(COMPILE_PREFIX))


class _Timings:
    """Averages and torch's ``device_*`` spellings, derived from the totals a subclass keeps."""

    count: int
    cpu_time_total: float
    self_cpu_time_total: float
    cuda_time_total: float
    self_cuda_time_total: float

    @property
    def cpu_time(self) -> float:
        """Average CPU time per call."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def cuda_time(self) -> float:
        """Average CUDA time per call."""
        return self.cuda_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        return self.cuda_time

    @property
    def device_time_total(self) -> float:
        return self.cuda_time_total

    @property
    def self_device_time_total(self) -> float:
        return self.self_cuda_time_total

    @property
    def cpu_time_total_str(self) -> str:
        from .table import format_time  # not at the top: table.py imports this module

        return format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        from .table import format_time  # not at the top: table.py imports this module

        return format_time(self.self_cpu_time_total)


class FunctionEvent(_Timings):
    """One recorded call: an op's forward, a backward node, a ``record_function`` region or a kernel compile."""

    count = 1

    def __init__(self, id: int, name: str, thread: int, start_us: float, kind: str = "op",
                 input_shapes: list | None = None, stack: list | None = None) -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = start_us
        self.kind = kind
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []
        self.cuda_time_total = 0.0
        self.device_index = -1
        self.device_start_us: float | None = None  # where the device work began, when CUDA timing measured it

    @property
    def key(self) -> str:
        return self.name

    @property
    def is_user_annotation(self) -> bool:
        return self.kind == "user"

    @property
    def time_range(self) -> tuple[float, float]:
        return (self.start_us, self.end_us)

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return max(self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children), 0.0)

    @property
    def self_cuda_time_total(self) -> float:
        return max(self.cuda_time_total - sum(c.cuda_time_total for c in self.cpu_children), 0.0)

    def append_cpu_child(self, child: "FunctionEvent") -> None:
        self.cpu_children.append(child)
        child.cpu_parent = self

    def trace_events(self, pid: int) -> list[dict]:
        """This call as Chrome trace complete events: the host span, and the device span when one was timed."""
        host = {"name": self.name, "ph": "X", "cat": TRACE_CATEGORIES[self.kind], "pid": pid, "tid": self.thread,
                "ts": self.start_us, "dur": self.cpu_time_total, "args": {"Input Dims": self.input_shapes}}
        if self.device_start_us is None:
            return [host]
        device = {"name": self.name, "ph": "X", "cat": "kernel", "pid": f"cuda:{self.device_index}",
                  "tid": "stream", "ts": self.device_start_us, "dur": self.cuda_time_total, "args": {}}
        return [host, device]

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us cuda_time={self.cuda_time_total:.3f}us "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Timings):
    """The calls that share a key (and input shapes or stack when grouped by them), summed."""

    def __init__(self, key: str, input_shapes: list | None = None, stack: list | None = None,
                 is_user_annotation: bool = False) -> None:
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack if stack is not None else []
        self.is_user_annotation = is_user_annotation
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cuda_time_total = 0.0
        self.self_cuda_time_total = 0.0

    def add(self, other: _Timings) -> "FunctionEventAvg":
        """Fold ``other`` (an event or another average) into these totals."""
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cuda_time_total += other.cuda_time_total
        self.self_cuda_time_total += other.self_cuda_time_total
        return self

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} count={self.count} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time_total:.3f}us cuda_time={self.cuda_time_total:.3f}us "
                f"input_shapes={self.input_shapes}>")


class EventList(list):
    """A profile's events (or their averages) in start order, with torch's ``table`` and trace export."""

    def __init__(self, events: Iterable = (), use_cuda: bool = False,
                 grouped_by: tuple[bool, int] = (False, 0)) -> None:
        super().__init__(events)
        self.use_cuda = use_cuda
        self.grouped_by = grouped_by  # (by input shape, stack frames): which extra columns ``table`` shows

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    @property
    def compile_time_total(self) -> float:
        """Time spent compiling Numba kernels (only calls that compiled, not cache loads)."""
        return compile_time_total(self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """One ``FunctionEventAvg`` per name (and per input shapes / top stack frames when asked), first seen first."""
        groups: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            shapes = str(event.input_shapes) if group_by_input_shape else ""
            stack = tuple(event.stack[:group_by_stack_n]) if group_by_stack_n > 0 else ()
            key = (event.key, shapes, stack)
            if key not in groups:
                groups[key] = FunctionEventAvg(event.key, event.input_shapes if group_by_input_shape else None,
                                               list(stack), event.is_user_annotation)
            groups[key].add(event)
        return EventList(groups.values(), self.use_cuda, (group_by_input_shape, group_by_stack_n))

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one row named ``Total``."""
        total = FunctionEventAvg("Total")
        for event in self:
            total.add(event)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """torch's text table: one row per event (or average), sorted descending by ``sort_by``, then totals."""
        from .table import build_table  # not at the top: table.py imports this module

        by_shape, by_stack = self.grouped_by
        return build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                           top_level_events_only=top_level_events_only, with_shapes=by_shape,
                           with_stack=by_stack > 0, max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           max_src_column_width=max_src_column_width)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (open in chrome://tracing or Perfetto)."""
        pid = os.getpid()
        trace: list[dict[str, Any]] = []
        for event in self:
            if not isinstance(event, FunctionEvent):
                raise RuntimeError("export_chrome_trace needs the recorded events, not key_averages()")
            trace.extend(event.trace_events(pid))
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList"]
