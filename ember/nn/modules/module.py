"""``Module``: the base of every layer, with torch's registration, traversal, hooks and state_dict contract."""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from ...autograd.function import RemovableHandle
from ...autograd.grad_mode import no_grad
from ...tensor import dtypes
from ...tensor.device import as_device
from ...tensor.tensor import Tensor
from ..parameter import Buffer, Parameter, is_lazy
from ._backward_hooks import BackwardHooks

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _type_name(value: Any) -> str:
    """How torch names a value in assignment errors: a tensor by its legacy type ('torch.FloatTensor')."""
    return value.type() if isinstance(value, Tensor) else type(value).__name__


def _check_name(kind: str, name: Any, owner: "Module", table: dict) -> None:
    """torch's checks of a name being registered in ``table`` (an existing attribute of another kind is refused);
    modules are checked for a clash before the name's form, as in torch."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    clash = hasattr(owner, name) and name not in table
    if kind == "module" and clash:
        raise KeyError(f"attribute '{name}' already exists")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if clash:
        raise KeyError(f"attribute '{name}' already exists")


def _child_attribute(module: "Module", name: str) -> Any:
    """``getattr(module, name)``, or the AttributeError the ``get_*``/``set_submodule`` lookups raise."""
    if not hasattr(module, name):
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    return getattr(module, name)


class Module:
    """Base class of all layers: assign Parameters, buffers and submodules as attributes, write ``forward``."""

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        for name, make in _BOOKKEEPING.items():
            object.__setattr__(self, name, make())

    forward: Callable[..., Any]

    def _missing_forward(self, *args: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _missing_forward

    # -- registration ------------------------------------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` under ``name`` (``None`` registers an absent parameter, e.g. ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a non-learnable tensor (running statistics, masks); ``persistent=False`` keeps it out of state_dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = Tensor._make(tensor._array, requires_grad=tensor._requires_grad, version=tensor._version)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        _check_name("module", name, self, self._modules)
        self._modules[name] = module

    def register_module(self, name: str, module: "Module | None") -> None:
        """Alias of ``add_module`` (it calls ``add_module``, so an override of that applies here too)."""
        self.add_module(name, module)

    def __setattr__(self, name: str, value: Any) -> None:
        """torch's assignment rules: a Parameter or Module registers itself and drops ``name`` from the other kinds;
        a Buffer, or a tensor assigned to a buffer's name, (re-)registers a buffer. Re-assigning a registered name
        keeps its place in registration order; a value of another kind for it is a TypeError."""
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._unregister(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._unregister(name, d, self._parameters, self._buffers)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = value
        elif isinstance(value, Buffer) or name in d.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            persistent = value.persistent if isinstance(value, Buffer) \
                else name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def _unregister(self, name: str, *tables: dict) -> None:
        """Drop ``name`` from ``tables`` (and the non-persistent set) before it is registered as another kind."""
        for table in tables:
            table.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            found = d.get(table)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` ("" is the module itself); AttributeError names the failing step."""
        module = self
        for item in target.split(".") if target else []:
            module = _child_attribute(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target``: it replaces a submodule there or, unless ``strict``, is added to
        the existing parent; a non-module attribute at ``target`` is never replaced."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if hasattr(parent, name):
            if not isinstance(getattr(parent, name), Module):
                raise AttributeError(f"`{name}` is not an nn.Module")
        elif strict:
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        param = _child_attribute(self.get_submodule(path), name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        owner = self.get_submodule(path)
        buffer = _child_attribute(owner, name)
        if name not in owner._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buffer

    # -- traversal ---------------------------------------------------------------------------------------------------
    def _named_members(self, members: Callable[["Module"], Any], prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        seen: set[int] = set()
        for module_prefix, module in modules:
            for name, value in members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + "." + name if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, each shared parameter once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The learnable parameters (what an optimizer takes)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers (running statistics and the like)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """(name, module) of the direct children, each module once."""
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        """The direct child modules."""
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """(dotted name, module) for this module and all below it, depth first; modules already in ``memo`` (a set
        of modules, filled as they are visited) are skipped unless ``remove_duplicate`` is False."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + "." + name if prefix else name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        """This module and every module below it."""
        for _, module in self.named_modules():
            yield module

    # -- modes and in-place changes ----------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode here and in all children (dropout and batch norm behave differently)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Turn gradient recording on or off for every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients (to None by default, like torch)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                p.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every child (recursively) and then on this module; used for custom initialisation."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        """Replace every parameter's, gradient's and buffer's data with ``fn`` of it, keeping the objects."""
        for module in self.children():
            module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None or is_lazy(p):
                    continue
                p.data = fn(p)
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
            for name, b in self._buffers.items():
                if b is not None and not is_lazy(b):
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """Move/cast parameters and buffers: ``to(device)``, ``to(dtype)``, ``to(tensor)``, ``to(device, dtype)``,
        and ``memory_format=`` (applied to the 4-d and 5-d ones, as in torch).

        Only floating-point tensors change dtype, as in torch.
        """
        device, dtype = _parse_to(args, kwargs)
        memory_format = kwargs.pop("memory_format", None)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            if memory_format is not None and t.ndim in (4, 5):
                return t.to(device=device, dtype=dtype if t.dtype.is_floating_point else None,
                            memory_format=memory_format)
            return t.to(device=device, dtype=dtype if t.dtype.is_floating_point else None)

        return self._apply(convert)

    def _cast(self, dtype: dtypes.dtype) -> "Module":
        return self._apply(lambda t: t.to(dtype) if t.dtype.is_floating_point else t)

    def float(self) -> "Module":
        """Cast floating parameters and buffers to float32."""
        return self._cast(dtypes.float32)

    def double(self) -> "Module":
        """Cast floating parameters and buffers to float64."""
        return self._cast(dtypes.float64)

    def half(self) -> "Module":
        """Cast floating parameters and buffers to float16."""
        return self._cast(dtypes.float16)

    def bfloat16(self) -> "Module":
        """Cast floating parameters and buffers to bfloat16."""
        return self._cast(dtypes.bfloat16)

    def type(self, dst_type: Any) -> "Module":
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self) -> "Module":
        """Move parameters and buffers to the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Module":
        """Move parameters and buffers to a CUDA device."""
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def share_memory(self) -> "Module":
        """Move parameters, their gradients and buffers into shared memory in place (``Tensor.share_memory_``),
        so processes this module is sent to (or forked into) train the same weights (hogwild)."""
        return self._apply(lambda t: t.share_memory_())

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's forward in place, with ``ember.compile``'s arguments (``state_dict`` unchanged)."""
        COMPILE_IN_PLACE[0](self, *args, **kwargs)

    # -- calling -----------------------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._has_hooks():
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _has_hooks(self) -> bool:
        """Whether a forward or backward hook is registered on this module (a call must then run them)."""
        return bool(self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                    or self._backward_pre_hooks)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        for key, hook in list(self._forward_pre_hooks.items()):
            if key in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hooks = BackwardHooks(self) if (self._backward_hooks or self._backward_pre_hooks) else None
        if backward_hooks is not None:
            args = backward_hooks.wrap_inputs(args)
        try:
            output = self.forward(*args, **kwargs)
        except BaseException:
            for key, hook in list(self._forward_hooks.items()):
                if key in self._forward_hooks_always_called:
                    hook(self, args, kwargs, None) if key in self._forward_hooks_with_kwargs else \
                        hook(self, args, None)
            raise
        for key, hook in list(self._forward_hooks.items()):
            result = hook(self, args, kwargs, output) if key in self._forward_hooks_with_kwargs \
                else hook(self, args, output)
            if result is not None:
                output = result
        if backward_hooks is not None:
            output = backward_hooks.wrap_outputs(output)
        return output

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``(module, args, kwargs)``) runs before ``forward`` and may replace the inputs."""
        handle = _add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward`` and may replace the output."""
        handle = _add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients w.r.t. the module's tensor inputs are
        computed; it may return replacements for ``grad_input``."""
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients w.r.t. the module's outputs are computed; it may
        return replacements for ``grad_output``."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated in torch; ember gives it the full-backward-hook semantics."""
        return self.register_full_backward_hook(hook)

    # -- state dict --------------------------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def get_extra_state(self) -> Any:
        """Override (with ``set_extra_state``) to keep non-tensor state in ``state_dict`` under ``_extra_state``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name (detached, sharing storage with the module)."""
        if args:  # torch's deprecated positional form (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Copy this module's own entries from ``state_dict`` (subclasses override to convert old formats)."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local = {**{k: v for k, v in self._parameters.items() if v is not None},
                 **{k: v for k, v in persistent.items() if v is not None}}
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if is_lazy(target):
                target.materialize(value.shape, dtype=target.dtype)
            if tuple(value.shape) != tuple(target.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {target.shape}.")
                continue
            with no_grad():
                if local_metadata.get("assign", False):
                    self._assign(name, value, target)
                else:
                    target.copy_(value)
        extra_key = prefix + _EXTRA_STATE
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if head not in (self._modules if dot else local):
                        unexpected_keys.append(key)

    def _assign(self, name: str, value: Tensor, target: Tensor) -> None:
        if name in self._parameters:
            self._parameters[name] = Parameter(value.detach(), requires_grad=target.requires_grad)
        else:
            self._buffers[name] = value

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from ``state_dict``; with ``strict`` the keys must match exactly.

        Shape mismatches always raise; the error lists every problem, like torch's.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None) or {}
        state_dict = OrderedDict(state_dict)  # pre-hooks may rewrite it; the caller's dict stays as it was

        def load(module: Module, prefix: str) -> None:
            local_metadata = dict(metadata.get(prefix[:-1], {}))
            local_metadata["assign"] = assign
            module._load_from_state_dict(state_dict, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self, "")
        result = _IncompatibleKeys(missing, unexpected)
        for hook in self._load_state_dict_post_hooks.values():
            hook(self, result)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return result

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module's entries are collected."""
        return _add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        runs before this module copies its entries (it may rewrite ``state_dict`` in place)."""
        return _add_hook(self._load_state_dict_pre_hooks, hook, False)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict``."""
        return _add_hook(self._load_state_dict_post_hooks, hook, False)

    # -- printing ----------------------------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses when printed (layers show their configuration)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, module in self._modules.items():
            lines.append("(" + name + "): " + _addindent(repr(module), 2))
        if not lines:
            return self._get_name() + "()"
        if len(lines) == 1 and not self._modules:
            return self._get_name() + "(" + lines[0] + ")"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    # -- copying -----------------------------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return self.__dict__.copy()

    def __setstate__(self, state: dict) -> None:
        """Restore a pickled module; tables missing from an older pickle start empty, as in torch."""
        self.__dict__.update(state)
        for name, make in _BOOKKEEPING.items():
            if name not in self.__dict__:
                object.__setattr__(self, name, make())


_HOOK_IDS = itertools.count()
# Every module's registration tables and hook tables, by attribute name, with what makes an empty one.
_BOOKKEEPING: dict[str, Callable[[], Any]] = {
    "_parameters": dict, "_buffers": dict, "_non_persistent_buffers_set": set, "_modules": dict,
    "_forward_pre_hooks": OrderedDict, "_forward_pre_hooks_with_kwargs": dict, "_forward_hooks": OrderedDict,
    "_forward_hooks_with_kwargs": dict, "_forward_hooks_always_called": dict, "_backward_hooks": OrderedDict,
    "_backward_pre_hooks": OrderedDict, "_state_dict_hooks": OrderedDict, "_load_state_dict_pre_hooks": OrderedDict,
    "_load_state_dict_post_hooks": OrderedDict,
}
_EXTRA_STATE = "_extra_state"
# ``Module.compile``'s compiler: ``ember.compiler`` (above nn) puts its in-place compile here when imported.
COMPILE_IN_PLACE: list[Callable[..., None]] = []


def _add_hook(table: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    """Store ``hook`` under a fresh id; the handle's ``id`` also keys the side tables (with_kwargs, always_call)."""
    key = next(_HOOK_IDS)
    table[key] = hook
    if prepend:
        table.move_to_end(key, last=False)
    return RemovableHandle(table, key)


def _parse_to(args: tuple, kwargs: dict) -> tuple[Any, dtypes.dtype | None]:
    """torch's overloads of ``Module.to``: (device, dtype, non_blocking), (dtype), (tensor); ``memory_format``
    is left in ``kwargs`` for the caller."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, dtypes.dtype):
            dtype = arg
        elif isinstance(arg, bool):
            continue  # non_blocking
        elif arg is not None:
            device = arg
    if device is not None:
        device = as_device(device)
    if memory_format is not None:
        kwargs["memory_format"] = memory_format
    return device, dtype
