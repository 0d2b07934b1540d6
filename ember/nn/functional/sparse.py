"""Lookup tables: ``embedding``, ``embedding_bag`` and ``one_hot``.

An embedding is a row gather (NumPy fancy indexing); its weight gradient is a
scatter-add of the output gradient's rows, written with ember's ``index_add``
so it is itself differentiable. Bags gather the rows they use, then sum them
per bag with ``index_add`` (mean divides by the bag sizes; max picks rows with
``ember.tensor.fused.embedding.bag_argmax`` and ``gather``). Only dense gradients
(``sparse=False``) are supported.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...tensor.device import CPU, place
from ...tensor.fused.embedding import bag_argmax
from ...tensor.tensor import Tensor
from ...tensor.creation import zeros

__all__ = ["embedding", "embedding_bag", "one_hot"]

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _indices(op: str, indices: Any, num: int, argument: str = "indices") -> np.ndarray:
    """The index tensor's values as int64, checked to be in ``[0, num)``."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"{op}(): argument '{argument}' must be Tensor, not {type(indices).__name__}")
    arr = place(indices._array, CPU)  # checked, and used as bookkeeping, on the host
    if arr.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #1 '{argument}' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for {op})")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= num):
        raise IndexError("index out of range in self")
    return arr


def _check_weight(weight: Tensor) -> None:
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")


def _padding_index(padding_idx: int | None, num: int) -> int:
    """torch's normalisation of ``padding_idx``: negative counts from the end; -1 internally means none."""
    if padding_idx is None:
        return -1
    if not -num <= padding_idx < num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num if padding_idx < 0 else padding_idx


