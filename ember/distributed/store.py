"""Key-value stores for rendezvous (torch's ``TCPStore``, ``FileStore``, ``PrefixStore``).

They only carry the few bytes the ranks need to find each other (the MPI port name, arrival marks); the
collectives themselves run on MPI. ``get`` and ``wait`` block until the key exists or the timeout passes.
"""
from __future__ import annotations

import abc
import datetime
import fcntl
import pickle
import socket
import socketserver
import struct
import threading
import time

__all__ = ["FileStore", "PrefixStore", "Store", "TCPStore"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)
_POLL_S = 0.005


def _seconds(timeout: datetime.timedelta | float | None) -> float:
    if timeout is None:
        return _DEFAULT_TIMEOUT.total_seconds()
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


class Store(abc.ABC):
    """The interface every store offers: ``set``, ``get``, ``add``, ``wait``, ``check``, ``delete_key``."""

    def __init__(self, timeout: datetime.timedelta | float | None = None) -> None:
        self.timeout = datetime.timedelta(seconds=_seconds(timeout))

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        """The default timeout of ``get`` and ``wait``."""
        self.timeout = timeout

    def wait(self, keys: list[str], timeout: datetime.timedelta | None = None) -> None:
        """Block until every key exists; ``RuntimeError`` after ``timeout`` (the store's by default)."""
        deadline = time.monotonic() + _seconds(timeout if timeout is not None else self.timeout)
        for key in keys:
            while not self.check([key]):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Timeout waiting for key {key!r} in the store after "
                                       f"{_seconds(timeout if timeout is not None else self.timeout):.1f} s")
                time.sleep(_POLL_S)

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting for it to be set."""
        self.wait([key])
        return self._read(key)

    @abc.abstractmethod
    def set(self, key: str, value: str | bytes) -> None:
        """See the concrete stores."""

    @abc.abstractmethod
    def check(self, keys: list[str]) -> bool:
        """See the concrete stores."""

    @abc.abstractmethod
    def _read(self, key: str) -> bytes:
        """See the concrete stores."""


class _StoreHandler(socketserver.BaseRequestHandler):
    """One client connection: length-prefixed pickled ``(command, key, value)`` requests, one reply each."""

    def handle(self) -> None:
        server: _StoreServer = self.server  # type: ignore[assignment]
        while True:
            try:
                request = _recv_message(self.request)
            except (ConnectionError, OSError):
                return
            _send_message(self.request, server.apply(*request))


class _StoreServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _StoreHandler)
        self.data: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def apply(self, command: str, key: str, value: bytes | int | None) -> object:
        with self.lock:
            if command == "set":
                self.data[key] = value  # type: ignore[assignment]
                return None
            if command == "add":
                total = int(self.data.get(key, b"0")) + int(value)  # type: ignore[arg-type]
                self.data[key] = str(total).encode()
                return total
            if command == "check":
                return key in self.data
            if command == "delete":
                return self.data.pop(key, None) is not None
            return self.data.get(key)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("store connection closed")
        chunks += chunk
    return bytes(chunks)


def _recv_message(sock: socket.socket) -> object:
    (size,) = struct.unpack("!Q", _recv_exact(sock, 8))
    return pickle.loads(_recv_exact(sock, size))


def _send_message(sock: socket.socket, message: object) -> None:
    payload = pickle.dumps(message)
    sock.sendall(struct.pack("!Q", len(payload)) + payload)


class TCPStore(Store):
    """torch's ``TCPStore``: the master process serves the keys on ``host_name:port`` from a thread; every
    process (the master included) is a client of it."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: datetime.timedelta = _DEFAULT_TIMEOUT, wait_for_workers: bool = True) -> None:
        super().__init__(timeout)
        self.host, self.port = host_name, int(port)
        self.world_size = world_size
        self._server = None
        if is_master:
            self._server = _StoreServer((host_name, self.port))
            self.port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, name="ember-TCPStore", daemon=True).start()
        self._socket = self._connect(_seconds(timeout))
        self._lock = threading.Lock()

    def _connect(self, seconds: float) -> socket.socket:
        deadline = time.monotonic() + seconds
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=seconds)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"TCPStore: could not connect to {self.host}:{self.port} within "
                                       f"{seconds:.1f} s: {error}") from error
                time.sleep(0.05)

    def _call(self, command: str, key: str, value: object = None) -> object:
        with self._lock:
            _send_message(self._socket, (command, key, value))
            return _recv_message(self._socket)

    def set(self, key: str, value: str | bytes) -> None:
        """Set ``key`` to ``value``."""
        self._call("set", key, _as_bytes(value))

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer at ``key`` (0 when unset); the new value."""
        return int(self._call("add", key, int(amount)))  # type: ignore[arg-type]

    def check(self, keys: list[str]) -> bool:
        """Whether every key is set."""
        return all(self._call("check", key) for key in keys)

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        return bool(self._call("delete", key))

    def _read(self, key: str) -> bytes:
        return self._call("get", key)  # type: ignore[return-value]

    def close(self) -> None:
        """Close the connection, and stop serving when this is the master."""
        self._socket.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class FileStore(Store):
    """torch's ``FileStore``: the keys live in one file that every process appends to under a lock."""

    def __init__(self, file_name: str, world_size: int = -1, timeout: datetime.timedelta = _DEFAULT_TIMEOUT) -> None:
        super().__init__(timeout)
        self.path = file_name
        self.world_size = world_size
        open(self.path, "ab").close()

    def _records(self) -> dict[str, bytes]:
        data: dict[str, bytes] = {}
        with open(self.path, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            content = f.read()
        offset = 0
        while offset + 8 <= len(content):
            (size,) = struct.unpack("!Q", content[offset:offset + 8])
            if offset + 8 + size > len(content):
                break
            key, value = pickle.loads(content[offset + 8:offset + 8 + size])
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
            offset += 8 + size
        return data

    def _append(self, key: str, value: bytes | None) -> None:
        payload = pickle.dumps((key, value))
        with open(self.path, "ab") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(struct.pack("!Q", len(payload)) + payload)

    def set(self, key: str, value: str | bytes) -> None:
        """Set ``key`` to ``value``."""
        self._append(key, _as_bytes(value))

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer at ``key`` under the file lock; the new value."""
        with open(self.path, "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            total = int(self._records().get(key, b"0")) + int(amount)
            payload = pickle.dumps((key, str(total).encode()))
            lock.write(struct.pack("!Q", len(payload)) + payload)
        return total

    def check(self, keys: list[str]) -> bool:
        """Whether every key is set."""
        records = self._records()
        return all(key in records for key in keys)

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        existed = self.check([key])
        self._append(key, None)
        return existed

    def _read(self, key: str) -> bytes:
        return self._records()[key]


class PrefixStore(Store):
    """torch's ``PrefixStore``: every key of ``store`` under ``prefix/``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix, self.underlying_store = prefix, store

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def set(self, key: str, value: str | bytes) -> None:
        """Set ``prefix/key``."""
        self.underlying_store.set(self._key(key), value)

    def add(self, key: str, amount: int) -> int:
        """Add to ``prefix/key``."""
        return self.underlying_store.add(self._key(key), amount)  # type: ignore[attr-defined]

    def check(self, keys: list[str]) -> bool:
        """Whether every ``prefix/key`` is set."""
        return self.underlying_store.check([self._key(key) for key in keys])

    def delete_key(self, key: str) -> bool:
        """Remove ``prefix/key``."""
        return self.underlying_store.delete_key(self._key(key))  # type: ignore[attr-defined]

    def _read(self, key: str) -> bytes:
        return self.underlying_store._read(self._key(key))
