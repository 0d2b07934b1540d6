"""``nn.utils.prune``: zero out parts of a module's tensor through a mask, as ``torch.nn.utils.prune``.

Pruning ``name`` of a module moves the parameter to ``<name>_orig``, keeps the mask in the buffer
``<name>_mask`` and makes ``<name>`` the plain tensor ``mask * orig``, recomputed by a forward pre-hook (the
pruning method itself) before every call, so gradients reach ``<name>_orig`` only where the mask is 1. Pruning
the same tensor again folds the methods into a ``PruningContainer`` whose newest method only sees the entries
(unstructured) or channels (structured) the earlier ones left. ``remove`` makes the pruning permanent.

Which entries are pruned when scores tie at the cut is decided by ``topk``: ember's keeps the lowest indices,
torch's (libstdc++'s selection) may keep others, so masks equal torch's whenever the cut falls between distinct
scores.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import Any, Iterable, Iterator

from ...tensor.creation import ones_like, zeros_like
from ...tensor.memory_format import contiguous_format
from ...tensor.random_ops import rand, rand_like
from ...tensor.reduce import norm
from ...tensor.sorting import kthvalue, topk
from ...tensor.tensor import Tensor
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of choosing a mask; an instance is also the forward pre-hook that re-applies it.

    Subclasses set ``PRUNING_TYPE`` ("unstructured", "structured" with a ``dim``, or "global") and implement
    ``compute_mask``.
    """

    PRUNING_TYPE: str
    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for ``t`` (same shape), given the mask already in force (``default_mask``)."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_mask * <name>_orig`` of ``module`` (the pruned tensor, differentiable in ``<name>_orig``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> "BasePruningMethod":
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (scores: ``importance_scores``, else the tensor);
        returns the hook now in force (a ``PruningContainer`` when the tensor was already pruned)."""
        method = _method_in_force(cls, module, name, args, kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {importance_scores.shape} vs {orig.shape}")
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=contiguous_format)
        try:
            module.register_buffer(name + "_mask", method.compute_mask(importance_scores, default_mask=default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times the mask this method computes (from ``importance_scores``, else ``t``), without a module."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        mask = self.compute_mask(importance_scores, default_mask=ones_like(t) if default_mask is None
                                 else default_mask)
        return t * mask

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter again holding the pruned values, and
        ``<name>_orig``/``<name>_mask`` go (the hook itself is dropped by ``prune.remove``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = pruned.data
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _pruning_hooks(module: Module, name: str) -> list[tuple[Any, BasePruningMethod]]:
    return [(key, hook) for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


def _method_in_force(cls: type, module: Module, name: str, args: tuple, kwargs: dict) -> BasePruningMethod:
    """A new ``cls`` method for ``module.<name>``, joined with the one already pruning it (whose hook is taken off;
    ``apply`` registers the result)."""
    found = _pruning_hooks(module, name)
    if len(found) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for key, _ in found:
        del module._forward_pre_hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not found:
        return method
    old = found[0][1]
    if not isinstance(old, PruningContainer):
        old = PruningContainer(old)
    old.add_pruning_method(method)
    return old


class PruningContainer(BasePruningMethod):
    """The methods applied one after another to one tensor; the newest decides the mask, within what the earlier
    ones kept. Built from one method (several need ``_tensor_name`` set first, as in torch)."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        """Append ``method`` (it must act on this container's tensor)."""
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, index: int) -> BasePruningMethod:
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the newest method's mask written over the part of ``t`` still in play."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        region = _region_in_play(method, t, mask)
        mask[region] = method.compute_mask(t[region], default_mask=mask[region]).to(dtype=mask.dtype)
        return mask


