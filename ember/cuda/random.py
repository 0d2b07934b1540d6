"""The CUDA generators' host state (``torch.cuda.manual_seed``, ``seed``, ``get_rng_state``, ...).

A device generator is a seed plus an offset: the Philox kernels in ``ember.cuda_kernels.random`` turn
(seed, offset, element index) into random bits, and every sampling call takes the next offset
(``next_seed_offset``), so consecutive calls differ and reseeding replays the same stream. Seeding needs no
GPU and does not initialise CUDA, as in torch; the state is 16 bytes (seed, offset), like torch's.
"""
from __future__ import annotations

import os
import struct
import threading
from typing import Any

from ..tensor.random import DEFAULT_SEED, _seed_value

_STATE = struct.Struct("<QQ")


class CudaGeneratorState:
    """Seed and offset of one device's generator."""

    __slots__ = ("seed", "offset", "_lock")

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.seed, self.offset = seed, 0
        self._lock = threading.Lock()

    def manual_seed(self, seed: Any) -> None:
        """Restart from ``seed`` (wrapped to unsigned 64 bits as torch does) at offset 0."""
        with self._lock:
            self.seed, self.offset = _seed_value(seed), 0

    def next_seed_offset(self, increment: int = 1) -> tuple[int, int]:
        """The (seed, offset) a sampling call uses; the offset advances by ``increment`` for the next call."""
        with self._lock:
            taken = self.offset
            self.offset = (self.offset + increment) & 0xFFFF_FFFF_FFFF_FFFF
            return self.seed, taken


_states: dict[int, CudaGeneratorState] = {}
_states_lock = threading.Lock()


def generator_state(device_index: int = 0) -> CudaGeneratorState:
    """The generator state of one device (created on first use from the default seed)."""
    found = _states.get(device_index)
    if found is None:
        with _states_lock:
            found = _states.setdefault(device_index, CudaGeneratorState())
    return found


def _index(device: Any) -> int:
    from ._state import _device_index, is_available

    if device is None and not is_available():
        return 0  # seeding without CUDA is allowed and does nothing visible, as in torch
    return _device_index(device)


def manual_seed(seed: Any) -> None:
    """Seed the current device's generator."""
    generator_state(_index(None)).manual_seed(seed)


def manual_seed_all(seed: Any) -> None:
    """Seed the generators of all devices."""
    from ._state import device_count

    for index in range(max(device_count(), 1)):
        generator_state(index).manual_seed(seed)


def seed() -> None:
    """Seed the current device's generator from OS entropy."""
    manual_seed(int.from_bytes(os.urandom(8), "little"))


def seed_all() -> None:
    """Seed every device's generator from (one draw of) OS entropy."""
    manual_seed_all(int.from_bytes(os.urandom(8), "little"))


def initial_seed() -> int:
    """The current device generator's seed."""
    return generator_state(_index(None)).seed


def get_rng_state(device: Any = "cuda") -> Any:
    """The device generator's state as a uint8 tensor of 16 bytes (seed, offset)."""
    import numpy as np

    from ..tensor.tensor import Tensor

    state = generator_state(_index(device))
    return Tensor._make(np.frombuffer(_STATE.pack(state.seed, state.offset), dtype=np.uint8).copy())


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore a state captured by ``get_rng_state``."""
    import numpy as np

    raw = np.ascontiguousarray(new_state._array if hasattr(new_state, "_array") else new_state).tobytes()
    if len(raw) != _STATE.size:
        raise RuntimeError(f"Expected a CUDA generator state of {_STATE.size} bytes but found {len(raw)}")
    state = generator_state(_index(device))
    with state._lock:
        state.seed, state.offset = _STATE.unpack(raw)


def get_rng_state_all() -> list[Any]:
    """The states of all devices' generators."""
    from ._state import device_count

    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: Any) -> None:
    """Restore the states of all devices' generators."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


__all__ = [
    "CudaGeneratorState", "generator_state", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
]
