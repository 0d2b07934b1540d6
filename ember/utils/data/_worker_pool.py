"""A pass over a DataLoader with ``num_workers > 0``: worker processes fetch, the main process hands out batches.

Each worker has an index queue; all share one result queue. The iterator keeps ``prefetch_factor * num_workers``
tasks outstanding, sent round-robin (with ``in_order=False``, to whichever worker has room), each numbered, so
that with ``in_order=True`` batches come out in sampler order, as with ``num_workers=0``, whichever worker is
faster; results that arrive early wait in ``_task_info``.

Failures never hang the main process: while it waits for a result it checks, every ``STATUS_CHECK_S``, that each
worker is alive, and raises torch's RuntimeError naming the dead worker's pid (the cause says the signal or exit
code); ``timeout`` bounds the wait for one batch. An exception inside a worker comes back as an
``ExceptionWrapper`` and is raised here with the worker's traceback.

Shutdown (the pass ends, or the iterator is deleted, as when a loop breaks early): workers are told to stop, joined
with a deadline, and any still alive then are terminated through their own Process objects. With
``persistent_workers`` the workers outlive the pass: the next ``iter(loader)`` reuses them (and this iterator).
"""
from __future__ import annotations

import atexit
import itertools
import multiprocessing.connection
import os
import pickle
import queue
import signal
import threading
import time
import warnings
import weakref
from pickle import PicklingError
from typing import Any

from ... import multiprocessing as ember_multiprocessing
from ...cuda import current_device
from ._exception_wrapper import ExceptionWrapper
from ._loader_iter import _BaseDataLoaderIter
from ._pin_memory import pin_memory_loop
from ._worker import IterableDatasetStopIteration, ResumeIteration, WorkerConfig, worker_loop

# Seconds between checks that the workers (and the pinning thread) are alive while a batch is awaited.
STATUS_CHECK_S = 0.1
# Seconds a result that cannot be received waits for its sender's death to show before it is raised as it is.
DYING_S = 1.0
# Seconds a shutdown waits for all workers to exit before terminating those left.
JOIN_S = 5.0

_PICKLE_WARNING = ("Got pickle error when attempting to start a worker Process. This might be because the worker "
                   "Process arguments are not picklable. Python 3.14+ changed the multiprocessing start method in "
                   "non-Mac POSIX platforms to 'forkserver', which requires the worker Process arguments to be "
                   "picklable. You can also try multiprocessing.set_start_method('fork').")

# Iterators whose workers may still run. At interpreter exit multiprocessing terminates daemonic children with
# SIGTERM, which skips their own clean-up (Numba's lock in a spawned worker would stay registered as leaked), so an
# exit hook, registered after multiprocessing's and so run before it, shuts them down as a finished pass does.
_live_iterators: weakref.WeakSet = weakref.WeakSet()
_exit_hook_registered = False


def _shutdown_live_iterators() -> None:
    for iterator in list(_live_iterators):
        iterator._shutdown_workers()


def _track(iterator: "_MultiProcessingDataLoaderIter") -> None:
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_shutdown_live_iterators)
        _exit_hook_registered = True
    _live_iterators.add(iterator)


def _exit_detail(process: Any) -> str | None:
    """Why a dead worker died, in torch's words: the signal that killed it or its exit code (None for 0)."""
    code = process.exitcode
    if not code:
        return None
    if code < 0:
        detail = f"DataLoader worker (pid {process.pid}) is killed by signal: {signal.strsignal(-code)}. "
        if -code == signal.SIGBUS:
            detail += ("It is possible that dataloader's workers are out of shared memory. Please try to raise your "
                       "shared memory limit.")
        return detail
    return (f"DataLoader worker (pid {process.pid}) exited unexpectedly with exit code {code}. Details are lost due "
            "to multiprocessing. Rerunning with num_workers=0 may give better error trace.")


