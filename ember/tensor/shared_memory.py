"""Host memory that other processes map: the storage of ``Tensor.share_memory_`` and of tensors sent between
processes (torch's shared CPU storages), as POSIX shared-memory segments.

A *segment* is one shared-memory object mapped into this process: a 64-byte header, then the data. How it is made
and named follows the sharing strategy in force when it is created (torch's two Linux strategies):

- ``file_descriptor`` (the default where ``os.memfd_create`` exists): an anonymous ``memfd``. It never has a name,
  so nothing can be left behind in /dev/shm; another process gets it as a file descriptor passed over a socket
  (``multiprocessing.reduction.DupFd``) and the kernel frees the memory when the last descriptor and mapping are
  gone, whatever the processes died of. Each process holding it keeps one descriptor open (as torch does: many
  shared tensors, many open files).
- ``file_system``: a named object ``/dev/shm/ember_<pid>_<n>``, passed by its name; no descriptor stays open.
  Its creator owns the name: it unlinks it when it drops the segment for good and at its exit (mappings made by
  then stay valid), and registers it with multiprocessing's resource tracker, which unlinks it if the creator is
  killed. Receivers attach without registering. A handle not yet received when its sender exits cannot be opened
  (with either strategy the sender has to outlive the receive, as in torch's file_descriptor strategy).

Arrays never own a segment's mapping: each storage's bytes are a ``_Lease``, an object exposing the data through
``__array_interface__``, so every NumPy array of the storage has the lease at the bottom of its base chain. A
lease keeps its segment (and the mapping) alive, so a segment is never closed while an array views it; when the
last array dies, the lease dies and the segment is handed back (``_released``).

Who may reuse or drop a segment is decided by a *holder count* kept in the segment: a process-shared POSIX
semaphore in the header (``sem_post``/``sem_trywait`` are atomic across processes). It counts the other processes
that map the segment plus the handles in flight: a sender adds one for each handle it pickles, a receiver that
already maps the segment (or is its creator) takes that one back, a receiver takes its own back when its last
array dies (or when it exits), and ``os.fork`` adds one for every segment the new child inherits a live storage of.
The creator keeps the segments it made and no longer uses in a small pool: one whose count is zero is reused for
the next storage of its size (so a loader's batches do not pay the first touch of fresh pages, about 10x a copy),
one still held elsewhere waits ("parked") until its count drops.
"""
from __future__ import annotations

import collections
import ctypes
import functools
import itertools
import mmap
import os
import secrets
import struct
import threading
import weakref
from multiprocessing import resource_tracker, util
from typing import Any, Callable, Sequence

import numpy as np

from ..kernels.common.layout import root_array

try:  # POSIX shared memory (CPython's own binding, as multiprocessing.shared_memory uses)
    import _posixshmem
except ImportError:  # pragma: no cover - not a POSIX system
    _posixshmem = None

__all__ = ["NAME_PREFIX", "STRATEGIES", "empty", "export", "get_all_sharing_strategies", "get_sharing_strategy",
           "is_shared_array", "receive_fd", "receive_name", "set_sharing_strategy", "share_arrays", "stats",
           "view_of"]

NAME_PREFIX = "ember_"  # of every named segment in /dev/shm
HEADER = 64  # bytes before the data: magic word, counted flag, the holder semaphore (at _SEM_AT)
_MAGIC = b"EMBERSHM"
_COUNTED = struct.Struct("=q")  # at offset 8: 1 when the semaphore was initialised (sem_init works here)
_SEM_AT = 32  # glibc's sem_t is 32 bytes on 64-bit Linux
POOL_BYTES = 256 << 20  # idle segments nobody else holds kept for reuse, at most this many bytes
PARKED_MAX = 64  # idle segments still held elsewhere kept (waiting to become reusable), at most this many

STRATEGIES = ("file_descriptor", "file_system") if hasattr(os, "memfd_create") else ("file_system",)
_settings = {"strategy": STRATEGIES[0]}

_libc = ctypes.CDLL(None, use_errno=True)
_SEMAPHORES = all(hasattr(_libc, f) for f in ("sem_init", "sem_post", "sem_trywait", "sem_getvalue"))


