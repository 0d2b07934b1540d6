"""Fused activation kernels on the device: the value and the input gradient, one grid-stride pass each.

The scalar functions are the CPU module's (``ember.cpu_kernels.activations``):
each ``f(v, a, b, c)`` / ``df(v, g, a, b, c)`` is compiled from its plain
Python source (``py_func``) as a CUDA device function, so the GPU computes
exactly the CPU's formulas. Their helpers are rebound while doing so: the
CPU's other scalar functions (``sigmoid``, ``_tanh_gate``, ...) are rebuilt
the same way, and ``vexp`` / ``verfc`` / ``vtanh`` get device twins. Those are CPU
vectorisation devices (a float32 polynomial written for LLVM); on a GPU the
plain ``math.exp`` / ``math.erfc`` / ``math.tanh`` are native. Under the simulator the exp
twin returns inf past the float64 overflow point, where Python's ``math.exp``
would raise (the compiled versions return inf). ``const`` stays the CPU's
(a plain function with a generic-target overload).

A kernel is specialised per (activation, direction) by closing over the
device function, built on first use and cached.
"""
from __future__ import annotations

import dis
import functools
import math

from numba import cuda

from ..cpu_kernels import activations as _cpu
from .launch import SIMULATOR, grid
from .scalar_ops import with_globals
from .storage import DeviceStorage

__all__ = ["activation_forward", "activation_backward", "ACTIVATIONS"]

ACTIVATIONS = _cpu.ACTIVATIONS

_EXP_LIMIT = 709.782712893384  # log of the largest float64


if SIMULATOR:
    def _exp(x):
        return math.inf if x > _EXP_LIMIT else math.exp(x)
else:
    def _exp(x):
        return math.exp(x)


def _erfc(x):
    return math.erfc(x)


# CPU helpers replaced by a device twin; every other Numba-compiled helper is rebuilt from its py_func.
def _tanh(x):
    return math.tanh(x)


_TWINS = {"vexp": _exp, "verfc": _erfc, "vtanh": _tanh}


@functools.cache
def device_function(name: str):
    """Device function built from the CPU scalar function ``name``'s source, its helpers rebound."""
    py_func = getattr(_cpu, name).py_func
    helpers = {}
    # global reads only: ``co_names`` also holds attribute names (``math.tanh`` inside the scalar ``tanh``)
    for ref in {i.argval for i in dis.get_instructions(py_func) if i.opname == "LOAD_GLOBAL"}:
        if ref in _TWINS:
            helpers[ref] = cuda.jit(device=True)(_TWINS[ref])
        elif hasattr(py_func.__globals__.get(ref), "py_func"):
            helpers[ref] = device_function(ref)
    return cuda.jit(device=True)(with_globals(py_func, helpers))


def _make_kernel(f, backward: bool):
    if backward:
        def kernel(n, x, ox, g, og, out, oo, a, b, c):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(x[ox + i], g[og + i], a, b, c)
    else:
        def kernel(n, x, ox, out, oo, a, b, c):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(x[ox + i], a, b, c)
    return cuda.jit(kernel)


@functools.cache
def _kernel(name: str, backward: bool):
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of {ACTIVATIONS}")
    return _make_kernel(device_function(name + "_grad" if backward else name), backward)


def activation_forward(name: str, x: DeviceStorage, out: DeviceStorage, params: tuple = ()) -> None:
    """``out = f(x)`` for activation ``name`` (one of ``ACTIVATIONS``); 1-D contiguous float32/float64."""
    kernel = _kernel(name, False)
    n = x.numel
    if n == 0:
        return
    blocks, threads = grid(n)
    kernel[blocks, threads](n, x.buffer, x.offset, out.buffer, out.offset, *_cpu.scalar_params(x, params))


def activation_backward(name: str, x: DeviceStorage, g: DeviceStorage, out: DeviceStorage,
                        params: tuple = ()) -> None:
    """``out = g * f'(x)`` for activation ``name``; all 1-D contiguous, one float32/float64 dtype."""
    kernel = _kernel(name, True)
    n = x.numel
    if n == 0:
        return
    blocks, threads = grid(n)
    kernel[blocks, threads](n, x.buffer, x.offset, g.buffer, g.offset, out.buffer, out.offset,
                            *_cpu.scalar_params(x, params))
