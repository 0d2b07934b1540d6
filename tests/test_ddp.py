"""DistributedDataParallel on 2 ranks over loopback against one process on the full batch.

Each scenario runs inside one launch of two processes (a launch costs seconds); the workers pickle what they saw
into a directory and the test process compares it with a single-process reference computed here.
"""
from __future__ import annotations

import datetime
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.distributed.run import free_loopback_port
from ember.nn.parallel import DistributedDataParallel as DDP

pytest.importorskip("mpi4py")

WORLD = 2
LAUNCH_TIMEOUT_S = 240.0



def _entry(rank: int, fn, world: int, port: int, out_dir: str, args: tuple) -> None:
    import ember.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    result = fn(rank, world, *args)
    dist.barrier()
    with open(os.path.join(out_dir, f"{rank}.pkl"), "wb") as f:
        pickle.dump(result, f)
    dist.destroy_process_group()


def run_on_ranks(fn, *args, world: int = WORLD) -> list:
    """``fn(rank, world, *args)`` in ``world`` spawned processes in one group; their results, by rank."""
    import ember.multiprocessing as emp

    with tempfile.TemporaryDirectory() as out_dir:
        ctx = emp.spawn(_entry, args=(fn, world, free_loopback_port(), out_dir, args), nprocs=world, join=False)
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        try:
            while not ctx.join(timeout=max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"ranks did not finish within {LAUNCH_TIMEOUT_S} s")
        finally:
            for process in ctx.processes:
                if process.is_alive():
                    process.kill()
                    process.join(5)
        results = []
        for rank in range(world):
            with open(os.path.join(out_dir, f"{rank}.pkl"), "rb") as f:
                results.append(pickle.load(f))
        return results


# ----------------------------------------------------------------------------------------------------------------
# The models and data every rank and the reference share.

def _mlp(seed: int) -> nn.Module:
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))


def _data(n: int = 8):
    rng = np.random.default_rng(0)
    return (ember.tensor(rng.standard_normal((n, 5)).astype(np.float32)),
            ember.tensor(rng.standard_normal((n, 3)).astype(np.float32)))


def _params(model: nn.Module) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.parameters()]


def _grads(model: nn.Module) -> list:
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def _shard(t, rank: int, world: int):
    per = t.shape[0] // world
    return t[rank * per:(rank + 1) * per]


class _Branchy(nn.Module):
    """``extra`` feeds the output only on rank 0; ``never`` never does."""

    def __init__(self, use_extra: bool) -> None:
        super().__init__()
        self.body = nn.Linear(5, 3)
        self.extra = nn.Linear(5, 3)
        self.never = nn.Linear(5, 3)
        self.use_extra = use_extra

    def forward(self, x):
        y = self.body(x)
        return y + self.extra(x) if self.use_extra else y


STEPS = 3
LR = 0.1


def _train(model, x, y, steps: int = STEPS):
    opt = ember.optim.SGD(model.parameters(), lr=LR)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def _scenarios(rank: int, world: int) -> dict:
    """Everything checked on the ranks, in one launch."""
    x, y = _data()
    xs, ys = _shard(x, rank, world), _shard(y, rank, world)
    out: dict = {}

    # Training: ranks start from different seeds; the broadcast at construction makes rank 0's the start.
    # A tiny bucket cap gives several buckets, launched while backward runs.
    model = _mlp(seed=rank)
    ddp = DDP(model, bucket_cap_mb=0.0005)
    out["n_buckets"] = len(ddp.reducer.buckets)
    out["initial"] = _params(model)
    _train(ddp, xs, ys)
    out["trained"] = _params(model)
    out["state_keys"] = list(ddp.state_dict())

    # no_sync: two local micro-batches accumulate, the third backward all-reduces the sum.
    model = _mlp(seed=0)
    ddp = DDP(model)
    quarters = [_shard(xs, i, 2) for i in range(2)], [_shard(ys, i, 2) for i in range(2)]
    with ddp.no_sync():
        nn.functional.mse_loss(ddp(quarters[0][0]), quarters[1][0], reduction="sum").backward()
    out["after_no_sync"] = _grads(model)
    nn.functional.mse_loss(ddp(quarters[0][1]), quarters[1][1], reduction="sum").backward()
    out["accumulated"] = _grads(model)

    # find_unused_parameters: ``never`` stays None everywhere, ``extra`` gets rank 0's gradient averaged.
    ember.manual_seed(1)
    model = _Branchy(use_extra=rank == 0)
    ddp = DDP(model, find_unused_parameters=True)
    for _ in range(2):  # a second iteration proves the first one's reduction completed
        model.zero_grad()
        nn.functional.mse_loss(ddp(xs), ys).backward()
    out["branchy_grads"] = {n: None if p.grad is None else p.grad.numpy().copy()
                            for n, p in model.named_parameters()}

    # static_graph: the same, with the unused set found once.
    ember.manual_seed(1)
    model = _Branchy(use_extra=True)
    ddp = DDP(model, static_graph=True)
    for _ in range(2):
        model.zero_grad()
        nn.functional.mse_loss(ddp(xs), ys).backward()
    out["static_never_grad"] = model.never.weight.grad
    out["static_body_grad"] = model.body.weight.grad.numpy().copy()

    # Without find_unused_parameters an unused parameter leaves the reduction unfinished: the next forward says so.
    ember.manual_seed(1)
    ddp = DDP(_Branchy(use_extra=True))
    nn.functional.mse_loss(ddp(xs), ys).backward()
    try:
        ddp(xs)
        out["unfinished_error"] = None
    except RuntimeError as e:
        out["unfinished_error"] = str(e)

    # gradient_as_bucket_view: the grads live in the flat buckets, and equal the copied ones.
    model = _mlp(seed=0)
    ddp = DDP(model, gradient_as_bucket_view=True, bucket_cap_mb=0.0005)
    nn.functional.mse_loss(ddp(xs), ys).backward()
    flats = [b.flat.numpy() for b in ddp.reducer.buckets]
    out["views_share"] = [any(np.shares_memory(p.grad.numpy(), f) for f in flats) for p in model.parameters()]
    out["view_grads"] = _grads(model)

    # Buffers: rank 0's running statistics reach every rank at each forward.
    ember.manual_seed(0)
    bn_model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4))
    bn = bn_model[1]
    with ember.no_grad():
        bn.running_mean.fill_(float(rank + 1))
    ddp = DDP(bn_model)
    bn.eval()
    with ember.no_grad():
        bn.running_mean.fill_(float(10 * (rank + 1)))  # diverge again after construction
    ddp(xs)
    out["running_mean"] = bn.running_mean.numpy().copy()
    return out


