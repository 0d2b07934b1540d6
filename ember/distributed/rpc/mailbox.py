"""The Ray side of ember RPC: one named threaded actor per worker, a mailbox the worker's own process drains.

A Ray driver cannot host an actor, but torch runs callee code in the callee's own process next to its globals. So
each worker starts a named actor that only queues requests; a thread in the worker's process pulls them, runs the
function there and posts the reply, which the actor hands back to the blocked caller.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Optional


class Mailbox:
    """Queues calls for one worker and parks each caller until the worker posts the reply."""

    def __init__(self) -> None:
        self._requests: "queue.Queue[tuple[int, bytes]]" = queue.Queue()
        self._replies: dict[int, tuple[threading.Event, list]] = {}
        self._lock = threading.Lock()
        self._next_id = 0
        self._closed = False

    def call(self, payload: bytes, timeout: Optional[float]) -> bytes:
        with self._lock:
            if self._closed:
                raise RuntimeError("RPC worker has shut down")
            call_id, self._next_id = self._next_id, self._next_id + 1
            slot = (threading.Event(), [])
            self._replies[call_id] = slot
        self._requests.put((call_id, payload))
        if not slot[0].wait(timeout):
            with self._lock:
                self._replies.pop(call_id, None)
            raise TimeoutError(f"RPC ran for more than the {timeout} s timeout")
        return slot[1][0]

    def pull(self, wait_s: float) -> Optional[tuple[int, bytes]]:
        try:
            return self._requests.get(timeout=wait_s)
        except queue.Empty:
            return None

    def reply(self, call_id: int, payload: bytes) -> None:
        with self._lock:
            slot = self._replies.pop(call_id, None)
        if slot is not None:
            slot[1].append(payload)
            slot[0].set()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def ping(self) -> bool:
        return True


def mailbox_actor_class() -> Any:
    """The Ray actor class, built lazily so that importing ember never imports Ray."""
    import ray
    return ray.remote(max_concurrency=1000, num_cpus=0)(Mailbox)
