"""Tensors on a second GPU: placement, the current device, cross-device copies and errors, per-device memory.

Numba's simulator has one device, so the ``two_gpus`` fixture gives it two: a second fake context, a
``select_device`` that remembers which context is current, and bookkeeping that tags every device buffer with the
context it was allocated in. Every kernel launch is then checked: each buffer it receives must live on the device
whose context is current, which is what a real machine (without peer access) needs.
"""
from __future__ import annotations

import weakref

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember import _cuda_context  # noqa: E402
from ember.cuda import _state  # noqa: E402
from ember.kernels.cuda import allocator  # noqa: E402

CUDA0, CUDA1 = ember.device("cuda", 0), ember.device("cuda", 1)


class FakeGpus:
    """Two simulated devices, the current one, every buffer's device and every launch's (device, buffers' devices)."""

    def __init__(self) -> None:
        from numba.cuda.simulator.cudadrv.devices import FakeCUDAContext

        self.lst = (FakeCUDAContext(0), FakeCUDAContext(1))
        self.current = 0
        self.buffer_devices: dict[int, int] = {}
        self.launches: list[tuple[int, set[int]]] = []
        self.misplaced_allocations: list[tuple[int, int]] = []

    def __getitem__(self, index: int):
        return self.lst[index]

    def __len__(self) -> int:
        return len(self.lst)

    def __iter__(self):
        return iter(self.lst)

    def select(self, index: int) -> None:
        assert index in (0, 1), f"no simulated device {index}"
        self.current = index

    def tag(self, array, index: int):
        root = _root(array)
        self.buffer_devices[id(root)] = index
        weakref.finalize(root, self.buffer_devices.pop, id(root), None)  # its id may be reused once it is gone
        return array

    def devices_of(self, args) -> set[int]:
        found = set()
        for arg in args:
            if isinstance(arg, tuple):
                found |= self.devices_of(arg)
            elif hasattr(arg, "_ary"):
                index = self.buffer_devices.get(id(_root(arg)))
                if index is not None:
                    found.add(index)
        return found

    def launches_on(self, index: int) -> int:
        return sum(device == index for device, _ in self.launches)

    def wrong_device_launches(self) -> list[tuple[int, set[int]]]:
        return [(device, seen) for device, seen in self.launches if seen - {device}]


