"""``torch.cuda.random``: seeding and the states of the CUDA generators (``manual_seed``, ``get_rng_state``, ...).

A CUDA generator is a seed and an offset per device, kept by ``ember._cuda_runtime.generators`` (below the tensor
layer, whose sampling ops draw from it); ``ember.Generator("cuda")`` is ``ember.tensor.random.CudaGenerator``.
Seeding needs no GPU and does not initialise CUDA, as in torch; a state is a uint8 tensor of 16 bytes (seed,
offset), like torch's.
"""
from __future__ import annotations

from typing import Any

from .._cuda_runtime.availability import device_count
from .._cuda_runtime.generators import CudaGeneratorState, capture_states, generator_of, generator_state, \
    initial_seed, manual_seed, manual_seed_all, restore_states, seed, seed_all
from ..tensor.random import CudaGenerator, cuda_state_tensor, restore_cuda_state
from ..tensor.tensor import Tensor


def get_rng_state(device: Any = "cuda") -> Tensor:
    """The device generator's state as a uint8 tensor of 16 bytes (seed, offset)."""
    return cuda_state_tensor(generator_of(device))


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore a state captured by ``get_rng_state``."""
    restore_cuda_state(generator_of(device), new_state)


def get_rng_state_all() -> list[Tensor]:
    """The states of all devices' generators."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: Any) -> None:
    """Restore the states of all devices' generators."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


__all__ = [
    "CudaGeneratorState", "CudaGenerator", "generator_state", "capture_states", "restore_states", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all",
    "set_rng_state_all",
]
