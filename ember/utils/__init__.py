"""``ember.utils``: helpers beside the tensor library, as in ``torch.utils`` (``data``, ``checkpoint``;
``ember.utils.tensorboard`` is imported on demand, as in torch: it needs the optional tensorboard package)."""
from __future__ import annotations

from . import data
from . import checkpoint

__all__ = ["data"]
