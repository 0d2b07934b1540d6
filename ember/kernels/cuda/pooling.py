"""Pooling on the device: max and average over windows and their adjoints, for 3 spatial dims.

Same contract as ``ember.kernels.cpu.pooling``: data arrays are C-contiguous
DeviceStorages ((P, D, H, W) planes; any offset), the window description
(``starts``/``counts``: int64 (3, M), ``steps``: int64 (3,), ``divisors``:
float64 (3, M)) stays the host NumPy arrays the layer code builds. They are
uploaded once per distinct value (``launch.device_meta`` for the integers, a
small cache here for the float divisors), so a training loop uploads nothing.

One thread per written element everywhere, except ``max_pool_backward``:

* ``max_pool`` / ``avg_pool``: one thread per output, walking its window in the CPU's order
  (NaN wins and propagates; an empty window gives -inf and its first position);
* ``avg_pool_backward`` is a gather: each input element sums the shares of the outputs whose windows hold
  it, found through a per-dim host-built inverse window table (CSR, cached). Outputs are visited in the
  CPU's order: deterministic, no atomics;
* ``max_pool_backward`` only has the arg-max positions, no windows, so a gather would be O(inputs x
  outputs): it zero-fills and then ``cuda.atomic.add``s every output's gradient at its position. Float sums
  are exact and deterministic while no input position is the arg-max of more than two outputs (a + b is
  commutative); beyond that the rounding depends on the order the atomics land in. Under
  ``use_deterministic_algorithms(True)`` one thread per plane adds its outputs in order instead (the CPU's
  order and bits, parallel over planes only).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
from numba import cuda

from ..._cuda_context import active
from ..._determinism import are_deterministic_algorithms_enabled
from ..common.pooling import window_max
from .device_functions import device_function
from .launch import device_meta, grid
from .storage import DeviceStorage

__all__ = ["max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward"]

_window_max = device_function(window_max)

_CACHE: OrderedDict = OrderedDict()
_CACHE_MAX = 512


def _cached(key, build):
    """A bounded cache of host-built window metadata resident on the active device."""
    key = (active.index, key)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = build()
        if len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return found


def _int_meta(a: np.ndarray):
    """``a`` (int64, 1-d or 2-d) on the device via ``launch.device_meta``."""
    a = np.asarray(a, np.int64)
    return device_meta(tuple(tuple(int(v) for v in row) for row in a) if a.ndim == 2 else
                       tuple(int(v) for v in a))


def _float_meta(a: np.ndarray):
    """``a`` as a float64 device array, one upload per distinct value."""
    a = np.ascontiguousarray(a, np.float64)
    return _cached(("f", a.shape, a.tobytes()), lambda: cuda.to_device(a))


def _inverse_windows(starts: np.ndarray, counts: np.ndarray, out_size: tuple, in_size: tuple):
    """Per dim, for every input index, the outputs whose (unit-step) windows contain it, in increasing order.

    CSR over the three dims: ``ptr`` (3, max_in + 1) bounds in ``outs``, a flat int64 array. Host-built once
    per window set and cached on the device.
    """
    starts, counts = np.asarray(starts, np.int64), np.asarray(counts, np.int64)

    def build():
        width = max(in_size) + 1
        ptr = np.zeros((3, width), np.int64)
        outs = []
        for d in range(3):
            lists = [[] for _ in range(in_size[d])]
            for o in range(out_size[d]):
                for i in range(max(starts[d, o], 0), min(starts[d, o] + counts[d, o], in_size[d])):
                    lists[i].append(o)
            ptr[d, 0] = len(outs)
            for i, found in enumerate(lists):
                outs.extend(found)
                ptr[d, i + 1] = len(outs)
        flat = np.array(outs or [0], np.int64)
        return cuda.to_device(ptr), cuda.to_device(flat)

    return _cached(("inv", starts.shape, starts.tobytes(), counts.tobytes(), out_size, in_size), build)


@cuda.jit(device=True)
def _unravel(i, depth, height, width):
    """(plane, z, y, x) of flat index ``i`` into C-contiguous (planes, depth, height, width) arrays."""
    x = i % width
    y = (i // width) % height
    z = (i // (width * height)) % depth
    return i // (width * height * depth), z, y, x


@cuda.jit(device=True)
def _split_lane(i, lanes, depth, height, width):
    """(sample, z, y, x, lane) of flat index ``i`` into C-contiguous (N, depth, height, width, lanes) arrays."""
    n, z, y, x = _unravel(i // lanes, depth, height, width)
    return n, z, y, x, i % lanes


@cuda.jit
def _max_pool(n_items, x, x_off, depth, height, width, out, o_off, indices, i_off, od, oh, ow, starts, counts,
              steps, lanes):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        n, z, y, w, c = _split_lane(i, lanes, od, oh, ow)
        base = x_off + n * depth * height * width * lanes + c
        best, where = _window_max(x, base, starts, counts, steps, z, y, w, height, width, lanes)
        out[o_off + i] = best
        indices[i_off + i] = where


@cuda.jit
def _fill_zero(n_items, arr, off):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        arr[off + i] = 0


@cuda.jit
def _max_pool_scatter(n_items, size, extent, grad, g_off, indices, i_off, grad_input, gi_off, lanes):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        at = indices[i_off + i]
        if 0 <= at < extent:  # an empty window's position may lie outside the plane
            n, c = i // (size * lanes), i % lanes
            cuda.atomic.add(grad_input, gi_off + (n * extent + at) * lanes + c, grad[g_off + i])


@cuda.jit
def _max_pool_scatter_planes(planes, size, extent, grad, g_off, indices, i_off, grad_input, gi_off, lanes):
    """One thread per plane adds its outputs' gradients at their positions in output order: deterministic."""
    for p in range(cuda.grid(1), planes, cuda.gridsize(1)):
        n, c = p // lanes, p % lanes
        for m in range(size):
            i = (n * size + m) * lanes + c
            at = indices[i_off + i]
            if 0 <= at < extent:
                grad_input[gi_off + (n * extent + at) * lanes + c] += grad[g_off + i]


