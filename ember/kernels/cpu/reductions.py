"""Reductions over dimensions (sum, prod, max, all, ...) and arg-reductions along one.

No input is transposed or copied. The strided kernels walk ``x`` with its
smallest-stride dimension innermost and fold each element into an accumulator
array addressed through strides that are 0 along the reduced dimensions, so a
sum over dim 0 of a C-contiguous matrix reads memory in order. Two common
shapes get flat kernels, parallel above ``PARALLEL_MIN`` elements: rows
(``out[i] = reduce(x[i, :])`` over a dense block) and the full reduction (one row).

A reduction is a generated inline ``step(cast, t, v)`` that folds element
``v`` into accumulator value ``t`` (``cast`` converts to the accumulator dtype;
sum of squares is ``t + square(cast(v))``) and a ``combine`` of two partial
results. The accumulator holds the op's identity on entry to every kernel. As in ``elementwise``, each
op's kernels are written out as a generated module so Numba's disk cache finds
them (see ``codegen``), and only the ones a program calls get compiled.

The inline skeletons here (``walk``, ``fold_run``, ...) are shared with ``scan``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ... import opcodes as op
from ..common.dtypes import computable
from ..common.layout import collapse, element_strides, flat_buffer
from ..common.reductions import ARG_REDUCTIONS, REDUCTIONS, accumulator_dtype, identity
from .codegen import KernelSet
from .parallelism import parallel_pays
from .loops import BLOCK, _advance, _outer_count

inline = njit(inline="always")

# code -> (step folding element v into accumulator t, combine of two partials), as generated source: ``cast``
# converts to the accumulator dtype; ``s`` is ``common.scalar_ops``. Names and accumulator kinds are
# ``common.reductions.REDUCTIONS``'.
_STEPS = {
    op.R_SUM: ("t + cast(v)", "s.add"),
    op.R_PROD: ("t * cast(v)", "s.mul"),
    op.R_MAX: ("s.maximum(t, cast(v))", "s.maximum"),
    op.R_MIN: ("s.minimum(t, cast(v))", "s.minimum"),
    op.R_ALL: ("t & (v != 0)", "s.bitwise_and"),
    op.R_ANY: ("t | (v != 0)", "s.bitwise_or"),
    op.R_COUNT_NONZERO: ("t + cast(v != 0)", "s.add"),
    op.R_SUMSQ: ("t + s.square(cast(v))", "s.add"),
    op.R_ABSMAX: ("s.maximum(t, abs(cast(v)))", "s.maximum"),
    op.R_ABSSUM: ("t + abs(cast(v))", "s.add"),
}


# ------------------------------------------------------------------ loop skeletons
@inline
def walk(run, f, arrays, shape, offsets, strides):
    """Odometer over all but the innermost dimension; ``run`` handles each innermost run.

    ``offsets`` (one per operand row of ``strides``) is advanced in place.
    """
    last = shape.size - 1
    steps = np.empty(offsets.size, np.int64)
    for k in range(offsets.size):
        steps[k] = strides[k, last]
    index = np.zeros(shape.size, np.int64)
    for _ in range(_outer_count(shape)):
        run(f, arrays, offsets, steps, shape[last])
        _advance(index, shape, offsets, strides)


# Unit-stride loops run over slices: indexing a slice from 0 proves the index non-negative, which
# lets LLVM drop the negative-index wraparound and vectorise (2x on a float32 sum).
@inline
def _fold_range(step, cast, xs, t):
    for j in range(xs.size):
        t = step(cast, t, xs[j])
    return t


@inline
def fold_run(step, arrays, offsets, steps, n):
    """One innermost run of the strided reduction: operands (x, acc)."""
    x, acc = arrays
    cast = acc.dtype.type
    px, pa, sx, sa = offsets[0], offsets[1], steps[0], steps[1]
    if sx == 1 and sa == 0:
        acc[pa] = _fold_range(step, cast, x[px:px + n], acc[pa])
    elif sx == 1 and sa == 1:
        xs, accs = x[px:px + n], acc[pa:pa + n]
        for j in range(n):
            accs[j] = step(cast, accs[j], xs[j])
    else:
        for j in range(n):
            q = pa + j * sa
            acc[q] = step(cast, acc[q], x[px + j * sx])


@inline
def rows(step, x, acc):
    """``acc[i] = fold(acc[i], x[i * inner:(i + 1) * inner])`` over a flat dense ``x``."""
    cast = acc.dtype.type
    inner = x.size // acc.size
    for i in range(acc.size):
        acc[i] = _fold_range(step, cast, x[i * inner:(i + 1) * inner], acc[i])


@inline
def rows_parallel(step, combine, x, acc):
    """``rows`` split into blocks of at most ``BLOCK`` elements, folded per block then combined."""
    cast = acc.dtype.type
    n_rows = acc.size
    inner = x.size // n_rows
    per_row = (inner + BLOCK - 1) // BLOCK
    partial = np.empty(n_rows * per_row, acc.dtype)
    for k in prange(n_rows * per_row):
        i = k // per_row
        lo = i * inner + (k - i * per_row) * BLOCK
        partial[k] = _fold_range(step, cast, x[lo:min(lo + BLOCK, (i + 1) * inner)], acc[i])
    for i in prange(n_rows):
        t = acc[i]
        for k in range(i * per_row, (i + 1) * per_row):
            t = combine(t, partial[k])
        acc[i] = t


@inline
def arg_run(beats, arrays, offsets, steps, n):
    """One innermost run of the arg-reduction: operands (x, values & indices, index along the dim)."""
    x, values, indices = arrays
    px, pa, pi = offsets[0], offsets[1], offsets[2]
    sx, sa, si = steps[0], steps[1], steps[2]
    for j in range(n):
        v = x[px + j * sx]
        q = pa + j * sa
        if beats(v, values[q]):
            values[q] = v
            indices[q] = pi + j * si


# ------------------------------------------------------------------ generated kernels
def _instances_source() -> str:
    """Source of the reduction kernels: per op a step function and a strided, a rows and a parallel rows kernel."""
    lines = [
        "# Generated by ember.kernels.cpu.reductions: one kernel per op and loop shape.",
        "from numba import njit",
        "from ember.kernels.common import reductions as shared, scalar_ops as s",
        "from ember.kernels.cpu import reductions as r",
        "kernel = njit(cache=True, nogil=True, error_model='numpy', fastmath={'reassoc'})",
        "parallel_kernel = njit(cache=True, nogil=True, error_model='numpy', fastmath={'reassoc'}, parallel=True)",
    ]
    for code, (name, _) in REDUCTIONS.items():
        step, combine = _STEPS[code]
        lines += [
            "@r.inline",
            f"def {name}_step(cast, t, v):",
            f"    return {step}",
            "@kernel",
            f"def {name}_strided(shape, offsets, strides, x, acc):",
            f"    r.walk(r.fold_run, {name}_step, (x, acc), shape, offsets, strides)",
            "@kernel",
            f"def {name}_rows(x, acc):",
            f"    r.rows({name}_step, x, acc)",
            "@parallel_kernel",
            f"def {name}_rows_parallel(x, acc):",
            f"    r.rows_parallel({name}_step, {combine}, x, acc)",
        ]
    for name, beats in ARG_REDUCTIONS.values():
        lines += [
            "@kernel",
            f"def {name}_strided(shape, offsets, strides, x, values, indices):",
            f"    r.walk(r.arg_run, shared.{beats.__name__}, (x, values, indices), shape, offsets, strides)",
        ]
    return "\n".join(lines) + "\n"


_KERNELS = KernelSet("reduce", _instances_source)


# ------------------------------------------------------------------ launch helpers
def buffer(a: np.ndarray) -> tuple[np.ndarray, int]:
    """``layout.flat_buffer``, with a cheap reshape for C-contiguous arrays (as_strided costs ~10 us)."""
    return (a.reshape(-1), 0) if a.flags.c_contiguous else flat_buffer(a)


def readonly_buffer(a: np.ndarray) -> tuple[np.ndarray, int]:
    """``buffer`` made read-only, so writable and read-only inputs share one kernel signature."""
    buf, offset = buffer(a)
    if buf.flags.writeable:
        buf = buf.view()
        buf.flags.writeable = False
    return buf, offset


def strided_plan(x: np.ndarray, strides_list: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Shape and strides for ``walk``: dims ordered by ``x``'s stride (largest outermost), then collapsed.

    ``strides_list`` holds one element-stride tuple per operand over ``x``'s shape.
    Each dim is still walked in increasing index order, whatever its stride's sign.
    """
    order = sorted(range(x.ndim), key=lambda d: -abs(strides_list[0][d]))
    shape, strides = collapse(tuple(x.shape[d] for d in order), [tuple(st[d] for d in order) for st in strides_list])
    return shape, np.stack(strides)


