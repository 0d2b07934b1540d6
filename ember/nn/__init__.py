"""``ember.nn``: modules, layers, losses, ``functional``, ``init`` and ``utils``, as in ``torch.nn``."""
from __future__ import annotations

from . import functional, init, modules, utils
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional", "init", "utils",
           *modules.__all__]
globals().update({name: getattr(modules, name) for name in modules.__all__})
