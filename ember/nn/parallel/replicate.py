"""Copies of a module tree on other devices whose parameters stay differentiable views of the original's."""
from __future__ import annotations

from typing import Any, Sequence, TypeVar

from ...autograd.grad_mode import no_grad
from ...tensor.device import cuda_device, device as Device
from ...tensor.tensor import Tensor
from ..modules.module import Module
from ._devices import device_index

__all__ = ["replicate"]

M = TypeVar("M", bound=Module)


def _copy_to(t: Tensor, dev: Device, differentiable: bool) -> Tensor:
    """``t`` on ``dev``: a recorded copy (or, on ``t``'s own device, a recorded alias) when ``differentiable``, so
    the replica's gradient reaches ``t``; otherwise a detached copy (``t``'s storage itself on its own device, so
    in-place updates such as batch-norm statistics of the first replica reach the original)."""
    if not differentiable:
        with no_grad():
            return t.detach().to(dev)
    return t.view_as(t) if t.device == dev else t.to(dev)


def _replica_tree(network: Module, dev: Device, detach: bool) -> Module:
    """One replica of ``network`` on ``dev``; shared submodules and tensors stay shared within the replica."""
    tensors: dict[int, Tensor] = {}
    modules: dict[int, Module] = {}

    def tensor(t: Tensor, differentiable: bool) -> Tensor:
        if id(t) not in tensors:
            tensors[id(t)] = _copy_to(t, dev, differentiable)
        return tensors[id(t)]

    def replica_of(module: Module) -> Module:
        if id(module) in modules:
            return modules[id(module)]
        replica = modules[id(module)] = type(module).__new__(type(module))
        state = vars(replica)
        state.update(vars(module))
        state["_parameters"] = {name: None for name, p in module._parameters.items() if p is None}
        for name, p in module._parameters.items():
            if p is not None:  # a plain attribute, as in torch: replicas own no parameters
                state[name] = tensor(p, not detach)
        state["_buffers"] = {name: None if b is None else tensor(b, b.requires_grad and not detach)
                             for name, b in module._buffers.items()}
        state["_modules"] = {name: None if child is None else replica_of(child)
                             for name, child in module._modules.items()}
        return replica

    return replica_of(network)


def replicate(network: M, devices: Sequence[Any], detach: bool = False) -> list[M]:
    """One copy of ``network`` per device in ``devices`` (CUDA indices or devices). Parameters are copied through
    autograd unless ``detach``, so gradients of the replicas' outputs accumulate in the original parameters;
    buffers are copied detached unless they require grad. Hooks and other attributes are shared."""
    return [_replica_tree(network, cuda_device(device_index(d)), detach) for d in devices]
