"""``ember.profiler.profile``: torch.profiler's context manager, with its activities, schedule and step API."""
from __future__ import annotations

import enum
import warnings
from typing import Any, Callable, Iterable

from ..cuda import is_available, is_initialized
from .events import EventList
from .recording import Recorder, record_function


class ProfilerActivity(enum.Enum):
    """What to time: host calls (always recorded) and, with ``CUDA``, the device time of ops on CUDA tensors."""

    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    """What the profiler does during a step, as a ``schedule`` decides."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities() -> set[ProfilerActivity]:
    """CPU, and CUDA where ember can use a CUDA device (or the simulator)."""
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA} if is_available() else {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0) -> Callable:
    """A ``schedule`` for ``profile``: skip ``skip_first`` steps, then cycle through ``wait`` idle steps, ``warmup``
    steps and ``active`` recorded steps (the last of which saves the trace), ``repeat`` times (0: until the end)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"schedule: invalid arguments wait={wait}, warmup={warmup}, active={active}, "
                         f"repeat={repeat}, skip_first={skip_first} (need active > 0, the rest >= 0)")
    cycle = wait + warmup + active

    def action_at(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action_at


def _record_always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class profile:
    """Record ember's ops, backward nodes, ``record_function`` regions and kernel compiles, as torch.profiler does.

    ``with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof: ...`` then
    ``print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))``. With a ``schedule``, call
    ``prof.step()`` at the end of each step; ``on_trace_ready(prof)`` runs whenever a recorded span ends.
    ``profile_memory``, ``with_flops`` and ``with_modules`` are accepted but not measured.
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, use_cuda: bool | None = None, acc_events: bool = False) -> None:
        self.activities = set(activities) if activities is not None else {ProfilerActivity.CPU, ProfilerActivity.CUDA}
        if use_cuda is not None:
            warnings.warn("profile(use_cuda=...) is deprecated: use activities=[ProfilerActivity.CUDA]", FutureWarning,
                          stacklevel=2)
            if use_cuda:
                self.activities.add(ProfilerActivity.CUDA)
            else:
                self.activities.discard(ProfilerActivity.CUDA)
        if profile_memory:
            warnings.warn("ember.profiler: profile_memory is not supported yet; no memory columns are recorded",
                          stacklevel=2)
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.schedule = schedule if schedule is not None else _record_always
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._recorder: Recorder | None = None
        self._step_region: record_function | None = None
        self._events = EventList()

    @property
    def _use_cuda(self) -> bool:
        return ProfilerActivity.CUDA in self.activities

    # -- running ---------------------------------------------------------------
    def start(self) -> None:
        """Begin profiling (``__enter__`` calls this)."""
        self._transition(ProfilerAction.NONE, self.current_action)
        self._begin_step_region()

    def stop(self) -> None:
        """End profiling; a trace being recorded is finished and handed to ``on_trace_ready`` (``__exit__``)."""
        self._end_step_region()
        self._transition(self.current_action, None)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides what the next step does."""
        self._end_step_region()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transition(previous, self.current_action)
        self._begin_step_region()

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _transition(self, previous: ProfilerAction, current: ProfilerAction | None) -> None:
        if self._recorder is not None and (previous is ProfilerAction.RECORD_AND_SAVE or current not in _RECORDING):
            self._finish_trace()
        if self._recorder is None and current in _RECORDING:
            recorder = Recorder(self.record_shapes, self.with_stack, self._use_cuda)
            recorder.start()
            self._recorder = recorder

    def _finish_trace(self) -> None:
        recorder, self._recorder = self._recorder, None
        self._events = EventList(recorder.stop(), use_cuda=self._use_cuda and is_initialized())
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _begin_step_region(self) -> None:
        """Each recorded step of a scheduled profile is a ``ProfilerStep#N`` row, as in torch."""
        if self.record_steps and self._recorder is not None:
            self._step_region = record_function(f"ProfilerStep#{self.step_num}").__enter__()

    def _end_step_region(self) -> None:
        if self._step_region is not None:
            self._step_region.__exit__(None, None, None)
            self._step_region = None

    # -- results ---------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded call of the last finished trace, in start order."""
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events grouped by name (and input shapes / top stack frames when asked)."""
        return self._events.key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last trace as Chrome trace JSON."""
        self._events.export_chrome_trace(path)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False) -> Callable:
    """Not provided: ember writes Chrome traces (``export_chrome_trace``), not TensorBoard's plugin format."""
    raise NotImplementedError("ember.profiler.tensorboard_trace_handler is not supported; use on_trace_ready="
                              "lambda p: p.export_chrome_trace(path) and open the trace in Perfetto")