def _renorm_(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Rescale (in place, outside the graph) the used rows whose ``norm_type``-norm exceeds ``max_norm``."""
    rows = np.unique(idx)
    if not rows.size:
        return
    values = weight._array[rows].astype(np.float64)
    if norm_type == np.inf:
        norms = np.abs(values).max(1)
    elif norm_type == 0:
        norms = (values != 0).sum(1).astype(np.float64)
    else:
        norms = (np.abs(values) ** norm_type).sum(1) ** (1.0 / norm_type)
    over = place(norms > max_norm, CPU)  # one flag per used row: host metadata
    if over.any():
        scaled = values[over] * (max_norm / (norms[over] + 1e-7))[:, None]
        with no_grad():
            weight.index_copy_(0, Tensor._make(rows[over]), Tensor._make(scaled.astype(weight.dtype.np)))


class _Embedding(Function):
    """``weight[idx]``; the weight gradient scatter-adds the output gradient's rows (skipping ``padding_idx``,
    divided by each index's count when ``scale_grad_by_freq``)."""

    @staticmethod
    def forward(ctx, weight, idx, padding_idx, scale_grad_by_freq):
        if ctx.needs_input_grad:
            ctx.idx, ctx.padding_idx, ctx.scale = idx, padding_idx, scale_grad_by_freq
            ctx.weight_meta = (weight.shape, weight.dtype)
        return weight._array[idx]

    @staticmethod
    def backward(ctx, g):
        (num, dim), dtype = ctx.weight_meta
        flat = ctx.idx.reshape(-1)
        rows = g.reshape(-1, dim)
        if ctx.padding_idx >= 0 or ctx.scale:
            factor = np.ones(flat.size)
            if ctx.scale:
                factor /= np.bincount(flat, minlength=num)[flat]
            factor[flat == ctx.padding_idx] = 0.0
            rows = rows * Tensor._make(factor.astype(dtype.np)).to(g.device).unsqueeze(1)
        grad = zeros((num, dim), dtype=dtype, device=g.device).index_add(0, Tensor._make(flat), rows)
        return grad, None, None, None


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of ``weight`` at ``input`` (shape ``input.shape + (embedding_dim,)``)."""
    _check_weight(weight)
    if sparse:
        raise NotImplementedError("embedding(): sparse gradients are not supported by ember; use sparse=False")
    num = weight.shape[0]
    pad = _padding_index(padding_idx, num)
    if num == 0 and isinstance(input, Tensor) and input.numel():
        raise RuntimeError(f"embedding(): index_select(): self indexing axis dim should be positive (weight of size "
                           f"{list(weight.shape)})")
    idx = _indices("embedding", input, num)
    if max_norm is not None:
        _renorm_(weight, idx, max_norm, norm_type)
    return _Embedding.apply(weight, idx, pad, bool(scale_grad_by_freq))


def _bags(offsets: np.ndarray, length: int, include_last_offset: bool) -> tuple[int, np.ndarray]:
    """(number of bags, the bag of each input position: -1 for positions after the last bag)."""
    if offsets.size and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {offsets[0]}")
    if offsets.size and offsets[-1] > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but got offsets[-1] of "
                           f"{offsets[-1]}")
    if np.any(np.diff(offsets) < 0):
        raise RuntimeError("embedding_bag: offsets must be non-decreasing")
    n_bags = max(offsets.size - 1, 0) if include_last_offset else offsets.size
    if n_bags == 0:
        return 0, np.full(length, -1, np.int64)
    end = offsets[n_bags] if include_last_offset else length
    positions = np.arange(length)
    bag = np.searchsorted(offsets[:n_bags], positions, side="right") - 1
    bag[positions >= end] = -1
    return n_bags, bag


def _bag_input(input: Tensor, offsets: Tensor | None, per_sample_weights: Tensor | None,
               include_last_offset: bool) -> tuple[Tensor, np.ndarray, Tensor | None, bool]:
    """torch's two input forms as (1-D indices, offsets, 1-D per-sample weights, include_last_offset)."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        starts = np.arange(0, input.numel(), max(input.shape[1], 1), dtype=np.int64)[:input.shape[0]]
        flat_weights = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
        return input.reshape(-1), starts, flat_weights, False
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    return input, _indices("embedding_bag", offsets, np.iinfo(np.int64).max, "offsets"), per_sample_weights, \
        include_last_offset


def _embedding_bag(weight: Tensor, input: Tensor, offsets: np.ndarray, scale_grad_by_freq: bool, mode: int,
                   per_sample_weights: Tensor | None, include_last_offset: bool, padding_idx: int
                   ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Bags over a 1-D ``input``: (output, bag of each position, bag sizes, max mode's chosen rows)."""
    num, dim = weight.shape
    dev = weight.device

    def on_device(array: np.ndarray) -> Tensor:  # the bag bookkeeping is host work; its results join the weights
        return Tensor._make(array).to(dev)

    idx = _indices("embedding_bag", input, num)
    n_bags, bag = _bags(offsets, idx.size, include_last_offset)
    used = (bag >= 0) & (idx != padding_idx)
    kept_idx, kept_bag = idx[used], bag[used]
    sizes = np.bincount(kept_bag, minlength=n_bags).astype(np.int64)
    rows = _Embedding.apply(weight, kept_idx, -1, scale_grad_by_freq)
    max_rows = np.zeros((n_bags, dim) if mode == 2 else (n_bags,), np.int64)
    if mode == 2:
        arg = bag_argmax(rows, kept_bag, n_bags)
        empty = arg < 0
        if kept_idx.size:
            out = rows.gather(0, on_device(np.where(empty, 0, arg)))
            out = out.masked_fill(on_device(empty), 0) if empty.any() else out
            max_rows = np.where(empty, -1, kept_idx[np.where(empty, 0, arg)])
        else:
            out = zeros((n_bags, dim), dtype=weight.dtype, device=dev)
            max_rows = arg
    else:
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.reshape(-1)[on_device(np.flatnonzero(used))].unsqueeze(1)
        out = zeros((n_bags, dim), dtype=weight.dtype, device=dev).index_add(0, on_device(kept_bag), rows)
        if mode == 1:
            out = out / on_device(np.maximum(sizes, 1).astype(weight.dtype.np)).unsqueeze(1)
    return out, on_device(bag), on_device(sizes), on_device(max_rows)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of each bag of embeddings; bags are ``input``'s rows (2-D) or start at ``offsets``
    (1-D); ``padding_idx`` entries are left out of their bag; an empty bag gives zeros."""
    if per_sample_weights is not None and not isinstance(per_sample_weights, Tensor):
        raise TypeError("embedding_bag(): argument 'per_sample_weights' must be Tensor")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    input, starts, per_sample_weights, include_last_offset = _bag_input(input, offsets, per_sample_weights,
                                                                        include_last_offset)
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse:
        raise NotImplementedError("embedding_bag(): sparse gradients are not supported by ember; use sparse=False")
    if max_norm is not None:
        _renorm_(weight, _indices("embedding_bag", input, weight.shape[0]), max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    return _torch_embedding_bag(weight, input, Tensor._make(starts), scale_grad_by_freq, _MODES[mode], False,
                                per_sample_weights, include_last_offset, padding_idx)[0]


def _torch_embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False,
                         mode: int = 0, sparse: bool = False, per_sample_weights: Tensor | None = None,
                         include_last_offset: bool = False, padding_idx: int | None = None) -> tuple:
    """``torch.embedding_bag``: (output, bag of each index, bag sizes, rows picked by max mode)."""
    _check_weight(weight)
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                           f"#1 'per_sample_weights'; but type {weight.type()} does not equal "
                           f"{per_sample_weights.type()} (while checking arguments for embedding_bag)")
    pad = _padding_index(padding_idx, weight.shape[0])
    starts = _indices("embedding_bag", offsets, np.iinfo(np.int64).max, "offsets")
    return _embedding_bag(weight, indices, starts, bool(scale_grad_by_freq), int(mode), per_sample_weights,
                          bool(include_last_offset), pad)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 ``tensor.shape + (num_classes,)`` with a 1 at each value (``-1``: one more than the largest value)."""
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    values = tensor._array
    if num_classes == -1:
        if values.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    if values.size and values.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes < 0 or (values.size and values.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(values.shape + (num_classes,), np.int64, like=values)
    np.put_along_axis(out, values[..., None], 1, axis=-1)
    return Tensor._make(out)


def _torch_embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
                     sparse: bool = False) -> Tensor:
    """``torch.embedding``: weight first, ``padding_idx=-1`` meaning none."""
    return embedding(indices, weight, padding_idx if padding_idx >= 0 else None, None, 2.0, scale_grad_by_freq,
                     sparse)


TORCH_FUNCTIONS = {"embedding": _torch_embedding, "embedding_bag": _torch_embedding_bag}
