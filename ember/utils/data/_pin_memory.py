"""``DataLoader(pin_memory=True)``: every batch's tensors copied into pinned host memory, so the training loop's
``.to("cuda", non_blocking=True)`` can queue the copy and go on.

With worker processes the pinning runs in a thread of the main process (as in torch), between the workers' result
queue and the batches the iterator hands out, so pinning one batch overlaps the training step on the previous.
"""
from __future__ import annotations

import queue
import warnings
from collections.abc import Mapping
from typing import Any, Callable

from ...tensor.tensor import Tensor
from ...cuda import is_available, set_device
from ._exception_wrapper import ExceptionWrapper

# Seconds between the pinning thread's checks that the loader is shutting it down.
_DONE_CHECK_S = 0.1


def pinning_enabled(requested: bool) -> bool:
    """Whether to pin: asked for and a CUDA device is usable (torch warns and carries on without one)."""
    if not requested:
        return False

    if is_available():
        return True
    warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
                  "won't be used.", UserWarning, stacklevel=3)
    return False


def pin_batch(batch: Any) -> Any:
    """``batch`` with each tensor in it pinned (through mappings, namedtuples, tuples and lists, as torch does);
    other objects with a ``pin_memory()`` method are asked to pin themselves."""
    if isinstance(batch, Tensor):
        return batch.pin_memory()
    if isinstance(batch, (str, bytes)):
        return batch
    if isinstance(batch, Mapping):
        pinned = {k: pin_batch(v) for k, v in batch.items()}
        return pinned if type(batch) is dict else type(batch)(pinned)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(pin_batch(v) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(pin_batch(v) for v in batch)
    if callable(getattr(batch, "pin_memory", None)):
        return batch.pin_memory()
    return batch


def pin_memory_loop(in_queue: Any, out_queue: queue.Queue, done_event: Any, device_index: int,
                    decode: Callable[[Any], tuple]) -> None:
    """The pinning thread: each worker result from ``in_queue``, ``decode``-d into ``(task, batch)``, goes to
    ``out_queue`` pinned, until ``done_event``. A failure to pin travels as the error the iterator raises; a result
    that cannot be decoded (its sender died) as ``(None, error)``."""
    set_device(device_index)  # the current device is per thread: the loader's, not device 0
    where = f"in pin memory thread for device {device_index}"
    while not done_event.is_set():
        try:
            payload = in_queue.get(timeout=_DONE_CHECK_S)
        except queue.Empty:
            continue
        try:
            task, data = decode(payload)
        except Exception:  # noqa: BLE001 - the iterator checks whether a dead worker explains it
            task, data = None, ExceptionWrapper(where=where)
        if task is not None and not isinstance(data, ExceptionWrapper):
            try:
                data = pin_batch(data)
            except Exception:  # noqa: BLE001 - raised in the main thread, where the batch was expected
                data = ExceptionWrapper(where=where)
        out_queue.put((task, data))
        del data
