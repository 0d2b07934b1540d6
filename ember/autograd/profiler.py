"""``ember.autograd.profiler``: the legacy spelling, ``profile(use_cuda=...)``, over ``ember.profiler``."""
from __future__ import annotations

from typing import Any

from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler.profile import ProfilerActivity, profile as _profile
from ..profiler.recording import record_function


class profile(_profile):
    """``with ember.autograd.profiler.profile(use_cuda=True) as prof:``; ``enabled=False`` records nothing."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False) -> None:
        activities = [ProfilerActivity.CPU]
        if use_cuda or use_device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.enabled = enabled

    def __enter__(self) -> "profile":
        if self.enabled:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.stop()

    @property
    def function_events(self) -> EventList:
        return self.events()

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of every event's self CPU time, in microseconds."""
        return self.events().self_cpu_time_total

    def total_average(self) -> FunctionEventAvg:
        return self.events().total_average()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        """The legacy table: one row per recorded call (``key_averages().table`` groups them)."""
        return self.events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)


__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
