"""The CUDA generators' host state: a seed and an offset per device (``torch.cuda.manual_seed``, ``seed``, ...).

A device generator is a seed plus an offset: the Philox kernels in ``ember.kernels.cuda.random`` turn
(seed, offset, element index) into random bits, and every sampling call takes the next offset
(``next_seed_offset``), so consecutive calls differ and reseeding replays the same stream. Seeding needs no
GPU and does not initialise CUDA, as in torch; the state is 16 bytes (seed, offset), like torch's.

``manual_seed_all`` (which ``ember.manual_seed`` calls) reseeds the generators that exist and sets the seed the
others will start from, so it never asks how many devices there are (that would import numba-cuda).
``ember.Generator("cuda")`` (``ember.tensor.random.CudaGenerator``) holds a state of its own.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from .._cuda_context import activate
from .._seeds import DEFAULT_SEED, seed_value
from .availability import is_available
from .gpus import _device_index


class CudaGeneratorState:
    """Seed and offset of the generator of device ``device_index``."""

    __slots__ = ("seed", "offset", "_lock", "device_index")

    def __init__(self, seed: int = DEFAULT_SEED, device_index: int = 0) -> None:
        self.seed, self.offset = seed, 0
        self._lock = threading.Lock()
        self.device_index = device_index

    def manual_seed(self, seed: Any) -> None:
        """Restart from ``seed`` (wrapped to unsigned 64 bits as torch does) at offset 0."""
        with self._lock:
            self.seed, self.offset = seed_value(seed), 0

    def next_seed_offset(self, increment: int = 1) -> tuple[int, int]:
        """The (seed, offset) a sampling call uses; the offset advances by ``increment`` for the next call."""
        with self._lock:
            taken = self.offset
            self.offset = (self.offset + increment) & 0xFFFF_FFFF_FFFF_FFFF
            return self.seed, taken

    def restore(self, seed: int, offset: int) -> None:
        with self._lock:
            self.seed, self.offset = seed, offset

    def draws(self) -> Any:
        """The device sampling functions drawing from this generator (imports the CUDA kernels); they allocate and
        launch on the generator's device."""
        from ..kernels.cuda.random import DeviceDraws  # the CUDA kernels load on first use (numba-cuda)

        activate(self.device_index)
        return DeviceDraws(self)


_states: dict[int, CudaGeneratorState] = {}
_states_lock = threading.Lock()
_start_seed = DEFAULT_SEED  # the seed of generators not created yet (set by manual_seed_all)


def generator_state(device_index: int = 0) -> CudaGeneratorState:
    """The generator state of one device (created on first use from the last ``manual_seed_all`` seed)."""
    found = _states.get(device_index)
    if found is None:
        with _states_lock:
            found = _states.setdefault(device_index, CudaGeneratorState(_start_seed, device_index))
    return found


def generator_of(device: Any) -> CudaGeneratorState:
    """The generator state of ``device`` (None: the current device; device 0 when CUDA cannot be used, where
    seeding is allowed and does nothing visible, as in torch)."""
    return generator_state(_index(device))


def _index(device: Any) -> int:
    if device is None and not is_available():
        return 0
    return _device_index(device)


def manual_seed(seed: Any) -> None:
    """Seed the current device's generator."""
    generator_of(None).manual_seed(seed)


def manual_seed_all(seed: Any) -> None:
    """Seed the generators of all devices, those not used yet included; initialises nothing."""
    global _start_seed
    value = seed_value(seed)
    with _states_lock:
        _start_seed = value
        for state in _states.values():
            state.manual_seed(value)


def seed() -> None:
    """Seed the current device's generator from OS entropy."""
    manual_seed(int.from_bytes(os.urandom(8), "little"))


def seed_all() -> None:
    """Seed every device's generator from (one draw of) OS entropy."""
    manual_seed_all(int.from_bytes(os.urandom(8), "little"))


def initial_seed() -> int:
    """The current device generator's seed."""
    return generator_of(None).seed


def capture_states(devices: Any = None) -> tuple[int | None, dict[int, tuple[int, int]]]:
    """A snapshot of the listed devices' generators; None: every generator, without touching CUDA."""
    indices = list(_states) if devices is None else [_index(d) for d in devices]
    saved = {i: (generator_state(i).seed, generator_state(i).offset) for i in indices}
    return (_start_seed if devices is None else None), saved


def restore_states(snapshot: tuple[int | None, dict[int, tuple[int, int]]]) -> None:
    """Put back a ``capture_states`` snapshot; after a snapshot of every generator, one created since then starts
    over from the seed of that time."""
    global _start_seed
    start, saved = snapshot
    with _states_lock:
        if start is not None:
            _start_seed = start
        for index, state in _states.items():
            if index in saved:
                state.restore(*saved[index])
            elif start is not None:
                state.restore(start, 0)


__all__ = ["CudaGeneratorState", "generator_state", "generator_of", "capture_states", "restore_states",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]
