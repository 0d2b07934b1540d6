"""ember.distributed collectives on 2-3 processes over loopback, checked against NumPy (each launch runs many
checks: a group costs seconds to start on a small machine)."""
from __future__ import annotations

import datetime
import os
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember.distributed.run import free_loopback_port  # noqa: E402

TIMEOUT = datetime.timedelta(seconds=20)


def _launch(fn, args: tuple, nprocs: int, timeout_s: float = 150.0) -> None:
    """Start ``nprocs`` processes and join them within ``timeout_s``; stop them all (by pid) otherwise."""
    context = ember.multiprocessing.start_processes(fn, args=args, nprocs=nprocs, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout_s
    try:
        while not context.join(timeout=1.0):
            assert time.monotonic() < deadline, f"{fn.__name__} did not finish within {timeout_s} s"
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
            process.join()



def _values(rank: int, shape=(2, 3), dtype=np.float32) -> np.ndarray:
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * rank + 1).astype(dtype)


def _check_collectives(rank: int, world: int) -> None:
    all_values = [_values(r) for r in range(world)]
    expect = {dist.ReduceOp.SUM: np.sum(all_values, 0), dist.ReduceOp.PRODUCT: np.prod(all_values, 0),
              dist.ReduceOp.MIN: np.min(all_values, 0), dist.ReduceOp.MAX: np.max(all_values, 0),
              dist.ReduceOp.AVG: np.mean(all_values, 0)}
    for op, want in expect.items():
        t = ember.tensor(_values(rank))
        dist.all_reduce(t, op=op)
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    ints = [_values(r, dtype=np.int64) for r in range(world)]
    for op, fold in ((dist.ReduceOp.BAND, np.bitwise_and), (dist.ReduceOp.BOR, np.bitwise_or),
                     (dist.ReduceOp.BXOR, np.bitwise_xor)):
        t = ember.tensor(ints[rank])
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(t.numpy(), fold.reduce(ints))
    strided = ember.tensor(_values(rank, (3, 2))).t()  # not contiguous: results must land in the view
    dist.all_reduce(strided)
    np.testing.assert_allclose(strided.numpy(), np.sum([_values(r, (3, 2)) for r in range(world)], 0).T)
    half = ember.tensor(_values(rank)).to(ember.bfloat16)
    dist.all_reduce(half)
    np.testing.assert_allclose(half.float().numpy(), np.sum(all_values, 0), rtol=1e-2)
    t = ember.tensor(_values(rank))
    dist.broadcast(t, src=world - 1)
    np.testing.assert_array_equal(t.numpy(), _values(world - 1))
    t = ember.tensor(_values(rank))
    dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    if rank == 0:
        np.testing.assert_array_equal(t.numpy(), expect[dist.ReduceOp.MAX])
    outs = [ember.zeros(2, 3) for _ in range(world)]
    dist.all_gather(outs, ember.tensor(_values(rank)))
    for r in range(world):
        np.testing.assert_array_equal(outs[r].numpy(), _values(r))
    big = ember.zeros(world * 2, 3)
    dist.all_gather_into_tensor(big, ember.tensor(_values(rank)))
    np.testing.assert_array_equal(big.numpy(), np.concatenate(all_values))
    gathered = [ember.zeros(2, 3) for _ in range(world)] if rank == 1 else None
    dist.gather(ember.tensor(_values(rank)), gathered, dst=1)
    if rank == 1:
        np.testing.assert_array_equal(np.stack([g.numpy() for g in gathered]), np.stack(all_values))
    got = ember.zeros(2, 3)
    dist.scatter(got, [ember.tensor(_values(r) * 2) for r in range(world)] if rank == 0 else None, src=0)
    np.testing.assert_array_equal(got.numpy(), _values(rank) * 2)
    inputs = [ember.tensor(_values(rank) + 100 * j) for j in range(world)]
    out = ember.zeros(2, 3)
    dist.reduce_scatter(out, inputs)
    np.testing.assert_allclose(out.numpy(), np.sum([_values(r) + 100 * rank for r in range(world)], 0))
    out = ember.zeros(2, 3)
    dist.reduce_scatter_tensor(out, ember.cat(inputs))
    np.testing.assert_allclose(out.numpy(), np.sum([_values(r) + 100 * rank for r in range(world)], 0))
    outs = [ember.zeros(j + 1) for j in range(world)]
    dist.all_to_all(outs, [ember.full((rank + 1,), float(10 * rank + j)) for j in range(world)])
    for j in range(world):
        np.testing.assert_array_equal(outs[j].numpy(), np.full(j + 1, 10 * j + rank, np.float32))
    single = ember.zeros(world)
    dist.all_to_all_single(single, ember.arange(world, dtype=ember.float32) + 10 * rank)
    np.testing.assert_array_equal(single.numpy(), np.arange(world) * 10 + rank)
    # async handles
    t = ember.tensor(_values(rank))
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed()
    np.testing.assert_allclose(t.numpy(), expect[dist.ReduceOp.SUM])
    # point to point around a ring
    box = ember.zeros(2, 3)
    send = dist.isend(ember.tensor(_values(rank)), dst=(rank + 1) % world)
    receive = dist.irecv(box, src=(rank - 1) % world)
    send.wait()
    receive.wait()
    np.testing.assert_array_equal(box.numpy(), _values((rank - 1) % world))
    # object collectives
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank, "text": "x" * rank})
    assert objects == [{"rank": r, "text": "x" * r} for r in range(world)]
    listing = [rank, "a"] if rank == 0 else [None, None]
    dist.broadcast_object_list(listing, src=0)
    assert listing == [0, "a"]
    gathered_objects = [None] * world if rank == 0 else None
    dist.gather_object(("r", rank), gathered_objects, dst=0)
    if rank == 0:
        assert gathered_objects == [("r", r) for r in range(world)]
    slot = [None]
    dist.scatter_object_list(slot, [{"to": r} for r in range(world)] if rank == 0 else None, src=0)
    assert slot == [{"to": rank}]
    # a subgroup of the first two ranks: global ranks in src/dst
    sub = dist.new_group([0, 1])
    if rank < 2:
        t = ember.tensor(_values(rank))
        dist.all_reduce(t, group=sub)
        np.testing.assert_allclose(t.numpy(), _values(0) + _values(1))
        t = ember.tensor(_values(rank))
        dist.broadcast(t, src=1, group=sub)
        np.testing.assert_array_equal(t.numpy(), _values(1))
        assert dist.get_world_size(sub) == 2 and dist.get_rank(sub) == rank
    else:
        assert sub == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
    # a mismatched collective raises on every rank, naming the op
    with pytest.raises(RuntimeError, match="all_reduce"):
        dist.all_reduce(ember.zeros(rank + 1))
    dist.barrier()


