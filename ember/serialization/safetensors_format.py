"""``.safetensors`` files, through the safetensors package: what ``ember.save``/``ember.load`` call for them, and the
reader and writer ``ember.utils.safetensors`` is built on.

A safetensors file holds a flat dict of named, dense, contiguous tensors and an optional dict of str metadata; the
package parses and writes it (ember only hands it host memory and wraps what it returns). Its rules are
safetensors.torch's: tensors that share memory and non-contiguous tensors are refused on save, files are
device-less (tensors load on the CPU, then go where ``map_location``/``device`` says). The package is an optional
extra, imported at first use, so ember imports without it.

Copies: saving hands the package each CPU tensor's own memory, and it builds the whole file in memory
(``serialize``) before it is written, atomically for a path; CUDA tensors are copied to the host first. Loading a
path: the package copies each tensor's bytes out of its memory map into a fresh NumPy array, which becomes the
tensor's storage as it is. Loading bytes: the package copies each tensor into a bytearray, which the tensor views;
a file object is read into bytes first (one more copy).
"""
from __future__ import annotations

import os
from types import ModuleType
from typing import Any, Mapping

import numpy as np

from ..tensor import dtypes
from ..tensor.host_views import root_array
from ..tensor.tensor import Tensor
from .atomic import write_atomic
from .files import CorruptFile, FileLike, is_path
from .placement import Placement, placement, restore

MISSING_PACKAGE = "ember: .safetensors files need the safetensors package: pip install 'ember[safetensors]'"

# safetensors' dtype codes for the ember dtypes (every ember dtype has one; the package takes ember's names on save)
DTYPES = {"BOOL": dtypes.bool, "U8": dtypes.uint8, "I8": dtypes.int8, "I16": dtypes.int16, "I32": dtypes.int32,
          "I64": dtypes.int64, "F16": dtypes.float16, "F32": dtypes.float32, "F64": dtypes.float64,
          "BF16": dtypes.bfloat16}

SHARED_MEMORY = (
    "Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading "
    "them again: {groups}.\nA potential way to correctly save your model is to use `save_model` "
    "(ember.utils.safetensors.save_model).\nMore information at "
    "https://huggingface.co/docs/safetensors/torch_shared_tensors"
)

NON_CONTIGUOUS = (
    "You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means you are trying "
    "to save tensors which are reference of each other in which case it's recommended to save only the full "
    "tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to pack it before saving."
)


def package() -> ModuleType:
    """The safetensors package, imported on first use; an ImportError naming ember's extra when it is absent."""
    try:
        import safetensors
    except ImportError as e:
        raise ImportError(MISSING_PACKAGE) from e
    return safetensors


# ---- memory sharing (safetensors.torch's rules, on ember's storages) ---------------------------------------------

def _storage(t: Tensor) -> tuple[str, int, int]:
    """(device, first byte, size in bytes) of the whole buffer ``t`` views."""
    a = t._array
    if t.is_cuda:
        return str(t.device), t.data_ptr() - t.storage_offset() * a.itemsize, a.buffer.size * a.itemsize
    root = root_array(a)
    return "cpu", root.__array_interface__["data"][0], root.nbytes


def _span(t: Tensor) -> tuple[int, int]:
    """The first byte ``t`` reaches and one past its last."""
    item, start = t.element_size(), t.data_ptr()
    low = sum(min(0, (n - 1) * s) for n, s in zip(t.shape, t.stride())) * item
    high = sum(max(0, (n - 1) * s) for n, s in zip(t.shape, t.stride())) * item
    return start + low, start + high + item


def shared_groups(tensors: Mapping[str, Tensor]) -> list[list[str]]:
    """Names whose tensors overlap in memory, grouped (each group sorted; singletons included), as
    safetensors.torch finds them: by buffer, then by overlapping byte ranges. Empty tensors (and values that are
    not tensors) share nothing."""
    by_storage: dict[tuple, list[str]] = {}
    for name, t in tensors.items():
        if isinstance(t, Tensor) and t.numel():
            by_storage.setdefault(_storage(t), []).append(name)
    groups = []
    for names in by_storage.values():
        areas = sorted((*_span(tensors[n]), n) for n in names)
        current, stop = [areas[0][2]], areas[0][1]
        for start, end, name in areas[1:]:
            if start >= stop:
                groups.append(sorted(current))
                current = []
            current.append(name)
            stop = max(stop, end)
        groups.append(sorted(current))
    return sorted(groups)


