"""Process groups (torch's c10d front end): ``init_process_group`` and the group registry, on MPI communicators."""
from __future__ import annotations

import datetime
import enum
import os
import urllib.parse
from typing import Any

from . import mpi_engine
from .store import FileStore, PrefixStore, Store, TCPStore

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "default_pg_timeout", "destroy_process_group",
           "get_backend", "get_group_rank", "get_global_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "is_available", "is_gloo_available",
           "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "new_group"]

default_pg_timeout = datetime.timedelta(minutes=30)
_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class Backend(str):
    """torch's backend names; ``"gloo"`` and ``"mpi"`` both run on ember's MPI engine."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str) -> "Backend":
        value = str(name).lower()
        if value not in (cls.GLOO, cls.NCCL, cls.MPI, cls.UNDEFINED) and ":" not in value:
            raise ValueError(f"Invalid backend: '{name}'")
        return super().__new__(cls, value)


class ReduceOp(enum.Enum):
    """torch's reduction operations."""

    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    BAND = 4
    BOR = 5
    BXOR = 6
    AVG = 7
    UNUSED = 8

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


class ProcessGroup:
    """A set of ranks over one MPI communicator; ``ranks`` are the members' global ranks in group order."""

    def __init__(self, comm: Any, ranks: list[int], backend: str, timeout: datetime.timedelta) -> None:
        self.comm = comm
        self.ranks = ranks
        self.backend = Backend(backend)
        self.timeout = timeout

    def rank(self) -> int:
        """This process's rank in the group."""
        return self.comm.Get_rank()

    def size(self) -> int:
        """The number of ranks in the group."""
        return self.comm.Get_size()

    def name(self) -> str:
        """The backend's name, as torch's ``ProcessGroup.name``."""
        return str(self.backend)

    def deadline(self) -> float:
        """When a collective started now must have finished (``time.monotonic``)."""
        import time

        return time.monotonic() + self.timeout.total_seconds()

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend!r}, rank={self.rank()}, size={self.size()})"


class GroupMember:
    """torch's markers: ``WORLD`` (the default group once initialized) and ``NON_GROUP_MEMBER``."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801 - torch's name
    """``group.WORLD``: the default process group."""

    WORLD: ProcessGroup | None = None


_world: dict[str, Any] = {"pg": None, "store": None, "groups": []}


def is_available() -> bool:
    """Whether collectives can run: mpi4py (with an MPI library) is importable."""
    return mpi_engine.mpi_importable()


def is_mpi_available() -> bool:
    """Whether the MPI backend is available."""
    return is_available()


def is_gloo_available() -> bool:
    """Whether ``"gloo"`` is available (ember serves it with MPI)."""
    return is_available()


def is_nccl_available() -> bool:
    """NCCL is not part of ember's CPU build."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether a launcher (``ember.distributed.run``) started this process."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return _world["pg"] is not None


def _default_group() -> ProcessGroup:
    if _world["pg"] is None:
        raise ValueError(_NOT_INITIALIZED)
    return _world["pg"]


def resolve_group(pg: ProcessGroup | None) -> ProcessGroup:
    """``pg`` or the default group; the default must exist."""
    if pg is None or pg is GroupMember.WORLD:
        return _default_group()
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    return pg


def _env_int(name: str, given: int) -> int:
    if given is not None and given >= 0:
        return given
    if name not in os.environ:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                         f"{name} expected, but not set")
    return int(os.environ[name])


def _rendezvous(init_method: str, rank: int, world_size: int, timeout: datetime.timedelta) -> tuple[Store, int, int]:
    """The store, rank and world size that ``init_method`` names (torch's env://, tcp:// and file:// forms)."""
    url = urllib.parse.urlparse(init_method)
    query = dict(urllib.parse.parse_qsl(url.query))
    rank = int(query.get("rank", rank))
    world_size = int(query.get("world_size", world_size))
    if url.scheme == "env":
        rank, world_size = _env_int("RANK", rank), _env_int("WORLD_SIZE", world_size)
        host = os.environ.get("MASTER_ADDR")
        port = os.environ.get("MASTER_PORT")
        if host is None or port is None:
            missing = "MASTER_ADDR" if host is None else "MASTER_PORT"
            raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                             f"{missing} expected, but not set")
        return TCPStore(host, int(port), world_size, rank == 0, timeout), rank, world_size
    if rank < 0 or world_size < 0:
        raise ValueError(f"rank and world_size must be given with init_method={init_method!r}")
    if url.scheme == "tcp":
        return TCPStore(url.hostname, url.port, world_size, rank == 0, timeout), rank, world_size
    if url.scheme == "file":
        return FileStore(url.path, world_size, timeout), rank, world_size
    raise ValueError(f"No rendezvous handler for {url.scheme}://")


