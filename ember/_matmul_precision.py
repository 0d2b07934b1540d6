"""The float32 matrix-product precision (``ember.set_float32_matmul_precision``), one value per process.

Kept in a module of its own with no imports from ember, so that the settings surface (``ember._settings``,
``ember.backends.cuda.matmul``) and the CUDA kernels' cuBLAS path (``ember.kernels.cuda.vendor_blas``) share it
without an upward import.
"""
from __future__ import annotations

import warnings

PRECISIONS = ("highest", "high", "medium")

_precision = "highest"


def get() -> str:
    """The current precision: "highest" (full float32), "high" or "medium" (TF32 allowed)."""
    return _precision


def set(precision: str) -> None:  # noqa: A001 - the module's verb
    """Change the precision; a string other than the three names warns and changes nothing, as in torch."""
    global _precision
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=3)
        return
    _precision = precision


def allows_tf32() -> bool:
    """Whether float32 products may round their inputs to TF32 (any precision below "highest")."""
    return _precision != "highest"
