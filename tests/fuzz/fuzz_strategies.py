"""Hypothesis strategies for fuzz arguments: tensors of mixed dtypes, layouts and special values, dims that may be out
of range, index tensors that may point outside, shapes that may not broadcast."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from fuzz_case import LAYOUTS, Arg

FLOATS = ("float32", "float64")
# mostly floats; sometimes an int or bool tensor to probe dtype checks and promotion
MIXED = ("float32", "float64", "float32", "int64", "bool")
INTS = ("int64", "int32", "int64")
# NaN/inf, signed zero, tiny, subnormal and huge values (sums of a few huge ones stay finite in float32)
SPECIALS = (np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 1e-45, 1e20, -1e20)

sizes = st.sampled_from([1, 2, 3, 4, 1, 2, 3, 0])          # a size of 0 one time in eight
nonzero_sizes = st.integers(1, 4)


def shapes(min_dims: int = 0, max_dims: int = 4, nonempty: bool = False):
    return st.lists(nonzero_sizes if nonempty else sizes, min_size=min_dims, max_size=max_dims).map(tuple)


def _values(rng: np.random.Generator, shape: tuple, dtype: str, lo: float, hi: float, distinct: bool):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if distinct:  # no ties, so index results (argmax, cummax, ...) are unique
        n = int(np.prod(shape))
        return (rng.permutation(n) - n // 2).reshape(shape).astype(dtype)
    if dtype.startswith("float"):
        return rng.uniform(lo, hi, size=shape).astype(dtype)
    return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)


def _sprinkle_specials(rng: np.random.Generator, arr: np.ndarray, distinct: bool) -> np.ndarray:
    flat = arr.reshape(-1)
    if distinct:  # at most one NaN and one inf: still no ties
        flat[rng.integers(flat.size)] = rng.choice([np.nan, np.inf, -np.inf])
        return arr
    count = rng.integers(1, flat.size + 1)
    flat[rng.integers(0, flat.size, count)] = rng.choice(SPECIALS, count)
    return arr


@st.composite
def tensors(draw, shape=None, dtypes=MIXED, lo: float = -10, hi: float = 10, special: bool = True,
            layouts=LAYOUTS, distinct: bool = False) -> Arg:
    """A tensor argument; ``shape`` is a tuple or a strategy of one (default: any of 0-4 dims, maybe empty)."""
    if shape is None:
        shape = shapes()
    if not isinstance(shape, tuple):
        shape = draw(shape)
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arr = np.asarray(_values(rng, shape, dtype, lo, hi, distinct))
    if special and dtype.startswith("float") and arr.size and draw(st.sampled_from([False, False, True])):
        arr = _sprinkle_specials(rng, arr, distinct)
    layout = draw(st.sampled_from(layouts))
    if layout == "expand" and arr.ndim and arr.shape[0]:
        arr = np.broadcast_to(arr[:1], arr.shape).copy()
    return Arg(arr, layout)


def floats(shape=None, **kw):
    """A float tensor (float32/float64) that may hold special values."""
    return tensors(shape, dtypes=FLOATS, **kw)


@st.composite
def indices(draw, shape, size: int, dtypes=INTS, negative: bool = True):
    """An index tensor into a dimension of ``size``: mostly in range, sometimes out of it (or negative, or the wrong
    dtype)."""
    if not isinstance(shape, tuple):
        shape = draw(shape)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lo = -size if negative else 0
    arr = rng.integers(lo, max(size, lo + 1), size=shape) if size or negative else np.zeros(shape, dtype=np.int64)
    if arr.size and draw(st.sampled_from([False, False, False, True])):
        arr.reshape(-1)[rng.integers(arr.size)] = rng.choice([size, size + 3, -size - 1, -100])
    dtype = draw(st.sampled_from(dtypes + ("float32",) if draw(st.integers(0, 9)) == 0 else dtypes))
    return Arg(arr.astype(dtype), draw(st.sampled_from(("contiguous", "contiguous", "step2", "transpose"))))


def dims(ndim: int, allow_none: bool = False):
    """A dim for a tensor of ``ndim`` dims, sometimes out of range."""
    base = st.integers(-max(ndim, 1) - 1, max(ndim, 1))
    return st.none() | base if allow_none else base


@st.composite
def broadcast_pair(draw, max_dims: int = 4):
    """Two shapes that broadcast together, or (one time in six) that do not."""
    out = draw(shapes(max_dims=max_dims))
    a = [draw(st.sampled_from([n, 1])) for n in out]
    b = [draw(st.sampled_from([n, 1])) for n in out]
    a, b = a[draw(st.integers(0, len(a))):], b[draw(st.integers(0, len(b))):]
    if b and draw(st.integers(0, 5)) == 0:
        b[draw(st.integers(0, len(b) - 1))] = 5      # broadcasts only against a 1 or a missing dim
    return tuple(a), tuple(b)


scalars = st.sampled_from([2, -1, 0, 0.5, -2.5, True, float("nan"), float("inf"), 1e30])
