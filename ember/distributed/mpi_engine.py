"""The MPI engine under the process groups: loading mpi4py, forming the world communicator, bounded waits.

Two ways to a world communicator:

* started by ``mpiexec``: ``MPI.COMM_WORLD`` is the group;
* started any other way (``ember.multiprocessing.spawn``, ``ember.distributed.run``, by hand with ``env://``):
  every process is an MPI singleton, and the ranks join through MPI's dynamic process calls: rank 0 opens a port
  and publishes its name in the rendezvous store, every other rank ``Connect``s, and each connection is merged
  into the growing intracommunicator (``Intercomm.Merge``); a final ``Split`` orders it by rank.

MPICH 5.0's singletons cannot ``Connect``/``Accept`` (every singleton claims to be process 0 of the same world:
pmodels/mpich#7805), so a process outside ``mpiexec`` first gets a process manager of its own: it starts
``mpiexec -n 1 -pmi-port`` on a placeholder that only reports the PMI address and waits, and takes that address
as its own before MPI starts. Each process then belongs to a distinct one-process MPI world, which MPI's dynamic
connections join. The placeholder ends when its stdin closes: when this process exits, whichever way.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

_PMI_KEYS = ("PMI_PORT", "PMI_FD", "PMI_RANK", "PMI_ID", "PMIX_RANK")
_PLACEHOLDER = 'env | grep "^PMI_" > "$0.tmp" && mv "$0.tmp" "$0" && exec cat > /dev/null'
_SPIN_S = 0.05
_NAP_S = 2e-4

_state: dict[str, Any] = {"mpi": None, "manager": None}


def mpi_importable() -> bool:
    """Whether mpi4py (and an MPI library) can be imported, without starting MPI."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def started_by_mpiexec() -> bool:
    """Whether a process manager started this process (its PMI variables are set)."""
    return any(key in os.environ for key in _PMI_KEYS)


def _mpiexec() -> str:
    candidate = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return candidate if os.path.exists(candidate) else (shutil.which("mpiexec") or "mpiexec")


def _adopt_process_manager(timeout_s: float) -> None:
    """Start a one-process ``mpiexec`` whose PMI address this process takes as its own (see the module doc)."""
    folder = tempfile.mkdtemp(prefix="ember-pmi-")
    report = os.path.join(folder, "pmi")
    manager = subprocess.Popen([_mpiexec(), "-n", "1", "-pmi-port", "sh", "-c", _PLACEHOLDER, report],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(report):
        if manager.poll() is not None or time.monotonic() > deadline:
            manager.kill()
            manager.wait()
            raise RuntimeError("ember.distributed: could not start MPI's process manager (mpiexec -pmi-port)")
        time.sleep(0.002)
    with open(report, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            os.environ[key] = value
    shutil.rmtree(folder, ignore_errors=True)
    _state["manager"] = manager


def load_mpi(timeout_s: float = 60.0) -> Any:
    """``mpi4py.MPI``, started on first use (with a process manager of its own outside ``mpiexec``)."""
    if _state["mpi"] is not None:
        return _state["mpi"]
    import mpi4py

    if not started_by_mpiexec() and not _mpi_started():
        _adopt_process_manager(timeout_s)
        # MPICH 5.0 crashes in interpreter teardown after MPI_Finalize between dynamically connected processes;
        # exiting without it is clean: the peers have disconnected (destroy_process_group) and the process
        # manager's pipe closes with the process
        mpi4py.rc.finalize = False
    mpi4py.rc.threads = False
    from mpi4py import MPI

    if not mpi4py.rc.finalize:
        _unlink_own_shared_memory()
    _state["mpi"] = MPI
    return MPI


def _unlink_own_shared_memory() -> None:
    """Remove the names of the shared-memory segments MPICH mapped in this process while starting.

    MPICH removes them in ``MPI_Finalize``, which a singleton here skips (see ``load_mpi``), so every process
    would leave a 1 MB ``/dev/shm/mpich_shm_*`` behind. A one-process world has no other process to attach them
    (dynamically connected worlds talk over the network module), so the names can go now: the mappings stay valid
    and the memory is freed when the process ends, whichever way. Only segments mapped by this process (read from
    ``/proc/self/maps``) are touched."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            mapped = {line.split(maxsplit=5)[-1].strip() for line in f if "/mpich_shm_" in line}
    except OSError:  # not Linux: nothing to clean
        return
    for path in mapped:
        if path.startswith("/dev/shm/") and not path.endswith("(deleted)"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _mpi_started() -> bool:
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and mpi.Is_initialized()


def wait_all(requests: list, deadline: float, what: str, status: Any = None) -> None:
    """Wait for MPI requests and raise ``RuntimeError`` naming ``what`` once ``deadline`` (``time.monotonic``)
    passes: a peer that died or never came makes the caller fail instead of hang. MPI progresses only inside its
    calls, so the wait spins on ``Testall`` (as MPI's blocking calls do) for ``_SPIN_S``, then naps between tests.
    ``status`` (one request only) receives the completed request's status."""
    statuses = None if status is None else [status]
    test_all = _state["mpi"].Request.Testall
    if test_all(requests, statuses):
        return
    spin_until = time.monotonic() + _SPIN_S
    while not test_all(requests, statuses):
        now = time.monotonic()
        if now > deadline:
            raise RuntimeError(f"{what} timed out: not every rank of the group took part within the process "
                               f"group's timeout (a rank may have died or called a different collective)")
        if now > spin_until:
            time.sleep(_NAP_S)


def world_from_mpiexec() -> Any:
    """``COMM_WORLD`` duplicated (so ember's traffic never mixes with the user's)."""
    return load_mpi().COMM_WORLD.Dup()


def world_from_store(store: Any, rank: int, world_size: int, timeout_s: float) -> Any:
    """Join ``world_size`` singleton processes into one intracommunicator ordered by ``rank`` (module doc)."""
    mpi = load_mpi(timeout_s)
    if world_size == 1:
        return mpi.COMM_SELF.Dup()
    store.set(f"ember/mpi/arrived/{rank}", b"1")
    store.wait([f"ember/mpi/arrived/{r}" for r in range(world_size)])
    if rank == 0:
        port = mpi.Open_port()
        store.set("ember/mpi/port", port.encode())
        comm = mpi.COMM_SELF.Dup()
    else:
        port = store.get("ember/mpi/port").decode()
        _wait_for_turn(store, rank, timeout_s)
        inter = mpi.COMM_SELF.Connect(port)
        comm = inter.Merge(high=True)
        inter.Free()
    while comm.Get_size() < world_size:
        if comm.Get_rank() == 0:
            store.set("ember/mpi/turn", str(comm.Get_size()).encode())
        inter = comm.Accept(port)
        merged = inter.Merge(high=False)
        inter.Free()
        comm.Free()
        comm = merged
    if rank == 0:
        mpi.Close_port(port)
    ordered = comm.Split(0, rank)
    comm.Free()
    return ordered


def _wait_for_turn(store: Any, rank: int, timeout_s: float) -> None:
    """Connect in rank order, so that each ``Accept`` meets the rank the group expects next."""
    deadline = time.monotonic() + timeout_s
    while int(store.get("ember/mpi/turn")) != rank:
        if time.monotonic() > deadline:
            raise RuntimeError(f"rank {rank} timed out joining the MPI group")
        time.sleep(0.002)
