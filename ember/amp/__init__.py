"""``ember.amp``: automatic mixed precision, as ``torch.amp``: ``autocast`` regions, ``custom_fwd``/``custom_bwd``
for custom Functions, and the ``GradScaler``."""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
