"""The backend contract: what every kernel backend (``cpu_kernels``, later ``cuda_kernels``) provides.

Kernels take arrays and plain numbers and write into ``out``; they know
nothing of Tensor or autograd. Callers have already checked shapes, dtypes and
indices, so a backend never sees input it could index out of bounds with.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

Array = Any  # a NumPy array on the CPU backend


@runtime_checkable
class Backend(Protocol):
    """The names and signatures each backend module exports."""

    def unary(self, code: int, x: Array, out: Array) -> None:
        """``out = f(x)`` elementwise for an ``ember.opcodes`` unary code."""

    def binary(self, code: int, a: Array, b: Array, out: Array) -> None:
        """``out = f(a, b)`` with ``a`` and ``b`` broadcast to ``out.shape``."""

    def ternary(self, code: int, a: Array, b: Array, c: Array, out: Array) -> None:
        """``out = f(a, b, c)`` with broadcasting (where, clamp, lerp)."""

    def reduce(self, code: int, x: Array, dims: tuple[int, ...], out: Array) -> None:
        """Reduce ``x`` over ``dims`` into ``out`` of keepdim shape."""

    def arg_reduce(self, code: int, x: Array, dim: int, values: Array, indices: Array) -> None:
        """Extreme values and their first indices along ``dim`` (keepdim shapes)."""

    def scan(self, code: int, x: Array, dim: int, out: Array) -> None:
        """Cumulative op of ``x`` along ``dim``."""

    def matmul(self, a: Array, b: Array, out: Array) -> None:
        """Batched product (B, M, K) @ (B, K, N) into (B, M, N)."""


CONTRACT = tuple(name for name in Backend.__dict__ if not name.startswith("_"))
