"""CUDA tensors between processes: CUDA IPC handles on a real GPU, a clear refusal under the simulator.

CUDA cannot be used in a forked child once the parent has initialised it, so the GPU tests use spawn. The
children are joined with a timeout and killed if they linger.
"""
from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler

import pytest

import ember
import ember.multiprocessing as emp

TIMEOUT = 120
SPAWN = emp.get_context("spawn")


def test_the_simulator_refuses_to_send_cuda_tensors_and_says_why():
    if not ember.cuda.is_simulator():
        pytest.skip("the simulator's refusal")
    t = ember.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="simulator: it has no CUDA IPC"):
        ForkingPickler.dumps(t)
    assert t.is_shared() and t.share_memory_() is t  # CUDA tensors count as shared, as in torch
    assert pickle.loads(pickle.dumps(t)).tolist() == [1.0, 1.0, 1.0]  # plain pickle still copies


def _add_one(inbox, outbox):
    t, p = inbox.get(timeout=TIMEOUT)
    t.add_(1.0)
    ember.cuda.synchronize()
    outbox.put((t.is_cuda, t.device.index, p.requires_grad, p.grad.cpu().tolist(), t.cpu().tolist()))
    outbox.get(timeout=TIMEOUT)  # the sender keeps its tensors alive until the receiver is done, as torch requires


@pytest.mark.gpu
def test_a_cuda_tensor_sent_to_a_spawned_child_shares_device_memory():
    inbox, outbox = SPAWN.Queue(), SPAWN.Queue()
    child = SPAWN.Process(target=_add_one, args=(inbox, outbox), daemon=True)
    child.start()
    try:
        t = ember.arange(6.0, device="cuda").reshape(2, 3)[:, 1:]  # a view: its offset and strides travel
        p = ember.nn.Parameter(ember.zeros(2, device="cuda"))
        p.grad = ember.ones(2, device="cuda")
        inbox.put((t, p))
        assert outbox.get(timeout=TIMEOUT) == (True, 0, True, [1.0, 1.0], [[2.0, 3.0], [5.0, 6.0]])
        assert t.cpu().tolist() == [[2.0, 3.0], [5.0, 6.0]]  # the child's add, in this process's memory
        outbox.put("done")
        child.join(TIMEOUT)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join(5)


@pytest.mark.gpu
def test_a_cuda_tensor_sent_to_its_own_process_comes_back_on_the_same_buffer():
    t = ember.ones(4, device="cuda")
    back = pickle.loads(ForkingPickler.dumps(t))
    assert back.is_cuda and back.data_ptr() == t.data_ptr()
