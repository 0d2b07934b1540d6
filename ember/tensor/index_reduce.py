"""``index_reduce``: ``source``'s slices reduced (prod, mean, amax, amin) into ``input`` at ``index`` along a dim.

It is ``scatter_reduce`` with the vector ``index`` spread over ``source``'s slices, after torch's own checks of
``index_reduce`` (so its gradients, ties and ``include_self`` rules are scatter_reduce's, which are torch's)."""
from __future__ import annotations

import warnings
from typing import Any

from ..autograd.function import name_node
from .elementwise import inplace
from .indexing import _check_same_dtype, _check_source, _vector_key, scatter_reduce
from .out_arg import with_out
from .tensor import Tensor
from .arguments import tensor_args

_REDUCTIONS = ("prod", "mean", "amax", "amin")


@tensor_args
@with_out
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """``input`` with each slice ``source.select(dim, i)`` reduced into ``input.select(dim, index[i])`` by ``reduce``
    (repeated indices reduce together; ``include_self=False`` leaves ``input``'s own values out where indexed)."""
    warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    _check_same_dtype(input, source, "index_reduce_(): self ({self}) and source ({other}) must have the same "
                                     "scalar type")
    if not isinstance(index, Tensor):
        raise TypeError(f"index_reduce(): argument 'index' (position 3) must be Tensor, not {type(index).__name__}")
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{index.dtype.scalar_type_name} and size: {list(index.shape)}")
    d, key = _vector_key("index_reduce", input, dim, index, IndexError, wrap=False,
                         out_of_range=lambda v, d, n: IndexError("index out of range in self"),
                         message=f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                                 f"{index.dtype.scalar_type_name}")
    _check_source("index_reduce", input, d, key, source, RuntimeError,
                  "index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): ({m}), for dim: {d}")
    x, src = (input.reshape(1), source.reshape(1)) if input.ndim == 0 else (input, source)
    along = Tensor._make(key[-1]).to(device=input.device)
    spread = along.reshape((-1,) + (1,) * (x.ndim - d - 1)).expand(src.shape)
    result = scatter_reduce(x, d, spread, src, reduce, include_self=include_self)
    return name_node(result.reshape(input.shape) if input.ndim == 0 else result, "IndexReduceBackward0")


def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place ``index_reduce``."""
    return inplace(self, "index_reduce",
                   lambda s: index_reduce(s, dim, index, source, reduce, include_self=include_self))


TENSOR_METHODS: dict[str, Any] = {"index_reduce": index_reduce, "index_reduce_": index_reduce_}

__all__ = ["index_reduce", "index_reduce_"]
