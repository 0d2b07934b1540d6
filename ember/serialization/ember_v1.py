"""Reading the files ember wrote before it wrote torch's format (ember file format version 1).

Such a file is a fixed preamble, a JSON header and raw tensor bytes::

    b"EMBERSV\\0" | version u32 | header length u64 | header crc32 u32 | header (UTF-8 JSON) | pad to 64
    | storage 0 bytes | pad to 64 | storage 1 bytes | ...

The header describes the saved object as a tree of tagged nodes (dicts, lists, tuples, numbers, strings, dtypes,
tensors), the tensors (dtype, shape, strides and offset into a storage) and the storages (byte offset, length,
crc32). Reading parses JSON and copies bytes: nothing is unpickled. ``ember.load`` recognises these files by their
first bytes, so checkpoints saved by earlier versions of ember keep loading.
"""
from __future__ import annotations

import base64
import collections
import json
import os
import struct
import zlib
from typing import Any, BinaryIO

import numpy as np

from ..nn.parameter import Parameter
from ..tensor import dtypes
from ..tensor.device import as_device, device as _device
from ..tensor.tensor import Size, Tensor
from .files import CorruptFile, check_available, read_exact
from .placement import Placement

MAGIC = b"EMBERSV\0"
VERSION = 1
_PREAMBLE = struct.Struct("<8sIQI")
_ALIGN = 64
# Dtypes a file may name: ember's, stored little-endian.
_NP_DTYPES = {d.name: np.dtype(d.np).newbyteorder("<") for d in dtypes.ALL_DTYPES}


def _pad(n: int) -> int:
    return -n % _ALIGN


def _read_header(f: BinaryIO) -> dict:
    raw = f.read(_PREAMBLE.size)
    if len(raw) < _PREAMBLE.size or not raw.startswith(MAGIC):
        if raw and (raw.startswith(MAGIC) or MAGIC.startswith(raw)):
            raise CorruptFile("truncated ember file: the preamble is cut short")
        raise CorruptFile("not an ember file (unknown leading bytes)")
    _, version, length, crc = _PREAMBLE.unpack(raw)
    if version > VERSION:
        raise CorruptFile(f"ember file format version {version} is newer than this ember reads ({VERSION})")
    check_available(f, length, "the header")
    header = f.read(length)
    if len(header) < length:
        raise CorruptFile(f"truncated ember file: the header needs {length} bytes, the file has {len(header)}")
    if zlib.crc32(header) != crc:
        raise CorruptFile("corrupt ember file: header checksum mismatch")
    try:
        meta = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorruptFile(f"corrupt ember file header: {e}") from None
    f.read(_pad(_PREAMBLE.size + length))
    if not isinstance(meta, dict) or meta.get("format") != "ember":
        raise CorruptFile("corrupt ember file header: missing format tag")
    return meta


def _read_storages(f: BinaryIO, meta: dict, mmap_path: str | None) -> list[np.ndarray]:
    storages, pos = [], 0
    data_start = f.tell() if mmap_path is not None else 0
    for i, s in enumerate(meta["storages"]):
        offset, nbytes = int(s["offset"]), int(s["nbytes"])
        if offset != pos or nbytes < 0:
            raise CorruptFile("corrupt ember file header: storage table out of order")
        if mmap_path is not None:
            end = data_start + offset + nbytes
            if end > os.path.getsize(mmap_path):
                raise CorruptFile(f"truncated ember file: storage {i} ends at byte {end}, past the end of the file")
            buf = (np.memmap(mmap_path, dtype=np.uint8, mode="c", offset=data_start + offset, shape=(nbytes,))
                   if nbytes else np.empty(0, np.uint8))
        else:
            buf = read_exact(f, nbytes, f"storage {i}")
            if zlib.crc32(buf) != s["crc32"]:
                raise CorruptFile(f"corrupt ember file: checksum mismatch in storage {i}")
            read_exact(f, _pad(nbytes), f"padding after storage {i}")
        storages.append(buf)
        pos = offset + nbytes + _pad(nbytes)
    return storages


