"""torch's ``RRef``: a reference to a value owned by one worker, counted so the owner frees it when unused.

Every live RRef object, in any process, holds one count at the owner: the creator's from ``remote``, each copy's
from unpickling (taken synchronously, while the sender's copy still pins the value), released in ``__del__``.
"""
from __future__ import annotations

import threading
import uuid
from typing import Any, Callable, Optional

from ...futures import Future
from . import state

_owned: dict[str, list] = {}  # rref id -> [value, user count]
_owned_lock = threading.Lock()


def _store(rref_id: str, func: Callable, args: tuple, kwargs: dict) -> None:
    value = func(*args, **kwargs)
    with _owned_lock:
        entry = _owned.setdefault(rref_id, [None, 0])
        entry[0] = value
        entry[1] += 1


def _store_value(rref_id: str, value: Any) -> None:
    with _owned_lock:
        _owned[rref_id] = [value, 1]


def _fetch(rref_id: str) -> Any:
    with _owned_lock:
        if rref_id not in _owned:
            raise RuntimeError(f"RRef {rref_id} is not owned here (or was already released)")
        return _owned[rref_id][0]


def _incref(rref_id: str) -> None:
    with _owned_lock:
        _owned.setdefault(rref_id, [None, 0])[1] += 1


def _decref(rref_id: str) -> None:
    with _owned_lock:
        entry = _owned.get(rref_id)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                del _owned[rref_id]


def _call_method(rref_id: str, method: str, args: tuple, kwargs: dict) -> Any:
    return getattr(_fetch(rref_id), method)(*args, **kwargs)


def owned_count() -> int:
    """How many values this worker owns for RRefs (so tests can see values released)."""
    with _owned_lock:
        return len(_owned)


class RRef:
    """A remote reference; ``RRef(value)`` makes a local one owned by this worker."""

    def __init__(self, value: Any = None, type_hint: Any = None, *, _owner: Optional[str] = None,
                 _id: Optional[str] = None, _created: Optional[Future] = None) -> None:
        agent = state.current_agent()
        self._owner_name = _owner or agent.info.name
        self._id = _id or uuid.uuid4().hex
        self._created = _created
        self._live = True
        if _owner is None:
            _store_value(self._id, value)

    # ---- identity ----
    def owner(self) -> Any:
        """WorkerInfo of the owner."""
        return state.current_agent().worker_info(self._owner_name)

    def owner_name(self) -> str:
        return self._owner_name

    def is_owner(self) -> bool:
        return self._owner_name == state.current_agent().info.name

    def confirmed_by_owner(self) -> bool:
        """Whether the owner has the value (always for the owner itself)."""
        return self.is_owner() or self._created is None or self._created.done()

    # ---- values ----
    def _wait_created(self, timeout: Optional[float]) -> None:
        if self._created is not None:
            self._created.wait()

    def local_value(self) -> Any:
        """The value itself; only on the owner."""
        if not self.is_owner():
            raise RuntimeError(f"RRef.local_value: this worker is not the owner ({self._owner_name!r}) of the RRef")
        self._wait_created(None)
        return _fetch(self._id)

    def to_here(self, timeout: float = -1) -> Any:
        """A copy of the value, fetched from the owner."""
        if self.is_owner():
            return self.local_value()
        self._wait_created(timeout)
        return _call(self._owner_name, _fetch, (self._id,), timeout).wait()

    # ---- proxies ----
    def rpc_sync(self, timeout: float = -1) -> "_Proxy":
        return _Proxy(self, lambda *a: _call(*a, timeout).wait())

    def rpc_async(self, timeout: float = -1) -> "_Proxy":
        return _Proxy(self, lambda *a: _call(*a, timeout))

    def remote(self, timeout: float = -1) -> "_Proxy":
        return _Proxy(self, lambda *a: remote_rref(*a, {}, timeout))

    # ---- counting ----
    def __reduce__(self) -> tuple:
        return _rebuild, (self._owner_name, self._id)

    def __del__(self) -> None:
        agent = state.agent_or_none()
        if not getattr(self, "_live", False) or agent is None or not agent.running:
            return
        self._live = False
        if self.is_owner():
            _decref(self._id)
            return
        created = self._created
        if created is not None and not created.done():
            created.add_done_callback(lambda _: _send_decref(self._owner_name, self._id))
        else:
            _send_decref(self._owner_name, self._id)

    def __repr__(self) -> str:
        return f"RRef(owner={self._owner_name!r}, id={self._id[:8]})"


def _call(to: Any, func: Callable, args: tuple, timeout: float) -> Future:
    """An RPC from this worker (the agent directly: ``api`` builds on this module, not the other way round)."""
    return state.current_agent().call_async(to, func, args, {}, timeout)


def remote_rref(to: Any, func: Callable, args: tuple, kwargs: dict, timeout: float) -> RRef:
    """Run ``func`` on ``to``, keeping the result there under a fresh id; the RRef to it (``rpc.remote``)."""
    owner = state.current_agent().worker_info(to).name
    rref_id = uuid.uuid4().hex
    created = state.current_agent().call_async(owner, _store, (rref_id, func, args, kwargs), {}, timeout)
    return RRef(_owner=owner, _id=rref_id, _created=created)


def _send_decref(owner: str, rref_id: str) -> None:
    agent = state.agent_or_none()
    if agent is not None and agent.running:
        _call(owner, _decref, (rref_id,), -1)


def _rebuild(owner: str, rref_id: str) -> RRef:
    rref = RRef(_owner=owner, _id=rref_id)
    if rref.is_owner():
        _incref(rref_id)
    else:
        _call(owner, _incref, (rref_id,), -1).wait()
    return rref


class _Proxy:
    """``rref.rpc_sync().method(...)``: calls the method on the owner's value."""

    def __init__(self, rref: RRef, send: Callable) -> None:
        self._rref, self._send = rref, send

    def __getattr__(self, method: str) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._send(self._rref._owner_name, _call_method, (self._rref._id, method, args, kwargs))
        return call