def _start(process: Any) -> None:
    """Start a worker; a pickling failure (spawn and forkserver pickle its arguments) gets torch's hint."""
    try:
        process.start()
    except (TypeError, AttributeError, PicklingError):
        warnings.warn(_PICKLE_WARNING, stacklevel=5)
        raise


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Batches of one pass (or of every pass, with persistent workers) loaded by worker processes."""

    _shutdown = True  # until workers are being started there is nothing to shut down

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or ember_multiprocessing
        config = WorkerConfig(self._dataset, self._iterable, self._auto_collation, self._collate_fn,
                              self._drop_last, self._base_seed, loader.worker_init_fn, self._num_workers)
        self._owner_pid = os.getpid()
        self._worker_result_queue = context.Queue()
        self._workers_done_event = context.Event()
        self._index_queues: list = []
        self._workers: list = []
        self._shutdown = False
        _track(self)
        try:
            for worker_id in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()  # a worker that stopped reading must not hold up our exit
                process = context.Process(target=worker_loop, daemon=True, args=(
                    config, worker_id, index_queue, self._worker_result_queue, self._workers_done_event))
                _start(process)
                self._index_queues.append(index_queue)
                self._workers.append(process)
            if self._pin_memory:
                self._start_pinning_thread()
            else:
                self._data_queue = self._worker_result_queue
            self._reset(loader, first_iter=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def _start_pinning_thread(self) -> None:
        self._pin_memory_thread_done_event = threading.Event()
        self._data_queue = queue.Queue()
        self._pin_memory_thread = threading.Thread(target=pin_memory_loop, daemon=True, args=(
            self._worker_result_queue, self._data_queue, self._pin_memory_thread_done_event, current_device(),
            pickle.loads))
        self._pin_memory_thread.start()

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        """Start a pass: persistent workers are told to start afresh (what they still send of an unfinished
        pass is dropped), then the first ``prefetch_factor`` tasks per worker go out."""
        if not first_iter:
            super()._reset(loader)
        self._send_idx = 0  # number of the next task to send
        self._rcvd_idx = 0  # number of the next task to hand out (with in_order)
        self._task_info: dict[int, tuple] = {}  # task -> (worker,) while outstanding, (worker, data) once in
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers  # still given tasks this pass
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            unacknowledged = self._num_workers
            while unacknowledged:
                task, _ = self._get_data()
                unacknowledged -= isinstance(task, ResumeIteration)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float) -> tuple[bool, Any]:
        """``(True, (task, data))``, or ``(False, None)`` when nothing came within ``timeout``; raises if a worker
        died (a result whose shared memory cannot be received, its sender gone, is one sign of that)."""
        try:
            message = self._data_queue.get(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - an empty queue or a broken pipe: first, is a worker dead?
            self._raise_if_workers_died(exc)
            if isinstance(exc, queue.Empty):
                return False, None
            raise
        try:
            task, data = message if self._pin_memory else pickle.loads(message)
        except Exception as exc:  # noqa: BLE001 - raised below if no dead worker explains it
            self._raise_if_a_worker_is_dying(exc)
            raise
        if task is None:  # the pinning thread could not receive a result
            self._raise_if_a_worker_is_dying(RuntimeError(data.exc_msg))
            data.reraise()
        return True, (task, data)

    def _raise_if_a_worker_is_dying(self, cause: BaseException) -> None:
        """As ``_raise_if_workers_died``, once a worker has had ``DYING_S`` to finish exiting: a sender whose
        shared memory cannot be had any more has closed its sockets, but may not have been reaped yet."""
        active = {w.sentinel: w for i, w in enumerate(self._workers) if self._workers_status[i]}
        for sentinel in multiprocessing.connection.wait(list(active), timeout=DYING_S):
            active[sentinel].join(timeout=DYING_S)  # its sentinel closes a moment before it can be reaped
        self._raise_if_workers_died(cause)

    def _raise_if_workers_died(self, cause: BaseException) -> None:
        dead = [i for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
        if not dead:
            return
        for worker_id in dead:
            self._mark_worker_as_unavailable(worker_id)
        details = "".join(filter(None, (_exit_detail(self._workers[i]) for i in dead)))
        pids = ", ".join(str(self._workers[i].pid) for i in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") \
            from (RuntimeError(details) if details else cause)

    def _get_data(self) -> tuple:
        """The next result to arrive, waiting at most ``timeout`` seconds when the loader has one."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_S
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            if self._pin_memory and not self._pin_memory_thread.is_alive():
                raise RuntimeError("Pin memory thread exited unexpectedly")
            received, data = self._try_get_data(wait)
            if received:
                return data

    def _next_data(self) -> Any:
        while True:
            # Skip the tasks that will never come back: those of workers no longer active (an exhausted iterable
            # dataset, a dead worker), and those already handed out of order.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            task, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._iterable and isinstance(data, IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if self._in_order and task != self._rcvd_idx:
                self._task_info[task] += (data,)  # early: it waits for its turn
                continue
            worker_id = self._task_info.pop(task)[0]
            if task == self._rcvd_idx:
                self._rcvd_idx += 1
            return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        """Send the sampler's next entry to the next active worker (one with room, with in_order=False)."""
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        room = self._prefetch_factor * self._num_workers // max(1, sum(self._workers_status))
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id] and (self._in_order or self._workers_num_tasks[worker_id] < room):
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data: Any, worker_id: int) -> Any:
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        """No more tasks for this worker this pass; None tells it to exit."""
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop the pinning thread and the workers: ask, wait until ``JOIN_S`` has passed, then terminate."""
        if self._shutdown or os.getpid() != self._owner_pid:
            return
        self._shutdown = True
        try:
            if hasattr(self, "_pin_memory_thread"):
                self._pin_memory_thread_done_event.set()
                self._pin_memory_thread.join(timeout=JOIN_S)
            self._workers_done_event.set()
            for index_queue in self._index_queues:
                index_queue.put(None)
            deadline = time.monotonic() + JOIN_S
            for process in self._workers:
                process.join(timeout=max(0.0, deadline - time.monotonic()))
        finally:
            for process in self._workers:
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=JOIN_S)
            for q in (*self._index_queues, self._worker_result_queue):
                q.cancel_join_thread()
                q.close()

    def __del__(self) -> None:
        self._shutdown_workers()


__all__ = ["_MultiProcessingDataLoaderIter"]
