"""The worker process's side of a multi-process DataLoader: seeding, ``get_worker_info``, the fetch loop.

A worker is started with everything it needs in a ``WorkerConfig`` (pickled when the start method is spawn or
forkserver). It seeds its generators as torch's workers do: ``seed = base_seed + worker_id`` for ember's default
generator and for ``random``; NumPy's global generator gets four 32-bit words drawn by NumPy's own SeedSequence
from ``[worker_id, low 32 bits of base_seed, high bits, 0]`` (the words torch 2.x computes with its copy of that
algorithm), so workers' NumPy streams differ from each other and from ``random``'s. Then it runs ``worker_init_fn``
and answers ``(task index, sampler entry)`` requests from its index queue with ``(task index, batch)`` on the shared
result queue, until it receives None (or, its queue empty, sees the loader's done event set).

Every result is pickled here, with multiprocessing's ForkingPickler (so reducers registered for tensors, such as
ember.multiprocessing's shared-memory ones, apply), before it is queued: a batch that cannot be pickled becomes an
error the main process raises, instead of being dropped by the queue's feeder thread while the main process waits.
"""
from __future__ import annotations

import os
import queue
import random
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable

import numpy as np

from ..._settings import set_num_threads
from ...tensor.random import manual_seed
from ._exception_wrapper import ExceptionWrapper
from ._fetch import make_fetcher

# Seconds between a worker's checks that it is still wanted: the loader has not set its done event (when the
# iterator is collected as garbage, the None sent after that may never leave its queue) and the main process lives.
POLL_S = 0.25
_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: its id, the worker count, its seed, its dataset copy."""
    id: int
    num_workers: int
    seed: int
    dataset: Any


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers when a new pass starts: make a fresh fetcher, and acknowledge."""


@dataclass(frozen=True)
class IterableDatasetStopIteration:
    """A worker's iterator of an IterableDataset is exhausted: send it no more tasks this pass."""
    worker_id: int


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker of one loader iterator is started with."""
    dataset: Any
    iterable: bool
    auto_collation: bool
    collate_fn: Callable
    drop_last: bool
    base_seed: int
    init_fn: Callable[[int], Any] | None
    num_workers: int

    def fetcher(self) -> Any:
        return make_fetcher(self.iterable, self.dataset, self.auto_collation, self.collate_fn, self.drop_last)


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process: its ``WorkerInfo`` (``id``, ``num_workers``, ``seed``, ``dataset``, the
    dataset being this process's own copy). In the main process: None.

    A ``worker_init_fn`` or an ``IterableDataset.__iter__`` uses it to give each worker its own shard of the data.
    """
    return _worker_info


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed ember's default generator, ``random`` and NumPy's global generator for worker ``worker_id``, as torch
    does; returns the worker's seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    entropy = [worker_id, base_seed & _MASK32, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))
    return seed


def _send(result_queue: Any, task: Any, data: Any, where: str) -> None:
    """Queue ``(task, data)`` pickled; if ``data`` does not pickle, the pickling error goes in its place."""
    try:
        payload = ForkingPickler.dumps((task, data))
    except Exception:  # noqa: BLE001 - any pickling failure is the user's to see, in the main process
        payload = ForkingPickler.dumps((task, ExceptionWrapper(where=where)))
    result_queue.put(bytes(payload))


def worker_loop(config: WorkerConfig, worker_id: int, index_queue: Any, result_queue: Any, done_event: Any) -> None:
    """A worker process's life: seed, run ``worker_init_fn``, fetch batches until told to stop (None)."""
    try:
        _serve(config, worker_id, index_queue, result_queue, done_event)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the main process raises it
        pass
    if done_event.is_set():  # the main process has stopped reading: do not wait to flush unread results
        result_queue.cancel_join_thread()
        result_queue.close()


def _serve(config: WorkerConfig, worker_id: int, index_queue: Any, result_queue: Any, done_event: Any) -> None:
    global _worker_info
    set_num_threads(1)  # several workers share the cores: one thread each, as in torch
    seed = seed_worker(config.base_seed, worker_id)
    _worker_info = WorkerInfo(worker_id, config.num_workers, seed, config.dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = fetcher = None
    try:
        if config.init_fn is not None:
            config.init_fn(worker_id)
        fetcher = config.fetcher()
    except Exception:  # noqa: BLE001 - reported with the first batch this worker is asked for
        init_error = ExceptionWrapper(where=where)
    ended = False  # this pass's iterator of an IterableDataset is exhausted
    parent = os.getppid()
    while os.getppid() == parent:
        try:
            message = index_queue.get(timeout=POLL_S)
        except queue.Empty:
            if done_event.is_set():
                break
            continue
        if isinstance(message, ResumeIteration):
            _send(result_queue, message, None, where)
            ended = False
            fetcher = config.fetcher()
            continue
        if message is None:
            break
        if done_event.is_set() or ended:
            continue  # shutting down, or nothing left: wait for None
        task, index = message
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(index)
            except Exception as exc:  # noqa: BLE001 - re-raised in the main process
                if config.iterable and isinstance(exc, StopIteration):
                    data, ended = IterableDatasetStopIteration(worker_id), True
                else:
                    data = ExceptionWrapper(where=where)
        _send(result_queue, task, data, where)
        del data, message, index


__all__ = ["WorkerInfo", "get_worker_info", "seed_worker", "worker_loop", "WorkerConfig", "ResumeIteration",
           "IterableDatasetStopIteration"]
