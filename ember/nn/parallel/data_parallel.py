"""``nn.DataParallel`` and ``nn.parallel.data_parallel``: one process, the batch split across CUDA devices."""
from __future__ import annotations

import itertools
import warnings
from typing import Any, Sequence

from ...autograd.grad_mode import is_grad_enabled
from ...cuda._state import get_device_properties
from ...tensor.device import cuda_device, device as Device
from ..modules.module import Module
from ._devices import all_device_indices, available_device_type, device_index
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _check_balance(device_ids: Sequence[int]) -> None:
    """torch's warning when one GPU has under 75% of the memory (or else the SMs) of another."""
    properties = [get_device_properties(i) for i in device_ids]
    for field in ("total_memory", "multi_processor_count"):
        values = [getattr(p, field) for p in properties]
        low, high = min(range(len(values)), key=values.__getitem__), max(range(len(values)), key=values.__getitem__)
        if values[high] and values[low] / values[high] < 0.75:
            warnings.warn(f"There is an imbalance between your GPUs: GPU {device_ids[low]} has less than 75% of the "
                          f"{field.replace('_', ' ')} of GPU {device_ids[high]}; you may want to exclude it with "
                          "DataParallel's device_ids or CUDA_VISIBLE_DEVICES.", stacklevel=3)
            return


def _check_placement(module: Module, source: Device) -> None:
    for t in itertools.chain(module.parameters(), module.buffers()):
        if t.device != source:
            raise RuntimeError(f"module must have its parameters and buffers on device {source} (device_ids[0]) but "
                               f"found one of them on device: {t.device}")


def _run(module: Module, inputs: tuple, kwargs: dict | None, device_ids: list[int], output_device: int, dim: int,
         detach: bool) -> Any:
    """Scatter, replicate, apply and gather: the data-parallel step both entry points share."""
    _check_placement(module, cuda_device(device_ids[0]))
    inputs, module_kwargs = scatter_kwargs(inputs, kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs, module_kwargs = ((),), ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    replicas = replicate(module, used, detach)
    return gather(parallel_apply(replicas, inputs, module_kwargs, used), output_device, dim)


def _device_ids_or_all(device_ids: Sequence[Any] | None) -> list[int]:
    """The indices of ``device_ids`` (every device when None); an empty list is torch's IndexError."""
    ids = [device_index(d) for d in (all_device_indices() if device_ids is None else device_ids)]
    if not ids:
        raise IndexError("device_ids is empty: data parallelism needs at least one device")
    return ids


class DataParallel(Module):
    """Run ``module`` on slices of the batch (along ``dim``) on each of ``device_ids`` and gather the outputs on
    ``output_device``; gradients reach ``module``'s own parameters. The module must live on ``device_ids[0]``.

    Without CUDA it just calls ``module`` (and, as torch, has only ``module`` and ``device_ids == []``). With a
    single device the module is moved there at construction.
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        if available_device_type() is None:
            self.module = module
            self.device_ids: list[int] = []
            return
        ids = _device_ids_or_all(device_ids)
        self.dim = dim
        self.module = module
        self.device_ids = ids
        self.output_device = device_index(ids[0] if output_device is None else output_device)
        self.src_device_obj = cuda_device(ids[0])
        _check_balance(ids)
        if len(ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The module's output for the whole batch (gathered on ``output_device``)."""
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        return _run(self.module, inputs, kwargs, self.device_ids, self.output_device, self.dim,
                    not is_grad_enabled())


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: dict | None = None) -> Any:
    """The functional ``DataParallel``: ``module(*inputs, **module_kwargs)`` evaluated across ``device_ids``.
    Without CUDA it raises torch's RuntimeError."""
    if not isinstance(inputs, tuple):
        inputs = () if inputs is None else (inputs,)
    if available_device_type() is None:
        raise RuntimeError("device type could not be determined")
    ids = _device_ids_or_all(device_ids)
    output = device_index(ids[0] if output_device is None else output_device)
    return _run(module, inputs, module_kwargs, ids, output, dim, False)