def get_all_sharing_strategies() -> set[str]:
    """The strategies for sharing CPU tensors this system supports (``file_descriptor`` needs memfd)."""
    return set(STRATEGIES)


def get_sharing_strategy() -> str:
    """The strategy segments made from now on use."""
    return _settings["strategy"]


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how CPU tensors are shared from now on: ``file_descriptor`` or ``file_system`` (module docstring).
    Segments already made keep the strategy they were made with."""
    if new_strategy not in STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {set(STRATEGIES)}")
    _settings["strategy"] = new_strategy


class _Lease:
    """The bytes of one shared storage: NumPy arrays are made from it (``np.asarray(lease)``), so each of them
    keeps it, and it keeps its segment mapped."""

    __slots__ = ("segment", "nbytes", "__array_interface__", "__weakref__")

    def __init__(self, segment: "Segment", nbytes: int) -> None:
        self.segment = segment
        self.nbytes = nbytes
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (segment.address + HEADER, False)}


class Segment:
    """One shared-memory object mapped into this process (module docstring). ``key`` identifies it among this
    process's segments: the (device, inode) of a memfd, the name of a named one."""

    __slots__ = ("key", "name", "fd", "size", "map", "address", "creator", "lease_ref", "_sem")

    def __init__(self, key: Any, name: str | None, fd: int, size: int, creator: bool) -> None:
        self.key, self.name, self.fd, self.size, self.creator = key, name, fd, size, creator
        self.map = mmap.mmap(fd, size)  # MAP_SHARED, read and write
        probe = np.frombuffer(self.map, np.uint8, count=1)
        self.address = probe.__array_interface__["data"][0]
        del probe  # no buffer export stays on the mapping
        self._sem = ctypes.c_void_p(self.address + _SEM_AT)
        self.lease_ref: weakref.ref | None = None

    # -- the header ------------------------------------------------------------------------------------------------
    def init_header(self) -> None:
        counted = _SEMAPHORES and _libc.sem_init(self._sem, 1, 0) == 0
        self.map[:len(_MAGIC)] = _MAGIC
        _COUNTED.pack_into(self.map, len(_MAGIC), int(counted))

    def check_header(self) -> None:
        if self.size < HEADER or self.map[:len(_MAGIC)] != _MAGIC:
            raise RuntimeError(f"shared memory object {self.name or self.key} is not an ember tensor segment")

    def holders(self) -> int:
        """Other processes holding this segment plus handles in flight (a large number where it is not counted:
        such a segment is never reused once sent)."""
        if not _COUNTED.unpack_from(self.map, len(_MAGIC))[0]:
            return 1 << 30
        value = ctypes.c_int()
        _libc.sem_getvalue(self._sem, ctypes.byref(value))
        return value.value

    def add_holder(self) -> None:
        if _COUNTED.unpack_from(self.map, len(_MAGIC))[0]:
            _libc.sem_post(self._sem)

    def drop_holder(self) -> None:
        if _COUNTED.unpack_from(self.map, len(_MAGIC))[0]:
            _libc.sem_trywait(self._sem)

    # -- storages --------------------------------------------------------------------------------------------------
    def live_lease(self) -> _Lease | None:
        return self.lease_ref() if self.lease_ref is not None else None

    def storage(self, nbytes: int) -> np.ndarray:
        """The uint8 array of this segment's storage (its live lease's, or a new lease of ``nbytes``)."""
        lease = self.live_lease()
        if lease is None:
            if HEADER + nbytes > self.size:
                raise RuntimeError(f"a shared storage of {nbytes} bytes does not fit its segment of {self.size}")
            lease = _Lease(self, nbytes)
            self.lease_ref = weakref.ref(lease, functools.partial(_registry.lease_died, self))
        return np.asarray(lease)

    # -- the end -----------------------------------------------------------------------------------------------------
    def unlink(self) -> None:
        """Remove the name (a named segment's creator only); mappings made already stay valid."""
        if self.name is not None:
            _unlink_name(self.name)

    def close(self) -> None:
        """Unmap and close (only once no lease is alive)."""
        self.lease_ref = None
        self.map.close()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _unlink_name(name: str) -> None:
    try:
        _posixshmem.shm_unlink(name)
    except FileNotFoundError:
        pass
    resource_tracker.unregister(name, "shared_memory")


