"""The Optimizer base class: parameter groups, per-parameter state, state dicts and hooks.

It follows ``torch.optim.Optimizer``'s contract so training scripts and
checkpoints carry over: ``state_dict()`` keys state by the parameter's index in
group order and stores groups with index lists; ``load_state_dict`` maps them
back onto this optimizer's parameters in the same order.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Iterable

from ..autograd.function import RemovableHandle
from ..autograd.grad_mode import enable_grad
from ..tensor.tensor import Tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a hyper-parameter that every param group must give (torch's ``optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_step_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``."""
    return RemovableHandle.add(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return RemovableHandle.add(_global_step_post_hooks, hook)


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _with_step_hooks(step: Callable) -> Callable:
    """Wrap a subclass's ``step`` so pre/post hooks run once per call (not again for ``super().step()``)."""

    @functools.wraps(step)
    def wrapper(self: "Optimizer", *args: Any, **kwargs: Any) -> Any:
        self._opt_called = True
        if self._in_step or not (self._step_pre_hooks or self._step_post_hooks
                                 or _global_step_pre_hooks or _global_step_post_hooks):
            return step(self, *args, **kwargs)
        self._in_step = True
        try:
            for hook in chain(list(_global_step_pre_hooks.values()), list(self._step_pre_hooks.values())):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            out = step(self, *args, **kwargs)
            for hook in chain(list(self._step_post_hooks.values()), list(_global_step_post_hooks.values())):
                hook(self, args, kwargs)
            return out
        finally:
            self._in_step = False

    wrapper._ember_step_hooked = True
    return wrapper


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts
    (parameter groups, each with ``"params"`` and optional per-group options);
    ``defaults`` fills the options a group does not give.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_step_hooked", False):
            cls.step = _with_step_hooks(step)

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + _typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _init_hooks(self) -> None:
        self._step_pre_hooks: OrderedDict = OrderedDict()
        self._step_post_hooks: OrderedDict = OrderedDict()
        self._state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._state_dict_post_hooks: OrderedDict = OrderedDict()
        self._load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._in_step = False
        self._opt_called = False

    # -- pickling / printing ---------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_step_pre_hooks" not in self.__dict__:
            self._init_hooks()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- hooks -----------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None | (args, kwargs)`` before ``step``."""
        return RemovableHandle.add(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None`` after ``step``."""
        return RemovableHandle.add(self._step_post_hooks, hook)

    @staticmethod
    def _add_hook(table: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle.add(table, hook)
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict`` builds the dict."""
        return self._add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None | state_dict`` on the built dict."""
        return self._add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None | state_dict`` before loading."""
        return self._add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after loading."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, prepend)

    # -- state dict ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` (state tensors by reference)."""
        for hook in self._state_dict_pre_hooks.values():
            hook(self)
        index_of: dict[int, int] = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._state_dict_post_hooks.values():
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict from ``state_dict()``: parameters are matched by their order in the groups."""
        state_dict = state_dict.copy()
        for hook in self._load_state_dict_pre_hooks.values():
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast_state(param, value)
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._load_state_dict_post_hooks.values():
            hook(self)

    # -- gradients / stepping ---------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's ``.grad`` (or zero it in place with ``set_to_none=False``)."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss when given."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to optimize, e.g. when unfreezing layers."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        tensors, names = [], []
        for p in params:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an "
                "error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def run_closure(closure: Callable[[], Any] | None) -> Any:
    """The loss from re-evaluating the model (with grad mode on), or None without a closure."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
    """Loaded state, floating tensors cast to the parameter's dtype (``step`` counters left alone)."""
    if isinstance(value, Tensor):
        if key != "step" and param.is_floating_point() and value.is_floating_point():
            return value.to(param.dtype)
        return value
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value
