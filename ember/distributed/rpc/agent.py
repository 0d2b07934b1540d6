"""The per-process RPC agent: joins the Ray cluster, serves this worker's mailbox and sends calls to others.

Rank 0 (or a running cluster named by ``RAY_ADDRESS``) provides the Ray head on loopback; names and ranks are
agreed through a TCPStore at ``MASTER_ADDR:MASTER_PORT`` (or the ``tcp://`` init_method). Functions and arguments
travel pickled by reference (module + qualname), so the callee resolves them in its own process.
"""
from __future__ import annotations

import datetime
import os
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional
from urllib.parse import urlparse

from ...futures import Future
from ..store import TCPStore
from .mailbox import mailbox_actor_class

_NAMESPACE = "ember_rpc"
_STORE_TIMEOUT = datetime.timedelta(seconds=120)


@dataclass(frozen=True)
class WorkerInfo:
    """torch's ``WorkerInfo``: a worker's unique name and id (its rank)."""
    name: str
    id: int


class RemoteException:
    """An exception raised in the callee, pickled with its type so the caller re-raises the same type."""

    def __init__(self, exc: BaseException) -> None:
        try:
            self.payload = pickle.dumps(exc)
        except Exception:
            self.payload = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))

    def reraise(self) -> None:
        raise pickle.loads(self.payload)


