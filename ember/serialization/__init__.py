"""``ember.save`` / ``ember.load`` and ``ember.serialization``'s names, as ``torch.serialization``'s.

The engine is split by format: ``torch_zip`` and ``torch_legacy`` (torch's two formats), ``pickler`` and
``unpicklers`` (pickling with torch's names, the weights-only allowlist), ``rebuild`` (tensors from storages),
``safetensors_format``, ``ember_v1`` (reading ember's earlier files), ``atomic`` (saves that never lose a file).
"""
from .api import DEFAULT_PROTOCOL, load, save
from .unpicklers import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL"]
