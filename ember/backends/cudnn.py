"""``ember.backends.cudnn``: torch's cuDNN switches. ember has no cuDNN.

ember's convolutions, pooling, normalization and recurrent layers are its own kernels (Numba, plus a GEMM on
the columns of a convolution), so ``is_available()`` is False and ``version()`` None, as on torch's CPU build.
The settings scripts assign are kept with torch's defaults and type checks and read back, but change nothing:
``enabled`` and ``benchmark`` pick no algorithm here, ``deterministic`` does not turn on
``use_deterministic_algorithms`` (nor does it in torch), and ``allow_tf32`` does not apply because a GPU
convolution's GEMM follows the matmul precision (``ember.set_float32_matmul_precision``) instead.
"""
from __future__ import annotations

import sys
import types
from typing import Any, ContextManager

from ._flags import BoolFlag, flag_block


def is_available() -> bool:
    """Whether cuDNN can be used: never in ember."""
    return False


def version() -> None:
    """cuDNN's version: None, since ember has no cuDNN."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """Whether cuDNN would take ``tensor``: never in ember."""
    return False


def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int | None = 10,
          deterministic: bool = False, allow_tf32: bool = True) -> ContextManager[None]:
    """Set these switches for a ``with`` block and restore them after (torch's defaults, which turn cuDNN off).
    ``benchmark_limit`` is ignored, as torch ignores it where cuDNN is unavailable."""
    return flag_block(sys.modules[__name__], {"enabled": enabled, "benchmark": benchmark,
                                              "deterministic": deterministic, "allow_tf32": allow_tf32})


class _CudnnModule(types.ModuleType):
    """This module's class: its switches are attributes with torch's defaults and bool checks."""

    enabled = BoolFlag(True, "set_enabled_cudnn")
    benchmark = BoolFlag(False, "set_benchmark_cudnn")
    deterministic = BoolFlag(False, "set_deterministic_cudnn")
    allow_tf32 = BoolFlag(True, "set_allow_tf32_cudnn")


benchmark_limit = None  # torch's value where cuDNN is unavailable (a plain attribute there too)

sys.modules[__name__].__class__ = _CudnnModule
