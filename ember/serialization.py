"""``ember.save`` / ``ember.load``: checkpoints in a file format whose loading runs no code.

A file is a fixed preamble, a JSON header and raw tensor bytes::

    b"EMBERSV\\0" | version u32 | header length u64 | header crc32 u32 | header (UTF-8 JSON) | pad to 64
    | storage 0 bytes | pad to 64 | storage 1 bytes | ...

The header describes the saved object as a tree of tagged nodes (dicts, lists,
tuples, numbers, strings, dtypes, tensors), the tensors (dtype, shape, strides and
offset into a storage) and the storages (byte offset, length, crc32). Tensors
that view one NumPy buffer share one storage, so views stay views after loading,
as with torch. Loading parses JSON and copies bytes: nothing is unpickled, so a
file from an untrusted source can fail to load but cannot run code.

Saving to a path is atomic: the bytes go to a temporary file in the same folder,
are flushed and fsynced, then ``os.replace`` puts the file in place, so a crash
mid-save leaves the previous file as it was.
"""
from __future__ import annotations

import base64
import collections
import json
import os
import struct
import zlib
from typing import Any, BinaryIO, Callable, Union

import numpy as np

from .tensor import dtypes
from .tensor.device import as_device, device as _device
from .tensor.host_views import HostViews, root_array
from .tensor.tensor import Size, Tensor

MAGIC = b"EMBERSV\0"
VERSION = 1
_PREAMBLE = struct.Struct("<8sIQI")
_ALIGN = 64
# Dtypes a file may name: ember's, stored little-endian.
_NP_DTYPES = {d.name: np.dtype(d.np).newbyteorder("<") for d in dtypes.ALL_DTYPES}

FileLike = Union[str, os.PathLike, BinaryIO]


def _is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def _name(f: Any) -> str:
    if _is_path(f):
        return os.fspath(f)
    return str(getattr(f, "name", repr(f)))


def _pad(n: int) -> int:
    return -n % _ALIGN


# ---- saving ------------------------------------------------------------------------------------------------------

