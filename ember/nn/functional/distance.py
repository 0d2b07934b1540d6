"""Distances and similarities between vectors: ``cosine_similarity``, ``pairwise_distance``, ``pdist``.

Tensor-op compositions (norms, products, sums) that autograd differentiates.
"""
from __future__ import annotations

import numpy as np

from ...tensor import autocast_policy
from ...tensor.tensor import Tensor
from ...tensor.dtypes import promote_types
from ...tensor.joins import broadcast_tensors

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def _broadcast_float(x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
    """Both operands broadcast to a common shape, checked to be floating point."""
    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{common.name.capitalize()}")
    return broadcast_tensors(x1.to(common), x2.to(common))


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    """``||x||`` along ``dim`` (kept), raised to at least ``eps`` in value only: the gradient stays the norm's,
    as in torch (which clamps in place outside the graph)."""
    norm = x.norm(2, dim, keepdim=True)
    return norm + (norm.clamp_min(eps) - norm).detach()


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast together); norms below ``eps``
    count as ``eps``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("cosine_similarity", x1):
        return autocast_policy.run("cosine_similarity", cosine_similarity, x1, x2, dim, eps)
    a, b = _broadcast_float(x1, x2)
    return ((a / _clamped_norm(a, dim, eps)) * (b / _clamped_norm(b, dim, eps))).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim of the broadcast shape."""
    a, b = _broadcast_float(x1, x2)
    return (a - b + eps).norm(p, max(a.ndim - 1, 0), keepdim=keepdim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance between each pair of rows ``i < j`` of a 2-D ``input``, in row-major pair order."""
    if autocast_policy.ACTIVE and autocast_policy.covers("pdist", input):
        return autocast_policy.run("pdist", pdist, input, p)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = np.triu_indices(input.shape[0], k=1)
    diff = input[Tensor._make(first.astype(np.int64))] - input[Tensor._make(second.astype(np.int64))]
    return diff.norm(p, 1)


TORCH_FUNCTIONS = {"cosine_similarity": cosine_similarity, "pairwise_distance": pairwise_distance, "pdist": pdist}
