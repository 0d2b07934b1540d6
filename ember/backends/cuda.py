"""``ember.backends.cuda``: whether ember has its CUDA backend, and the cuBLAS switches of ``matmul``.

``matmul.allow_tf32`` is the float32 matmul precision seen as a bool, as in torch: True sets
``ember.set_float32_matmul_precision("high")``, False "highest". ember honours it where a GPU product goes to
cuBLAS (through CuPy, when installed: ``ember.kernels.cuda.vendor_blas``), which a GPU convolution's GEMM does
too. ember's own Numba matmul kernel always computes in full float32, so there the switch changes nothing.
``allow_fp16_reduced_precision_reduction`` and ``allow_bf16_reduced_precision_reduction`` keep torch's defaults
and type checks but change nothing: ember's half-precision products accumulate in float32.
"""
from __future__ import annotations

from typing import Any

from .. import _matmul_precision
from ..cuda import _state
from ._flags import BoolFlag, expect_bool


def is_built() -> bool:
    """Whether ember's CUDA backend is installed (numba-cuda imports), whether or not a GPU is present."""
    return _state._numba_cuda() is not None


class _CublasMatmul:
    """``matmul``: the cuBLAS switches; an attribute of another name is torch's AttributeError."""

    __slots__ = ()

    allow_fp16_reduced_precision_reduction = BoolFlag(True, "set_allow_fp16_reduced_precision_reduction")
    allow_bf16_reduced_precision_reduction = BoolFlag(True, "set_allow_bf16_reduced_precision_reduction")

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 products may use TF32 (any float32 matmul precision but "highest")."""
        return _matmul_precision.allows_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _matmul_precision.set("high" if expect_bool(value, "set_allow_tf32_cublas") else "highest")

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if not hasattr(type(self), name):
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)


matmul = _CublasMatmul()
