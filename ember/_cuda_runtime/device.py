"""``ember.device``, the device type, and the thread's default device that ``with ember.device(...)`` sets.

It sits with the CUDA runtime, below the tensor layer, because the two need each other: the runtime reads and
hands out devices (``set_device("cuda:1")``, ``Stream.device``), and ``device(0)``, torch's "index of the current
accelerator", asks whether CUDA can be used. ``ember.tensor.device`` re-exports it beside the tensor layer's
placement helpers. The default device is per thread, as in torch (a new thread starts on the CPU).
"""
from __future__ import annotations

import threading
from typing import Any

from .availability import is_available


class device:
    """A device such as ``device("cpu")`` or ``device("cuda", 0)``; compares equal to its string form."""

    __slots__ = ("type", "index", "_hash")  # the hash is kept: every recorded op hashes its outputs' device

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, device):
            self.type, self.index, self._hash = type.type, type.index, type._hash
            return
        if isinstance(type, int):  # torch's "index of the current accelerator": ember's accelerator is CUDA
            _require_accelerator()
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or int, got {type.__class__.__name__}")
        name, _, idx = type.partition(":")
        if name not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}"
            )
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        self.type = name
        self.index = index
        self._hash = hash((name, index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self) -> "device":
        """Make this the default device of creation functions until the block ends (as torch's device does)."""
        defaults.stack.append(defaults.device)
        defaults.device = self
        return self

    def __exit__(self, *exc: Any) -> None:
        defaults.device = defaults.stack.pop()


def _require_accelerator() -> None:
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


class _Defaults(threading.local):
    """Per thread: the default device of creation functions (None: the CPU) and those ``with device`` replaced."""

    device: "device | None" = None

    def __init__(self) -> None:
        self.stack: list = []


defaults = _Defaults()

__all__ = ["defaults", "device"]