def _check_backend(backend: str | None) -> str:
    name = Backend(backend or Backend.GLOO)
    if name == Backend.NCCL:
        raise RuntimeError("Distributed package doesn't have NCCL built in: ember's collectives run on MPI; use "
                           "backend='gloo' or 'mpi'")
    if ":" in name:  # torch's "cpu:gloo,cuda:nccl" form: the CPU part decides here
        parts = dict(part.split(":", 1) for part in name.split(","))
        return _check_backend(parts.get("cpu", Backend.GLOO))
    return Backend.GLOO if name == Backend.UNDEFINED else name


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store: Store | None = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """torch's ``init_process_group``: form the default group. Under ``mpiexec`` with nothing else given, rank
    and size come from MPI; otherwise from ``init_method`` (``env://`` by default) or ``store``, and the
    processes join over MPI's dynamic process connection (see ``mpi_engine``)."""
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    name = _check_backend(backend)
    timeout = timeout if timeout is not None else default_pg_timeout
    seconds = timeout.total_seconds()
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if store is None and init_method is None and mpi_engine.started_by_mpiexec() and "RANK" not in os.environ \
            and rank < 0:
        comm = mpi_engine.world_from_mpiexec()
    else:
        if store is None:
            store, rank, world_size = _rendezvous(init_method or "env://", rank, world_size, timeout)
        elif rank < 0 or world_size < 0:
            raise ValueError("rank and world_size must be given with store")
        if not 0 <= rank < world_size:
            raise ValueError(f"Invalid rank {rank} for world_size {world_size}")
        if mpi_engine.started_by_mpiexec() and mpi_engine.load_mpi().COMM_WORLD.Get_size() == world_size:
            comm = mpi_engine.world_from_mpiexec()
        else:
            comm = mpi_engine.world_from_store(PrefixStore(group_name or "default_pg", store), rank, world_size,
                                               seconds)
        _world["store"] = store
    pg = ProcessGroup(comm, list(range(comm.Get_size())), name, timeout)
    _world["pg"] = pg
    GroupMember.WORLD = group.WORLD = pg


def destroy_process_group(group: ProcessGroup | None = None) -> None:  # noqa: A002 - torch's name
    """Free ``group``'s communicator; with no argument (or the default group), every group."""
    if group is None or group is _world["pg"]:
        for pg in _world["groups"] + ([_world["pg"]] if _world["pg"] is not None else []):
            pg.comm.Disconnect()  # waits for the peers' traffic; ends a dynamic connection cleanly
        _world["groups"].clear()
        _world["pg"] = None
        GroupMember.WORLD = globals()["group"].WORLD = None
        store = _world["store"]
        if isinstance(store, TCPStore):
            store.close()
        _world["store"] = None
        return
    group.comm.Disconnect()
    _world["groups"].remove(group)


def new_group(ranks: list[int] | None = None, timeout: datetime.timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False, group_desc: str | None = None
              ) -> ProcessGroup | int:
    """torch's ``new_group``: every rank of the default group calls it; members get the new group, the others
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default_group()
    ranks = sorted(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r} is not in the default group of size {world.size()}")
    me = world.rank()
    mpi = mpi_engine.load_mpi()
    comm = world.comm.Split(0 if me in ranks else mpi.UNDEFINED, ranks.index(me) if me in ranks else 0)
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks, _check_backend(backend or world.backend), timeout or world.timeout)
    _world["groups"].append(pg)
    return pg


def get_rank(group: ProcessGroup | None = None) -> int:  # noqa: A002
    """This process's rank in ``group`` (the default group by default); -1 when it is not a member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve_group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:  # noqa: A002
    """The number of ranks in ``group``; -1 when this process is not a member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve_group(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:  # noqa: A002
    """The backend name of ``group``."""
    return resolve_group(group).backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:  # noqa: A002
    """The global ranks of ``group``'s members, in group order."""
    return list(resolve_group(group).ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:  # noqa: A002
    """The global rank of ``group``'s member ``group_rank``."""
    return resolve_group(group).ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:  # noqa: A002
    """``global_rank``'s rank within ``group``."""
    pg = resolve_group(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg.ranks.index(global_rank)
