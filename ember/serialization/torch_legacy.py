"""torch's checkpoint format before 1.6 (``torch.save(..., _use_new_zipfile_serialization=False)``).

The file is a run of pickles and raw bytes: the magic number, the protocol version (1001), a dict describing the
writer's machine (``little_endian``, the C type sizes), the object (storages as persistent ids, as in the zip
format, plus a view description that is None), the list of storage keys, then each storage in that order as an
8-byte element count followed by its bytes. The storages follow the object, so a reader first scans the object's
pickle for its storage ids without running anything (``_StorageIdScan``), reads the bytes, then unpickles.
"""
from __future__ import annotations

import io
import pickle
import struct
from typing import Any, BinaryIO, Callable

import numpy as np

from .files import Bounded, CorruptFile, read_exact
from .pickler import StorageTable
from .placement import Placement
from .storage_ids import storage_loader
from .torch_globals import StorageType, weights_only_globals
from .unpicklers import WeightsOnlyUnpickler, python2_names

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 4}}


def write_legacy(pickler: type, obj: Any, out: BinaryIO, protocol: int) -> None:
    """``obj`` in the pre-1.6 format; ``pickler`` is a class from ``pickler.pickler_class``."""
    for value in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(value, out, protocol=protocol)
    storages = StorageTable()
    pickler(out, protocol, storages, legacy=True).dump(obj)
    pickle.dump([ref.key for ref in storages.refs], out, protocol=protocol)
    for ref in storages.refs:
        out.write(struct.pack("<q", ref.numel))
        out.write(memoryview(ref.data))


class _Anything:
    """What every call, instance and container becomes in the scan: it takes items and state and ignores them."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def append(self, value: Any) -> None:
        pass

    def extend(self, values: Any) -> None:
        pass

    def add(self, value: Any) -> None:
        pass


class _StorageIdScan(pickle._Unpickler):
    """Reads one pickle to its end, keeping only its persistent ids: globals resolve to nothing but storage types,
    and no call, instantiation or state is carried out."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file: BinaryIO) -> None:
        super().__init__(file)
        self.ids: list[Any] = []

    def find_class(self, module: str, name: str) -> Any:
        module, name = python2_names(module, name, self.proto)
        found = weights_only_globals().get(f"{module}.{name}")
        return found if isinstance(found, StorageType) else _Anything()

    def persistent_load(self, pid: Any) -> Any:
        self.ids.append(pid)
        return _Anything()

    def _call(self) -> None:
        self.stack.pop()
        self.stack[-1] = _Anything()

    def _call_ex(self) -> None:
        del self.stack[-2:]
        self.stack[-1] = _Anything()

    def _build(self) -> None:
        self.stack.pop()

    for _code in (pickle.REDUCE, pickle.NEWOBJ):
        dispatch[_code[0]] = _call
    dispatch[pickle.NEWOBJ_EX[0]] = _call_ex
    dispatch[pickle.BUILD[0]] = _build
    dispatch[pickle.BYTEARRAY8[0]] = WeightsOnlyUnpickler.load_bytearray8
    del _code


def _int(fh: BinaryIO, little: bool) -> int:
    return struct.unpack("<q" if little else ">q", bytes(read_exact(fh, 8, "a storage's element count")))[0]


def read_legacy(fh: BinaryIO, place: Placement, unpickle: Callable[[BinaryIO, Callable[[Any], Any]], Any]) -> Any:
    """The object a pre-1.6 torch checkpoint holds; ``unpickle(file, persistent_load)`` runs the chosen
    unpickler (the header pickles hold plain values, read by the same unpickler)."""
    fh = Bounded(fh if fh.seekable() else io.BytesIO(fh.read()))

    def no_storages(pid: Any) -> Any:
        raise CorruptFile("corrupt legacy checkpoint: a storage id outside the object's pickle")

    if unpickle(fh, no_storages) != MAGIC_NUMBER:
        raise CorruptFile("not a torch checkpoint: a pickle without torch's magic number")
    if unpickle(fh, no_storages) != PROTOCOL_VERSION:
        raise CorruptFile("unsupported legacy checkpoint: not protocol version 1001")
    info = unpickle(fh, no_storages)
    if not isinstance(info, dict):
        raise CorruptFile("corrupt legacy checkpoint: bad system information")
    little = bool(info.get("little_endian", True))
    start = fh.tell()
    scan = _StorageIdScan(fh)
    scan.load()
    sizes: dict[str, int] = {}  # key -> bytes
    for pid in scan.ids:
        if isinstance(pid, tuple) and len(pid) >= 5 and isinstance(pid[1], StorageType) and isinstance(pid[2], str):
            sizes[pid[2]] = np.dtype(pid[1].dtype().np).itemsize
    keys = unpickle(fh, no_storages)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise CorruptFile("corrupt legacy checkpoint: bad storage key list")
    raw: dict[str, np.ndarray] = {}
    for key in keys:
        if key not in sizes:
            raise CorruptFile(f"corrupt legacy checkpoint: storage {key!r} is named by no tensor")
        count = _int(fh, little)
        if count < 0:
            raise CorruptFile(f"corrupt legacy checkpoint: storage {key!r} has {count} elements")
        raw[key] = read_exact(fh, count * sizes[key], f"storage {key!r}")

    def read(key: str, nbytes: int) -> np.ndarray:
        data = raw.get(key)
        if data is None or data.nbytes < nbytes:
            raise CorruptFile(f"corrupt legacy checkpoint: storage {key!r} is missing or short")
        return data[:nbytes]

    fh.seek(start)
    return unpickle(fh, storage_loader(read, place, big_endian=not little))
