"""torch's ``map_location``: where each loaded tensor goes, given the device it was saved from."""
from __future__ import annotations

from typing import Any, Callable

from .. import cuda
from ..tensor.device import as_device, device
from ..tensor.tensor import Tensor

Placement = Callable[[Tensor, str], Tensor]


def restore(t: Tensor, saved: str) -> Tensor:
    """A loaded (host) tensor on the device it was saved from, torch's default."""
    if saved.startswith("cuda") and not cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but ember.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use ember.load with "
                           "map_location=ember.device('cpu') to map your storages to the CPU.")
    return t.to(saved)


def placement(map_location: Any) -> Placement:
    """A string, a device, a dict from saved to wanted device names, or a callable ``(tensor, saved) -> tensor``
    (returning None means "where it was saved"), as torch takes them."""
    if callable(map_location) and not isinstance(map_location, (str, device)):
        def call(t: Tensor, saved: str) -> Tensor:
            placed = map_location(t, saved)
            return restore(t, saved) if placed is None else placed
        return call
    if isinstance(map_location, dict):
        return lambda t, saved: restore(t, str(map_location.get(saved, saved)))
    if map_location is None:
        return restore
    if not isinstance(map_location, (str, device)) and type(map_location).__name__ == "device":
        map_location = str(map_location)  # a real torch.device in a script that uses both frameworks
    target = as_device(map_location)  # raises for devices this build cannot use
    return lambda t, saved: t.to(target)
