"""torch.distributed's tensor collectives and point-to-point calls on MPI's nonblocking operations.

Every call starts MPI requests and either returns a ``Work`` (``async_op=True``) or waits at once; waits poll the
requests against the group's timeout, so a dead or absent rank makes the others raise instead of hang. Calls
whose ranks must agree on sizes first compare them (one tiny all-reduce) and raise ``RuntimeError`` naming the op.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from . import mpi_engine
from .buffers import TensorBuffer, as_transferable, needs_float32_reduction
from .process_group import GroupMember, ProcessGroup, ReduceOp, get_group_rank, resolve_group

__all__ = ["Work", "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all", "all_to_all_single",
           "barrier", "broadcast", "gather", "irecv", "isend", "recv", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "send"]

_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR", ReduceOp.PRODUCT: "LAND",
             ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BXOR: "LXOR"}
_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
        ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


class Work:
    """torch's ``Work``: the handle of an operation in flight; ``wait`` finishes it (results land then)."""

    def __init__(self, requests: list, deadline: float, what: str, finish: Callable[[], Any] | None = None) -> None:
        self._requests, self._deadline, self._what, self._finish = requests, deadline, what, finish
        self._done = False
        self._result: Any = None

    def wait(self, timeout: Any = None) -> bool:
        """Block until the operation completes (or the group's timeout raises ``RuntimeError``)."""
        if not self._done:
            deadline = self._deadline if timeout is None else time.monotonic() + _seconds(timeout)
            mpi_engine.wait_all(self._requests, deadline, self._what)
            self._result = self._finish() if self._finish is not None else None
            self._done = True
        return True

    def is_completed(self) -> bool:
        """Whether the operation has completed (finishing it if MPI is done), without blocking."""
        if not self._done and mpi_engine.load_mpi().Request.Testall(self._requests):
            self.wait()
        return self._done

    def is_success(self) -> bool:
        """Whether it completed without error."""
        return self.is_completed()

    def result(self) -> Any:
        """The output (the received-from rank for ``irecv``), after ``wait``."""
        self.wait()
        return self._result


def _seconds(timeout: Any) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


def _run(pg: ProcessGroup, requests: list, what: str, finish: Callable[[], Any] | None, async_op: bool
         ) -> Work | None:
    work = Work(requests, pg.deadline(), what, finish)
    if async_op:
        return work
    work.wait()
    return None


def _member(group: Any) -> ProcessGroup | None:
    """The group, or None when this rank is not in it (torch: the call is then a no-op)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return resolve_group(group)


def _mpi_op(op: Any, dtype: np.dtype, what: str) -> Any:
    mpi = mpi_engine.load_mpi()
    op = ReduceOp(op) if not isinstance(op, ReduceOp) else op
    if op not in _OPS:
        raise ValueError(f"{what}: unsupported reduce op {op}")
    if dtype == np.bool_:
        return getattr(mpi, _BOOL_OPS[op]) if op in _BOOL_OPS else None
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "iub":
        raise RuntimeError(f"{what}: {op.name} needs an integer or bool tensor, got {dtype}")
    if op is ReduceOp.AVG and dtype.kind not in "fc" and dtype.name != "bfloat16":
        raise RuntimeError(f"{what}: AVG needs a floating point tensor, got {dtype}")
    return getattr(mpi, _OPS[op])


def _check_agree(pg: ProcessGroup, what: str, shape: tuple, deadline_what: str | None = None) -> None:
    """Raise ``RuntimeError`` naming ``what`` when the ranks' element counts differ."""
    if pg.size() == 1:
        return
    mpi = mpi_engine.load_mpi()
    count = int(np.prod(shape, dtype=np.int64))
    mine = np.array([count, -count], dtype=np.int64)
    extremes = np.empty_like(mine)
    request = pg.comm.Iallreduce(mine, extremes, op=mpi.MAX)
    mpi_engine.wait_all([request], pg.deadline(), deadline_what or what)
    if extremes[0] != -extremes[1]:
        raise RuntimeError(f"{what}: tensors differ in size across ranks (rank {pg.rank()} has shape "
                           f"{list(shape)} with {count} elements; the largest has {extremes[0]}, the smallest "
                           f"{-extremes[1]})")


def _root(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, what: str) -> int:
    if group_rank is not None:
        return int(group_rank)
    if global_rank is None:
        raise ValueError(f"{what}: give the root rank")
    return get_group_rank(pg, int(global_rank))


