"""``ember.nn.parallel``: single-process data parallelism across CUDA devices, as ``torch.nn.parallel``
and multi-process data parallelism (``DistributedDataParallel``) over ``ember.distributed``."""
from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]