class Agent:
    """This process's RPC state: its WorkerInfo, every peer, the Ray actors and the serving threads."""

    def __init__(self, name: str, rank: int, world_size: int, init_method: Optional[str], rpc_timeout: float,
                 num_worker_threads: int) -> None:
        # before importing Ray: it reads this once, and "0" keeps ember's own cluster on 127.0.0.1
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray
        self.ray = ray
        self.rpc_timeout = rpc_timeout
        self.info = WorkerInfo(name, rank)
        self.world_size = world_size
        host, port = _master_address(init_method)
        self.store = TCPStore(host, port, world_size, is_master=rank == 0, timeout=_STORE_TIMEOUT)
        self.started_ray = False
        if not ray.is_initialized():
            self._join_ray(rank)
        self.mailbox = mailbox_actor_class().options(name=f"worker:{name}", namespace=_NAMESPACE,
                                                     lifetime=None).remote()
        ray.get(self.mailbox.ping.remote())
        self.store.set(f"rpc/name/{rank}", name)
        self.store.wait([f"rpc/name/{r}" for r in range(world_size)])
        self.workers = {}
        for r in range(world_size):
            peer = self.store.get(f"rpc/name/{r}").decode()
            if peer in self.workers:
                raise RuntimeError(f"init_rpc: worker name {peer!r} is used by two ranks")
            self.workers[peer] = WorkerInfo(peer, r)
        self.peers: dict[str, Any] = {}
        self.gone: set[str] = set()  # peers whose process died: shutdown does not wait for them
        self.pool = ThreadPoolExecutor(max_workers=num_worker_threads, thread_name_prefix="ember-rpc")
        self.running = True
        self.server = threading.Thread(target=self._serve, name="ember-rpc-server", daemon=True)
        self.server.start()

    def _join_ray(self, rank: int) -> None:
        address = os.environ.get("RAY_ADDRESS")
        if address:
            self.ray.init(address=address, namespace=_NAMESPACE, log_to_driver=False)
            return
        # ember's own cluster listens on loopback only; its processes agree on "no token" (DESIGN.md: both sides
        # in token mode or neither), since the token a fresh head generates is not visible to the other ranks.
        os.environ["RAY_AUTH_MODE"] = "disabled"
        if rank == 0:
            info = self.ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, namespace=_NAMESPACE,
                                 num_cpus=max(1, self.world_size), log_to_driver=False)
            self.started_ray = True
            # Ray reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER once, at import: if Ray was imported before init_rpc the
            # head may register a routable IP instead of 127.0.0.1, so the other ranks attach to whatever it chose.
            self.store.set("rpc/ray_address", info.address_info["gcs_address"])
            self.store.set("rpc/ray_node_ip", info.address_info["node_ip_address"])
        else:
            address = self.store.get("rpc/ray_address").decode()
            node_ip = self.store.get("rpc/ray_node_ip").decode()
            self.ray.init(address=address, _node_ip_address=node_ip, namespace=_NAMESPACE,
                          log_to_driver=False)

    # ---- serving: runs callee code in this process ----
    def _serve(self) -> None:
        while self.running:
            try:
                request = self.ray.get(self.mailbox.pull.remote(0.2))
            except Exception:
                if not self.running:
                    return
                time.sleep(0.05)
                continue
            if request is not None:
                self.pool.submit(self._handle, *request)

    def _handle(self, call_id: int, payload: bytes) -> None:
        try:
            func, args, kwargs = pickle.loads(payload)
            result = func(*args, **kwargs)
            if isinstance(result, Future):  # @async_execution: reply when the returned future completes
                result.add_done_callback(lambda fut: self._reply(call_id, fut))
                return
            reply = pickle.dumps(("ok", result))
        except BaseException as exc:
            reply = pickle.dumps(("err", RemoteException(exc)))
        self.mailbox.reply.remote(call_id, reply)

    def _reply(self, call_id: int, fut: Future) -> None:
        try:
            reply = pickle.dumps(("ok", fut.wait()))
        except BaseException as exc:
            reply = pickle.dumps(("err", RemoteException(exc)))
        self.mailbox.reply.remote(call_id, reply)

    # ---- calling ----
    def worker_info(self, to: Any) -> WorkerInfo:
        if isinstance(to, WorkerInfo):
            return to
        if isinstance(to, int):
            for info in self.workers.values():
                if info.id == to:
                    return info
        if isinstance(to, str) and to in self.workers:
            return self.workers[to]
        raise ValueError(f"unknown RPC destination {to!r}; workers are {sorted(self.workers)}")

    def _peer(self, name: str) -> Any:
        if name not in self.peers:
            self.peers[name] = self.ray.get_actor(f"worker:{name}", namespace=_NAMESPACE)
        return self.peers[name]

    def call_async(self, to: Any, func: Callable, args: tuple, kwargs: dict, timeout: float) -> Future:
        info = self.worker_info(to)
        timeout = self.rpc_timeout if timeout is None or timeout < 0 else timeout
        wait_s = None if timeout == 0 else timeout
        payload = pickle.dumps((func, tuple(args), dict(kwargs or {})))
        fut: Future = Future()
        if info.name == self.info.name:
            self.pool.submit(_run_local, fut, func, args, kwargs or {})
            return fut
        ref = self._peer(info.name).call.remote(payload, wait_s)

        def wait_reply() -> None:
            try:
                status, value = pickle.loads(self.ray.get(ref, timeout=None if wait_s is None else wait_s + 1))
            except self.ray.exceptions.GetTimeoutError:
                fut.set_exception(TimeoutError(f"RPC to {info.name!r} ran for more than the {timeout} s timeout"))
                return
            except self.ray.exceptions.RayActorError as exc:
                self.gone.add(info.name)
                fut.set_exception(RuntimeError(f"RPC to {info.name!r} failed: the worker is gone ({exc})"))
                return
            except self.ray.exceptions.RayTaskError as exc:
                cause = exc.as_instanceof_cause()
                fut.set_exception(TimeoutError(f"RPC to {info.name!r} ran for more than the {timeout} s timeout")
                                  if isinstance(cause, TimeoutError) else
                                  RuntimeError(f"RPC to {info.name!r} failed: {cause}"))
                return
            except BaseException as exc:
                fut.set_exception(RuntimeError(f"RPC to {info.name!r} failed: {exc}"))
                return
            if status == "ok":
                fut.set_result(value)
            else:
                try:
                    value.reraise()
                except BaseException as exc:
                    fut.set_exception(exc)

        threading.Thread(target=wait_reply, name="ember-rpc-wait", daemon=True).start()
        return fut

    def _live_count(self) -> int:
        return self.world_size - len(self.gone)

    def shutdown(self, graceful: bool) -> None:
        if graceful:
            self.store.add("rpc/shutdown", 1)
            deadline = time.monotonic() + _STORE_TIMEOUT.total_seconds()
            while self.store.add("rpc/shutdown", 0) < self._live_count() and time.monotonic() < deadline:
                time.sleep(0.05)
        self.running = False
        self.server.join(timeout=5)
        self.pool.shutdown(wait=True)
        self.ray.get(self.mailbox.close.remote())
        if graceful:  # rank 0 owns the Ray head: it leaves last
            self.store.add("rpc/left", 1)
            if self.started_ray:
                deadline = time.monotonic() + 30
                while self.store.add("rpc/left", 0) < self._live_count() and time.monotonic() < deadline:
                    time.sleep(0.05)
        self.ray.kill(self.mailbox)
        self.ray.shutdown()


def _run_local(fut: Future, func: Callable, args: tuple, kwargs: dict) -> None:
    try:
        result = func(*args, **kwargs)
        result = result.wait() if isinstance(result, Future) else result
    except BaseException as exc:
        fut.set_exception(exc)
        return
    fut.set_result(result)


def _master_address(init_method: Optional[str]) -> tuple[str, int]:
    if init_method and init_method.startswith("tcp://"):
        url = urlparse(init_method)
        return url.hostname or "127.0.0.1", int(url.port)
    if init_method and init_method != "env://":
        raise ValueError(f"init_rpc: init_method {init_method!r} is not supported (use env:// or tcp://host:port)")
    try:
        return os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    except KeyError as exc:
        raise RuntimeError(f"init_rpc: environment variable {exc.args[0]} is not set (env:// init_method)") from None
