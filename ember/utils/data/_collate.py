"""Turning samples into batches: ``default_collate`` (stack a list of samples) and ``default_convert``.

Both walk the sample's structure (dicts, namedtuples, tuples, lists) and act on
the leaves. Collating stacks tensors, arrays and numbers into one tensor with a
new leading batch dimension (Python ints become int64, floats float64, as in
torch); strings and bytes stay a plain sequence. ``collate`` takes the leaf
rules as a ``{type: fn}`` map so a user can add types without rewriting the walk.
In a DataLoader worker a stacked batch is moved into shared memory (as torch
collates there), so it reaches the main process as a handle, not as bytes.
"""
from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable

import numpy as np

from ...tensor import dtypes
from ...tensor.creation import as_tensor, tensor
from ...tensor.joins import stack
from ...tensor.tensor import Tensor
from ._worker import get_worker_info

# NumPy dtypes with no tensor counterpart: bytes, unicode, objects.
_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _collate_tensor(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    out = stack(list(batch), 0)
    if get_worker_info() is not None:
        out.share_memory_()
    return out


def _collate_ndarray(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    if _NP_STR_OBJ.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return as_tensor(np.asarray(batch))


def _collate_float(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return tensor(list(batch), dtype=dtypes.float64)


def _collate_int(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return tensor(list(batch))


def _collate_str(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    return batch


default_collate_fn_map: dict[type | tuple, Callable] = {
    Tensor: _collate_tensor,
    np.ndarray: _collate_ndarray,
    (np.bool_, np.number): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    (str, bytes): _collate_str,
}


def _leaf_fn(elem: Any, collate_fn_map: dict) -> Callable | None:
    """The rule for ``elem``: its exact type first, then the first entry it is an instance of."""
    fn = collate_fn_map.get(type(elem))
    if fn is not None:
        return fn
    for kind, fn in collate_fn_map.items():
        if isinstance(elem, kind):
            return fn
    return None


def collate(batch: Any, *, collate_fn_map: dict | None = None) -> Any:
    """Collate a list of samples with the leaf rules of ``collate_fn_map``, keeping the samples' structure."""
    elem = batch[0]
    if collate_fn_map is not None:
        fn = _leaf_fn(elem, collate_fn_map)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
        return _rebuild_mapping(elem, fields)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return columns if isinstance(elem, tuple) else _rebuild_sequence(elem, columns)
    raise TypeError(_ERR.format(type(elem)))


def _rebuild_mapping(elem: collections.abc.Mapping, fields: dict) -> Any:
    """A mapping of ``elem``'s type holding ``fields`` (a plain dict when the type can't be rebuilt)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(fields)
            return clone
        return type(elem)(fields)
    except TypeError:
        return fields


def _rebuild_sequence(elem: collections.abc.Sequence, items: list) -> Any:
    """A sequence of ``elem``'s type holding ``items`` (a list when the type can't be rebuilt)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def default_collate(batch: Any) -> Any:
    """Stack a list of samples into a batch: tensors, arrays and numbers along a new dim 0, recursively."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data: Any) -> Any:
    """Convert NumPy arrays and scalars in one sample to tensors, keeping everything else (no batching)."""
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]
