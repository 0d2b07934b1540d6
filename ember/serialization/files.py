"""What every file format of ``ember.save``/``ember.load`` shares: telling paths from file objects, naming a file in
an error, and the one exception a reader raises for a damaged file."""
from __future__ import annotations

import os
from typing import Any, BinaryIO, Union

import numpy as np

FileLike = Union[str, os.PathLike, BinaryIO]


class CorruptFile(Exception):
    """Raised inside a reader; ``ember.load`` turns it into a RuntimeError that names the file."""


def is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def file_name(f: Any) -> str:
    if is_path(f):
        return os.fspath(f)
    return str(getattr(f, "name", repr(f)))


def bytes_left(f: BinaryIO) -> int | None:
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


def check_available(f: BinaryIO, n: int, what: str) -> None:
    left = bytes_left(f)
    if left is not None and n > left:
        raise CorruptFile(f"truncated file: {what} needs {n} bytes, the file has {left} left")


def read_exact(f: BinaryIO, n: int, what: str) -> np.ndarray:
    """``n`` bytes of ``f`` in a fresh (writable) array, refusing a length the file cannot hold before allocating."""
    check_available(f, n, what)
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
        raise CorruptFile(f"truncated file: {what} needs {n} bytes, the file ends after {got}")
    return buf


class Bounded:
    """A seekable binary file read through a reader that never asks for more than the file still holds, so a
    length a hostile pickle claims cannot make a read allocate that much."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        here = fh.tell()
        self._end = fh.seek(0, os.SEEK_END)
        fh.seek(here)

    def _left(self) -> int:
        return max(0, self._end - self._fh.tell())

    def read(self, n: int | None = -1) -> bytes:
        left = self._left()
        return self._fh.read(left if n is None or n < 0 else min(n, left))

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        return self._fh.readinto(view[: self._left()])

    def readline(self, limit: int = -1) -> bytes:
        return self._fh.readline(limit)

    def tell(self) -> int:
        return self._fh.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._fh.seek(offset, whence)

    def seekable(self) -> bool:
        return True