class _Registry:
    """Every segment this process maps, its creator's idle ones (oldest first), and the lease deaths waiting for
    the lock. One lock guards it; a lease dies wherever its last array is dropped, even inside a locked section,
    so its hand-back is queued and run by whoever holds or next takes the lock (``unlock``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.segments: dict[Any, Segment] = {}
        self.idle: list[Segment] = []
        self.dead: collections.deque = collections.deque()
        self.orphans: set[str] = set()  # names this process made and still has to unlink at exit
        self.exiting = False
        self.counter = itertools.count()

    def lease_died(self, segment: Segment, ref: weakref.ref) -> None:
        """A lease's weakref callback: hand its segment back now, or queue it for the lock's holder."""
        if self.exiting:
            return  # at exit mappings stay (and the interpreter may be tearing this module down)
        self.dead.append((segment, ref))
        if self.lock.acquire(blocking=False):
            self.unlock()

    def unlock(self) -> None:
        """Release the lock, then hand back every queued segment (taking the lock again when free)."""
        self.lock.release()
        while self.dead and self.lock.acquire(blocking=False):
            try:
                while self.dead:
                    _released(*self.dead.popleft())
            finally:
                self.lock.release()


_registry = _Registry()


def _released(segment: Segment, ref: weakref.ref) -> None:
    """The last array of ``segment``'s storage is gone (lock held): pool it (its creator) or let go."""
    if _registry.exiting or segment.lease_ref is not ref or segment.map.closed:
        return  # a newer lease or a closed segment has nothing to hand back
    if segment.creator:
        _registry.idle.append(segment)
        _trim()
    else:
        segment.drop_holder()
        _forget(segment)


def _forget(segment: Segment) -> None:
    _registry.segments.pop(segment.key, None)
    segment.close()


def _trim() -> None:
    """Keep at most POOL_BYTES of reusable and PARKED_MAX parked idle segments: drop the oldest beyond."""
    reusable = parked = 0
    for segment in list(reversed(_registry.idle)):  # newest first: the oldest go
        free = segment.holders() == 0
        if free:
            reusable += segment.size
        else:
            parked += 1
        if (free and reusable > POOL_BYTES) or (not free and parked > PARKED_MAX):
            _registry.idle.remove(segment)
            if free:
                segment.unlink()
            elif segment.name is not None:
                _registry.orphans.add(segment.name)  # others still map it; unlinked at exit
            _forget(segment)