def _reduction(pg: ProcessGroup, buf: TensorBuffer, op: Any, what: str) -> tuple[np.ndarray, Any, Callable]:
    """The array to reduce, the MPI op, and how to move the reduced values into ``buf``."""
    array = buf.array
    work = array.astype(np.float32) if needs_float32_reduction(array) else array
    mpi_op = _mpi_op(op, work.dtype if array.dtype.name != "bfloat16" else np.dtype(np.float32), what)
    size = pg.size()
    average = (ReduceOp(op) if not isinstance(op, ReduceOp) else op) is ReduceOp.AVG

    def land() -> None:
        if average:
            np.divide(work, size, out=work, casting="unsafe")
        if work is not array:
            array[...] = work.astype(array.dtype)
        buf.commit()

    return work, mpi_op, land


def all_reduce(tensor: Any, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over the group, in place on every rank."""
    return all_reduce_agreed(tensor, op, group, async_op, check_sizes=True)


def all_reduce_agreed(tensor: Any, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
                      async_op: bool = False, check_sizes: bool = False) -> Work | None:
    """``all_reduce`` for callers that made sure the ranks' sizes agree (DDP's buckets, checked once at
    construction): without the size check, whose blocking round trip would make every bucket's launch a
    synchronisation point and keep its reduction from overlapping backward."""
    pg = _member(group)
    if pg is None:
        return None
    buf = TensorBuffer(tensor)
    if check_sizes:
        _check_agree(pg, "all_reduce", buf.shape)
    work, mpi_op, land = _reduction(pg, buf, op, "all_reduce")
    request = pg.comm.Iallreduce(mpi_engine.load_mpi().IN_PLACE, work, op=mpi_op)
    return _run(pg, [request], "all_reduce", land, async_op)


def broadcast(tensor: Any, src: int | None = None, group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``src``'s ``tensor`` into every rank's ``tensor``."""
    pg = _member(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast")
    buf = TensorBuffer(tensor)
    _check_agree(pg, "broadcast", buf.shape)
    request = pg.comm.Ibcast(buf.raw(), root=root)
    return _run(pg, [request], "broadcast", buf.commit, async_op)


def reduce(tensor: Any, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over the group into ``dst``'s ``tensor``."""
    pg = _member(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce")
    buf = TensorBuffer(tensor)
    _check_agree(pg, "reduce", buf.shape)
    work, mpi_op, land = _reduction(pg, buf, op, "reduce")
    mpi = mpi_engine.load_mpi()
    if pg.rank() == root:
        request = pg.comm.Ireduce(mpi.IN_PLACE, work, op=mpi_op, root=root)
        return _run(pg, [request], "reduce", land, async_op)
    request = pg.comm.Ireduce(work, None, op=mpi_op, root=root)
    return _run(pg, [request], "reduce", None, async_op)


def _stacked(tensors: list, what: str, like: np.ndarray) -> np.ndarray:
    """One contiguous block holding ``tensors`` one after another (each the shape and dtype of ``like``)."""
    block = np.empty((len(tensors),) + like.shape, dtype=like.dtype)
    for i, t in enumerate(tensors):
        array = t.detach().cpu().numpy()
        if array.shape != like.shape or array.dtype != like.dtype:
            raise RuntimeError(f"{what}: every tensor of the list must have shape {list(like.shape)} and dtype "
                               f"{like.dtype}, got {list(array.shape)} {array.dtype} at index {i}")
        block[i] = array
    return block


def _scatter_into(tensors: list, block: np.ndarray) -> Callable[[], None]:
    def land() -> None:
        for t, part in zip(tensors, block):
            out = TensorBuffer(t)
            out.array[...] = part.reshape(out.array.shape)
            out.commit()
    return land


def _check_list(pg: ProcessGroup, tensors: list, what: str) -> None:
    if len(tensors) != pg.size():
        raise ValueError(f"{what}: the tensor list has {len(tensors)} entries for a group of {pg.size()} ranks")


def all_gather(tensor_list: list, tensor: Any, group: ProcessGroup | None = None, async_op: bool = False
               ) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list`` (in rank order) on every rank."""
    pg = _member(group)
    if pg is None:
        return None
    _check_list(pg, tensor_list, "all_gather")
    buf = TensorBuffer(tensor)
    _check_agree(pg, "all_gather", buf.shape)
    block = np.empty((pg.size(),) + buf.shape, dtype=buf.array.dtype)
    request = pg.comm.Iallgather(buf.raw(), as_transferable(block))
    return _run(pg, [request], "all_gather", _scatter_into(tensor_list, block), async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``."""
    pg = _member(group)
    if pg is None:
        return None
    source, out = TensorBuffer(input_tensor), TensorBuffer(output_tensor)
    if out.array.size != source.array.size * pg.size():
        raise ValueError(f"all_gather_into_tensor: output has {out.array.size} elements, expected world size "
                         f"{pg.size()} times the input's {source.array.size} (input shape {list(source.shape)})")
    _check_agree(pg, "all_gather_into_tensor", source.shape)
    request = pg.comm.Iallgather(source.raw(), out.raw())
    return _run(pg, [request], "all_gather_into_tensor", out.commit, async_op)


def gather(tensor: Any, gather_list: list | None = None, dst: int | None = None, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``dst``'s ``gather_list``."""
    pg = _member(group)
    if pg is None:
        return None
    root = _root(pg, 0 if dst is None and group_dst is None else dst, group_dst, "gather")
    buf = TensorBuffer(tensor)
    _check_agree(pg, "gather", buf.shape)
    if pg.rank() != root:
        return _run(pg, [pg.comm.Igather(buf.raw(), None, root=root)], "gather", None, async_op)
    if gather_list is None:
        raise ValueError("gather: gather_list must be given on the destination rank")
    _check_list(pg, gather_list, "gather")
    block = np.empty((pg.size(),) + buf.shape, dtype=buf.array.dtype)
    request = pg.comm.Igather(buf.raw(), as_transferable(block), root=root)
    return _run(pg, [request], "gather", _scatter_into(gather_list, block), async_op)


def scatter(tensor: Any, scatter_list: list | None = None, src: int | None = None, group: ProcessGroup | None = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """``src``'s ``scatter_list[i]`` into rank i's ``tensor``."""
    pg = _member(group)
    if pg is None:
        return None
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "scatter")
    buf = TensorBuffer(tensor)
    _check_agree(pg, "scatter", buf.shape)
    block = None
    if pg.rank() == root:
        if scatter_list is None:
            raise ValueError("scatter: scatter_list must be given on the source rank")
        _check_list(pg, scatter_list, "scatter")
        block = as_transferable(_stacked(scatter_list, "scatter", buf.array))
    request = pg.comm.Iscatter(block, buf.raw(), root=root)
    return _run(pg, [request], "scatter", buf.commit, async_op)


def _reduce_scatter_block(pg: ProcessGroup, out: TensorBuffer, block: np.ndarray, op: Any, what: str,
                          async_op: bool) -> Work | None:
    _check_agree(pg, what, out.shape)
    work_out, mpi_op, land = _reduction(pg, out, op, what)
    send = block.astype(work_out.dtype) if block.dtype != work_out.dtype else block
    request = pg.comm.Ireduce_scatter_block(send, work_out, op=mpi_op)
    return _run(pg, [request], what, land, async_op)


def reduce_scatter(output: Any, input_list: list, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
                   async_op: bool = False) -> Work | None:
    """Reduce ``input_list[i]`` over the group into rank i's ``output``."""
    pg = _member(group)
    if pg is None:
        return None
    _check_list(pg, input_list, "reduce_scatter")
    out = TensorBuffer(output)
    return _reduce_scatter_block(pg, out, _stacked(input_list, "reduce_scatter", out.array), op,
                                 "reduce_scatter", async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: ReduceOp = ReduceOp.SUM,  # noqa: A002 - torch's name
                          group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce ``input`` (world size chunks) over the group; chunk i lands in rank i's ``output``."""
    pg = _member(group)
    if pg is None:
        return None
    out, source = TensorBuffer(output), TensorBuffer(input)
    if source.array.size != out.array.size * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input has {source.array.size} elements, expected world size "
                         f"{pg.size()} times the output's {out.array.size} (output shape {list(out.shape)})")
    return _reduce_scatter_block(pg, out, source.array, op, "reduce_scatter_tensor", async_op)


def _alltoallv(pg: ProcessGroup, send: np.ndarray, send_counts: list[int], recv: np.ndarray,
               recv_counts: list[int], what: str, finish: Callable[[], None], async_op: bool) -> Work | None:
    send_counts_all = np.empty(pg.size() * pg.size(), dtype=np.int64)
    request = pg.comm.Iallgather(np.asarray(send_counts, dtype=np.int64), send_counts_all)
    mpi_engine.wait_all([request], pg.deadline(), what)
    expected = send_counts_all.reshape(pg.size(), pg.size())[:, pg.rank()]
    if list(expected) != list(recv_counts):
        raise RuntimeError(f"{what}: rank {pg.rank()} expects {list(recv_counts)} elements from the ranks, they "
                           f"send {list(expected)}")
    offsets = lambda counts: np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()  # noqa: E731
    request = pg.comm.Ialltoallv([as_transferable(send), (list(send_counts), offsets(send_counts))],
                                 [as_transferable(recv), (list(recv_counts), offsets(recv_counts))])
    return _run(pg, [request], what, finish, async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Rank i's ``input_tensor_list[j]`` into rank j's ``output_tensor_list[i]``."""
    pg = _member(group)
    if pg is None:
        return None
    _check_list(pg, input_tensor_list, "all_to_all")
    _check_list(pg, output_tensor_list, "all_to_all")
    inputs = [np.ascontiguousarray(t.detach().cpu().numpy()).ravel() for t in input_tensor_list]
    outs = [TensorBuffer(t) for t in output_tensor_list]
    send = np.concatenate(inputs) if inputs else np.empty(0)
    recv = np.empty(sum(o.array.size for o in outs), dtype=outs[0].array.dtype)

    def land() -> None:
        offset = 0
        for o in outs:
            o.array[...] = recv[offset:offset + o.array.size].reshape(o.array.shape)
            offset += o.array.size
            o.commit()

    return _alltoallv(pg, send.astype(recv.dtype, copy=False), [a.size for a in inputs], recv,
                      [o.array.size for o in outs], "all_to_all", land, async_op)


def all_to_all_single(output: Any, input: Any, output_split_sizes: list[int] | None = None,  # noqa: A002
                      input_split_sizes: list[int] | None = None, group: ProcessGroup | None = None,
                      async_op: bool = False) -> Work | None:
    """Split ``input`` along dim 0 (equally, or by ``input_split_sizes``) and exchange the pieces; rank i's
    piece j lands in rank j's ``output`` at position i."""
    pg = _member(group)
    if pg is None:
        return None
    source, out = TensorBuffer(input), TensorBuffer(output)
    row_in = int(np.prod(source.shape[1:], dtype=np.int64)) if source.array.ndim else 1
    row_out = int(np.prod(out.shape[1:], dtype=np.int64)) if out.array.ndim else 1

    def counts(splits: list[int] | None, array: np.ndarray, row: int, name: str) -> list[int]:
        if splits is None:
            if array.shape[0] % pg.size():
                raise ValueError(f"all_to_all_single: {name} dim 0 ({array.shape[0]}) must divide by the world "
                                 f"size {pg.size()} when no split sizes are given")
            return [array.shape[0] // pg.size() * row] * pg.size()
        if len(splits) != pg.size() or sum(splits) != array.shape[0]:
            raise ValueError(f"all_to_all_single: {name} split sizes {list(splits)} must have one entry per rank "
                             f"and add up to dim 0 ({array.shape[0]})")
        return [int(s) * row for s in splits]

    return _alltoallv(pg, source.array, counts(input_split_sizes, source.array, row_in, "input"), out.array,
                      counts(output_split_sizes, out.array, row_out, "output"), "all_to_all_single",
                      out.commit, async_op)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank of the group reaches the barrier."""
    pg = _member(group)
    if pg is None:
        return None
    return _run(pg, [pg.comm.Ibarrier()], "barrier", None, async_op)


def isend(tensor: Any, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending ``tensor`` to ``dst``; the ``Work`` completes once the buffer may be reused."""
    pg = _member(group)
    if pg is None:
        return None
    peer = _root(pg, dst, group_dst, "isend")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the current process.")
    buf = TensorBuffer(tensor)
    return Work([pg.comm.Isend(buf.raw(), dest=peer, tag=tag)], pg.deadline(), "send")


def irecv(tensor: Any, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into ``tensor`` from ``src`` (any rank when None); ``Work.result()`` is the sender."""
    pg = _member(group)
    if pg is None:
        return None
    mpi = mpi_engine.load_mpi()
    peer = mpi.ANY_SOURCE if src is None and group_src is None else _root(pg, src, group_src, "irecv")
    buf = TensorBuffer(tensor)
    status = mpi.Status()
    request = pg.comm.Irecv(buf.raw(), source=peer, tag=tag)

    def land() -> int:
        buf.commit()
        return pg.ranks[status.Get_source()]

    return _ReceiveWork(request, status, pg, land)


class _ReceiveWork(Work):
    """A receive: its status (the sender) comes from the completed request."""

    def __init__(self, request: Any, status: Any, pg: ProcessGroup, land: Callable[[], int]) -> None:
        super().__init__([request], pg.deadline(), "recv", land)
        self._status = status

    def is_completed(self) -> bool:
        if not self._done and self._requests[0].Test(self._status):
            self._result = self._finish()
            self._done = True
        return self._done

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            deadline = self._deadline if timeout is None else time.monotonic() + _seconds(timeout)
            mpi_engine.wait_all(self._requests, deadline, "recv", self._status)
            self._result = self._finish()
            self._done = True
        return True


def send(tensor: Any, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to ``dst`` and wait until it is out."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from ``src`` (any rank when None); the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    return -1 if work is None else work.result()