def covers_storage(t: Tensor) -> bool:
    """Whether ``t`` is its whole buffer (the one name of a shared group that can be saved in its place)."""
    _, first, nbytes = _storage(t)
    return t.data_ptr() == first and t.numel() * t.element_size() == nbytes


# ---- saving ------------------------------------------------------------------------------------------------------

def _check(tensors: Any, wrong_type: type[Exception]) -> None:
    """safetensors.torch's checks before saving, in its order: a dict of str to tensors, no shared memory."""
    if not isinstance(tensors, dict):
        raise wrong_type(f"Expected a dict of [str, ember.Tensor] but received {type(tensors)}")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors names tensors by str, but a key is {type(name).__name__} {name!r}")
        if not isinstance(t, Tensor):
            raise wrong_type(f"Key `{name}` is invalid, expected ember.Tensor but received {type(t)}")
    failing = [g for g in shared_groups(tensors) if len(g) > 1]
    if failing:
        raise RuntimeError(SHARED_MEMORY.format(groups=failing))


def to_bytes(tensors: Any, metadata: dict[str, str] | None = None, wrong_type: type[Exception] = ValueError) -> bytes:
    """The safetensors file of ``tensors`` (a dict of str to contiguous tensors) and ``metadata``.

    ``wrong_type`` is the exception for a value that is not a dict of tensors: ValueError as safetensors.torch
    raises it, TypeError for ``ember.save``.
    """
    _check(tensors, wrong_type)
    st = package()
    specs, keep = {}, []  # keep: the host arrays whose addresses the specs hold, alive until serialize returns
    for name, t in tensors.items():
        if t.numel() and not t.is_contiguous():  # torch counts empty tensors contiguous; ember's strides may not
            raise ValueError(NON_CONTIGUOUS.format(name=name))
        a = t.detach().cpu().numpy()  # a CPU tensor's own array; a CUDA tensor's elements copied to the host
        a = np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # the file is little-endian: no copy here
        keep.append(a)
        specs[name] = st.TensorSpec(dtype=t.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
    return st.serialize(specs, metadata=metadata)


def write(tensors: Any, f: FileLike, metadata: dict[str, str] | None = None,
          wrong_type: type[Exception] = ValueError) -> None:
    """Write the file to a path (atomically: a failed save leaves the previous file) or a binary file object."""
    data = to_bytes(tensors, metadata, wrong_type)
    if is_path(f):
        write_atomic(f, lambda out: out.write(data))
        return
    if not callable(getattr(f, "write", None)):
        raise TypeError(f"f must be a path or a binary file object with write(), got {type(f).__name__}")
    f.write(data)


def save_state(obj: Any, f: FileLike, metadata: dict[str, str] | None = None) -> None:
    """``ember.save`` of a ``.safetensors`` file: ``obj`` must be a dict of str to tensors (a state_dict);
    anything else is a TypeError naming what was found."""
    write(obj, f, metadata, TypeError)


# ---- loading -----------------------------------------------------------------------------------------------------

def ember_dtype(code: str, name: str) -> dtypes.dtype:
    """The ember dtype of a safetensors dtype code; a TypeError naming the tensor for codes ember cannot hold."""
    found = DTYPES.get(code)
    if found is not None:
        return found
    raise TypeError(f"cannot load tensor {name!r} of safetensors dtype {code}: ember has no dtype for it (ember's "
                    f"are {', '.join(DTYPES)})")


def _plain_key(key: Any, shape: list[int]) -> tuple | None:
    """``key`` as non-negative ints and forward slices, which the package reads without loading the whole tensor;
    None for every other key (None, masks, index lists, tensors, steps below 1, out-of-range ints, empty results):
    those index the whole tensor with ember's (torch's) rules and errors."""
    parts = key if isinstance(key, tuple) else (key,)
    plain = all(p is Ellipsis or isinstance(p, slice) or (isinstance(p, (int, np.integer)) and
                                                            not isinstance(p, (bool, np.bool_))) for p in parts)
    ellipses = sum(p is Ellipsis for p in parts)
    if not plain or ellipses > 1 or len(parts) - ellipses > len(shape):
        return None
    if ellipses:
        at = next(i for i, p in enumerate(parts) if p is Ellipsis)
        parts = parts[:at] + (slice(None),) * (len(shape) - len(parts) + 1) + parts[at + 1:]
    out = []
    for p, n in zip(parts, shape):
        if isinstance(p, slice):
            if not (p.step is None or (isinstance(p.step, (int, np.integer)) and p.step >= 1)):
                return None
            start, stop, step = p.indices(n)
            if stop <= start:
                return None
            out.append(slice(start, stop, step))
        else:
            i = int(p) + n if p < 0 else int(p)
            if not 0 <= i < n:
                return None
            out.append(i)
    return tuple(out)


class SafeSlice:
    """One tensor of an open file, read in part: ``get_shape``, ``get_dtype`` and indexing, as safetensors'
    ``PySafeSlice`` for torch (ints, slices and ``...`` read only the bytes they select)."""

    def __init__(self, raw: Any, name: str, place: Placement) -> None:
        self._raw, self._name, self._place = raw, name, place

    def get_shape(self) -> list[int]:
        return self._raw.get_shape()

    def get_dtype(self) -> str:
        """The safetensors dtype code ("F32", ...)."""
        return self._raw.get_dtype()

    def __getitem__(self, key: Any) -> Tensor:
        ember_dtype(self._raw.get_dtype(), self._name)
        plain = _plain_key(key, self._raw.get_shape())
        if plain is None:
            return self._place(Tensor._make(self._raw[...])[key], "cpu")
        return self._place(Tensor._make(self._raw[plain]), "cpu")


class SafetensorsFile:
    """An open ``.safetensors`` file (the package's memory map): names, metadata, and tensors read on demand and
    placed by ``place``. A context manager; closing it releases the map (tensors already read stay valid)."""

    def __init__(self, filename: str | os.PathLike, place: Placement = restore, *, backend: str = "mmap") -> None:
        self._file = package().safe_open(os.fspath(filename), framework="numpy", backend=backend)
        self._place = place

    def __enter__(self) -> "SafetensorsFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._file.__exit__(*exc)

    def keys(self) -> list[str]:
        """The tensors' names, sorted."""
        return self._file.keys()

    def offset_keys(self) -> list[str]:
        """The tensors' names in file order."""
        return self._file.offset_keys()

    def metadata(self) -> dict[str, str] | None:
        return self._file.metadata()

    def get_tensor(self, name: str) -> Tensor:
        ember_dtype(self._file.get_slice(name).get_dtype(), name)
        return self._place(Tensor._make(self._file.get_tensor(name)), "cpu")

    def get_tensors(self) -> dict[str, Tensor]:
        """Every tensor, in file order (as safetensors.torch's ``load_file``)."""
        return {name: self.get_tensor(name) for name in self._file.offset_keys()}

    def get_slice(self, name: str) -> SafeSlice:
        return SafeSlice(self._file.get_slice(name), name, self._place)


def from_bytes(data: bytes, place: Placement = restore) -> dict[str, Tensor]:
    """The tensors of a whole file's bytes; each wraps the package's buffer for it, without a copy."""
    out = {}
    for name, entry in package().deserialize(data):
        dt = ember_dtype(entry["dtype"], name)
        array = np.frombuffer(entry["data"], dtype=dt.np.newbyteorder("<")).reshape(entry["shape"])
        out[name] = place(Tensor._make(array), "cpu")
    return out


def load_state(f: FileLike, map_location: Any = None) -> dict[str, Tensor]:
    """``ember.load`` of a ``.safetensors`` file: its tensors by name, placed by ``map_location`` as torch takes it
    (the file records no device: each tensor counts as saved from "cpu"). A damaged file raises ``CorruptFile``."""
    place = placement(map_location)
    error = package().SafetensorError
    try:
        if is_path(f):
            with SafetensorsFile(f, place) as file:
                return file.get_tensors()
        if not callable(getattr(f, "read", None)):
            raise TypeError(f"f must be a path or a binary file object with read(), got {type(f).__name__}")
        return from_bytes(f.read(), place)
    except error as e:
        raise CorruptFile(f"not a valid safetensors file: {e}") from None


__all__ = ["save_state", "load_state", "SafetensorsFile", "SafeSlice", "to_bytes", "from_bytes", "write",
           "shared_groups", "covers_storage", "ember_dtype", "package", "MISSING_PACKAGE"]
