"""What the API sweep calls: every public callable of ember's torch-like namespaces and every public Tensor method
and operator, found by looking (so new API is swept without anyone listing it), less a deny-list of the callables
a random call must not make."""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import ember
from sweep_args import calls, params_of

# label -> attribute path below the top namespace ("" is the top namespace itself)
NAMESPACES = {"ember": "", "F": "nn.functional", "linalg": "linalg", "special": "special", "fft": "fft"}

# Tensor's dunder operators and conversions; its other dunders are object protocol (construction, pickling, repr)
OPERATORS = frozenset(
    f"__{prefix}{name}__" for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                                       "or", "xor", "lshift", "rshift") for prefix in ("", "r", "i")
) | frozenset(f"__{name}__" for name in ("neg", "pos", "abs", "invert", "eq", "ne", "lt", "le", "gt", "ge",
                                         "getitem", "setitem", "len", "bool", "int", "float", "index", "contains",
                                         "array"))

# Callables a random call must not make, with why. Classes are never swept (set_grad_enabled, no_grad,
# enable_grad and inference_mode are classes in ember, as in torch), nor namespaces outside NAMESPACES
# (ember.autograd's anomaly switches, ember.multiprocessing, ember.distributed, ember.utils.data's DataLoader,
# ember.cuda's synchronisation).
DENIED = {
    # process-global state: a random value here would change what every later call in the sweep sees
    "ember.manual_seed": "reseeds the global generator",
    "ember.seed": "reseeds the global generator from the OS",
    "ember.set_rng_state": "replaces the global generator's state",
    "ember.set_default_dtype": "changes the dtype of every later float tensor",
    "ember.set_num_threads": "changes the kernels' thread count",
    "ember.set_printoptions": "changes how every tensor prints",
    # I/O: files named by a random string
    "ember.save": "writes a file",
    "ember.load": "reads a file",
    # devices: a GPU context or page-locked memory, not a CPU call
    "Tensor.cuda": "moves to the GPU (initialises CUDA)",
    "Tensor.pin_memory": "page-locks host memory through the CUDA driver",
}
# Any later process-global switch of a module namespace is denied by its name: set_* and use_* functions
GLOBAL_SETTER_PREFIXES = ("set_", "use_")


@dataclass(frozen=True)
class Target:
    """One swept callable: ``call(lib, *args, **kwargs)`` runs it in ember or torch (a method on its first argument);
    ``cases`` draws its calls; ``in_torch`` says whether torch has the same name to compare with."""
    name: str
    call: Callable
    cases: Any
    in_torch: bool


def namespace(lib_top: Any, path: str) -> Any:
    """The namespace ``path`` below a library's top module, or None where the library lacks it."""
    target = lib_top
    for part in filter(None, path.split(".")):
        target = getattr(target, part, None)
    return target


def _call_function(path: str, attr: str, lib, *args, **kwargs):
    return getattr(namespace(lib.t, path), attr)(*args, **kwargs)


def _call_method(attr: str, lib, tensor, *args, **kwargs):
    return getattr(tensor, attr)(*args, **kwargs)


def _functions(space: Any) -> list[str]:
    """Public functions of a module defined in ember (not classes, modules, dtypes, or names re-exported from
    typing and the like)."""
    names = []
    for name in dir(space):
        value = getattr(space, name)
        if name.startswith("_") or not callable(value) or inspect.isclass(value) or isinstance(value, types.ModuleType):
            continue
        if (getattr(value, "__module__", None) or "").startswith("ember"):
            names.append(name)
    return names


def _methods() -> list[str]:
    return [name for name in dir(ember.Tensor)
            if (not name.startswith("_") or name in OPERATORS) and callable(getattr(ember.Tensor, name))]


def public_callables() -> list[str]:
    """Every public callable the sweep considers, as "label.name" (denied ones included)."""
    found = [f"{label}.{name}" for label, path in NAMESPACES.items()
             if (space := namespace(ember, path)) is not None for name in _functions(space)]
    return found + [f"Tensor.{name}" for name in _methods()]


def deny_reason(name: str) -> str | None:
    label, attr = name.split(".", 1)
    if name in DENIED:
        return DENIED[name]
    if label != "Tensor" and attr.startswith(GLOBAL_SETTER_PREFIXES):
        return "a process-global setter (by name)"
    return None


def _signature_source(label: str, attr: str) -> Callable:
    """The function whose signature tells how to call ``label.attr``: an in-place method that only forwards
    ``*args, **kwargs`` takes what its out-of-place twin takes."""
    space = ember.Tensor if label == "Tensor" else namespace(ember, NAMESPACES[label])
    twin = attr[:-1]
    if label == "Tensor" and attr.endswith("_") and hasattr(space, twin):
        forwarded = [p.kind for p in inspect.signature(getattr(space, attr)).parameters.values()][1:]
        if forwarded == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
            return getattr(space, twin)
    return getattr(space, attr)


def targets(torch: Any) -> tuple[list[Target], dict[str, str]]:
    """The swept callables, and the denied ones with why."""
    swept, denied = [], {}
    for name in public_callables():
        reason = deny_reason(name)
        if reason:
            denied[name] = reason
            continue
        label, attr = name.split(".", 1)
        if label == "Tensor":
            call, theirs = partial(_call_method, attr), torch.Tensor
        else:
            call, theirs = partial(_call_function, NAMESPACES[label], attr), namespace(torch, NAMESPACES[label])
        method = label == "Tensor"
        cases = calls(name, params_of(_signature_source(label, attr), method), method)
        swept.append(Target(name, call, cases, theirs is not None and hasattr(theirs, attr)))
    return swept, denied
