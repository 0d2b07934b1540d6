"""``vmap``: a function of one example mapped over a batch dimension of its inputs.

This is the fallback torch uses for an op without a batching rule, applied to the whole function: the function
runs once per example on its inputs' slices along ``in_dims``, and the results are stacked along ``out_dims``
(ember has no batching rules yet, as its ops have no dispatch point for a batched tensor). ``chunk_size`` bounds how
many examples torch batches together to save memory; a per-example loop already holds one example's intermediates
at a time, so any valid ``chunk_size`` gives the same results and memory bound here (it is checked, as torch's is).
It composes with itself (nested vmap) and with the derivative transforms (``vmap(grad(f))``), as each call is an
ordinary eager call. ``randomness`` is torch's:
``"error"`` refuses a function that draws from the default generator, ``"same"`` replays the generator's state for
every example (they all see the same random values), ``"different"`` lets it run on.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from ..tensor.joins import stack
from ..tensor.random import get_rng_state, set_rng_state
from ..tensor.tensor import Tensor
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .eager_transforms import RANDOMNESS

__all__ = ["vmap"]

_WARNED = False


def _performance_warning() -> None:
    """Once per process, as torch warns once per op it falls back for."""
    global _WARNED
    if not _WARNED:
        _WARNED = True
        warnings.warn("There is a performance drop because ember has no batching rules: vmap runs the function "
                      "once per example and stacks the results.", UserWarning, stacklevel=3)


def _check_dims(name: str, value: Any) -> None:
    leaves, _ = tree_flatten(value)
    for d in leaves:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap({name}=...): expected every entry of {name} to be an int or None, got "
                             f"{type(d).__name__}")


def _batch_size(args: list, dims: list, in_dims: Any) -> int:
    sizes = []
    for x, d in zip(args, dims):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap(in_dims={in_dims!r}): Got in_dim={d} for an input but the input is of type "
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use None as the "
                             "respective in_dim")
        if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
            raise ValueError(f"vmap(in_dims={in_dims!r}): Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < "
                             f"{x.dim()}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(f"vmap(in_dims={in_dims!r}): at least one input must be batched: got in_dims that are "
                         "all None for the Tensor inputs")
    if len(set(sizes)) != 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _example(leaves: list, dims: list, b: int) -> list:
    return [x if d is None else x.select(d, b) for x, d in zip(leaves, dims)]


def _stacked(outputs: list, out_dims: Any) -> Any:
    """The per-example outputs (pytrees of one structure) stacked along ``out_dims`` into one pytree."""
    flat = [tree_flatten(o) for o in outputs]
    spec = flat[0][1]
    dims = broadcast_prefix(out_dims, outputs[0], "out_dims")
    leaves = []
    for i, d in enumerate(dims):
        column = [f[0][i] for f in flat]
        if not all(isinstance(c, Tensor) for c in column):
            raise ValueError(f"vmap: `func` must only return Tensors, got type {type(column[0])}. Did you mean to "
                             "set out_dims= to None for output?")
        if d is None:
            leaves.append(column[0])
        else:
            if not -(column[0].dim() + 1) <= d <= column[0].dim():
                raise IndexError(f"Dimension out of range (expected to be in range of [{-(column[0].dim() + 1)}, "
                                 f"{column[0].dim()}], but got {d})")
            leaves.append(stack(column, dim=d))
    return tree_unflatten(leaves, spec)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` mapped over dimension ``in_dims`` of its inputs (an int, None for an unmapped input, or a
    structure of them matching the arguments), its outputs stacked along ``out_dims``."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_dims("in_dims", in_dims)
    _check_dims("out_dims", out_dims)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
            raise ValueError(f"vmap(in_dims={in_dims!r}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"vmap(in_dims={in_dims!r}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure with {len(in_dims)} entries but inputs "
                             f"has {len(args)}.")
        leaves, spec = tree_flatten(args)
        dims = broadcast_prefix(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args), args, "in_dims")
        size = _batch_size(leaves, dims, in_dims)
        _performance_warning()
        start_state = get_rng_state()
        outputs = []
        for b in range(size):
            if randomness == "same":
                set_rng_state(start_state)
            before = get_rng_state() if randomness == "error" else None
            outputs.append(func(*tree_unflatten(_example(leaves, dims, b), spec), **kwargs))
            if before is not None and not bool((get_rng_state() == before).all()):
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                   "use the 'same' or 'different' randomness flags on vmap or perform the "
                                   "randomness operation out of vmap")
        return _stacked(outputs, out_dims)

    return wrapper
