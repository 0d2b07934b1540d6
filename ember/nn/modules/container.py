"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""
from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from ...tensor.tensor import Tensor
from ..parameter import Parameter
from ._fusion import fused_pair
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _position(index: Any, length: int) -> int:
    """``index`` wrapped into ``range(length)``, or torch's IndexError."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


class _Indexed(Module):
    """Children stored under the keys "0", "1", ...; the shared list behaviour of Sequential and ModuleList."""

    def _values(self) -> list:
        return list(self._modules.values())

    def _reset(self, values: Iterable) -> None:
        self._modules.clear()
        for i, value in enumerate(values):
            self.add_module(str(i), value)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(self._values()[index])
        return self._values()[_position(index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_position(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        values = self._values()
        if isinstance(index, slice):
            del values[index]
        else:
            del values[_position(index, len(values))]
        self._reset(values)

    def append(self, module: Module) -> "_Indexed":
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "_Indexed":
        """Append every module of ``modules``."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        values = self._values()
        values.insert(index, module)
        self._reset(values)

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``."""
        module = self[index]
        del self[index]
        return module

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]


class Sequential(_Indexed):
    """Modules applied one after another: ``Sequential(a, b)(x) == b(a(x))``; also takes an OrderedDict."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return super().__getitem__(index)

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_position(index, len(self))]
        self.add_module(key, module)

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def forward(self, input: Any) -> Any:
        """Each module on the result of the one before; a ``Linear`` and the activation after it may run as one
        fused op (``_fusion.fused_pair``), with the same result."""
        modules = tuple(self._modules.values())
        i = 0
        while i < len(modules):
            fused = fused_pair(modules[i], modules[i + 1], input) if i + 1 < len(modules) else None
            if fused is None:
                input = modules[i](input)
                i += 1
            else:
                input = fused
                i += 2
        return input


class ModuleList(_Indexed):
    """A list of modules whose parameters the parent module sees."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        """Like torch: runs of children that print the same are shown once, as ``(i-j): n x Child(...)``."""
        if not len(self):
            return self._get_name() + "()"
        lines, start = [], 0
        for text, run in itertools.groupby(repr(m) for m in self):
            count = len(list(run))
            label = f"({start}): " if count == 1 else f"({start}-{start + count - 1}): {count} x "
            lines.append(_addindent(label + text, 2))
            start += count
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules whose parameters the parent module sees (insertion-ordered)."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        """(name, module) pairs."""
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        """The modules."""
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or from (name, module) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for j, pair in enumerate(pairs):
            if not isinstance(modules, Mapping) and len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


def _as_parameter(value: Any) -> Any:
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


def _describe(key: Any, value: Any, type_name: bool) -> str:
    """One line of torch's ParameterList/ParameterDict repr (the list prints the dtype, the dict the type name)."""
    if isinstance(value, Tensor):
        kind = "Parameter containing" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(n) for n in value.shape)
        what = value.type() if type_name else f"torch.{value.dtype.name}"
        return f"  ({key}): {kind}: [{what} of size {size}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters (tensors are wrapped as Parameters) that the parent module sees."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ParameterList([self[i] for i in range(self._size)[index]])
        return getattr(self, str(_position(index, self._size)))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, str(_position(index, self._size)), _as_parameter(value))

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, values: Iterable[Any]) -> "ParameterList":
        return self.extend(values)

    def append(self, value: Any) -> "ParameterList":
        """Add ``value`` (a tensor becomes a Parameter) at the end."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        """Append every value."""
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_describe(i, v, False) for i, v in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters (tensors are wrapped as Parameters) that the parent module sees."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._keys.keys()

    def items(self) -> list[tuple[str, Any]]:
        """(name, parameter) pairs."""
        return [(k, self[k]) for k in self._keys]

    def values(self) -> list[Any]:
        """The parameters."""
        return [self[k] for k in self._keys]

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``, or ``default``."""
        return self[key] if key in self._keys else default

    def pop(self, key: str) -> Any:
        """Remove and return the parameter under ``key``."""
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        """Remove every parameter."""
        for key in list(self._keys):
            del self[key]

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Add or replace parameters from a mapping or from (name, value) pairs."""
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_describe(k, v, True) for k, v in self.items())
