"""torch.cuda's device functions (``is_available``, ``current_device``, ``set_device``, ``device``, ...).

They are the CUDA runtime's (``ember._cuda_runtime``: ``availability`` and ``gpus``), below the tensor layer, which
uses them too; the facade, ``ember.nn.parallel``, ``ember.backends`` and ``ember.multiprocessing`` take them from
here.
"""
from __future__ import annotations

from .._cuda_runtime.availability import INSTALL_HINT, CudaUnavailableError, _lazy_init, _numba_cuda, device_count, \
    is_available, is_initialized, is_simulator, storage_type
from .._cuda_runtime.gpus import _device_index, _local, current_device, device, device_of, get_device_capability, \
    get_device_name, get_device_properties, set_device, synchronize
from ..kernels.memory import OutOfMemoryError

__all__ = [
    "OutOfMemoryError", "CudaUnavailableError", "INSTALL_HINT", "is_available", "is_simulator", "is_initialized",
    "device_count",
    "current_device", "set_device", "device", "device_of", "get_device_name", "get_device_capability",
    "get_device_properties", "synchronize",
]