def accumulator_strides(acc: np.ndarray) -> tuple[int, ...]:
    """Element strides of a keepdim-form ``acc``, 0 along its size-1 (reduced) dims."""
    return tuple(0 if n == 1 else s for n, s in zip(acc.shape, element_strides(acc)))


def _flip_negative(x: np.ndarray, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reverse the dims where ``x`` steps backwards, in ``x`` and ``acc`` alike (a reduction ignores order)."""
    flips = tuple(slice(None, None, -1) if s < 0 else slice(None) for s in x.strides)
    return x[flips], acc[flips]


# ------------------------------------------------------------------ public entry points
def reduce(code: int, x: np.ndarray, dims: tuple[int, ...], out: np.ndarray) -> None:
    """Reduce ``x`` over ``dims`` into keepdim-form ``out``, accumulating floats in float64 and ints in int64.

    An empty reduced set gives the op's identity (max/min need a non-empty one).
    """
    if out.size == 0:
        return
    name, kind = REDUCTIONS[code]
    if code == op.R_ABSMAX and x.dtype == np.bool_:
        name = REDUCTIONS[op.R_MAX].name  # |x| is x for bool, and Numba has no abs of a bool
    x = computable(x)
    acc_dtype = accumulator_dtype(kind, x.dtype)
    acc = out if out.dtype == acc_dtype and out.flags.c_contiguous else np.empty(out.shape, acc_dtype)
    acc.fill(identity(code, acc_dtype))
    if x.size:
        _fold_into(name, x, acc)
    if acc is not out:
        with np.errstate(over="ignore"):  # a float64 sum past float32's range is inf, silently as in torch
            np.copyto(out, acc, casting="unsafe")


def _trailing_reduction(x: np.ndarray, acc: np.ndarray) -> bool:
    """True when C-contiguous ``x`` is reduced over a trailing block of its dims (cheap rows-path test)."""
    if not (x.flags.c_contiguous and acc.flags.c_contiguous):
        return False
    reducing = False
    for n, m in zip(x.shape, acc.shape):
        if n != 1 and m == 1:
            reducing = True
        elif n != 1 and reducing:
            return False
    return True


def _fold_into(name: str, x: np.ndarray, acc: np.ndarray) -> None:
    if _trailing_reduction(x, acc):
        _fold_rows(name, readonly_buffer(x)[0], acc.reshape(-1))
        return
    x, acc = _flip_negative(x, acc)
    shape, strides = strided_plan(x, [element_strides(x), accumulator_strides(acc)])
    xbuf, xoff = readonly_buffer(x)
    abuf, aoff = buffer(acc)
    sx, sa = strides.tolist()
    inner = int(shape[-1])
    if (sx, sa) in (([1], [0]), ([inner, 1], [1, 0])):  # rows over a dense block in another dim order
        _fold_rows(name, xbuf, abuf)
    else:
        _KERNELS[f"{name}_strided"](shape, np.array([xoff, aoff], np.int64), strides, xbuf, abuf)


def _fold_rows(name: str, x: np.ndarray, acc: np.ndarray) -> None:
    variant = "rows_parallel" if parallel_pays(x.size) else "rows"
    _KERNELS[f"{name}_{variant}"](x, acc)


def arg_reduce(code: int, x: np.ndarray, dim: int, values: np.ndarray, indices: np.ndarray) -> None:
    """Extreme values of ``x`` along ``dim`` and their int64 indices (keepdim form), as torch.max(x, dim).

    Ties keep the first index; a NaN is the extreme (the first NaN wins). The
    reduced dim must be non-empty.
    """
    if values.size == 0:
        return
    name, _ = ARG_REDUCTIONS[code]
    x = computable(x)
    vals = values if values.dtype == x.dtype and values.flags.c_contiguous else np.empty(values.shape, x.dtype)
    idx = indices if indices.flags.c_contiguous else np.empty(indices.shape, np.int64)
    vals[...] = x[(slice(None),) * dim + (slice(0, 1),)] if x.ndim else x
    idx.fill(0)
    if x.ndim and x.shape[dim] > 1:
        along = tuple(int(d == dim) for d in range(x.ndim))
        shape, strides = strided_plan(x, [element_strides(x), accumulator_strides(vals), along])
        xbuf, xoff = readonly_buffer(x)
        offsets = np.array([xoff, 0, 0], np.int64)
        _KERNELS[f"{name}_strided"](shape, offsets, strides, xbuf, vals.reshape(-1), idx.reshape(-1))
    for result, work in ((values, vals), (indices, idx)):
        if work is not result:
            np.copyto(result, work, casting="unsafe")
