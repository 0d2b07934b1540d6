"""Saving to a path without ever losing the previous file.

The bytes go to a temporary file in the same folder, are flushed and fsynced, then ``os.replace`` puts the file in
place, so a crash mid-save leaves the previous file as it was. Temporaries of writers that died are removed by the
next save of the same name.
"""
from __future__ import annotations

import os
from typing import BinaryIO, Callable


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a fresh file beside ``path``, fsync it, then rename it over ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    _remove_abandoned_temporaries(folder, os.path.basename(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    try:
        with os.fdopen(fd, "w+b") as out:
            write(out)
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