def _worker(rank: int, world: int, port: int, init: str, path: str) -> None:
    if init == "env":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
        dist.init_process_group("gloo", timeout=TIMEOUT)
    elif init == "tcp":
        dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=TIMEOUT)
    else:
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world, timeout=TIMEOUT)
    assert dist.is_initialized() and dist.get_rank() == rank and dist.get_world_size() == world
    assert dist.get_backend() == ("mpi" if init == "tcp" else "gloo")
    _check_collectives(rank, world)
    dist.destroy_process_group()
    assert not dist.is_initialized()


@pytest.mark.parametrize("world,init", [(2, "env"), (3, "tcp"), (2, "file")])
def test_collectives_match_numpy(world, init, tmp_path):
    _launch(_worker, (world, free_loopback_port(), init, str(tmp_path / "store")), world)


def _dying_worker(rank: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
    if rank == 1:
        os._exit(0)  # dies without taking part
    with pytest.raises(RuntimeError, match="all_reduce timed out"):
        dist.all_reduce(ember.ones(4))
    os._exit(0)  # the group is broken: leave without the collective disconnect


def test_dead_rank_makes_the_others_fail_within_the_timeout():
    started = time.monotonic()
    _launch(_dying_worker, (free_loopback_port(),), 2)
    assert time.monotonic() - started < 60


def test_before_init_torch_messages():
    assert dist.is_available() and dist.is_mpi_available() and dist.is_gloo_available()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(ember.zeros(1))
    with pytest.raises(RuntimeError, match="NCCL"):
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    assert [op.name for op in dist.ReduceOp][:8] == ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"]
