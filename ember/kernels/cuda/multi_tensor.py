"""One element function launched over one set of arrays, or over any number of sets in a single launch.

An update rule is written once, as an *element function* ``element(i, arrays, offsets, scalars)`` that
reads and writes element ``i`` of every array in the tuple ``arrays`` (at its offset). ``element_kernels``
wraps it in two grid-stride kernels:

- ``one(n, arrays, offsets, scalars)``: the arrays are device buffers, ``n`` elements from their offsets;
- ``many(table, like, scalars)``: each row of the int64 device ``table`` is one array set,
  ``(n, start, address_0, ..., address_4)``: its length, where it starts in the concatenation of all
  rows, and the device address of each array's first element.

A Numba kernel reaches only the arrays it gets as arguments, so a fixed signature cannot take a list of
tensors. ``many`` takes their addresses instead and turns each into a typed pointer with ``_pointer``, a
Numba intrinsic (``inttoptr``) that numba-cuda lowers to PTX like any pointer; so one launch updates every
parameter of a group, as torch's multi_tensor_apply does, and the launch overhead (tens of microseconds)
is paid once instead of once per parameter. Threads stride over the concatenation of the rows, so large
and small tensors spread evenly over the grid. Under the simulator device arrays are host NumPy arrays and
``_pointer`` is a NumPy view of host memory at the address.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

import numpy as np
from numba import cuda

from .launch import SIMULATOR, device_meta, grid
from .storage import DeviceStorage

__all__ = ["WIDTH", "element_kernels", "launch_one", "launch_many"]

# The most arrays one element function takes (Adam with AMSGrad, centered RMSprop with momentum).
WIDTH = 5

if SIMULATOR:
    def _pointer(address, n, like):
        """The simulator's stand-in for a device pointer: ``n`` elements of ``like``'s dtype at host ``address``."""
        raw = (ctypes.c_char * (int(n) * like.dtype.itemsize)).from_address(int(address))
        return np.frombuffer(raw, like.dtype)

    def _base_address(buffer) -> int:
        return buffer._ary.ctypes.data  # a simulator device array keeps its host array in ``_ary``
else:
    from numba import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def _pointer(typingctx, address, n, like):
        """A pointer to ``like``'s dtype at device ``address`` (``n`` serves the simulator's stand-in only)."""
        pointer = types.CPointer(like.dtype)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(pointer))

        return pointer(address, n, like), codegen

    def _base_address(buffer) -> int:
        return buffer.device_ctypes_pointer.value


def element_kernels(element: Callable[..., None], width: int) -> tuple[Any, Any]:
    """The ``one`` and ``many`` kernels (see the module docstring) of a device ``element`` function that takes
    ``width`` arrays."""

    @cuda.jit
    def one(n, arrays, offsets, scalars):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            element(i, arrays, offsets, scalars)

    @cuda.jit
    def many(table, like, scalars):
        thread, stride = cuda.grid(1), cuda.gridsize(1)
        for row in range(table.shape[0]):
            n = table[row, 0]
            arrays = (_pointer(table[row, 2], n, like), _pointer(table[row, 3], n, like),
                      _pointer(table[row, 4], n, like), _pointer(table[row, 5], n, like),
                      _pointer(table[row, 6], n, like))[:width]
            # this thread's first element of the row: the one at a concatenated index congruent to ``thread``
            first = (thread + stride - table[row, 1] % stride) % stride
            for i in range(first, n, stride):
                element(i, arrays, (0, 0, 0, 0, 0)[:width], scalars)

    return one, many


def launch_one(kernel: Any, arrays: Sequence[DeviceStorage], scalars: tuple) -> None:
    """Run ``one`` over contiguous storages of one length (at least one element)."""
    n = arrays[0].numel
    kernel[grid(n)](n, tuple(a.buffer for a in arrays), tuple(a.offset for a in arrays), scalars)


def launch_many(kernel: Any, rows: Sequence[Sequence[DeviceStorage]], scalars: tuple) -> None:
    """Run ``many`` once over every row of contiguous storages (each row of one length and dtype).

    The address table goes to the device once per distinct content (``device_meta``'s cache): the
    parameters and state recur every step, and so do gradients the caching allocator hands out again.
    """
    table, total = [], 0
    for arrays in rows:
        n = arrays[0].numel
        if n:
            addresses = [_base_address(a.buffer) + a.offset * a.dtype.itemsize for a in arrays]
            table.append((n, total, *addresses, *addresses[:1] * (WIDTH - len(addresses))))
            total += n
    if total:
        kernel[grid(total)](device_meta(tuple(table)), rows[0][0].buffer, scalars)
