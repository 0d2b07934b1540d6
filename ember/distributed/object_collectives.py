"""torch's object collectives: picklable Python objects through MPI (pickled bytes as uint8 buffers)."""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from . import mpi_engine
from .process_group import GroupMember, ProcessGroup, get_group_rank, resolve_group

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list"]


def _member(group: Any) -> ProcessGroup | None:
    return None if group is GroupMember.NON_GROUP_MEMBER else resolve_group(group)


def _bytes_of(obj: Any) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def _wait(pg: ProcessGroup, request: Any, what: str) -> None:
    mpi_engine.wait_all([request], pg.deadline(), what)


def _gathered(pg: ProcessGroup, obj: Any, root: int | None, what: str) -> list | None:
    """Every rank's ``obj`` (on every rank when ``root`` is None, else on ``root`` only)."""
    payload = _bytes_of(obj)
    sizes = np.empty(pg.size(), dtype=np.int64)
    _wait(pg, pg.comm.Iallgather(np.array([payload.size], dtype=np.int64), sizes), what)
    data = np.empty(int(sizes.sum()), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
    receive = [data, (sizes.astype(int).tolist(), offsets)]
    if root is None:
        _wait(pg, pg.comm.Iallgatherv(payload, receive), what)
    else:
        _wait(pg, pg.comm.Igatherv(payload, receive if pg.rank() == root else None, root=root), what)
        if pg.rank() != root:
            return None
    return [pickle.loads(data[o:o + s].tobytes()) for o, s in zip(offsets, sizes.astype(int))]


def all_gather_object(object_list: list, obj: Any, group: ProcessGroup | None = None) -> None:
    """Every rank's ``obj`` into ``object_list`` (one entry per rank) on every rank."""
    pg = _member(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries for {pg.size()} ranks")
    object_list[:] = _gathered(pg, obj, None, "all_gather_object")


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None,
                  group: ProcessGroup | None = None, group_dst: int | None = None) -> None:
    """Every rank's ``obj`` into ``dst``'s ``object_gather_list``."""
    pg = _member(group)
    if pg is None:
        return
    root = group_dst if group_dst is not None else get_group_rank(pg, 0 if dst is None else dst)
    if pg.rank() == root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: the destination needs an object_gather_list of {pg.size()} entries")
    gathered = _gathered(pg, obj, root, "gather_object")
    if gathered is not None:
        object_gather_list[:] = gathered


def broadcast_object_list(object_list: list, src: int | None = None, group: ProcessGroup | None = None,
                          device: Any = None, group_src: int | None = None) -> None:
    """``src``'s ``object_list`` entries into every rank's ``object_list`` (same length everywhere)."""
    pg = _member(group)
    if pg is None:
        return
    root = group_src if group_src is not None else get_group_rank(pg, 0 if src is None else src)
    payload = _bytes_of(list(object_list)) if pg.rank() == root else None
    size = np.array([0 if payload is None else payload.size], dtype=np.int64)
    _wait(pg, pg.comm.Ibcast(size, root=root), "broadcast_object_list")
    data = payload if payload is not None else np.empty(int(size[0]), dtype=np.uint8)
    _wait(pg, pg.comm.Ibcast(data, root=root), "broadcast_object_list")
    if pg.rank() != root:
        received = pickle.loads(data.tobytes())
        if len(received) != len(object_list):
            raise RuntimeError(f"broadcast_object_list: rank {pg.rank()} has {len(object_list)} slots, the source "
                               f"sent {len(received)} objects")
        object_list[:] = received


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group: ProcessGroup | None = None,
                        group_src: int | None = None) -> None:
    """``src``'s ``scatter_object_input_list[i]`` into rank i's ``scatter_object_output_list[0]``."""
    pg = _member(group)
    if pg is None:
        return
    if not scatter_object_output_list:
        raise ValueError("scatter_object_list: scatter_object_output_list must have at least one element")
    root = group_src if group_src is not None else get_group_rank(pg, 0 if src is None else src)
    chunks = None
    if pg.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: the source needs {pg.size()} input objects")
        chunks = [_bytes_of(o) for o in scatter_object_input_list]
    sizes = np.array([c.size for c in chunks], dtype=np.int64) if chunks else None
    mine = np.empty(1, dtype=np.int64)
    _wait(pg, pg.comm.Iscatter(sizes, mine, root=root), "scatter_object_list")
    data = np.empty(int(mine[0]), dtype=np.uint8)
    send = None
    if chunks:
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        send = [np.concatenate(chunks), (sizes.astype(int).tolist(), offsets)]
    _wait(pg, pg.comm.Iscatterv(send, data, root=root), "scatter_object_list")
    scatter_object_output_list[0] = pickle.loads(data.tobytes())
