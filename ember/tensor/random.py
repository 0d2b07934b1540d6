"""Random-number generators: ``ember.Generator`` and the default-generator functions of ``torch.random``.

A Generator wraps NumPy's ``np.random.Generator(np.random.PCG64(seed))``. Seeding,
state capture and forking behave like torch's (same seed range and wrapping,
same never-seeded initial seed, states are uint8 tensors), but the streams are
NumPy's: ``ember.manual_seed(0); ember.rand(3)`` is reproducible from run to run
and does not match ``torch.manual_seed(0); torch.rand(3)``.

CUDA tensors are sampled on their device by the CUDA generators (Philox: a seed
and an offset per device, kept by ``ember._cuda_runtime.generators``;
``Generator("cuda")`` is a ``CudaGenerator``, with a state of its own). As in
torch, ``manual_seed`` and ``seed`` seed them too and ``fork_rng`` restores
them; none of this imports numba-cuda or initialises CUDA.
"""
from __future__ import annotations

import contextlib
import os
import struct
from typing import Any, Iterator

import numpy as np

from .._cuda_runtime import generators as _cuda_generators
from .._seeds import DEFAULT_SEED, seed_value
from .device import as_device, device as _device
from .tensor import Tensor
from ._dispatch import ascontiguous
from .arguments import tensor_args

# PCG64 state (128 bits), increment (128 bits), has_uint32, uinteger, initial seed.
_STATE_LAYOUT = struct.Struct("<16s16sIIQ")


class Generator:
    """``torch.Generator``: an independent random stream that sampling ops take as ``generator=``.

    Backed by NumPy's PCG64, so values differ from torch's Mersenne Twister for
    the same seed; everything else (seeding rules, state round trips) follows torch.
    ``Generator("cuda")`` makes a ``CudaGenerator``.
    """

    def __new__(cls, device: Any = "cpu") -> "Generator":
        if cls is Generator and as_device(device).type == "cuda":
            return super().__new__(CudaGenerator)
        return super().__new__(cls)

    def __init__(self, device: Any = "cpu") -> None:
        self.device = as_device(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: Any) -> "Generator":
        """Restart the stream from ``seed`` (negative seeds wrap to unsigned 64 bits)."""
        self._initial_seed = seed_value(seed)
        self._np = np.random.Generator(np.random.PCG64(self._initial_seed))
        return self

    def seed(self) -> int:
        """Reseed from OS entropy and return the new seed."""
        new_seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(new_seed)
        return new_seed

    def initial_seed(self) -> int:
        """The seed the stream was last started from."""
        return self._initial_seed

    def get_state(self) -> Tensor:
        """A uint8 tensor holding the full state; ``set_state`` of it replays the stream from here."""
        st = self._np.bit_generator.state
        packed = _STATE_LAYOUT.pack(
            st["state"]["state"].to_bytes(16, "little"),
            st["state"]["inc"].to_bytes(16, "little"),
            st["has_uint32"],
            st["uinteger"],
            self._initial_seed,
        )
        return Tensor._make(np.frombuffer(packed, dtype=np.uint8).copy())

    def set_state(self, new_state: Tensor) -> "Generator":
        """Restore a state captured by ``get_state``."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._array.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = ascontiguous(new_state._array).reshape(-1).tobytes()
        if len(raw) != _STATE_LAYOUT.size:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_LAYOUT.size} but found the input "
                f"RNG state size to be {len(raw)}"
            )
        state, inc, has_uint32, uinteger, initial_seed = _STATE_LAYOUT.unpack(raw)
        bit_generator = np.random.PCG64()
        bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(state, "little"), "inc": int.from_bytes(inc, "little")},
            "has_uint32": has_uint32,
            "uinteger": uinteger,
        }
        self._np = np.random.Generator(bit_generator)
        self._initial_seed = initial_seed
        return self

    def __reduce__(self):
        return (_rebuild_generator, (str(self.device), self.get_state()))


def _rebuild_generator(device: str, state: Tensor) -> Generator:
    return Generator(device).set_state(state)


# A CUDA generator's state: seed and offset, 16 bytes like torch's.
_CUDA_STATE_LAYOUT = struct.Struct("<QQ")


def cuda_state_tensor(state: _cuda_generators.CudaGeneratorState) -> Tensor:
    """A CUDA generator's (seed, offset) as a uint8 CPU tensor of 16 bytes."""
    return Tensor._make(np.frombuffer(_CUDA_STATE_LAYOUT.pack(state.seed, state.offset), dtype=np.uint8).copy())


def restore_cuda_state(state: _cuda_generators.CudaGeneratorState, new_state: Any) -> None:
    """Put back in ``state`` the (seed, offset) of a 16-byte state tensor or array (``cuda_state_tensor``'s)."""
    raw = np.ascontiguousarray(new_state._array if hasattr(new_state, "_array") else new_state).tobytes()
    if len(raw) != _CUDA_STATE_LAYOUT.size:
        raise RuntimeError(f"Expected a CUDA generator state of {_CUDA_STATE_LAYOUT.size} bytes but found {len(raw)}")
    state.restore(*_CUDA_STATE_LAYOUT.unpack(raw))


class CudaGenerator(Generator):
    """``torch.Generator(device="cuda")``: an independent Philox stream for CUDA sampling ops."""

    def __init__(self, device: Any = "cuda") -> None:
        self._state = _cuda_generators.CudaGeneratorState()
        super().__init__(device)
        self._state.device_index = self.device.index

    def manual_seed(self, seed: Any) -> "CudaGenerator":
        self._state.manual_seed(seed)
        return self

    def initial_seed(self) -> int:
        return self._state.seed

    def get_state(self) -> Tensor:
        """A uint8 tensor of 16 bytes (seed, offset), as ``ember.cuda.get_rng_state``."""
        return cuda_state_tensor(self._state)

    def set_state(self, new_state: Any) -> "CudaGenerator":
        restore_cuda_state(self._state, new_state)
        return self

    def draws(self) -> Any:
        return self._state.draws()


default_generator = Generator()


def manual_seed(seed: Any) -> Generator:
    """Seed the default generator (anything ``int()`` accepts, as torch does) and every CUDA generator."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    _cuda_generators.manual_seed_all(seed)
    return default_generator


def seed() -> int:
    """Seed the default generator and every CUDA generator non-deterministically and return the seed."""
    new_seed = default_generator.seed()
    _cuda_generators.manual_seed_all(new_seed)
    return new_seed


def initial_seed() -> int:
    """The default generator's initial seed."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


@tensor_args
def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state."""
    default_generator.set_state(new_state)


def capture_rng_states(devices: Any = None) -> tuple[Tensor, Any]:
    """The default generator's state and the CUDA generators' (of ``devices``; None: all of them)."""
    return default_generator.get_state(), _cuda_generators.capture_states(devices)


def restore_rng_states(states: tuple[Tensor, Any]) -> None:
    """Put back what ``capture_rng_states`` took."""
    cpu_state, cuda_states = states
    default_generator.set_state(cpu_state)
    _cuda_generators.restore_states(cuda_states)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, device_type: Any = "cuda") -> Iterator[None]:
    """Run a block whose random draws do not advance the generators seen after it.

    The default generator and the CUDA generators of ``devices`` (None: every one, without initialising CUDA)
    are restored on exit; a ``device_type`` other than cuda restores the CPU generator only.
    """
    if not enabled:
        yield
        return
    if _device(device_type).type != "cuda":
        devices = ()
    saved = capture_rng_states(devices)
    try:
        yield
    finally:
        restore_rng_states(saved)


__all__ = [
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed",
    "get_rng_state", "set_rng_state", "fork_rng",
]