def _region_in_play(method: BasePruningMethod, t: Tensor, mask: Tensor) -> Any:
    """The index of what ``method`` may still prune: unpruned entries, unpruned channels along ``method.dim``, or
    everything ("global")."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    if kind == "global":
        return (slice(None),) * t.dim()
    if kind != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.')
    n_dims = t.dim()
    dim = method.dim + n_dims if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
    index: list[Any] = [slice(None)] * n_dims
    index[dim] = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
    return tuple(index)


def _check_amount(amount: Any) -> None:
    """torch's validation of ``amount``: an int of at least 0 (a count) or a float in [0, 1] (a fraction)."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    integral = isinstance(amount, numbers.Integral)
    if (integral and amount < 0) or (not integral and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count_to_prune(amount: int | float, size: int) -> int:
    """How many of ``size`` entries (or channels) ``amount`` prunes; a count may not exceed ``size``."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return amount
    return round(amount * size)


def _channels_and_count(t: Tensor, amount: int | float, dim: int) -> tuple[int, int]:
    """For structured pruning of ``t`` along ``dim`` (checked as torch does): its channels, and how many to prune."""
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    channels = t.shape[dim]
    return channels, _count_to_prune(amount, channels)


def _channel_mask(t: Tensor, dim: int, channels: Tensor, default_mask: Tensor) -> Tensor:
    """Ones on the ``channels`` (indices or a bool mask) of ``t`` along ``dim``, zeros elsewhere, within
    ``default_mask``."""
    mask = zeros_like(t)
    index: list[Any] = [slice(None)] * t.dim()
    index[dim] = channels
    mask[tuple(index)] = 1
    mask *= default_mask.to(dtype=mask.dtype)
    return mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones): gives a tensor the pruned form without changing it."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> "BasePruningMethod":  # type: ignore[override]
        """Give ``module.<name>`` the pruned form with an all-ones mask."""
        return super().apply(module, name)


class _ByScore(BasePruningMethod):
    """Unstructured pruning of the ``amount`` entries that rank first by ``_scores`` (highest when ``_largest``)."""

    PRUNING_TYPE = "unstructured"
    _largest: bool

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    @abstractmethod
    def _scores(self, t: Tensor) -> Tensor:
        """What the entries of ``t`` are ranked by."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with ``amount`` entries of ``t`` zeroed."""
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone(memory_format=contiguous_format)
        if count:
            mask.view(-1)[topk(self._scores(t).reshape(-1), k=count, largest=self._largest).indices] = 0
        return mask


class RandomUnstructured(_ByScore):
    """Prunes ``amount`` (a count, or a fraction of the entries) entries chosen uniformly at random."""

    _largest = True

    def _scores(self, t: Tensor) -> Tensor:
        return rand_like(t)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> "BasePruningMethod":  # type: ignore[override]
        """Prune ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_ByScore):
    """Prunes the ``amount`` entries of smallest absolute value (of the importance scores)."""

    _largest = False

    def _scores(self, t: Tensor) -> Tensor:
        return t.abs()

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> "BasePruningMethod":
        """Prune the ``amount`` smallest-magnitude entries of ``module.<name>`` (or of ``importance_scores``)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """A mask keeping all but ``amount`` random channels of ``t`` along ``dim``, within ``default_mask``."""
        channels, count = _channels_and_count(t, self.amount, self.dim)
        if count == 0:
            return default_mask
        draws = rand(channels, device=t.device)
        return _channel_mask(t, self.dim, draws > kthvalue(draws, k=count).values, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              dim: int = -1) -> "BasePruningMethod":
        """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` with the smallest ``n``-norm (``n`` as ``torch.norm``'s ``p``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """A mask keeping the channels of ``t`` along ``dim`` with the largest norms, within ``default_mask``."""
        channels, count = _channels_and_count(t, self.amount, self.dim)
        dim = self.dim % t.dim()
        norms = norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        kept = topk(norms, k=channels - count, largest=True).indices
        if count == 0:
            return default_mask
        return _channel_mask(t, self.dim, kept, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: int | float | str,  # type: ignore[override]
              dim: int, importance_scores: Tensor | None = None) -> "BasePruningMethod":
        """Prune the ``amount`` lowest-norm channels of ``module.<name>`` (or of ``importance_scores``)."""
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask * mask`` (the shapes must agree)."""
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> "BasePruningMethod":  # type: ignore[override]
        """Prune ``module.<name>`` where ``mask`` is 0."""
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Give ``module.<name>`` the pruned form (``_orig``, an all-ones ``_mask``, the hook); returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` smallest-magnitude entries of ``module.<name>``; returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``; returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest ``n``-norm; returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type,
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prune ``(module, name)`` pairs together: ``pruning_method(**kwargs)`` (an unstructured method) chooses among
    all their entries at once (scores from ``importance_scores[(module, name)]``, else the tensors), and each
    tensor gets its share of the mask as a ``CustomFromMask``."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    masks_in_force = parameters_to_vector([_mask_in_force(module, name) for module, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer(method)
    mask = container.compute_mask(scores, masks_in_force)
    start = 0
    for module, name in parameters:
        tensor = getattr(module, name)
        custom_from_mask(module, name, mask=mask[start:start + tensor.numel()].view_as(tensor))
        start += tensor.numel()


def _mask_in_force(module: Module, name: str) -> Tensor:
    """``module.<name>_mask``, or all ones when ``name`` is not pruned yet."""
    mask = getattr(module, name + "_mask", None)
    return ones_like(getattr(module, name)) if mask is None else mask


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0; returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and drop its hook; returns ``module``."""
    for key, hook in _pruning_hooks(module, name):
        hook.remove(module)
        del module._forward_pre_hooks[key]
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any module below it has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for sub in module.modules() for hook in sub._forward_pre_hooks.values())
