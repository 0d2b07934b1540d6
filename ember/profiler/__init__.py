"""``ember.profiler``: torch.profiler's API for ember.

``profile`` records each op's calls, self and total CPU time (and CUDA time for ops on CUDA tensors), each
backward node, ``record_function`` regions and Numba kernel compiles (``numba::compile <function>`` rows), shown
by ``prof.key_averages().table(sort_by=..., row_limit=...)`` and written by ``prof.export_chrome_trace(path)``.
Nothing is hooked while no profile is recording.
"""
from .events import EventList, FunctionEvent, FunctionEventAvg
from .profile import ProfilerAction, ProfilerActivity, profile, schedule, supported_activities, \
    tensorboard_trace_handler
from .recording import record_function

__all__ = [
    "profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule", "supported_activities",
    "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg",
]

from ..autograd import profiler as _legacy  # noqa: E402,F401  (binds ember.autograd.profiler)
