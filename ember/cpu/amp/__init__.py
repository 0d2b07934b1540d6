"""``ember.cpu.amp``: torch.cpu.amp's deprecated aliases of ``ember.amp``'s autocast and GradScaler."""
from ...amp.deprecated import device_autocast, device_grad_scaler
from ...tensor import dtypes

autocast = device_autocast("cpu", dtypes.bfloat16, __name__)
GradScaler = device_grad_scaler("cpu", __name__)

__all__ = ["autocast", "GradScaler"]
