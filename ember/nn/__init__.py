"""``ember.nn``: modules, layers, losses, ``functional``, ``init``, ``utils`` and ``parallel``, as in ``torch.nn``."""
from __future__ import annotations

from . import functional, init, modules, parallel, utils
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional", "init", "utils",
           "parallel", "DataParallel", *modules.__all__]
globals().update({name: getattr(modules, name) for name in modules.__all__})