@cuda.jit
def _avg_pool(n_items, x, x_off, depth, height, width, out, o_off, od, oh, ow, starts, counts, divisors,
              override, lanes):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        n, z, y, w, c = _split_lane(i, lanes, od, oh, ow)
        base = x_off + n * depth * height * width * lanes + c
        total = 0.0
        for zi in range(starts[0, z], starts[0, z] + counts[0, z]):
            for yi in range(starts[1, y], starts[1, y] + counts[1, y]):
                row = base + ((zi * height + yi) * width + starts[2, w]) * lanes
                for e in range(counts[2, w]):
                    total += x[row + e * lanes]
        if counts[0, z] == 0 or counts[1, y] == 0 or counts[2, w] == 0:
            out[o_off + i] = 0
        elif override != 0:
            out[o_off + i] = total / override
        else:
            out[o_off + i] = total / (divisors[0, z] * divisors[1, y] * divisors[2, w])


@cuda.jit
def _avg_pool_backward(n_items, grad, g_off, od, oh, ow, grad_input, gi_off, depth, height, width, ptr, outs,
                       divisors, override, lanes):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        n, zi, yi, xi, c = _split_lane(i, lanes, depth, height, width)
        base = g_off + n * od * oh * ow * lanes + c
        total = 0.0
        for j in range(ptr[0, zi], ptr[0, zi + 1]):
            z = outs[j]
            for k in range(ptr[1, yi], ptr[1, yi + 1]):
                y = outs[k]
                for m in range(ptr[2, xi], ptr[2, xi + 1]):
                    w = outs[m]
                    scale = override if override != 0 else divisors[0, z] * divisors[1, y] * divisors[2, w]
                    total += grad[base + ((z * oh + y) * ow + w) * lanes] / scale
        grad_input[gi_off + i] = total


def _threads(name: str, written: DeviceStorage, *read: DeviceStorage) -> int:
    """One thread per element of ``written``: their count, after checking every storage is C-contiguous (none are
    checked when the count is 0, as nothing is launched)."""
    if written.numel:
        for s in (*read, written):
            if not s.is_contiguous:
                raise ValueError(f"{name}: needs C-contiguous storages, got {s}")
    return written.numel


