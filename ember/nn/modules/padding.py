"""Padding layers: constant/zero, reflection, replication and circular padding of the last 1-3 dims."""
from __future__ import annotations

from typing import Sequence

from ...tensor.tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _amounts(padding: int | Sequence[int], dims: int) -> tuple[int, ...]:
    """An int pads every side of ``dims`` dims by that much; a sequence is torch's (last dim first) pad tuple."""
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    return tuple(padding)


class _PadNd(Module):
    """Shared body: ``padding`` (torch's order) and one ``F.pad`` mode."""

    mode = "constant"
    dims = 1

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding = _amounts(padding, self.dims)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


def _per_dims(base: type, stem: str, doc: str) -> tuple[type, ...]:
    """The public ``<stem>1d``, ``<stem>2d`` and ``<stem>3d`` layers: ``base`` padding the last 1, 2, 3 dims.

    They differ only in ``dims``, so they are made here rather than written out 15 times; ``doc`` gets
    "the last dim" / "the last N dims" in place of ``{}``.
    """
    layers = []
    for dims in (1, 2, 3):
        name = f"{stem}{dims}d"
        where = "the last dim" if dims == 1 else f"the last {dims} dims"
        layers.append(type(name, (base,), {"dims": dims, "__doc__": doc.format(where), "__module__": __name__,
                                           "__qualname__": name}))
    return tuple(layers)


ConstantPad1d, ConstantPad2d, ConstantPad3d = _per_dims(_ConstantPadNd, "ConstantPad", "Pad {} with ``value``.")
ZeroPad1d, ZeroPad2d, ZeroPad3d = _per_dims(_ZeroPadNd, "ZeroPad", "Pad {} with zeros.")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _per_dims(
    _ReflectionPadNd, "ReflectionPad", "Pad {} with the reflection about the edge elements.")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _per_dims(
    _ReplicationPadNd, "ReplicationPad", "Pad {} by repeating the edge elements.")
CircularPad1d, CircularPad2d, CircularPad3d = _per_dims(
    _CircularPadNd, "CircularPad", "Pad {} by wrapping around (periodic boundary).")
