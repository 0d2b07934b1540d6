"""torch's checkpoint format since torch 1.6: a zip archive of uncompressed records.

``<archive>/data.pkl`` holds the pickled object, whose tensors name storages by persistent ids
``("storage", <typed storage class>, key, location, numel)``; ``<archive>/data/<key>`` holds each storage's raw
bytes, 64-byte aligned (so ``mmap=True`` can map them in place); ``byteorder``, ``version``,
``.format_version``, ``.storage_alignment`` and ``.data/serialization_id`` describe the file. Records are written
and read with ``zipfile``; the alignment comes from padding in each record's local extra field, as torch pads.
"""
from __future__ import annotations

import io
import os
import secrets
import struct
import zipfile
import zlib
from typing import Any, BinaryIO, Callable

import numpy as np

from .files import CorruptFile
from .pickler import StorageTable
from .placement import Placement
from .storage_ids import storage_loader

ALIGNMENT = 64
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_ZIP64_EXTRA = 20  # what zipfile adds to the local extra field of a record written with zip64
_DEFLATE_MAX_RATIO = 1032  # deflate's largest expansion when decompressed
# what zipfile raises reading a damaged record (zlib.error: a stored record whose method flipped to deflate)
_RECORD_DAMAGE = (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, struct.error, zlib.error)


def archive_name(f: Any) -> str:
    """The folder of the records: the file's name without its extension, "archive" for a file object (torch's)."""
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        return stem or "archive"
    return "archive"


