"""``ember.utils.dlpack``: ``torch.utils.dlpack``'s names (the protocol itself is ``ember/tensor/interop.py``)."""
from __future__ import annotations

from ..tensor.interop import DLDeviceType, from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