def _root(array) -> np.ndarray:
    """The NumPy array owning a simulated device array's memory."""
    a = getattr(array, "_ary", array)
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@pytest.fixture
def two_gpus(monkeypatch):
    """The simulator with two devices; fails the test if any launch read or wrote another device's buffer."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    gpus = FakeGpus()
    monkeypatch.setattr(cuda, "gpus", gpus)
    monkeypatch.setattr(cuda, "select_device", gpus.select)
    monkeypatch.setattr(_cuda_context.active, "index", 0)
    monkeypatch.setattr(_state._local, "device", 0, raising=False)

    real_empty, real_to_device, real_device_array = allocator.device_empty, cuda.to_device, cuda.device_array

    def device_empty(count, dtype, device_index=0):
        if device_index != gpus.current:
            gpus.misplaced_allocations.append((device_index, gpus.current))
        return gpus.tag(real_empty(count, dtype, device_index), device_index)

    monkeypatch.setattr(allocator, "device_empty", device_empty)
    monkeypatch.setattr(cuda, "to_device", lambda *a, **k: gpus.tag(real_to_device(*a, **k), gpus.current))
    monkeypatch.setattr(cuda, "device_array", lambda *a, **k: gpus.tag(real_device_array(*a, **k), gpus.current))

    real_call = FakeCUDAKernel.__call__

    def call(kernel, *args):
        if not kernel._device:
            gpus.launches.append((gpus.current, gpus.devices_of(args)))
        return real_call(kernel, *args)

    monkeypatch.setattr(FakeCUDAKernel, "__call__", call)
    yield gpus
    assert gpus.wrong_device_launches() == []
    assert gpus.misplaced_allocations == []


def _host(x: ember.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def test_device_count_and_placement_of_new_tensors(two_gpus):
    assert ember.cuda.device_count() == 2
    for t in (ember.zeros(2, 3, device="cuda:1"), ember.ones(4, device=CUDA1), ember.arange(5, device="cuda:1"),
              ember.full((2,), 7.0, device=ember.device("cuda", 1)), ember.randn(3, device="cuda:1"),
              ember.tensor([1.0, 2.0], device="cuda:1"), ember.empty(3, device="cuda:1")):
        assert t.device == CUDA1 and t.get_device() == 1 and t.is_cuda
    assert ember.zeros(2, device="cuda:0").device == CUDA0
    np.testing.assert_array_equal(_host(ember.full((2,), 7.0, device="cuda:1")), [7.0, 7.0])


def test_to_and_cuda_place_on_the_asked_device_and_views_stay_there(two_gpus):
    host = ember.arange(12.0).reshape(3, 4)
    on1 = host.to("cuda:1")
    assert on1.device == CUDA1 and host.cuda(1).device == CUDA1 and host.cuda().device == CUDA0
    assert on1.to("cuda:1") is on1 and on1.cuda(1) is on1
    assert on1.t().device == CUDA1 and on1[1:, ::2].device == CUDA1 and on1.reshape(-1).device == CUDA1
    np.testing.assert_array_equal(_host(on1), host.numpy())
    assert repr(on1).endswith("device='cuda:1')")


def test_ops_on_the_second_device_agree_with_the_cpu(two_gpus):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    cpu_a, cpu_b = ember.tensor(a), ember.tensor(b)
    ember.zeros(2, device="cuda:0").add_(1)  # the last op ran on cuda:0: every op below must switch
    dev_a, dev_b = cpu_a.to("cuda:1"), cpu_b.to("cuda:1")
    ember.ones(3, device="cuda:0").mul_(2)
    cases = [
        lambda x, y: (x * 2 + 1).exp().sum(1),
        lambda x, y: x @ y,
        lambda x, y: ember.softmax(x, dim=1),
        lambda x, y: x.float().mean(0, keepdim=True) - x.max(),
        lambda x, y: ember.cat([x, x.flip(0)]).t().reshape(-1),
        lambda x, y: x[ember.tensor([0, 2]).to(x.device)].double(),
        lambda x, y: ember.where(x > 0, x, (x @ y).sum(1, keepdim=True)),
    ]
    for case in cases:
        launches = two_gpus.launches_on(1)
        result = case(dev_a, dev_b)
        assert result.device == CUDA1
        assert two_gpus.launches_on(1) > launches
        np.testing.assert_allclose(_host(result), _host(case(cpu_a, cpu_b)), rtol=1e-5, atol=1e-6)
        ember.zeros(1, device="cuda:0").add_(1)  # back to cuda:0 between cases


def test_mixing_devices_in_one_op_is_torchs_error(two_gpus):
    x0, x1 = ember.ones(3, device="cuda:0"), ember.ones(3, device="cuda:1")
    message = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!"
    for op in (lambda: x0 + x1, lambda: x0 * x1, lambda: ember.cat([x0, x1]), lambda: ember.maximum(x0, x1),
               lambda: x0.reshape(1, 3) @ x1.reshape(3, 1)):
        with pytest.raises(RuntimeError, match=message):
            op()
    with pytest.raises(RuntimeError, match="cuda:1 and cuda:0"):
        x1 + ember.tensor(2.0, device="cuda:0")  # a 0-d CUDA tensor is no scalar on another device
    assert (x1 + ember.tensor(2.0)).device == CUDA1  # a 0-d CPU tensor is


def test_set_device_and_the_device_context_choose_what_cuda_means(two_gpus):
    assert ember.cuda.current_device() == 0
    with ember.cuda.device(1):
        assert ember.cuda.current_device() == 1
        assert ember.zeros(2, device="cuda").device == CUDA1 and ember.ones(1).cuda().device == CUDA1
    assert ember.cuda.current_device() == 0 and ember.zeros(2, device="cuda").device == CUDA0
    ember.cuda.set_device(1)
    assert ember.cuda.current_device() == 1 and ember.zeros(1, device="cuda").device == CUDA1
    ember.cuda.set_device("cuda:0")
    assert ember.zeros(1, device="cuda").device == CUDA0
    with ember.cuda.device_of(ember.zeros(1, device="cuda:1")):
        assert ember.cuda.current_device() == 1
    ember.cuda.synchronize(1)
    assert ember.cuda.Stream(device=1).device == CUDA1 and ember.cuda.current_stream(1).device == CUDA1


def test_a_device_past_the_last_is_invalid(two_gpus):
    x = ember.ones(2)
    for request in (lambda: x.to("cuda:5"), lambda: x.cuda(2), lambda: ember.zeros(1, device="cuda:2"),
                    lambda: ember.cuda.set_device(5), lambda: ember.cuda.memory_allocated(3)):
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            request()


def test_copies_between_devices_keep_values_and_gradients_flow_back(two_gpus):
    source = ember.arange(6.0).reshape(2, 3).to("cuda:0")
    moved = source.t().to("cuda:1")  # a non-contiguous view crosses devices
    assert moved.device == CUDA1
    np.testing.assert_array_equal(_host(moved), np.arange(6.0).reshape(2, 3).T)
    back = moved.to("cuda:0")
    assert back.device == CUDA0
    np.testing.assert_array_equal(_host(back), _host(source.t()))
    target = ember.zeros(2, 3, device="cuda:1")
    target.copy_(source)
    assert target.device == CUDA1
    np.testing.assert_array_equal(_host(target), _host(source))
    target[0] = source[1]
    np.testing.assert_array_equal(_host(target)[0], [3.0, 4.0, 5.0])
    leaf = ember.ones(3, device="cuda:0", requires_grad=True)
    (leaf.to("cuda:1") * ember.arange(3.0, device="cuda:1")).sum().backward()
    assert leaf.grad.device == CUDA0
    np.testing.assert_array_equal(_host(leaf.grad), [0.0, 1.0, 2.0])


def test_module_to_the_second_device_trains_with_optimizer_state_there(two_gpus):
    ember.manual_seed(0)
    reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    model.load_state_dict(reference.state_dict())
    model.to("cuda:1")
    assert all(p.device == CUDA1 for p in model.parameters())
    data = ember.tensor(np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32))
    for net, x in ((reference, data), (model, data.to("cuda:1"))):
        optimizer = ember.optim.Adam(net.parameters(), lr=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            ember.nn.functional.mse_loss(net(x), ember.zeros(5, 2, device=x.device)).backward()
            optimizer.step()
    weight = next(iter(model.parameters()))
    assert weight.grad.device == CUDA1
    optimizer_state = ember.optim.Adam(model.parameters()).state  # a fresh optimizer has none: check the trained one
    assert optimizer_state == {} or all(v.device == CUDA1 for v in optimizer_state.values())
    for expected, got in zip(reference.parameters(), model.parameters()):
        np.testing.assert_allclose(_host(got), _host(expected), rtol=1e-5, atol=1e-6)


def test_optimizer_state_lives_with_its_parameters_on_each_device(two_gpus):
    p0 = nn.Parameter(ember.ones(3, device="cuda:0"))
    p1 = nn.Parameter(ember.ones(3, device="cuda:1"))
    p2 = nn.Parameter(ember.ones(3, device="cuda:1"))
    optimizer = ember.optim.Adam([p0, p1, p2], lr=0.5)
    (p0.sum() + (p1 * 2).sum().to("cuda:0") + (p2 * 3).sum().to("cuda:0")).backward()
    optimizer.step()
    for p in (p0, p1, p2):
        assert p.grad.device == p.device
        assert all(v.device == p.device for v in optimizer.state[p].values() if isinstance(v, ember.Tensor)
                   and v.ndim)
        np.testing.assert_allclose(_host(p), [0.5] * 3, rtol=1e-6)  # Adam's first step moves by lr


def test_memory_statistics_are_per_device(two_gpus):
    before0, before1 = ember.cuda.memory_allocated(0), ember.cuda.memory_allocated(1)
    x = ember.zeros(1000, device="cuda:1")
    assert ember.cuda.memory_allocated(1) >= before1 + 4000
    assert ember.cuda.memory_allocated("cuda:1") == ember.cuda.memory_allocated(CUDA1)
    assert ember.cuda.memory_allocated(0) == before0
    with ember.cuda.device(1):
        assert ember.cuda.memory_allocated() == ember.cuda.memory_allocated(1)
    assert ember.cuda.memory_stats(1)["allocated_bytes.all.current"] == ember.cuda.memory_allocated(1)
    del x
    assert ember.cuda.memory_allocated(1) == before1
    assert ember.cuda.max_memory_allocated(1) >= before1 + 4000


def test_random_draws_come_from_the_device_they_are_for(two_gpus):
    x = ember.ones(64, device="cuda:1")
    for sample in (lambda: ember.randn(8, device="cuda:1"), lambda: ember.rand(8, device="cuda:1"),
                   lambda: nn.functional.dropout(x, 0.5), lambda: ember.bernoulli(x * 0.5),
                   lambda: ember.randn(8, device="cuda:1", generator=ember.Generator("cuda:1"))):
        ember.zeros(1, device="cuda:0").add_(1)  # the last op ran on cuda:0
        assert sample().device == CUDA1
    ember.cuda.manual_seed_all(3)
    first = _host(ember.randn(4, device="cuda:1"))
    ember.cuda.manual_seed_all(3)
    np.testing.assert_array_equal(_host(ember.randn(4, device="cuda:1")), first)