def _write_record(zf: zipfile.ZipFile, name: str, data: Any) -> None:
    """One uncompressed record whose bytes start at a multiple of ``ALIGNMENT`` in the file."""
    data = memoryview(data).cast("B")
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    zip64 = data.nbytes > zipfile.ZIP64_LIMIT
    start = zf.fp.tell() + _LOCAL_HEADER + len(name.encode("utf-8")) + 4 + (_ZIP64_EXTRA if zip64 else 0)
    pad = -start % ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def write_archive(pickled: bytes, storages: StorageTable, out: BinaryIO, name: str, byteorder: bool) -> None:
    """The records of one checkpoint, in torch's order."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, f"{name}/data.pkl", pickled)
        _write_record(zf, f"{name}/.format_version", b"1")
        _write_record(zf, f"{name}/.storage_alignment", str(ALIGNMENT).encode())
        if byteorder:
            _write_record(zf, f"{name}/byteorder", b"little")
        for ref in storages.refs:
            _write_record(zf, f"{name}/data/{ref.key}", ref.data)
        _write_record(zf, f"{name}/version", b"3\n")
        _write_record(zf, f"{name}/.data/serialization_id", "".join(secrets.choice("0123456789")
                                                                       for _ in range(40)).encode())


# ---- reading -----------------------------------------------------------------------------------------------------

def _data_offset(fh: BinaryIO, info: zipfile.ZipInfo) -> int:
    """Where a stored record's bytes start in the file (after its local header)."""
    fh.seek(info.header_offset)
    header = fh.read(_LOCAL_HEADER)
    if len(header) < _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
        raise CorruptFile(f"corrupt zip archive: bad local header for {info.filename}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + _LOCAL_HEADER + name_len + extra_len


def _check_entries(entries: list[zipfile.ZipInfo], archive_size: int) -> None:
    """Refuse records whose sizes the archive cannot hold (before anything that size is allocated or read) and
    records ``zipfile`` would need a password or another decompressor for (a flipped flag or method)."""
    for info in entries:
        if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise CorruptFile(f"corrupt zip archive: record {info.filename} is encrypted or compressed with "
                              f"method {info.compress_type}")
        expands = 1 if info.compress_type == zipfile.ZIP_STORED else _DEFLATE_MAX_RATIO
        if (info.header_offset + info.compress_size > archive_size or info.file_size > expands * info.compress_size
                or (expands == 1 and info.file_size != info.compress_size)):
            raise CorruptFile(f"corrupt zip archive: record {info.filename} claims {info.compress_size} bytes "
                              f"({info.file_size} uncompressed) in an archive of {archive_size}")


class ZipCheckpoint:
    """An open torch zip checkpoint: its pickle and, on demand, its storage records."""

    def __init__(self, fh: BinaryIO, mmap_path: str | None) -> None:
        self._fh = fh
        self._mmap_path = mmap_path
        try:
            self._zip = zipfile.ZipFile(fh)
            entries = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error) as e:
            raise CorruptFile(f"not a readable zip archive ({e})") from None
        _check_entries(entries, fh.seek(0, os.SEEK_END))
        pickles = [i.filename for i in entries if i.filename.endswith("data.pkl")
                   and i.filename.count("/") == 1]
        if len(pickles) != 1:
            raise CorruptFile("not a torch checkpoint: the archive has no <name>/data.pkl record"
                              if not pickles else "corrupt torch checkpoint: more than one data.pkl record")
        self.prefix = pickles[0][: -len("data.pkl")]
        self._entries = {i.filename: i for i in entries}
        order = self._read_small("byteorder")
        if order not in (None, b"little", b"big"):
            raise CorruptFile(f"corrupt torch checkpoint: byteorder record {order!r}")
        self.big_endian = order == b"big"

    def _read_small(self, name: str) -> bytes | None:
        info = self._entries.get(self.prefix + name)
        if info is None:
            return None
        if info.file_size > 1 << 16:
            raise CorruptFile(f"corrupt torch checkpoint: the {name} record is {info.file_size} bytes")
        return self._read(info)

    def _read(self, info: zipfile.ZipInfo) -> bytes:
        try:
            return self._zip.read(info)
        except _RECORD_DAMAGE as e:
            raise CorruptFile(f"corrupt record {info.filename} ({e})") from None

    def pickle_bytes(self) -> bytes:
        return self._read(self._entries[self.prefix + "data.pkl"])

    def record(self, key: str, nbytes: int) -> np.ndarray:
        """Storage ``key``'s ``nbytes`` bytes: read (its CRC checked by ``zipfile``), or mapped copy-on-write."""
        info = self._entries.get(f"{self.prefix}data/{key}")
        if info is None:
            raise CorruptFile(f"corrupt torch checkpoint: no record for storage {key!r}")
        if info.file_size < nbytes:
            raise CorruptFile(f"corrupt torch checkpoint: storage {key!r} needs {nbytes} bytes, its record has "
                              f"{info.file_size}")
        if self._mmap_path is not None:
            if info.compress_type != zipfile.ZIP_STORED:
                raise CorruptFile(f"mmap=True needs uncompressed records; storage {key!r} is compressed")
            start = _data_offset(self._fh, info)
            if start + nbytes > os.path.getsize(self._mmap_path):
                raise CorruptFile(f"truncated torch checkpoint: storage {key!r} reaches past the end of the file")
            if not nbytes:
                return np.empty(0, np.uint8)
            return np.memmap(self._mmap_path, dtype=np.uint8, mode="c", offset=start, shape=(nbytes,))
        buf = np.empty(info.file_size, dtype=np.uint8)
        try:
            with self._zip.open(info) as src:
                view, got = memoryview(buf), 0
                while got < buf.nbytes:
                    k = src.readinto(view[got:])
                    if not k:
                        break
                    got += k
                if got < buf.nbytes or src.read(1):
                    raise CorruptFile(f"corrupt record {info.filename}: its size does not match the archive's")
        except _RECORD_DAMAGE as e:
            raise CorruptFile(f"corrupt record {info.filename} ({e})") from None
        return buf[:nbytes]


def read_archive(fh: BinaryIO, place: Placement, mmap_path: str | None,
                 unpickle: Callable[[BinaryIO, Callable[[Any], Any]], Any]) -> Any:
    """The object a torch zip checkpoint holds; ``unpickle(file, persistent_load)`` runs the chosen unpickler."""
    archive = ZipCheckpoint(fh, mmap_path)
    load_storage = storage_loader(archive.record, place, archive.big_endian)
    return unpickle(io.BytesIO(archive.pickle_bytes()), load_storage)