@pytest.fixture(scope="module")
def ranks() -> list:
    return run_on_ranks(_scenarios)


def _close(a, b, tol: float = 1e-5) -> None:
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u, v, rtol=tol, atol=tol)


def test_parameters_broadcast_from_rank_0(ranks):
    _close(ranks[1]["initial"], _params(_mlp(seed=0)))
    _close(ranks[0]["initial"], ranks[1]["initial"], tol=0)


def test_training_matches_one_process_on_the_full_batch(ranks):
    assert ranks[0]["n_buckets"] > 1
    model = _mlp(seed=0)
    x, y = _data()
    _train(model, x, y)
    for r in ranks:
        _close(r["trained"], _params(model))


def test_state_dict_keys_are_prefixed_module(ranks):
    assert ranks[0]["state_keys"] == ["module." + k for k in _mlp(0).state_dict()]


def test_no_sync_accumulates_then_syncs_the_sum(ranks):
    x, y = _data()
    xs = [_shard(x, r, WORLD) for r in range(WORLD)]
    ys = [_shard(y, r, WORLD) for r in range(WORLD)]
    local = []
    for r in range(WORLD):  # rank r alone, its first quarter: the gradient no_sync left in place
        model = _mlp(0)
        nn.functional.mse_loss(model(_shard(xs[r], 0, 2)), _shard(ys[r], 0, 2), reduction="sum").backward()
        local.append(_grads(model))
    for r in range(WORLD):
        _close(ranks[r]["after_no_sync"], local[r])
    model = _mlp(0)
    nn.functional.mse_loss(model(x), y, reduction="sum").backward()  # all quarters summed, / world by DDP
    expected = [g / WORLD for g in _grads(model)]
    for r in ranks:
        _close(r["accumulated"], expected)


def test_find_unused_parameters(ranks):
    x, y = _data()
    per_rank = []
    for r in range(WORLD):
        ember.manual_seed(1)
        model = _Branchy(use_extra=r == 0)
        nn.functional.mse_loss(model(_shard(x, r, WORLD)), _shard(y, r, WORLD)).backward()
        per_rank.append({n: p.grad for n, p in model.named_parameters()})
    for r in ranks:
        got = r["branchy_grads"]
        assert got["never.weight"] is None and got["never.bias"] is None
        for name in ("body.weight", "body.bias"):
            np.testing.assert_allclose(got[name], sum(g[name].numpy() for g in per_rank) / WORLD, atol=1e-6)
        for name in ("extra.weight", "extra.bias"):  # used on rank 0 only: rank 1 contributes zeros
            np.testing.assert_allclose(got[name], per_rank[0][name].numpy() / WORLD, atol=1e-6)


def test_static_graph_handles_the_unused_parameter(ranks):
    x, y = _data()
    grads = []
    for r in range(WORLD):
        ember.manual_seed(1)
        model = _Branchy(use_extra=True)
        nn.functional.mse_loss(model(_shard(x, r, WORLD)), _shard(y, r, WORLD)).backward()
        grads.append(model.body.weight.grad.numpy())
    for r in ranks:
        assert r["static_never_grad"] is None
        np.testing.assert_allclose(r["static_body_grad"], sum(grads) / WORLD, atol=1e-6)


def test_unused_parameter_without_detection_raises_at_next_forward(ranks):
    for r in ranks:
        assert r["unfinished_error"] is not None and "find_unused_parameters=True" in r["unfinished_error"]


def test_gradient_as_bucket_view(ranks):
    x, y = _data()
    model = _mlp(seed=0)
    nn.functional.mse_loss(model(x), y).backward()
    for r in ranks:
        assert all(r["views_share"])
        _close(r["view_grads"], _grads(model))


def test_buffers_broadcast_each_forward(ranks):
    for r in ranks:
        np.testing.assert_array_equal(r["running_mean"], np.full(4, 10.0, dtype=np.float32))


def test_construction_needs_a_process_group():
    import ember.distributed as dist

    if dist.is_initialized():
        pytest.skip("a default group exists in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        DDP(nn.Linear(2, 2))



def test_ddp_digits_example_on_two_processes_learns_like_one():
    """The example under the launcher (2 ranks) and alone (1 rank): both learn, to about the same accuracy."""
    example = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "ddp_digits.py")
    quick = ["--epochs", "3", "--subset", "600", "--width", "8"]
    runs = {1: [sys.executable, example, *quick],
            2: [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", "--standalone", example,
                *quick]}
    accuracy = {}
    for world, command in runs.items():
        done = subprocess.run(command, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"({world} processes)" in done.stdout
        accuracy[world] = float(done.stdout.split("final held-out accuracy ")[1].split("%")[0])
    assert accuracy[1] > 50 and accuracy[2] > 50  # 10 classes: chance is 10%
    assert abs(accuracy[1] - accuracy[2]) < 15
