"""bfloat16 on the device: storage holds the bits in uint16 (Numba has no bfloat16), kernels compute in float32.

Two elementwise kernels convert, each one pass over any layout: ``TO_BFLOAT16_BITS`` rounds float32 values to
bfloat16 bits (to nearest, ties to even, as torch) and ``FROM_BFLOAT16_BITS`` widens bits to float32 values
(exact); both are shared scalar definitions (``kernels.common.scalar_ops``). ``copy`` is the cast behind
``DeviceStorage.copy_from``/``astype`` whenever either side is bfloat16; elements only moved (a bfloat16 copy, a
gather, an assigning scatter) move as bits. ``widened`` wraps a kernel entry point that computes on its operands
(a product, a reduction, a sort): bfloat16 operands reach it as float32 copies, and bfloat16 outputs are computed
in float32 and rounded once into place, as the CPU backend does around its Numba kernels.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from ... import opcodes as op
from ..common.dtypes import BFLOAT16
from .elementwise import unary
from .storage import DeviceStorage

__all__ = ["copy", "widened"]

_FLOAT = np.dtype(np.float32)


def copy(src: DeviceStorage, dst: DeviceStorage) -> None:
    """``dst[...] = src`` (broadcast to ``dst``'s shape), either or both of them bfloat16; any layouts."""
    if src.dtype == dst.dtype:
        unary(op.COPY, src.bits(), dst.bits())
    elif src.dtype == BFLOAT16:
        wide = dst if dst.dtype == _FLOAT else DeviceStorage.empty(src.shape, _FLOAT)
        unary(op.FROM_BFLOAT16_BITS, src.bits(), wide)
        if wide is not dst:
            unary(op.COPY, wide, dst)
    else:
        wide = src
        if src.dtype != _FLOAT:
            wide = DeviceStorage.empty(src.shape, _FLOAT)
            unary(op.COPY, src, wide)
        unary(op.TO_BFLOAT16_BITS, wide, dst.bits())


def _is_bfloat16(x: Any) -> bool:
    return isinstance(x, DeviceStorage) and x.dtype == BFLOAT16


def widened(*outputs: str) -> Callable[[Callable], Callable]:
    """Decorator for a kernel entry point whose parameters ``outputs`` it writes (and may read): called with a
    bfloat16 storage anywhere, it runs on float32 copies and rounds each bfloat16 output back into place once;
    otherwise it is called as it is (one scan of the arguments)."""
    def wrap(kernel: Callable) -> Callable:
        signature = inspect.signature(kernel)

        @functools.wraps(kernel)
        def run(*args: Any, **kwargs: Any) -> Any:
            if not any(_is_bfloat16(a) for a in args) and not (kwargs and any(map(_is_bfloat16, kwargs.values()))):
                return kernel(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            given = dict(bound.arguments)
            for name, value in given.items():
                if _is_bfloat16(value):
                    bound.arguments[name] = value.astype(_FLOAT)
            result = kernel(*bound.args, **bound.kwargs)
            for name in outputs:
                if name in given and bound.arguments[name] is not given[name]:
                    given[name].copy_from(bound.arguments[name])
            return result
        return run
    return wrap
