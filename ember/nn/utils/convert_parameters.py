"""Flatten parameters into one vector and back (for optimizers and tools that work on a flat vector)."""
from __future__ import annotations

from typing import Any, Iterable

from ...tensor.joins import cat
from ...tensor.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters raveled and concatenated, in order (differentiable, like ``torch.cat``)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Any, parameters: Iterable[Tensor]) -> None:
    """Point each parameter's data at its slice of ``vec`` (the inverse of ``parameters_to_vector``)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n


__all__ = ["parameters_to_vector", "vector_to_parameters"]
