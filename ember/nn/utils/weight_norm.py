"""Weight normalisation, w = g * v / ||v||: the shared math and torch's legacy hook form.

The legacy form (``weight_norm``) replaces ``weight`` by parameters ``weight_g`` and
``weight_v`` and recomputes ``weight`` in a forward pre-hook. New code should use
``ember.nn.utils.parametrizations.weight_norm``, which keeps the same math.
"""
from __future__ import annotations

import warnings
from typing import Any

from ...autograd import no_grad
from ...tensor.tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept broadcastable to ``v`` (all dims when -1)."""
    if dim == -1:
        return (v.abs() ** pow).sum() ** (1.0 / pow)
    dim = dim % v.dim()
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:
        return v.abs()
    return (v.abs() ** pow).sum(dim=others, keepdim=True) ** (1.0 / pow)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``v`` rescaled so its norm over the non-``dim`` dims is ``g`` (differentiable in both)."""
    return v * (g / norm_except_dim(v, 2, dim))


def _hook_key(module: Module, kind: type, name: str) -> Any:
    """The key of ``module``'s forward pre-hook of class ``kind`` for parameter ``name`` (None when absent)."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key
    return None


def _refuse_second_hook(module: Module, kind: type, name: str, label: str) -> None:
    """A legacy norm hook ``kind`` (``label`` names it, e.g. "weight") takes over ``name`` only once."""
    if _hook_key(module, kind, name) is not None:
        raise RuntimeError(f"Cannot register two {label}_norm hooks on the same parameter {name}")


def _refuse_uninitialized(weight: Any, kind: type, label: str) -> None:
    if isinstance(weight, UninitializedParameter):
        raise ValueError(f"The module passed to `{kind.__name__}` can't have uninitialized parameters. Make sure to "
                         f"run the dummy forward before applying {label} normalization")


def _remove_legacy_hook(module: Module, kind: type, name: str, label: str) -> Module:
    """Undo a legacy norm hook of class ``kind`` on ``name``: the parameter becomes plain again."""
    key = _hook_key(module, kind, name)
    if key is None:
        raise ValueError(f"{label}_norm of '{name}' not found in {module}")
    module._forward_pre_hooks[key].remove(module)
    del module._forward_pre_hooks[key]
    return module


class WeightNorm:
    """The forward pre-hook of the legacy ``weight_norm``: recomputes ``module.<name>`` from ``_g`` and ``_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> "WeightNorm":
        _refuse_second_hook(module, WeightNorm, name, "weight")
        weight = getattr(module, name)
        _refuse_uninitialized(weight, WeightNorm, "weight")
        fn = WeightNorm(name, dim)
        del module._parameters[name]
        with no_grad():
            module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Legacy weight normalisation through a forward pre-hook (deprecated in torch, kept for old code)."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo the legacy ``weight_norm``: ``weight`` becomes a plain Parameter again."""
    return _remove_legacy_hook(module, WeightNorm, name, "weight")


__all__ = ["weight_norm", "remove_weight_norm", "norm_except_dim"]
