"""``renorm``: rescale each slice along a dim whose p-norm exceeds ``maxnorm`` down to that norm (torch's
max-norm constraint, as in ``nn.Embedding(max_norm=...)``), in tensor ops so it differentiates."""
from __future__ import annotations

from typing import Any

from ..autograd.function import name_node
from . import autocast_policy
from .elementwise import inplace, where
from .out_arg import with_out
from .tensor import Tensor, _wrap_dim
from .arguments import tensor_args
from ..linalg.norms import vector_norm


@tensor_args
@with_out
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """``input`` with each slice ``input.select(dim, i)`` of p-norm above ``maxnorm`` scaled by
    ``maxnorm / (norm + 1e-7)`` (torch's factor); the other slices are unchanged."""
    if autocast_policy.ACTIVE and autocast_policy.covers("renorm", input):
        return autocast_policy.run("renorm", renorm, input, p, dim, maxnorm)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = _wrap_dim(dim, input.ndim, "renorm")
    norms = vector_norm(input, p, [k for k in range(input.ndim) if k != d], keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return name_node(input * factor.to(input.dtype), "RenormBackward0")


def renorm_(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """In-place ``renorm``."""
    return inplace(self, "renorm", lambda s: renorm(s, p, dim, maxnorm))


TENSOR_METHODS: dict[str, Any] = {"renorm": renorm, "renorm_": renorm_}

__all__ = ["renorm", "renorm_"]
