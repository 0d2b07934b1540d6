"""``DataLoader(pin_memory=True)``: every batch's tensors copied into pinned host memory, so the training loop's
``.to("cuda", non_blocking=True)`` can queue the copy and go on."""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ...tensor.tensor import Tensor
from ...cuda import is_available


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
