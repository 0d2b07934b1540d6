"""DataLoader with worker processes: torch's order, seeding, worker info, errors, shutdown, start methods.

Every loader here starts real worker processes (fork unless the test is about spawn) over small datasets; each
test ends with no child process left (the autouse fixture checks), and every wait is bounded.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, IterableDataset, TensorDataset, get_worker_info

FORK = "fork"


@pytest.fixture(autouse=True)
def no_workers_left():
    """After each test: its iterators collected, and no worker process of ours still alive."""
    yield
    gc.collect()
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def gone(pid: int) -> bool:
    """Whether process ``pid`` no longer exists (exited and reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


class Squares:
    """A map-style dataset (duck-typed, so torch's loader takes it too): sample i is i*i and a small array."""

    def __init__(self, n: int = 10) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return {"sq": i * i, "row": np.full(3, i, dtype=np.float32)}


class Seeds:
    """Each sample reports the worker it was read in and the first draws of every generator there."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> list:
        info = get_worker_info()
        return [info.id, info.num_workers, info.seed, ember.initial_seed(), random.getrandbits(31),
                int(np.random.randint(2**31)), int(ember.randint(0, 2**31, ()).item()), os.getpid(),
                info.dataset is self, getattr(self, "tag", -1)]


def tag_worker(worker_id: int) -> None:
    """worker_init_fn: mark the worker's copy of the dataset."""
    get_worker_info().dataset.tag = 100 + worker_id


class Sleepy:
    """Each sample takes ``delay`` seconds (sample ``slow_at`` 0.8 s); sample ``die_at`` ends its worker
    with ``exit_code``."""

    def __init__(self, n: int, delay: float, die_at: int = -1, exit_code: int = 0, slow_at: int = -1) -> None:
        self.n, self.delay, self.die_at, self.exit_code, self.slow_at = n, delay, die_at, exit_code, slow_at

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        if i == self.die_at:
            os._exit(self.exit_code)
        time.sleep(0.8 if i == self.slow_at else self.delay)
        return i


class Faulty:
    """Sample 3 raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> int:
        if i == 3:
            raise self.error
        return i


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def stream_dataset(data: object, n: int, shard: bool) -> IterableDataset:
    """An IterableDataset of range(n) for ``data`` (ember's or torch's ``utils.data``), sharded across the
    workers by their ``get_worker_info()`` if asked."""

    class Stream(data.IterableDataset):
        def __iter__(self):
            info = data.get_worker_info()
            if not shard or info is None:
                return iter(range(n))
            return iter(range(info.id, n, info.num_workers))

        def __len__(self):
            return n

    return Stream()


def values(batches) -> list:
    """Batches of Squares as plain lists."""
    return [(b["sq"].tolist(), b["row"].tolist()) for b in batches]


# ---- order and batches -----------------------------------------------------------------------------------------------

def test_batches_equal_those_of_num_workers_0_in_sampler_order():
    ds = Squares(23)
    for kwargs in (dict(batch_size=4), dict(batch_size=5, shuffle=True, drop_last=True)):
        serial = values(DataLoader(ds, generator=ember.Generator().manual_seed(3), **kwargs))
        loader = DataLoader(ds, num_workers=2, multiprocessing_context=FORK,
                            generator=ember.Generator().manual_seed(3), **kwargs)
        assert values(loader) == serial
        assert len(loader) == len(serial)
    unbatched = list(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=FORK))
    assert [b["sq"] for b in unbatched] == [i * i for i in range(23)]
    out_of_order = DataLoader(ds, batch_size=3, num_workers=2, in_order=False, multiprocessing_context=FORK)
    assert sorted(values(out_of_order)) == sorted(values(DataLoader(ds, batch_size=3)))


def test_in_order_false_hands_out_batches_as_they_arrive():
    slow_first = Sleepy(6, 0.0, slow_at=0)
    for in_order, first in ((True, 0), (False, 1)):
        loader = DataLoader(slow_first, batch_size=None, num_workers=2, in_order=in_order,
                            multiprocessing_context=FORK)
        got = list(loader)
        assert got[0] == first and sorted(got) == list(range(6))


def test_prefetch_factor_bounds_the_tasks_sent_ahead():
    loader = DataLoader(Squares(40), batch_size=2, num_workers=2, prefetch_factor=3, multiprocessing_context=FORK)
    assert DataLoader(Squares(), num_workers=2).prefetch_factor == 2
    it = iter(loader)
    assert (it._send_idx, it._tasks_outstanding) == (6, 6)
    next(it)
    assert it._send_idx == 7 and it._tasks_outstanding <= 6
    del it


def test_the_default_generator_advances_as_with_num_workers_0():
    draws = []
    for workers in (0, 2):
        ember.manual_seed(11)
        list(DataLoader(Squares(4), batch_size=2, shuffle=True, num_workers=workers))
        draws.append(ember.randn(3).tolist())
    assert draws[0] == draws[1]


# ---- seeding and worker info -----------------------------------------------------------------------------------------

def test_worker_info_seeds_and_init_fn_as_torch():
    loader = DataLoader(Seeds(), batch_size=None, num_workers=2, worker_init_fn=tag_worker,
                        generator=ember.Generator().manual_seed(7), multiprocessing_context=FORK)
    rows = list(loader)
    base_seed = int(ember.empty((), dtype=ember.int64).random_(generator=ember.Generator().manual_seed(7)).item())
    assert [r[0] for r in rows] == [0, 1, 0, 1]  # tasks go round-robin
    for wid in (0, 1):
        first = next(r for r in rows if r[0] == wid)
        _, workers, seed, initial, py_draw, np_draw, ember_draw, pid, own_copy, tag = first
        assert (workers, seed, initial, own_copy, tag) == (2, base_seed + wid, base_seed + wid, True, 100 + wid)
        assert pid != os.getpid()
        assert py_draw == random.Random(base_seed + wid).getrandbits(31)
        assert ember_draw == ember.randint(0, 2**31, (), generator=ember.Generator().manual_seed(seed)).item()
        words = np.random.SeedSequence([wid, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]).generate_state(4)
        assert np_draw == np.random.RandomState(words).randint(2**31)
    assert get_worker_info() is None
    assert rows[2][2] == rows[0][2] and rows[2][4] != rows[0][4]  # the same worker, its streams moving on
    next_pass = list(loader)
    assert next_pass[0][2] != rows[0][2]  # a new base seed every pass


def test_numpy_seeding_matches_torchs_rule(torch_ref):
    from torch.utils.data._utils.worker import _generate_state

    rows = list(DataLoader(Seeds(), batch_size=None, num_workers=2, multiprocessing_context=FORK))
    for wid, row in ((0, rows[0]), (1, rows[1])):
        base_seed = row[2] - wid
        assert row[5] == np.random.RandomState(_generate_state(base_seed, wid)).randint(2**31)


# ---- errors ------------------------------------------------------------------------------------------------------------

def test_worker_exception_is_raised_with_torchs_message_and_type(torch_ref):
    with pytest.raises(KeyError) as caught:
        list(DataLoader(Faulty(KeyError("nokey")), batch_size=2, num_workers=2, multiprocessing_context=FORK))
    message = caught.value.args[0]
    assert message.startswith("Caught KeyError in DataLoader worker process 1.\nOriginal Traceback (most recent "
                              "call last):\n")
    assert "raise self.error" in message and message.rstrip().endswith("KeyError: 'nokey'")
    assert str(caught.value) == message  # not KeyError's quoted repr
    torch_iter = iter(torch_ref.utils.data.DataLoader(Faulty(KeyError("nokey")), batch_size=2, num_workers=2))
    with pytest.raises(KeyError) as theirs:
        list(torch_iter)
    torch_iter._shutdown_workers()  # now: torch's own shutdown from the garbage collector waits 5 s per worker
    assert message.splitlines()[:2] == theirs.value.args[0].splitlines()[:2]

    with pytest.raises(ValueError, match=r"Caught ValueError in DataLoader worker process 1\.\n(.|\n)*ValueError: bad"):
        list(DataLoader(Faulty(ValueError("bad")), batch_size=1, num_workers=2, multiprocessing_context=FORK))
    with pytest.raises(RuntimeError, match="Caught TwoArgError in DataLoader worker process 1"):
        list(DataLoader(Faulty(TwoArgError(1, 2)), batch_size=2, num_workers=2, multiprocessing_context=FORK))


def test_init_fn_and_pickling_failures_are_raised_not_hung():
    def failing_init(worker_id):
        raise OSError(f"no shard {worker_id}")

    with pytest.raises(OSError, match=r"Caught OSError in DataLoader worker process 0(.|\n)*no shard 0"):
        list(DataLoader(Squares(4), num_workers=1, worker_init_fn=failing_init, multiprocessing_context=FORK))
    with pytest.raises(Exception, match="in DataLoader worker process 0(.|\n)*pickle"):
        list(DataLoader(Squares(4), num_workers=1, collate_fn=lambda b: (lambda: b), multiprocessing_context=FORK,
                        timeout=20))


def test_killed_worker_raises_naming_pid_and_signal_within_bounded_time():
    loader = DataLoader(Sleepy(200, 0.02), batch_size=2, num_workers=2, multiprocessing_context=FORK)
    it = iter(loader)
    next(it)
    victim = it._workers[1].pid
    os.kill(victim, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid\(s\) {victim}\) exited unexpectedly") as err:
        for _ in it:
            pass
    assert time.monotonic() - start < 10
    assert str(err.value.__cause__) == f"DataLoader worker (pid {victim}) is killed by signal: Killed. "
    pids = [w.pid for w in it._workers]
    del it, err
    gc.collect()
    assert all(gone(pid) for pid in pids)


def test_worker_exit_code_is_reported():
    loader = DataLoader(Sleepy(20, 0.0, die_at=5, exit_code=3), batch_size=2, num_workers=2,
                        multiprocessing_context=FORK)
    with pytest.raises(RuntimeError, match="exited unexpectedly") as err:
        list(loader)
    assert "exited unexpectedly with exit code 3. Details are lost due to multiprocessing." in str(err.value.__cause__)


def test_timeout_raises_torchs_error():
    loader = DataLoader(Sleepy(2, 0.6), num_workers=1, timeout=0.2, multiprocessing_context=FORK)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.2 seconds$"):
        list(loader)
    assert time.monotonic() - start < 5


# ---- persistent workers, iterable datasets, shutdown -------------------------------------------------------------------

class Pids:
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> np.ndarray:
        return np.array([i, os.getpid()])


def test_persistent_workers_serve_every_pass():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True, multiprocessing_context=FORK)
    first = [b.tolist() for b in loader]
    it = loader._iterator
    pids = {w.pid for w in it._workers}
    assert {pid for b in first for _, pid in b} == pids
    for b in loader:  # leave a pass early: the next one drops what is still on its way
        break
    again = [b.tolist() for b in loader]
    assert loader._iterator is it and {w.pid for w in it._workers} == pids
    assert [[i for i, _ in b] for b in again] == [[0, 1], [2, 3], [4, 5]] == [[i for i, _ in b] for b in first]
    assert all(w.is_alive() for w in it._workers)
    del loader, it
    gc.collect()
    assert all(gone(pid) for pid in pids)


def test_iterable_dataset_each_worker_iterates_its_copy_as_torch(torch_ref):
    sharded = DataLoader(stream_dataset(ember.utils.data, 9, shard=True), batch_size=2, num_workers=2,
                         multiprocessing_context=FORK)
    assert [b.tolist() for b in sharded] == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]
    theirs = torch_ref.utils.data.DataLoader(stream_dataset(torch_ref.utils.data, 9, shard=True),
                                             batch_size=2, num_workers=2)
    assert [b.tolist() for b in theirs] == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]

    for data, extra in ((ember.utils.data, dict(multiprocessing_context=FORK)), (torch_ref.utils.data, {})):
        duplicated = data.DataLoader(stream_dataset(data, 3, shard=False), batch_size=2, num_workers=2, **extra)
        assert len(duplicated) == 2
        with pytest.warns(UserWarning, match=r"was reported to be 3\(when accessing len\(dataloader\)\), but 4 "
                                             r"samples have been fetched. For multiprocessing data-loading"):
            assert [b.tolist() for b in duplicated] == [[0, 1], [0, 1], [2], [2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # len(loader) never asked: nothing to warn about
        assert list(DataLoader(stream_dataset(ember.utils.data, 2, shard=False), batch_size=None, num_workers=2,
                               multiprocessing_context=FORK)) == [0, 0, 1, 1]


def test_breaking_out_of_a_loop_shuts_the_workers_down():
    loader = DataLoader(Sleepy(100, 0.01), batch_size=2, num_workers=2, multiprocessing_context=FORK)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    pids = [w.pid for w in it._workers]
    assert not any(gone(pid) for pid in pids)
    del it
    assert all(gone(pid) for pid in pids)  # joined before del returns
    finished = iter(DataLoader(Squares(4), batch_size=2, num_workers=2, multiprocessing_context=FORK))
    list(finished)
    assert all(gone(w.pid) for w in finished._workers)  # the end of a pass ends its workers


# ---- start methods and arguments -------------------------------------------------------------------------------------

def add_one(batch):
    """A module-level collate_fn (spawn pickles it)."""
    return [ember.stack([row for row, in batch]) + 1, get_worker_info().id]


def test_spawn_pickles_the_dataset_and_collate_fn():
    ds = TensorDataset(ember.arange(6.0).reshape(3, 2))
    loader = DataLoader(ds, batch_size=2, num_workers=1, collate_fn=add_one, multiprocessing_context="spawn",
                        timeout=60)
    assert loader.multiprocessing_context.get_start_method() == "spawn"
    batches = [(x.tolist(), wid) for x, wid in loader]
    assert batches == [([[1.0, 2.0], [3.0, 4.0]], 0), ([[5.0, 6.0]], 0)]
    unpicklable = DataLoader(ds, num_workers=1, worker_init_fn=lambda i: None, multiprocessing_context="spawn")
    with pytest.warns(UserWarning, match="Got pickle error when attempting to start a worker Process"):
        with pytest.raises((pickle.PicklingError, AttributeError), match="pickle"):
            iter(unpicklable)


def test_worker_argument_checks_are_torchs():
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading "
                                         r"\(num_workers > 0\), but got num_workers=0"):
        DataLoader(Squares(), multiprocessing_context="fork")
    with pytest.raises(ValueError, match="should specify a valid start method in .*'fork'.*, but got "
                                         "multiprocessing_context='bogus'"):
        DataLoader(Squares(), num_workers=1, multiprocessing_context="bogus")
    with pytest.raises(TypeError, match="should be a valid context object or a string"):
        DataLoader(Squares(), num_workers=1, multiprocessing_context=3)
    with pytest.raises(ValueError, match="prefetch_factor option should be non-negative"):
        DataLoader(Squares(), num_workers=1, prefetch_factor=-1)
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(DataLoader(Squares(), num_workers=1, prefetch_factor=0))
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(Squares(), timeout=1))
    context = multiprocessing.get_context("fork")
    assert DataLoader(Squares(), num_workers=1, multiprocessing_context=context).multiprocessing_context is context
    with pytest.warns(UserWarning, match="This DataLoader will create 999 worker processes in total"):
        DataLoader(Squares(), num_workers=999)


PIN_SCRIPT = textwrap.dedent("""
    import ember
    from ember.utils.data import DataLoader, TensorDataset

    class Unpinnable:
        def pin_memory(self):
            raise ValueError("cannot pin this")

    if __name__ == "__main__":
        loader = DataLoader(TensorDataset(ember.arange(5.0)), batch_size=2, num_workers=2, pin_memory=True,
                            multiprocessing_context="fork", timeout=30)
        print([(x.tolist(), x.is_pinned()) for x, in loader])
        try:
            list(DataLoader(TensorDataset(ember.arange(2.0)), num_workers=1, pin_memory=True, timeout=30,
                            multiprocessing_context="fork", collate_fn=lambda b: Unpinnable()))
        except ValueError as exc:
            print(str(exc).splitlines()[0])
""")


def test_pin_memory_runs_in_a_thread_beside_the_workers(tmp_path):
    """Pinning needs a CUDA device: Numba's simulator stands in for one, in a process of its own."""
    script = tmp_path / "pin_with_workers.py"
    script.write_text(PIN_SCRIPT)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[([0.0, 1.0], True), ([2.0, 3.0], True), ([4.0], True)]",
        "Caught ValueError in pin memory thread for device 0.",
    ]


def test_workers_collate_into_shared_memory():
    batch = next(iter(DataLoader(TensorDataset(ember.arange(8.0)), batch_size=4, num_workers=1,
                                 multiprocessing_context=FORK)))[0]
    assert batch.is_shared() and batch.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not next(iter(DataLoader(TensorDataset(ember.arange(8.0)), batch_size=4)))[0].is_shared()
