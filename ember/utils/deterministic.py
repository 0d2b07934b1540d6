"""``ember.utils.deterministic``: torch.utils.deterministic's one setting, ``fill_uninitialized_memory``.

While ``use_deterministic_algorithms(True)`` is on and this is True (the default), ``empty`` and the
constructors built on it fill new memory with NaN (floats), True (bool) or the dtype's largest integer, so a
program that reads memory it never wrote gets the same values on every run.
"""
from __future__ import annotations

import sys
import types

from .. import _determinism


class _Deterministic(types.ModuleType):
    """This module, with ``fill_uninitialized_memory`` as a checked property over ember's determinism state."""

    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether ``empty`` fills new memory while deterministic algorithms are on."""
        return _determinism.fill_uninitialized_memory

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise RuntimeError(f"expected a bool, but got {type(value).__name__}")
        _determinism.fill_uninitialized_memory = value


sys.modules[__name__].__class__ = _Deterministic
