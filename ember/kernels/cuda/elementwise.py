"""Elementwise kernels with broadcasting and any strides: ``unary``, ``binary``, ``ternary``.

Per arity there are two grid-stride kernel skeletons: a flat one (output
C-contiguous, every input either laid out like it or a single element) and a
strided one that turns a flat output index into one element offset per operand
through the collapsed shape and a strides matrix. A skeleton is specialised per
op by closing over the op's device function (``device_functions.scalar_op``), built on first
use only, so a program compiles just the ops it runs.
"""
from __future__ import annotations

from numba import cuda, int64

from ..common.elementwise import BINARY, INTEGER_ONLY, TERNARY, UNARY
from .device_functions import scalar_op
from .launch import collapse, device_meta, grid
from .ndarray import to_device_operand
from .storage import SUPPORTED_DTYPES, DeviceStorage

__all__ = ["unary", "binary", "ternary", "locate", "check_operands"]

_TABLES = {1: UNARY, 2: BINARY, 3: TERNARY}
# INTEGER_ONLY (per arity): ops with no floating-point meaning, whose float operands are refused before launch.


@cuda.jit(device=True)
def locate(i, shape, strides, offsets, pos):
    """Fill ``pos[k]`` with operand k's buffer index of flat (C-order) element ``i`` of ``shape``."""
    for k in range(offsets.size):
        pos[k] = offsets[k]
    rem = i
    for d in range(shape.size - 1, -1, -1):
        n = shape[d]
        j = rem % n
        rem //= n
        for k in range(offsets.size):
            pos[k] += j * strides[k, d]


def _flat_kernel(arity: int, f):
    """``out[oo + i] = f(x[ox + i * sx], ...)``: steps are 1 (same layout as out) or 0 (one element)."""
    if arity == 1:
        def kernel(n, x, ox, sx, out, oo):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(x[ox + i * sx])
    elif arity == 2:
        def kernel(n, a, oa, sa, b, ob, sb, out, oo):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(a[oa + i * sa], b[ob + i * sb])
    else:
        def kernel(n, a, oa, sa, b, ob, sb, c, oc, sc, out, oo):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(a[oa + i * sa], b[ob + i * sb], c[oc + i * sc])
    return cuda.jit(kernel)


def _strided_kernel(arity: int, f):
    """Any shape and strides: operand offsets from ``locate`` (row ``arity`` of the metadata is ``out``)."""
    nops = arity + 1
    if arity == 1:
        def kernel(n, shape, strides, offsets, x, out):
            pos = cuda.local.array(nops, int64)
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                locate(i, shape, strides, offsets, pos)
                out[pos[1]] = f(x[pos[0]])
    elif arity == 2:
        def kernel(n, shape, strides, offsets, a, b, out):
            pos = cuda.local.array(nops, int64)
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                locate(i, shape, strides, offsets, pos)
                out[pos[2]] = f(a[pos[0]], b[pos[1]])
    else:
        def kernel(n, shape, strides, offsets, a, b, c, out):
            pos = cuda.local.array(nops, int64)
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                locate(i, shape, strides, offsets, pos)
                out[pos[3]] = f(a[pos[0]], b[pos[1]], c[pos[2]])
    return cuda.jit(kernel)


_KERNELS: dict[tuple[int, int], tuple] = {}


def _kernels(arity: int, code: int) -> tuple:
    """(flat, strided) kernels of one op, built on first use."""
    found = _KERNELS.get((arity, code))
    if found is None:
        f = scalar_op(_TABLES[arity][code])
        found = _KERNELS[(arity, code)] = (_flat_kernel(arity, f), _strided_kernel(arity, f))
    return found


def check_operands(name: str, inputs: tuple[DeviceStorage, ...], out: DeviceStorage) -> list[DeviceStorage]:
    """Validate dtypes, bounds and broadcasting; returns the inputs expanded to ``out``'s shape."""
    expanded = []
    for s in (*inputs, out):
        if s.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name}: CUDA kernels do not support dtype {s.dtype}")
        lo, hi = s.span()
        if s.numel and (lo < 0 or hi > s.buffer.size):
            raise ValueError(f"{name}: storage {s} reaches outside its buffer of {s.buffer.size} elements")
    for x in inputs:
        try:
            expanded.append(x if x.shape == out.shape else x.expand(out.shape))
        except ValueError:
            raise ValueError(f"{name}: input of shape {x.shape} does not broadcast to output shape "
                             f"{out.shape}") from None
    return expanded


def _launch(arity: int, code: int, inputs: tuple[DeviceStorage, ...], out: DeviceStorage) -> None:
    table = _TABLES[arity]
    if code not in table:
        raise ValueError(f"unknown {('unary', 'binary', 'ternary')[arity - 1]} op code {code}")
    name = table[code]
    inputs = tuple(to_device_operand(x) for x in inputs)  # numbers and 0-d host arrays become cached constants
    expanded = check_operands(name, inputs, out)
    if code in INTEGER_ONLY[arity] and any(x.dtype.kind == "f" for x in inputs):
        raise TypeError(f"{name}: not defined for floating-point inputs ({', '.join(str(x.dtype) for x in inputs)})")
    n = out.numel
    if n == 0:
        return
    flat, strided = _kernels(arity, code)
    blocks, threads = grid(n)
    if out.is_contiguous and all(x.numel == 1 or (x.shape == out.shape and x.is_contiguous) for x in inputs):
        args = []
        for x in inputs:
            args += [x.buffer, x.offset, 0 if x.numel == 1 else 1]
        flat[blocks, threads](n, *args, out.buffer, out.offset)
        return
    shape, strides = collapse(out.shape, [x.strides for x in expanded] + [out.strides])
    offsets = tuple(x.offset for x in expanded) + (out.offset,)
    strided[blocks, threads](n, device_meta(shape), device_meta(tuple(strides)), device_meta(offsets),
                             *(x.buffer for x in inputs), out.buffer)


def unary(code: int, x: DeviceStorage, out: DeviceStorage) -> None:
    """``out = f(x)`` elementwise (``x`` broadcast to ``out``'s shape, the result cast to ``out``'s dtype)."""
    _launch(1, code, (x,), out)


def binary(code: int, a: DeviceStorage, b: DeviceStorage, out: DeviceStorage) -> None:
    """``out = f(a, b)`` with ``a`` and ``b`` broadcast to ``out``'s shape."""
    _launch(2, code, (a, b), out)


def ternary(code: int, a: DeviceStorage, b: DeviceStorage, c: DeviceStorage, out: DeviceStorage) -> None:
    """``out = f(a, b, c)`` with broadcasting (where, clamp, lerp)."""
    _launch(3, code, (a, b, c), out)
