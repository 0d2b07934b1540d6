"""``ember.backends.mkldnn``: torch's oneDNN (MKL-DNN) switches. ember has no oneDNN.

ember's CPU kernels are Numba and NumPy's BLAS, so ``is_available()`` is False (torch's CPU build says True).
``enabled`` and ``deterministic`` keep torch's defaults and type checks and read back, but change nothing.
"""
from __future__ import annotations

import sys
import types
from typing import ContextManager

from ._flags import BoolFlag, flag_block


def is_available() -> bool:
    """Whether oneDNN can be used: never in ember."""
    return False


def flags(enabled: bool = False, deterministic: bool = False) -> ContextManager[None]:
    """Set these switches for a ``with`` block and restore them after (torch's defaults)."""
    return flag_block(sys.modules[__name__], {"enabled": enabled, "deterministic": deterministic})


class _MkldnnModule(types.ModuleType):
    """This module's class: its switches are attributes with torch's defaults and bool checks."""

    enabled = BoolFlag(True, "set_enabled_mkldnn")
    deterministic = BoolFlag(False, "set_deterministic_mkldnn")


sys.modules[__name__].__class__ = _MkldnnModule
