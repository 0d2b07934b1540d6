"""ember.distributed.rpc on Ray, loopback only: this process is rank 0 and starts Ray once for the module;
subprocesses are ranks 1 and 2. Functions are stdlib/ember ones, sent by reference and run in the callee's process."""
import gc
import importlib.util
import math
import operator
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

# Ray reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER at import, so check for it without importing it here.
if importlib.util.find_spec("ray") is None:
    pytest.skip("ray is not installed", allow_module_level=True)
import ember  # noqa: E402
from ember import futures as ember_futures  # noqa: E402
from ember.distributed import rpc  # noqa: E402
from ember.distributed.run import free_loopback_port  # noqa: E402
from ember.distributed.rpc import rref as rref_module  # noqa: E402

WORLD_SIZE = 3
# each child joins, serves calls and leaves gracefully (waiting, still serving, for the others to leave)
CHILD = "import sys; from ember.distributed import rpc; rpc.init_rpc(sys.argv[1], rank=int(sys.argv[2]), " \
        f"world_size={WORLD_SIZE}); rpc.shutdown()"



@pytest.fixture(scope="module")
def workers():
    """``{name: Popen}`` of the child workers, with RPC initialised here as ``w0``."""
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_loopback_port()), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    children = {f"w{r}": subprocess.Popen([sys.executable, "-c", CHILD, f"w{r}", str(r)], env=dict(os.environ),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for r in range(1, WORLD_SIZE)}
    try:
        rpc.init_rpc("w0", rank=0, world_size=WORLD_SIZE)
        yield children
        start = time.monotonic()
        rpc.shutdown()
        assert time.monotonic() - start < 30
        assert children["w1"].wait(timeout=30) == 0  # w1 left gracefully
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
            child.wait(timeout=10)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_calls_run_in_callee_process(workers):
    assert rpc.rpc_sync("w1", os.getpid) == workers["w1"].pid
    assert rpc.get_worker_info("w1") == rpc.WorkerInfo("w1", 1)
    assert rpc.get_worker_info().name == "w0"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = rpc.rpc_sync(1, ember.add, (ember.tensor(x), 1.0))
    np.testing.assert_array_equal(out.numpy(), x + 1)


def test_rpc_async_future_chain(workers):
    futs = [rpc.rpc_async("w1", operator.mul, (i, 10)) for i in range(4)]
    assert ember_futures.wait_all(futs) == [0, 10, 20, 30]
    assert [f.wait() for f in futs] == [0, 10, 20, 30]
    assert futs[0].then(lambda f: f.value() + 1).wait() == 1


def test_callee_exception_type_and_message(workers):
    with pytest.raises(ValueError, match="math domain error"):
        rpc.rpc_sync("w1", math.sqrt, (-1,))


def test_timeout_raises_within_timeout(workers):
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="0.3 s timeout"):
        rpc.rpc_sync("w1", time.sleep, (3,), timeout=0.3)
    assert time.monotonic() - start < 2.0


def test_remote_rref_and_release(workers):
    before = rpc.rpc_sync("w1", rref_module.owned_count)
    ref = rpc.remote("w1", ember.ones, (2, 3))
    np.testing.assert_array_equal(ref.to_here().numpy(), np.ones((2, 3), np.float32))
    assert rpc.rpc_sync("w1", rref_module.owned_count) == before + 1
    assert ref.rpc_sync().sum().item() == 6.0
    assert ref.rpc_async().sum().wait().item() == 6.0
    assert ref.remote().sum().to_here().item() == 6.0  # a second RRef on w1, released when dropped
    assert ref.owner_name() == "w1" and not ref.is_owner() and ref.confirmed_by_owner()
    with pytest.raises(RuntimeError, match="not the owner"):
        ref.local_value()
    del ref
    gc.collect()
    deadline = time.monotonic() + 10
    while rpc.rpc_sync("w1", rref_module.owned_count) != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rpc.rpc_sync("w1", rref_module.owned_count) == before


def test_rref_passed_to_third_worker(workers):
    ref = rpc.remote("w1", operator.add, (ember.ones(3), 2.0))
    assert ref.owner() == rpc.get_worker_info("w1")
    out = rpc.rpc_sync("w2", operator.methodcaller("to_here"), (ref,))  # w2 fetches from w1 itself
    np.testing.assert_array_equal(out.numpy(), np.full(3, 3.0, np.float32))
    assert rpc.rpc_sync("w2", operator.methodcaller("is_owner"), (ref,)) is False
    assert rpc.rpc_sync("w1", operator.methodcaller("is_owner"), (ref,)) is True
    local = rpc.rpc_sync("w1", operator.methodcaller("local_value"), (ref,))
    np.testing.assert_array_equal(local.numpy(), np.full(3, 3.0, np.float32))


def test_local_rref_and_self_call(workers):
    ref = rpc.RRef(ember.arange(4))
    assert ref.is_owner() and ref.owner_name() == "w0"
    np.testing.assert_array_equal(ref.local_value().numpy(), np.arange(4))
    np.testing.assert_array_equal(ref.to_here().numpy(), np.arange(4))
    assert rpc.rpc_sync("w0", os.getpid) == os.getpid()


def test_unknown_destination(workers):
    with pytest.raises(ValueError, match="unknown RPC destination 'nobody'"):
        rpc.rpc_sync("nobody", os.getpid)


def test_dead_worker_fails_clearly(workers):
    """Runs last (w2 is killed): a call to a dead worker raises instead of hanging."""
    assert rpc.rpc_sync("w2", operator.add, (1, 2)) == 3
    victim = workers["w2"]
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="'w2' failed: the worker is gone"):
        deadline = start + 30
        while time.monotonic() < deadline:  # Ray needs a moment to notice the owner's death
            try:
                rpc.rpc_sync("w2", operator.add, (1, 2), timeout=5)
            except TimeoutError:  # queued in the dead worker's mailbox before Ray noticed: not an answer
                continue
    assert time.monotonic() - start < 30
    assert rpc.rpc_sync("w1", operator.add, (1, 2)) == 3  # the rest of the group still works
