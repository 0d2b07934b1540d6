"""``ember.device``: where a tensor's storage lives."""
from __future__ import annotations

from typing import Any


class device:
    """A device such as ``device("cpu")`` or ``device("cuda", 0)``; compares equal to its string form."""

    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int):
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
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


def as_device(value: Any) -> device:
    """Normalise a ``device=`` argument; only the CPU has storage until CUDA support lands."""
    if value is None:
        return CPU
    dev = value if isinstance(value, device) else device(value)
    if dev.type == "cuda":
        from .. import cuda

        cuda._lazy_init()  # without numba-cuda or a GPU: the error that says how to install GPU support
        raise RuntimeError(f"ember: tensors on '{dev}' are not supported yet: ember.cuda and its kernels work, "
                           "but Tensor storage on the GPU is still being built (see the README)")
    if dev.type != "cpu":
        raise RuntimeError(f"ember: device '{dev}' is not available; ember runs tensors on the CPU")
    return CPU
