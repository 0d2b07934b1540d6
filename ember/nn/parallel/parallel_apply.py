"""Running each replica on its own input, under its device (``torch.nn.parallel.parallel_apply``)."""
from __future__ import annotations

from typing import Any, Sequence

from ...cuda._state import device as device_context
from ...tensor.tensor import Tensor
from ..modules.module import Module
from ._devices import device_index

__all__ = ["get_a_var", "parallel_apply"]


def get_a_var(obj: Any) -> Tensor | None:
    """The first tensor found in ``obj`` (walking lists, tuples and dict items), or None."""
    if isinstance(obj, Tensor):
        return obj
    items = obj.items() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    for item in items:
        found = get_a_var(item)
        if found is not None:
            return found
    return None


def _check_length(modules: Sequence[Module], what: str, values: Sequence[Any]) -> None:
    if len(modules) != len(values):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of {what} "
                             f"{len(values)}")


def parallel_apply(modules: Sequence[Module], inputs: Sequence[Any], kwargs_tup: Sequence[dict] | None = None,
                   devices: Sequence[Any] | None = None) -> list[Any]:
    """``modules[i](*inputs[i], **kwargs_tup[i])`` with device ``devices[i]`` current (by default the device of a
    tensor in ``inputs[i]``); an input that is not a list or tuple is the single argument. ember runs the replicas
    one after another in the calling thread (kernel launches on a real GPU return before the work is done, so the
    devices still overlap); an exception is re-raised with a note naming the replica and its device."""
    _check_length(modules, "inputs", inputs)
    if kwargs_tup is None:
        kwargs_tup = [{}] * len(modules)
    _check_length(modules, "kwargs_tup", kwargs_tup)
    if devices is None:
        devices = [None] * len(modules)
    _check_length(modules, "devices", devices)
    outputs = []
    for i, (module, input, kwargs, device) in enumerate(zip(modules, inputs, kwargs_tup, devices)):
        if device is None:
            found = get_a_var(input)
            if found is None:
                raise RuntimeError(f"in replica {i}, no device was provided and no tensor input was found; device "
                                   "cannot be resolved")
            device = found.device
        index = device_index(device)
        args = input if isinstance(input, (list, tuple)) else (input,)
        try:
            with device_context(index):
                outputs.append(module(*args, **kwargs))
        except Exception as error:
            error.add_note(f"Caught {type(error).__name__} in replica {i} on device {index}.")
            raise
    return outputs
