"""``ember.utils``: helpers beside the tensor library, as in ``torch.utils`` (today: ``data``)."""
from __future__ import annotations

from . import data
from . import checkpoint

__all__ = ["data"]