def _view(node: dict, storages: list[np.ndarray]) -> np.ndarray:
    """The array a tensor or ndarray node describes, viewing its storage (bounds checked first)."""
    try:
        np_dtype = _NP_DTYPES[node["dtype"]]
        buf = storages[node["storage"]]
        shape = tuple(int(n) for n in node["shape"])
        strides = tuple(int(s) for s in node["strides"])
        offset = int(node["offset"])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise CorruptFile(f"corrupt ember file header: bad array entry ({e!r})") from None
    if len(shape) != len(strides) or any(n < 0 for n in shape):
        raise CorruptFile("corrupt ember file header: bad array shape")
    if 0 not in shape:
        low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + np_dtype.itemsize
        if low < 0 or high > buf.nbytes:
            raise CorruptFile("corrupt ember file header: an array reaches outside its storage")
    else:
        offset = 0
    return np.ndarray(shape, dtype=np_dtype.newbyteorder("="), buffer=buf, offset=offset, strides=strides)


class _Reader:
    def __init__(self, meta: dict, storages: list[np.ndarray], place: Placement) -> None:
        self.meta = meta
        self.storages = storages
        self.place = place
        self.tensors: dict[int, Tensor] = {}

    def decode(self, node: Any) -> Any:
        try:
            tag = node["t"]
            decoder = getattr(self, f"_{tag}", None)
            if decoder is None:
                raise CorruptFile(f"corrupt ember file header: unknown node type {tag!r}")
            return decoder(node)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise CorruptFile(f"corrupt ember file header: bad node ({e!r})") from None

    def _none(self, node: dict) -> None:
        return None

    def _bool(self, node: dict) -> bool:
        return bool(node["v"])

    def _int(self, node: dict) -> int:
        return int(node["v"])

    def _float(self, node: dict) -> float:
        return float.fromhex(node["v"])

    def _complex(self, node: dict) -> complex:
        return complex(float.fromhex(node["v"][0]), float.fromhex(node["v"][1]))

    def _str(self, node: dict) -> str:
        return str(node["v"])

    def _bytes(self, node: dict) -> bytes:
        return base64.b64decode(node["v"])

    def _dtype(self, node: dict) -> dtypes.dtype:
        return dtypes.to_dtype(str(node["v"]))

    def _device(self, node: dict) -> _device:
        return as_device(str(node["v"]))

    def _list(self, node: dict) -> list:
        return [self.decode(v) for v in node["v"]]

    def _tuple(self, node: dict) -> tuple:
        return tuple(self._list(node))

    def _size(self, node: dict) -> Size:
        return Size(self._list(node))

    def _dict(self, node: dict) -> dict:
        return {self.decode(k): self.decode(v) for k, v in zip(node["k"], node["v"])}

    def _odict(self, node: dict) -> collections.OrderedDict:
        return collections.OrderedDict((self.decode(k), self.decode(v)) for k, v in zip(node["k"], node["v"]))

    def _ndarray(self, node: dict) -> np.ndarray | np.generic:
        arr = _view(node, self.storages)
        return arr[()] if node.get("scalar") else arr

    def _tensor(self, node: dict) -> Tensor:
        index = int(node["i"])
        if index not in self.tensors:
            entry = self.meta["tensors"][index]
            t = self.place(Tensor._make(_view(entry, self.storages)), str(entry.get("device", "cpu")))
            if entry.get("parameter"):
                t = Parameter(t, bool(entry.get("requires_grad")))
            elif entry.get("requires_grad"):
                t.requires_grad_(True)
            self.tensors[index] = t
        return self.tensors[index]


def load_ember_v1(fh: BinaryIO, place: Placement, mmap_path: str | None) -> Any:
    """The object an ember file of format version 1 holds (``fh`` positioned at its start)."""
    meta = _read_header(fh)
    try:
        storages = _read_storages(fh, meta, mmap_path)
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFile(f"corrupt ember file header: bad storage table ({e!r})") from None
    return _Reader(meta, storages, place).decode(meta["tree"])
