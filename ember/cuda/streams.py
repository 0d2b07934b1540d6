"""``torch.cuda.streams``: CUDA streams and events (``Stream``, ``Event``, ``current_stream``, ``stream``).

They are ``ember._cuda_runtime.streams``'s (below the tensor layer, whose copies and DLPack exchange queue on the
current stream); see there for how they wrap Numba's streams and time events under the simulator.
"""
from __future__ import annotations

from .._cuda_runtime.streams import Event, Stream, current_stream, default_stream, set_stream, stream

__all__ = ["Stream", "Event", "default_stream", "current_stream", "set_stream", "stream"]