def _lanes(s: DeviceStorage, ndim: int) -> tuple[tuple, int]:
    """The (N, *dims) shape and lane count of a planes-first storage (``ndim`` dims, one lane) or of a channels-last
    one (a trailing lanes dim)."""
    return (tuple(s.shape), 1) if s.ndim == ndim else (tuple(s.shape[:-1]), s.shape[-1])


def max_pool(x: DeviceStorage, out: DeviceStorage, indices: DeviceStorage, starts: np.ndarray, counts: np.ndarray,
             steps: np.ndarray) -> None:
    """Window maxima of ``x`` into ``out`` and their flat per-plane input positions into ``indices``: (P, D, H, W)
    planes, or (N, D, H, W, C) channels-last samples, as the CPU kernel."""
    n_items = _threads("max_pool", out, x, indices)
    if n_items:
        (_, *in_size), lanes = _lanes(x, 4)
        (_, *out_size), _ = _lanes(out, 4)
        _max_pool[grid(n_items)](n_items, x.buffer, x.offset, *in_size, out.buffer, out.offset, indices.buffer,
                                 indices.offset, *out_size, _int_meta(starts), _int_meta(counts),
                                 _int_meta(steps), lanes)


def max_pool_backward(grad: DeviceStorage, indices: DeviceStorage, grad_input: DeviceStorage) -> None:
    """Overwrite (P, S) ``grad_input`` with (P, M) ``grad`` added at the per-plane positions ``indices``.

    Zero fill, then ``cuda.atomic.add`` per output, or the per-plane loop in deterministic mode (see the module
    docstring).
    """
    n_items = _threads("max_pool_backward", grad_input, grad, indices)
    if n_items == 0:
        return
    _fill_zero[grid(n_items)](n_items, grad_input.buffer, grad_input.offset)
    if grad.numel == 0:
        return
    (planes, size), lanes = _lanes(grad, 2)
    (_, extent), _ = _lanes(grad_input, 2)
    operands = (size, extent, grad.buffer, grad.offset, indices.buffer, indices.offset, grad_input.buffer,
                grad_input.offset, lanes)
    if are_deterministic_algorithms_enabled():
        planes *= lanes
        _max_pool_scatter_planes[grid(planes)](planes, *operands)
    else:
        _max_pool_scatter[grid(grad.numel)](grad.numel, *operands)


def avg_pool(x: DeviceStorage, out: DeviceStorage, starts: np.ndarray, counts: np.ndarray, divisors: np.ndarray,
             override: float) -> None:
    """Window sums of ``x`` divided by ``override`` (when nonzero) or the product of the per-dim ``divisors``."""
    n_items = _threads("avg_pool", out, x)
    if n_items:
        (_, *in_size), lanes = _lanes(x, 4)
        (_, *out_size), _ = _lanes(out, 4)
        _avg_pool[grid(n_items)](n_items, x.buffer, x.offset, *in_size, out.buffer, out.offset, *out_size,
                                 _int_meta(starts), _int_meta(counts), _float_meta(divisors), float(override), lanes)


def avg_pool_backward(grad: DeviceStorage, grad_input: DeviceStorage, starts: np.ndarray, counts: np.ndarray,
                      divisors: np.ndarray, override: float) -> None:
    """The adjoint of ``avg_pool``: overwrite ``grad_input`` with each output's share spread over its window.

    A gather through the inverse window table: deterministic, no atomics.
    """
    n_items = _threads("avg_pool_backward", grad_input, grad)
    if n_items == 0:
        return
    (_, *out_size), lanes = _lanes(grad, 4)
    (_, *in_size), _ = _lanes(grad_input, 4)
    out_size, in_size = tuple(out_size), tuple(in_size)
    ptr, outs = _inverse_windows(starts, counts, out_size, in_size)
    _avg_pool_backward[grid(n_items)](n_items, grad.buffer, grad.offset, *out_size, grad_input.buffer,
                                      grad_input.offset, *in_size, ptr, outs, _float_meta(divisors), float(override),
                                      lanes)
