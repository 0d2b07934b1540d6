"""``torch.nn.utils.parametrize``: make a module's tensor the output of a function of other tensors.

``register_parametrization(module, "weight", P)`` moves the stored tensor to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ...
when ``P.right_inverse`` returns several) and turns ``module.weight`` into a
property that computes ``P(original)`` on each access. The property lives on a
subclass made for this one module (``ParametrizedLinear``), so other instances
of the class are untouched; removing the last parametrization restores the
original class. State-dict keys and errors follow torch's.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from ...autograd import no_grad
from ...tensor.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the block, each parametrized tensor is computed once and reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_storage(target: Tensor, value: Tensor) -> None:
    """Make ``target`` hold ``value``'s data, keeping ``target``'s identity (torch's ``set_``)."""
    target.data = value
    target._version.value += 1


def _check_result(value: Any, reference: Tensor, what: str) -> None:
    """Registration may change neither dtype nor shape unless ``unsafe``: check ``value`` against ``reference``."""
    if not isinstance(value, Tensor):
        raise ValueError(f"{what} must return a tensor. Got {type(value).__name__}.")
    if value.dtype != reference.dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, unless the "
                         f"`unsafe` flag is enabled.\nunparametrized dtype: {reference.dtype}\n"
                         f"parametrized dtype: {value.dtype}")
    if value.shape != reference.shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the tensor, unless the "
                         f"`unsafe` flag is enabled.\nunparametrized shape: {reference.shape}\n"
                         f"parametrized shape: {value.shape}")


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, holding the unconstrained ``original`` tensor(s)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new: Any = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with no_grad():
                _set_storage(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(part).__name__}.")
                part = part.detach()
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                else:
                    part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            _check_result(self(), original, "A parametrization")

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` by running the chain's right inverses (what ``module.weight = value`` does)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_storage(self.original, value)
                return
            if not isinstance(value, Sequence) or len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got {type(value).__name__}")
            for i, part in enumerate(value):
                _set_storage(getattr(self, f"original{i}"), part)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give ``module`` its own subclass, so properties added to it affect this instance only."""
    cls = module.__class__

    def getstate(self: Module) -> Any:
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See: "
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html")

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Compute ``module.<tensor_name>`` as ``parametrization(original)`` from now on (stacking on earlier ones)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            result = parametrization(current)
            _check_result(result, current, "A parametrization")
            if hasattr(parametrization, "right_inverse"):
                try:
                    back = parametrization.right_inverse(result)
                except NotImplementedError:
                    pass
                else:
                    _check_result(back, current, "parametrization.right_inverse")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization``: store the current value (or the original) as a plain tensor again."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                _set_storage(original, getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name)
        requires_grad = any(getattr(chain, f"original{i}").requires_grad for i in range(chain.ntensors))
        original = Parameter(value.detach(), requires_grad) if requires_grad else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "ParametrizationList"]