def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class _Writer:
    """Walks the object once, turning it into header nodes and collecting the storages to write."""

    def __init__(self) -> None:
        self.tensors: list[dict] = []
        self.storages: list[np.ndarray] = []  # flat uint8 views, in file order
        self._tensor_ids: dict[int, int] = {}
        self._storage_ids: dict[int, int] = {}
        self._keep: list[Any] = []  # keeps every id() above alive while the walk runs
        self._open: set[int] = set()
        self._host = HostViews()  # one host copy per device buffer, so views of a CUDA storage share it in the file

    def encode(self, obj: Any, where: str) -> Any:
        if obj is None:
            return {"t": "none"}
        if isinstance(obj, Tensor):
            return {"t": "tensor", "i": self._tensor(obj, where)}
        if isinstance(obj, (np.ndarray, np.generic)):  # before float: np.float64 is a float
            return self._array_node(obj, where)
        if isinstance(obj, bool):
            return {"t": "bool", "v": obj}
        if isinstance(obj, int):
            return {"t": "int", "v": int(obj)}
        if isinstance(obj, float):
            return {"t": "float", "v": float(obj).hex()}
        if isinstance(obj, complex):
            return {"t": "complex", "v": [obj.real.hex(), obj.imag.hex()]}
        if isinstance(obj, str):
            return {"t": "str", "v": obj}
        if isinstance(obj, (bytes, bytearray)):
            return {"t": "bytes", "v": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, dtypes.dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, _device):
            return {"t": "device", "v": str(obj)}
        _refuse_objects(obj, where)
        return self._container(obj, where)

    def _container(self, obj: Any, where: str) -> dict:
        if id(obj) in self._open:
            raise ValueError(f"ember.save: {where} contains itself; a self-referencing container cannot be saved")
        self._open.add(id(obj))
        try:
            if isinstance(obj, dict):  # subclasses (defaultdict, ...) load as plain dicts
                keys = list(obj.keys())
                return {"t": "odict" if isinstance(obj, collections.OrderedDict) else "dict",
                        "k": [self.encode(k, f"{where} key {k!r}") for k in keys],
                        "v": [self.encode(obj[k], f"{where}[{k!r}]") for k in keys]}
            if type(obj) in (list, tuple, Size):
                tag = {list: "list", tuple: "tuple", Size: "size"}[type(obj)]
                return {"t": tag, "v": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        finally:
            self._open.discard(id(obj))
        raise TypeError(
            f"ember.save cannot store an object of type {type(obj).__module__}.{type(obj).__qualname__} "
            f"(at {where}): files hold tensors, NumPy arrays, numbers, strings, bytes, None, dtypes, devices, and "
            "dicts, OrderedDicts, lists and tuples of them"
        )

    def _array_node(self, obj: np.ndarray | np.generic, where: str) -> dict:
        arr = np.asarray(obj)
        return {"t": "ndarray", "scalar": isinstance(obj, np.generic), **self._layout(arr, where)}

    def _tensor(self, t: Tensor, where: str) -> int:
        index = self._tensor_ids.get(id(t))
        if index is None:
            from .nn.parameter import Parameter

            node = self._layout(self._host.of(t), where)
            if t.is_cuda:
                node["device"] = str(t.device)
            node["requires_grad"] = bool(t.requires_grad)
            node["parameter"] = isinstance(t, Parameter)
            index = self._tensor_ids[id(t)] = len(self.tensors)
            self.tensors.append(node)
            self._keep.append(t)
        return index

    def _layout(self, a: np.ndarray, where: str) -> dict:
        """Where ``a`` lies in its storage: the storage index, byte offset and byte strides."""
        if a.dtype.name not in _NP_DTYPES:
            raise TypeError(f"ember.save cannot store arrays of dtype {a.dtype} (at {where})")
        root = root_array(a)
        shares = (root.flags.c_contiguous or root.flags.f_contiguous) and root.dtype.isnative
        if not shares:  # a buffer we cannot describe as one flat run of bytes: save a compact copy
            root = a = np.ascontiguousarray(a)
        storage = self._storage_ids.get(id(root))
        if storage is None:
            storage = self._storage_ids[id(root)] = len(self.storages)
            self.storages.append(root.reshape(-1, order="A").view(np.uint8))
            self._keep.append(root)
        return {"dtype": a.dtype.name, "shape": list(a.shape), "strides": list(a.strides),
                "storage": storage, "offset": _address(a) - _address(root)}


def _refuse_objects(obj: Any, where: str) -> None:
    """Modules and optimizers are code, not data: point the user at their state_dict."""
    state_dict = getattr(obj, "state_dict", None)
    if callable(state_dict) and not isinstance(obj, (dict, list, tuple)):
        kind = type(obj).__name__
        raise TypeError(
            f"ember.save cannot store a {kind} object (at {where}): ember files hold data, not code. "
            f"Save its state instead: ember.save(obj.state_dict(), f), and later obj.load_state_dict(ember.load(f))"
        )


def _serialize(obj: Any) -> list[bytes | memoryview]:
    """The file's bytes, as a list of chunks to write in order."""
    writer = _Writer()
    tree = writer.encode(obj, "obj")
    storages, offset = [], 0
    for buf in writer.storages:
        storages.append({"offset": offset, "nbytes": int(buf.nbytes), "crc32": zlib.crc32(buf)})
        offset += buf.nbytes + _pad(buf.nbytes)
    header = json.dumps({"format": "ember", "version": VERSION, "tree": tree, "tensors": writer.tensors,
                         "storages": storages}, separators=(",", ":")).encode("utf-8")
    chunks: list[bytes | memoryview] = [_PREAMBLE.pack(MAGIC, VERSION, len(header), zlib.crc32(header)), header,
                                        b"\0" * _pad(_PREAMBLE.size + len(header))]
    for buf in writer.storages:
        chunks += [memoryview(buf), b"\0" * _pad(buf.nbytes)]
    return chunks


def _write_atomic(path: str, chunks: list) -> None:
    """Write to a fresh file beside ``path``, fsync it, then rename it over ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    _remove_abandoned_temporaries(folder, os.path.basename(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def _remove_abandoned_temporaries(folder: str, name: str) -> None:
    """Delete temporaries of ``name`` whose writer process is gone (killed mid-save), so they don't pile up."""
    prefix = f".{name}."
    try:
        candidates = [e for e in os.listdir(folder) if e.startswith(prefix) and e.endswith(".tmp")]
    except OSError:
        return
    for entry in candidates:
        pid = entry[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _process_alive(int(pid)):
            try:
                os.unlink(os.path.join(folder, entry))
            except OSError:
                pass


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists under another user (PermissionError), or the platform cannot tell: keep its file
    return True


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Save tensors and containers of them (a ``state_dict``, an optimizer state) to a path or binary file.

    Tensors keep dtype, shape, ``requires_grad`` and shared storage; Parameters stay Parameters.
    The pickle arguments exist for torch's signature and are ignored: nothing is pickled.
    """
    chunks = _serialize(obj)
    if _is_path(f):
        _write_atomic(f, chunks)
        return
    if not callable(getattr(f, "write", None)):
        raise TypeError(f"ember.save: f must be a path or a binary file object with write(), got {type(f).__name__}")
    for chunk in chunks:
        f.write(chunk)
    if callable(getattr(f, "flush", None)):
        f.flush()


# ---- loading -----------------------------------------------------------------------------------------------------

class _Corrupt(Exception):
    """Raised inside the reader; ``load`` turns it into a RuntimeError that names the file."""


def _bytes_left(f: BinaryIO) -> int | None:
    """Bytes between the position and the end of ``f``, where it can tell: a forged length is then refused before
    anything that size is allocated."""
    try:
        if not f.seekable():
            return None
        pos = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(pos)
    except (AttributeError, OSError, ValueError):
        return None
    return end - pos


def _check_available(f: BinaryIO, n: int, what: str) -> None:
    left = _bytes_left(f)
    if left is not None and n > left:
        raise _Corrupt(f"truncated ember file: {what} needs {n} bytes, the file has {left} left")


def _read_exact(f: BinaryIO, n: int, what: str) -> np.ndarray:
    _check_available(f, n, what)
    buf = np.empty(n, dtype=np.uint8)
    readinto = getattr(f, "readinto", None)
    if callable(readinto):
        view, got = memoryview(buf), 0
        while got < n:
            k = readinto(view[got:])
            if not k:
                break
            got += k
    else:
        data = f.read(n)
        got = len(data)
        buf[:got] = np.frombuffer(data, dtype=np.uint8)
    if got < n:
        raise _Corrupt(f"truncated ember file: {what} needs {n} bytes, the file ends after {got}")
    return buf


def _identify(head: bytes) -> str:
    """Why ``head`` is not an ember preamble, in words a user can act on."""
    if head.startswith(b"PK\x03\x04"):
        return ("not an ember file: it is a zip archive, which is what torch.save writes; load it with torch.load "
                "and convert the tensors (ember.tensor(t.numpy())) before ember.save")
    if head[:1] == b"\x80":
        return "not an ember file: it looks like a pickle (legacy torch.save or pickle.dump); ember never unpickles"
    if not head:
        return "not an ember file: the file is empty"
    return "not an ember file (unknown leading bytes)"


def _read_header(f: BinaryIO) -> dict:
    raw = f.read(_PREAMBLE.size)
    if len(raw) < _PREAMBLE.size or not raw.startswith(MAGIC):
        if raw and (raw.startswith(MAGIC) or MAGIC.startswith(raw)):
            raise _Corrupt("truncated ember file: the preamble is cut short")
        raise _Corrupt(_identify(raw))
    _, version, length, crc = _PREAMBLE.unpack(raw)
    if version > VERSION:
        raise _Corrupt(f"ember file format version {version} is newer than this ember reads ({VERSION})")
    _check_available(f, length, "the header")
    header = f.read(length)
    if len(header) < length:
        raise _Corrupt(f"truncated ember file: the header needs {length} bytes, the file has {len(header)}")
    if zlib.crc32(header) != crc:
        raise _Corrupt("corrupt ember file: header checksum mismatch")
    try:
        meta = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _Corrupt(f"corrupt ember file header: {e}") from None
    f.read(_pad(_PREAMBLE.size + length))
    if not isinstance(meta, dict) or meta.get("format") != "ember":
        raise _Corrupt("corrupt ember file header: missing format tag")
    return meta


def _read_storages(f: BinaryIO, meta: dict, mmap_path: str | None) -> list[np.ndarray]:
    storages, pos = [], 0
    data_start = f.tell() if mmap_path is not None else 0
    for i, s in enumerate(meta["storages"]):
        offset, nbytes = int(s["offset"]), int(s["nbytes"])
        if offset != pos or nbytes < 0:
            raise _Corrupt("corrupt ember file header: storage table out of order")
        if mmap_path is not None:
            end = data_start + offset + nbytes
            if end > os.path.getsize(mmap_path):
                raise _Corrupt(f"truncated ember file: storage {i} ends at byte {end}, past the end of the file")
            buf = (np.memmap(mmap_path, dtype=np.uint8, mode="c", offset=data_start + offset, shape=(nbytes,))
                   if nbytes else np.empty(0, np.uint8))
        else:
            buf = _read_exact(f, nbytes, f"storage {i}")
            if zlib.crc32(buf) != s["crc32"]:
                raise _Corrupt(f"corrupt ember file: checksum mismatch in storage {i}")
            _read_exact(f, _pad(nbytes), f"padding after storage {i}")
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
        raise _Corrupt(f"corrupt ember file header: bad array entry ({e!r})") from None
    if len(shape) != len(strides) or any(n < 0 for n in shape):
        raise _Corrupt("corrupt ember file header: bad array shape")
    if 0 not in shape:
        low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + np_dtype.itemsize
        if low < 0 or high > buf.nbytes:
            raise _Corrupt("corrupt ember file header: an array reaches outside its storage")
    else:
        offset = 0
    return np.ndarray(shape, dtype=np_dtype.newbyteorder("="), buffer=buf, offset=offset, strides=strides)


class _Reader:
    def __init__(self, meta: dict, storages: list[np.ndarray], place: Callable[[Tensor, str], Tensor]) -> None:
        self.meta = meta
        self.storages = storages
        self.place = place
        self.tensors: dict[int, Tensor] = {}

    def decode(self, node: Any) -> Any:
        try:
            tag = node["t"]
            decoder = getattr(self, f"_{tag}", None)
            if decoder is None:
                raise _Corrupt(f"corrupt ember file header: unknown node type {tag!r}")
            return decoder(node)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise _Corrupt(f"corrupt ember file header: bad node ({e!r})") from None

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
                from .nn.parameter import Parameter

                t = Parameter(t, bool(entry.get("requires_grad")))
            elif entry.get("requires_grad"):
                t.requires_grad_(True)
            self.tensors[index] = t
        return self.tensors[index]


def _restore(t: Tensor, saved: str) -> Tensor:
    """A loaded tensor on the device it was saved from (torch's default)."""
    if saved.startswith("cuda"):
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but ember.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use ember.load with "
                               "map_location=ember.device('cpu') to map your storages to the CPU.")
    return t.to(saved)


def _placement(map_location: Any) -> Callable[[Tensor, str], Tensor]:
    """torch's ``map_location``: where each loaded (host) tensor goes, given the device it was saved from."""
    if callable(map_location) and not isinstance(map_location, (str, _device)):
        def call(t: Tensor, saved: str) -> Tensor:
            placed = map_location(t, saved)
            return _restore(t, saved) if placed is None else placed
        return call
    if isinstance(map_location, dict):
        return lambda t, saved: _restore(t, str(map_location.get(saved, saved)))
    if map_location is None:
        return _restore
    target = as_device(map_location)  # raises for devices this build cannot use
    return lambda t, saved: t.to(target)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool = True,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load what ``ember.save`` wrote. Runs no code from the file whatever ``weights_only`` says.

    ``mmap=True`` (paths only) maps tensor bytes copy-on-write instead of reading them; their checksums are
    then not verified (that would read every byte, which mapping exists to avoid). The header is always checked.
    """
    place = _placement(map_location)
    name = _name(f)
    if mmap and not _is_path(f):
        raise ValueError("ember.load: mmap=True needs a path, not a file object")
    try:
        if _is_path(f):
            with open(f, "rb") as fh:
                return _load_from(fh, place, os.fspath(f) if mmap else None)
        if not callable(getattr(f, "read", None)):
            raise TypeError(f"ember.load: f must be a path or a binary file object with read(), "
                            f"got {type(f).__name__}")
        return _load_from(f, place, None)
    except _Corrupt as e:
        raise RuntimeError(f"ember.load({name!r}): {e}") from None


def _load_from(fh: BinaryIO, place: Callable[[Tensor, str], Tensor], mmap_path: str | None) -> Any:
    meta = _read_header(fh)
    try:
        storages = _read_storages(fh, meta, mmap_path)
    except (KeyError, TypeError, ValueError) as e:
        raise _Corrupt(f"corrupt ember file header: bad storage table ({e!r})") from None
    return _Reader(meta, storages, place).decode(meta["tree"])


__all__ = ["save", "load"]
