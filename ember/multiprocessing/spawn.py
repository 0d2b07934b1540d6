"""torch's ``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and join them as a group.

The first child to fail decides the outcome: the others are stopped (SIGTERM, then SIGKILL after a grace period)
and ``ProcessContext.join`` raises ``ProcessRaisedException`` with the child's traceback text when it raised, or
``ProcessExitedException`` with its exit code or signal when it died otherwise. A child writes its traceback to
an error file of its own, so a long traceback never blocks it on a full pipe. On Linux every child asks to get
SIGINT when its parent dies, so a killed parent leaves no orphans.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import time
import traceback
import warnings
from typing import Callable

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "start_processes"]

_PR_SET_PDEATHSIG = 1


class ProcessException(Exception):
    """A child of a ``ProcessContext`` failed: which one (``error_index``) and its pid (``error_pid``)."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child raised an exception; the message carries its traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero code or was killed by a signal (``exit_code``, ``signal_name``)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _run(fn: Callable, index: int, args: tuple, error_file: str) -> None:
    """A child's body: ``fn(index, *args)``; an exception's traceback goes to ``error_file`` and exit code 1."""
    _die_with_parent()
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted the group
    except Exception:
        with open(error_file, "w", encoding="utf-8") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started; ``join`` waits for them and raises the first failure."""

    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        """The children's process ids, by index."""
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for children to end. True when all have ended well, False while some
        still run; when one failed, stop the rest (``grace_period`` seconds to end on their own first) and raise
        ``ProcessRaisedException`` or ``ProcessExitedException`` for it."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_all(grace_period)
        raise self._failure(failed)

    def _stop_all(self, grace_period: float | None) -> None:
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_all(30.0 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()
        self.sentinels.clear()

    def _join_all(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))

    def _failure(self, index: int) -> ProcessException:
        process = self.processes[index]
        try:
            with open(self.error_files[index], encoding="utf-8") as f:
                trace = f.read()
        except OSError:
            trace = None
        if trace is not None:
            return ProcessRaisedException(f"\n\n-- Process {index} terminated with the following error:\n{trace}",
                                          index, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {index} terminated with signal {name}", index, process.pid,
                                          code, name)
        return ProcessExitedException(f"process {index} terminated with exit code {code}", index, process.pid, code)

    def __del__(self) -> None:
        for path in getattr(self, "error_files", ()):
            try:
                os.unlink(path)
            except OSError:
                pass


def _error_file() -> str:
    """A fresh path for a child's traceback (the file itself is made only if the child fails)."""
    fd, path = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".txt")
    os.close(fd)
    os.unlink(path)
    return path


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; join them all (raising the
    first failure) when ``join``, else return their ``ProcessContext``."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for index in range(nprocs):
        error_files.append(_error_file())
        process = context.Process(target=_run, args=(fn, index, args, error_files[-1]), daemon=daemon)
        process.start()
        processes.append(process)
    group = ProcessContext(processes, error_files)
    if not join:
        return group
    while not group.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """``start_processes`` with the ``spawn`` start method (``fn`` must be importable: defined at module top).
    Another ``start_method`` is ignored with a FutureWarning, as in torch: use ``start_processes`` for it."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t ember.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