def _page_round(n: int) -> int:
    return -(-n // mmap.PAGESIZE) * mmap.PAGESIZE


def _create(size: int) -> Segment:
    """A new segment of ``size`` bytes (header included) made with the current strategy."""
    if _posixshmem is None:
        raise RuntimeError("shared memory tensors need POSIX shared memory, which this system lacks")
    if _settings["strategy"] == "file_descriptor":
        fd = os.memfd_create("ember", os.MFD_CLOEXEC)
        name = None
    else:
        fd, name = _new_named()
    try:
        os.ftruncate(fd, size)
        stat = os.fstat(fd)
        segment = Segment(name or (stat.st_dev, stat.st_ino), name, fd, size, creator=True)
        segment.init_header()
    except BaseException:
        os.close(fd)
        if name is not None:
            _unlink_name(name)
        raise
    if name is not None:  # a named segment is reached by its name: no descriptor stays open
        os.close(fd)
        segment.fd = None
    return segment


def _new_named() -> tuple[int, str]:
    while True:
        name = f"/{NAME_PREFIX}{os.getpid()}_{next(_registry.counter)}_{secrets.token_hex(3)}"
        try:
            fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        except FileExistsError:
            continue
        resource_tracker.register(name, "shared_memory")  # unlinked by the tracker if this process is killed
        return fd, name


def _new_storage(nbytes: int) -> np.ndarray:
    """A uint8 array of ``nbytes`` in a segment of this process's pool (reused when one of the size and the
    current strategy is free)."""
    size = _page_round(HEADER + nbytes)
    named = _settings["strategy"] == "file_system"
    _registry.lock.acquire()
    try:
        for segment in _registry.idle:
            if segment.size == size and (segment.name is not None) == named and segment.holders() == 0:
                _registry.idle.remove(segment)
                return segment.storage(nbytes)
        segment = _create(size)
        _registry.segments[segment.key] = segment
        return segment.storage(nbytes)
    finally:
        _registry.unlock()


def empty(shape: Sequence[int], dtype: Any) -> np.ndarray:
    """A new C-contiguous array in shared memory (uninitialised, from the pool): what a DataLoader worker
    collates a batch into."""
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return _new_storage(nbytes).view(dtype).reshape(shape)


def is_shared_array(array: np.ndarray) -> bool:
    """Whether ``array`` views a shared segment."""
    return type(root_array(array).base) is _Lease


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _byte_span(array: np.ndarray) -> tuple[int, int]:
    """The lowest and one past the highest byte address ``array`` touches."""
    lo = hi = _address(array)
    if array.size == 0:
        return lo, hi
    for n, step in zip(array.shape, array.strides):
        if step < 0:
            lo += step * (n - 1)
        else:
            hi += step * (n - 1)
    return lo, hi + array.itemsize


class _Bytes:
    """A read-only uint8 window on ``nbytes`` at ``address``, for copying a storage's bytes whatever its layout."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3, "data": (address, True)}


def _placed(storage: np.ndarray, like: np.ndarray, offset: int) -> np.ndarray:
    """An array with ``like``'s shape, dtype and strides whose first element is at byte ``offset`` of
    ``storage``."""
    out = np.ndarray(like.shape, like.dtype, buffer=storage, offset=offset, strides=like.strides)
    if not like.flags.writeable:
        out.flags.writeable = False
    return out


def share_arrays(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The same views (shapes, strides, dtypes, places in the storage) of a shared copy of the storage the
    ``arrays`` view (they share one root array). A storage moved before keeps its one copy: a view of it made
    before the move joins that copy rather than copying the storage again (``x.chunk(4)`` sent piece by piece)."""
    root = root_array(arrays[0])
    lo, hi = _byte_span(root)
    moved = _moved.get(id(root))
    storage = None
    if moved is not None and moved[0]() is root:
        lease = moved[1]()
        storage = np.asarray(lease) if lease is not None else None
    if storage is None:
        storage = _new_storage(hi - lo)
        storage[:] = np.asarray(_Bytes(lo, hi - lo))
        key = id(root)
        _moved[key] = (weakref.ref(root, lambda _, key=key, moved=_moved: moved.pop(key, None)),
                       weakref.ref(storage.base))
    return [_placed(storage, a, _address(a) - lo) for a in arrays]


# id(root array) -> (weak root, weak lease of its shared copy): where each storage moved by share_arrays went
_moved: dict[int, tuple[weakref.ref, weakref.ref]] = {}


def export(array: np.ndarray) -> tuple[Segment, int, int]:
    """``array``'s segment, its storage's size and the byte offset of ``array``'s first element in it; counts
    one handle in flight (the receiver takes it over)."""
    lease = root_array(array).base
    segment = lease.segment
    segment.add_holder()
    return segment, lease.nbytes, _address(array) - lease.__array_interface__["data"][0]


def view_of(storage: np.ndarray, offset: int, shape: Sequence[int], strides: Sequence[int], dtype: str) -> np.ndarray:
    """The array a handle describes, in a received storage."""
    return np.ndarray(tuple(shape), np.dtype(dtype), buffer=storage, offset=offset, strides=tuple(strides))


def _receive(key: Any, attach: Callable[[], Segment], nbytes: int) -> np.ndarray:
    """The storage of a received handle: the segment this process maps already under ``key`` (the handle's
    holder unit goes back: this process is counted already, or is its creator), else ``attach()``'s."""
    storage = _known_storage(key, nbytes)
    if storage is not None:
        return storage
    segment = attach()  # outside the lock: it may wait for the sender
    try:
        segment.check_header()
    except RuntimeError:
        segment.close()
        raise
    _registry.lock.acquire()
    try:
        known = _registry.segments.get(key)
        if known is not None:  # another thread attached it meanwhile
            segment.close()
            known.drop_holder()
            return known.storage(nbytes)
        _registry.segments[key] = segment
        return segment.storage(nbytes)
    finally:
        _registry.unlock()


def _known_storage(key: Any, nbytes: int) -> np.ndarray | None:
    _registry.lock.acquire()
    try:
        segment = _registry.segments.get(key)
        if segment is None:
            return None
        segment.drop_holder()
        if segment in _registry.idle:
            _registry.idle.remove(segment)
        return segment.storage(nbytes)
    finally:
        _registry.unlock()


def receive_fd(key: tuple[int, int], detach: Callable[[], int], nbytes: int) -> np.ndarray:
    """The storage behind a memfd handle: ``key`` is its (device, inode), ``detach()`` fetches the descriptor
    from the sender. Where this process maps it already, the descriptor is only fetched to free the sender's
    copy (and need not arrive: the tensor comes back to its creator even after the sender has exited)."""
    storage = _known_storage(key, nbytes)
    if storage is not None:
        try:
            os.close(detach())
        except (OSError, EOFError):  # the sender has exited (or is exiting): nothing of it to free
            pass
        return storage

    def attach() -> Segment:
        fd = detach()
        try:
            return Segment(key, None, fd, os.fstat(fd).st_size, creator=False)
        except BaseException:
            os.close(fd)
            raise

    return _receive(key, attach, nbytes)


def receive_name(name: str, nbytes: int) -> np.ndarray:
    """The storage behind a segment name."""
    def attach() -> Segment:
        try:
            fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
        except FileNotFoundError:
            raise RuntimeError(f"shared memory {name} is gone: the process that sent this tensor exited (or let "
                               "go of it) before it was received; keep the sender alive until then") from None
        try:
            segment = Segment(name, name, fd, os.fstat(fd).st_size, creator=False)
        finally:
            os.close(fd)
        segment.fd = None  # reached by its name: no descriptor stays open
        return segment

    return _receive(name, attach, nbytes)


def stats() -> dict[str, int]:
    """What this process maps: segments, how many hold a live storage, idle ones (reusable or parked)."""
    _registry.lock.acquire()
    try:
        segments = list(_registry.segments.values())
        return {"segments": len(segments), "live": sum(s.live_lease() is not None for s in segments),
                "idle": len(_registry.idle), "reusable": sum(s.holders() == 0 for s in _registry.idle)}
    finally:
        _registry.unlock()


# -- process events -------------------------------------------------------------------------------------------------
def _before_fork() -> None:
    """The child will hold every segment with a live storage: count it now, before the parent can drop one."""
    _registry.lock.acquire()
    while _registry.dead:
        _released(*_registry.dead.popleft())
    for segment in _registry.segments.values():
        if segment.live_lease() is not None:
            segment.add_holder()


def _after_fork_in_parent() -> None:
    _registry.unlock()


def _after_fork_in_child() -> None:
    """Hold the inherited live storages as a receiver does; the parent's idle segments are not this one's."""
    _registry.lock = threading.Lock()
    _registry.dead.clear()
    _registry.orphans.clear()
    _registry.idle.clear()
    for segment in list(_registry.segments.values()):
        if segment.live_lease() is not None:
            segment.creator = False
        else:
            _forget(segment)


def _at_exit() -> None:
    """Unlink the names this process made and give back the holds it has; mappings stay (arrays may live on)."""
    with _registry.lock:
        while _registry.dead:
            _released(*_registry.dead.popleft())
        _registry.exiting = True
        for segment in _registry.segments.values():
            if segment.creator:
                segment.unlink()
            elif segment.live_lease() is not None:
                segment.drop_holder()
        for name in _registry.orphans:
            _unlink_name(name)


def _register_exit() -> None:
    # last of multiprocessing's exit finalizers (after it joins the children), in the main process and in every
    # child process multiprocessing starts (atexit does not run there); its registry is cleared in each new child
    util.Finalize(_registry, _at_exit, exitpriority=-100)


_register_exit()
util.register_after_fork(_registry, lambda registry: _register_exit())
os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
