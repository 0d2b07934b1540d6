"""Reductions over dimensions and arg-reductions along one, as shared-memory tree reductions.

One block folds one output element at a time (blocks grid-stride over the
outputs): its threads stride over the reduced elements, each folding into a
private accumulator, then combine through shared memory in a tree. When there
are fewer outputs than blocks can usefully work on (a full reduction, say), a
first pass splits every output over ``chunks`` blocks writing partials to a
device scratch array and a second pass of the same kernel (folding with the
op's combine) reduces the partials: nothing goes back to the host.

Ops, accumulator dtypes and identities are the shared ones (``ember.kernels.common.reductions``), as the CPU's.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, from_dtype, int64

from ... import opcodes as op
from ..common.reductions import ARG_REDUCTIONS, REDUCTIONS, accumulator_dtype, identity
from . import launch
from .device_functions import device_function, scalar_op
from .elementwise import check_operands, locate
from .bfloat16 import widened
from .launch import collapse, device_meta
from .storage import DeviceStorage, c_strides

__all__ = ["reduce", "arg_reduce"]


def _abs(v):
    return v if v >= 0 else -v


# code -> (fold element v into accumulator t, combine two partials); ``v`` is already in the accumulator dtype
_STEPS = {
    op.R_SUM: ("add", "add"), op.R_PROD: ("mul", "mul"), op.R_MAX: ("maximum", "maximum"),
    op.R_MIN: ("minimum", "minimum"), op.R_ALL: ("logical_and", "logical_and"),
    op.R_ANY: ("logical_or", "logical_or"), op.R_COUNT_NONZERO: ("count", "add"), op.R_SUMSQ: ("sumsq", "add"),
    op.R_ABSMAX: ("absmax", "maximum"), op.R_ABSSUM: ("abssum", "add"),
}
# ops whose fold tests ``v != 0`` on the element itself (a cast to the accumulator first would truncate)
_RAW = {op.R_ALL, op.R_ANY, op.R_COUNT_NONZERO}
_device_abs = cuda.jit(device=True)(_abs)


def _extra_steps() -> dict:
    add, maximum = scalar_op("add"), scalar_op("maximum")

    def count(t, v):
        return t + (v != 0)

    def sumsq(t, v):
        return t + v * v

    def absmax(t, v):
        return maximum(t, _device_abs(v))

    def abssum(t, v):
        return add(t, _device_abs(v))

    return {f.__name__: cuda.jit(device=True)(f) for f in (count, sumsq, absmax, abssum)}


_EXTRA: dict = {}


def _step(name: str):
    if not _EXTRA:
        _EXTRA.update(_extra_steps())
    return _EXTRA.get(name) or scalar_op(name)


def _make_reduce_kernel(fold, combine, acc_type, raw: bool, threads: int):
    """The tree-reduction kernel: ``fold`` per element, ``combine`` in the shared-memory tree.

    Elements are cast to the accumulator type before ``fold`` unless ``raw`` (ops that test ``v != 0``).
    """

    def convert(v):
        return v if raw else acc_type(v)

    convert = cuda.jit(device=True)(convert)

    def kernel(n_out, chunks, red_n, outer_shape, outer_strides, outer_offsets, red_shape, red_strides, init, x,
               out):
        shared = cuda.shared.array(threads, acc_type)
        pos = cuda.local.array(2, int64)
        rpos = cuda.local.array(1, int64)
        zero = cuda.local.array(1, int64)
        zero[0] = 0
        tid = cuda.threadIdx.x
        for w in range(cuda.blockIdx.x, n_out * chunks, cuda.gridDim.x):
            o = w // chunks
            c = w - o * chunks
            locate(o, outer_shape, outer_strides, outer_offsets, pos)
            t = init
            for r in range(c * threads + tid, red_n, chunks * threads):
                locate(r, red_shape, red_strides, zero, rpos)
                t = fold(t, convert(x[pos[0] + rpos[0]]))
            shared[tid] = t
            cuda.syncthreads()
            s = threads // 2
            while s > 0:
                if tid < s:
                    shared[tid] = combine(shared[tid], shared[tid + s])
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                out[pos[1] if chunks == 1 else w] = shared[0]
            cuda.syncthreads()

    return cuda.jit(kernel)


def _make_serial_kernel(fold, acc_type, raw: bool):
    """One thread folds one whole output (threads grid-stride over the outputs): no shared memory and no
    barriers, the better plan when there are many outputs, each over a short reduced extent (a bias gradient
    summed over the batch, say)."""

    def convert(v):
        return v if raw else acc_type(v)

    convert = cuda.jit(device=True)(convert)

    def kernel(n_out, red_n, outer_shape, outer_strides, outer_offsets, red_shape, red_strides, init, x, out):
        pos = cuda.local.array(2, int64)
        rpos = cuda.local.array(1, int64)
        zero = cuda.local.array(1, int64)
        zero[0] = 0
        for o in range(cuda.grid(1), n_out, cuda.gridsize(1)):
            locate(o, outer_shape, outer_strides, outer_offsets, pos)
            t = init
            for r in range(red_n):
                locate(r, red_shape, red_strides, zero, rpos)
                t = fold(t, convert(x[pos[0] + rpos[0]]))
            out[pos[1]] = t

    return cuda.jit(kernel)


_KERNELS: dict = {}


def _serial_kernel(code: int, acc: np.dtype):
    key = ("serial", code, acc)
    found = _KERNELS.get(key)
    if found is None:
        found = _KERNELS[key] = _make_serial_kernel(_step(_STEPS[code][0]), from_dtype(acc), code in _RAW)
    return found


def _kernel(code: int, acc: np.dtype, second_pass: bool):
    key = (code, acc, second_pass, launch.REDUCE_THREADS)
    found = _KERNELS.get(key)
    if found is None:
        fold_name, combine_name = _STEPS[code]
        combine = _step(combine_name)
        fold = combine if second_pass else _step(fold_name)
        raw = code in _RAW and not second_pass
        found = _KERNELS[key] = _make_reduce_kernel(fold, combine, from_dtype(acc), raw, launch.REDUCE_THREADS)
    return found


def _split(x: DeviceStorage, out: DeviceStorage, dims: tuple[int, ...]):
    """Collapsed (outer shape, [x strides, out strides]) and (reduced shape, [x strides]) index spaces."""
    outer = collapse(out.shape, [x.strides, out.strides])
    red_shape = tuple(x.shape[d] for d in dims)
    red = collapse(red_shape, [tuple(x.strides[d] for d in dims)])
    return outer, red


def _check(name: str, x: DeviceStorage, dims, out: DeviceStorage) -> tuple[int, ...]:
    check_operands(name, (), out)
    check_operands(name, (x,), x)
    dims = tuple(sorted({d % x.ndim for d in dims})) if x.ndim else ()
    keep = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    if out.shape != keep:
        raise ValueError(f"{name}: output shape {out.shape} is not the keepdim shape {keep} of input {x.shape} "
                         f"reduced over {dims}")
    return dims


def _launch_reduce(code: int, x: DeviceStorage, dims: tuple[int, ...], out: DeviceStorage, acc: np.dtype) -> None:
    n_out, red_n = out.numel, x.numel // max(out.numel, 1)
    (outer_shape, (sx, so)), (red_shape, (sr,)) = _split(x, out, dims)
    threads = launch.REDUCE_THREADS
    init = acc.type(identity(code, acc))
    chunks = 1
    if n_out < launch.MAX_BLOCKS and red_n > launch.TWO_PASS_MIN:
        chunks = max(1, min(launch.MAX_BLOCKS // n_out, -(-red_n // threads)))
    meta = (device_meta(outer_shape), device_meta((sx, so)), device_meta((x.offset, out.offset)),
            device_meta(red_shape), device_meta((sr,)))
    if n_out >= launch.SERIAL_REDUCE_MIN_OUTPUTS and red_n <= launch.SERIAL_REDUCE_MAX_EXTENT:
        _serial_kernel(code, acc)[launch.grid(n_out)](n_out, red_n, *meta, init, x.buffer, out.buffer)
        return
    blocks = min(launch.MAX_BLOCKS, n_out * chunks)
    if chunks == 1:
        _kernel(code, acc, False)[blocks, threads](n_out, 1, red_n, *meta, init, x.buffer, out.buffer)
        return
    partial = cuda.device_array(n_out * chunks, acc)
    _kernel(code, acc, False)[blocks, threads](n_out, chunks, red_n, *meta, init, x.buffer, partial)
    # second pass: partial holds (n_out, chunks) in C order of out's shape; fold each row with the combine
    rows = tuple(s * chunks for s in c_strides(out.shape))
    outer_shape, (sp, so) = collapse(out.shape, [rows, out.strides])
    meta = (device_meta(outer_shape), device_meta((sp, so)), device_meta((0, out.offset)), device_meta((chunks,)),
            device_meta(((1,),)))
    _kernel(code, acc, True)[min(launch.MAX_BLOCKS, n_out), threads](n_out, 1, chunks, *meta, init, partial,
                                                                       out.buffer)


@widened("out")
def reduce(code: int, x: DeviceStorage, dims: tuple[int, ...], out: DeviceStorage) -> None:
    """Reduce ``x`` over ``dims`` into keepdim-form ``out`` (floats accumulate in float64, ints in int64).

    An empty reduced set gives the op's identity, as the CPU backend does.
    """
    if code not in REDUCTIONS:
        raise ValueError(f"unknown reduction code {code}")
    name, kind = REDUCTIONS[code]
    dims = _check(name, x, dims, out)
    if out.numel == 0:
        return
    if code == op.R_ABSMAX and x.dtype == np.bool_:
        code = op.R_MAX  # |x| is x for bool
    acc = accumulator_dtype(kind, x.dtype)
    if out.dtype == acc:
        _launch_reduce(code, x, dims, out, acc)
        return
    tmp = DeviceStorage.empty(out.shape, acc)
    _launch_reduce(code, x, dims, tmp, acc)
    out.copy_from(tmp)


def _make_arg_kernel(beats, value_type, threads: int):
    """First index of the extreme along one dim per output; ties and NaN ties go to the smaller index."""

    def kernel(n_out, red_n, outer_shape, outer_strides, outer_offsets, step, x, values, indices):
        shared_v = cuda.shared.array(threads, value_type)
        shared_i = cuda.shared.array(threads, int64)
        pos = cuda.local.array(3, int64)
        tid = cuda.threadIdx.x
        for o in range(cuda.blockIdx.x, n_out, cuda.gridDim.x):
            locate(o, outer_shape, outer_strides, outer_offsets, pos)
            best_v = x[pos[0]]
            best_i = red_n  # none seen yet
            for r in range(tid, red_n, threads):
                v = x[pos[0] + r * step]
                if best_i == red_n or beats(v, best_v):
                    best_v = v
                    best_i = r
            shared_v[tid] = best_v
            shared_i[tid] = best_i
            cuda.syncthreads()
            s = threads // 2
            while s > 0:
                if tid < s:
                    i2 = shared_i[tid + s]
                    i1 = shared_i[tid]
                    v2 = shared_v[tid + s]
                    v1 = shared_v[tid]
                    if i2 != red_n and (i1 == red_n or beats(v2, v1) or (not beats(v1, v2) and i2 < i1)):
                        shared_v[tid] = v2
                        shared_i[tid] = i2
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                values[pos[1]] = shared_v[0]
                indices[pos[2]] = shared_i[0]
            cuda.syncthreads()

    return cuda.jit(kernel)


def _arg_kernel(code: int, dtype: np.dtype):
    key = ("arg", code, dtype, launch.REDUCE_THREADS)
    found = _KERNELS.get(key)
    if found is None:
        beats = device_function(ARG_REDUCTIONS[code].beats)
        found = _KERNELS[key] = _make_arg_kernel(beats, from_dtype(dtype), launch.REDUCE_THREADS)
    return found


@widened("values")
def arg_reduce(code: int, x: DeviceStorage, dim: int, values: DeviceStorage, indices: DeviceStorage) -> None:
    """Extreme values of ``x`` along ``dim`` and their int64 indices (keepdim form), as torch.max(x, dim).

    Ties keep the first index; a NaN is the extreme (the first NaN wins). The reduced dim must be non-empty.
    """
    if code not in ARG_REDUCTIONS:
        raise ValueError(f"unknown arg-reduction code {code}")
    name = ARG_REDUCTIONS[code][0]
    if indices.dtype != np.int64:
        raise TypeError(f"{name}: indices must be int64, got {indices.dtype}")
    if x.ndim == 0:
        x, dim = x.as_strided((1,), (0,)), 0
        values, indices = values.as_strided((1,), (0,)), indices.as_strided((1,), (0,))
    dims = _check(name, x, (dim,), values)
    _check(name, x, dims, indices)
    if values.numel == 0:
        return
    dim = dims[0]
    if x.shape[dim] == 0:
        raise IndexError(f"{name}: cannot reduce over dim {dim} of size 0 (input shape {x.shape})")
    outer_shape, strides = collapse(values.shape, [x.strides, values.strides, indices.strides])
    meta = (device_meta(outer_shape), device_meta(tuple(strides)),
            device_meta((x.offset, values.offset, indices.offset)))
    n_out = values.numel
    _arg_kernel(code, x.dtype)[min(launch.MAX_BLOCKS, n_out), launch.REDUCE_THREADS](
        n_out, x.shape[dim], *meta, x.strides[dim], x.buffer, values.buffer, indices.buffer)
