"""``ember.cuda.amp``: torch.cuda.amp's deprecated aliases of ``ember.amp``: autocast (float16 by default),
GradScaler, custom_fwd and custom_bwd for CUDA."""
from ...amp.deprecated import cuda_custom_bwd as custom_bwd, cuda_custom_fwd as custom_fwd, device_autocast, \
    device_grad_scaler
from ...tensor import dtypes

autocast = device_autocast("cuda", dtypes.float16, __name__)
GradScaler = device_grad_scaler("cuda", __name__)

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]
