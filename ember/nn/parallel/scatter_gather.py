"""Splitting a batch across devices and joining the replicas' outputs (``torch.nn.parallel.scatter_gather``).

Both directions are differentiable: a scattered chunk is a view of the input copied to its device, a gathered
output is the concatenation of copies on the target device, so gradients flow back across devices.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from ...tensor.device import device as Device
from ...tensor.joins import cat
from ...tensor.tensor import Tensor
from ...tensor.device import cuda_device
from ._devices import device_index

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs: Any, target_gpus: Sequence[int | Device], dim: int = 0) -> Any:
    """Slice the tensors in ``inputs`` into ``len(target_gpus)`` chunks along ``dim`` (as ``Tensor.chunk``), one
    per device; tuples, lists, dicts and namedtuples are walked, other objects are repeated. There are as many
    pieces as the fewest chunks of any tensor."""
    devices = [cuda_device(device_index(d)) for d in target_gpus]

    def split(obj: Any) -> list:
        if isinstance(obj, Tensor):
            return [chunk.to(dev) for chunk, dev in zip(obj.chunk(len(devices), dim), devices)]
        if _is_namedtuple(obj):
            return [type(obj)(*parts) for parts in zip(*map(split, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(split, obj)))
        if isinstance(obj, list) and obj:
            return [list(parts) for parts in zip(*map(split, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(parts) for parts in zip(*map(split, obj.items()))]
        return [obj for _ in devices]

    return split(inputs)


def scatter_kwargs(inputs: tuple, kwargs: dict | None, target_gpus: Sequence[int | Device],
                   dim: int = 0) -> tuple[tuple, tuple]:
    """``scatter`` of the positional and the keyword arguments, padded to the same number of pieces."""
    pieces = scatter(inputs, target_gpus, dim) if inputs else []
    kwarg_pieces = scatter(kwargs, target_gpus, dim) if kwargs else []
    pieces.extend(() for _ in range(len(kwarg_pieces) - len(pieces)))
    kwarg_pieces.extend({} for _ in range(len(pieces) - len(kwarg_pieces)))
    return tuple(pieces), tuple(kwarg_pieces)


def _gather_tensors(tensors: Sequence[Tensor], target: Device, dim: int) -> Tensor:
    if any(t.device.type == "cpu" for t in tensors):
        raise AssertionError("Gather function not implemented for CPU tensors")
    if all(t.dim() == 0 for t in tensors):
        warnings.warn(f"Was asked to gather along dimension {dim}, but all input tensors were scalars; will instead "
                      "unsqueeze and return a vector.", UserWarning, stacklevel=4)
        tensors = [t.unsqueeze(0) for t in tensors]
        dim = 0
    return cat([t.to(target) for t in tensors], dim)


def gather(outputs: Sequence[Any], target_device: int | str | Device, dim: int = 0) -> Any:
    """Join the replicas' ``outputs`` on ``target_device`` (a CUDA index, or -1 / "cpu" for the CPU): tensors are
    concatenated along ``dim``, containers are joined element by element, ``None`` stays ``None``."""
    on_cpu = target_device == -1 or str(target_device) == "cpu"
    target = Device("cpu") if on_cpu else cuda_device(device_index(target_device))

    def join(parts: Sequence[Any]) -> Any:
        first = parts[0]
        if isinstance(first, Tensor):
            return _gather_tensors(parts, target, dim)
        if first is None:
            return None
        if isinstance(first, dict):
            if not all(len(first) == len(d) for d in parts):
                raise ValueError("All dicts must have the same number of keys")
            return type(first)((key, join([d[key] for d in parts])) for key in first)
        if _is_namedtuple(first):
            return type(first)._make(map(join, zip(*parts)))
        return type(first)(map(join, zip(*parts)))

    return join(outputs)
