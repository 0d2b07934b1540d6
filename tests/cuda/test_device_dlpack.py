"""DLPack and the CUDA array interface on CUDA tensors.

Under the simulator, device memory is host memory and its address is what capsules and ``__cuda_array_interface__``
carry, so sharing is checked the same way as on a GPU: write through one tensor, read through the other. The
``gpu`` tests exchange memory with torch's CUDA tensors and Numba device arrays on real hardware.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
from ember.tensor import dlpack_abi
from ember.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

_CONSUMED = "DLTensor capsules can be consumed only once"


class _Interface:
    """An object that offers only ``__cuda_array_interface__`` (as CuPy and Numba arrays do)."""

    def __init__(self, interface: dict, owner=None) -> None:
        self.__cuda_array_interface__ = interface
        self.owner = owner


def _grid():
    return ember.arange(12.0, device="cuda").reshape(3, 4)


def test_dlpack_device_names_the_cuda_device():
    assert _grid().__dlpack_device__() == (DLDeviceType.kDLCUDA, 0)


def test_a_capsule_shares_device_memory_and_is_consumed_once():
    t = _grid()
    capsule = t.__dlpack__()
    found = dlpack_abi.describe(capsule)
    assert found.device == (2, 0) and found.shape == (3, 4) and found.strides == (4, 1)
    assert found.dtype == np.float32 and not found.read_only
    u = ember.from_dlpack(capsule)
    assert u.is_cuda and u.dtype is ember.float32 and "used_dltensor" in repr(capsule)
    u[1, 2] = -1.0
    assert t[1, 2].item() == -1.0
    t[0, 0] = 50.0
    assert u[0, 0].item() == 50.0
    with pytest.raises(RuntimeError, match=_CONSUMED):
        ember.from_dlpack(capsule)


def test_views_keep_their_layout():
    t = _grid()
    for view in (t.t(), t[:, 1::2], t[1], t.flip(0)):
        u = ember.from_dlpack(view)
        assert u.shape == view.shape and u.stride() == view.stride()
        np.testing.assert_array_equal(u.cpu().numpy(), view.cpu().numpy())
    u = ember.from_dlpack(t[:, 1::2])
    u[2, 1] = 99.0
    assert t[2, 3].item() == 99.0


def test_versioned_capsules_and_the_unversioned_kind():
    t = ember.arange(4, device="cuda")
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    v = ember.from_dlpack(versioned)
    v[3] = 30
    assert t[3].item() == 30 and v.dtype is ember.int64
    legacy = to_dlpack(t)
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    from_dlpack(legacy)[0] = 7
    assert t[0].item() == 7


def test_export_keeps_the_storage_until_the_consumer_lets_go():
    before = len(dlpack_abi._LIVE)
    t = ember.arange(5.0, device="cuda")
    u = ember.from_dlpack(t)
    del t
    gc.collect()
    assert len(dlpack_abi._LIVE) == before + 1
    assert u.sum().item() == 10.0
    del u
    gc.collect()
    assert len(dlpack_abi._LIVE) == before
    unconsumed = ember.ones(2, device="cuda").__dlpack__()
    assert len(dlpack_abi._LIVE) == before + 1
    del unconsumed
    gc.collect()
    assert len(dlpack_abi._LIVE) == before


def test_streams_are_checked_as_torch():
    t = ember.ones(3, device="cuda")
    with pytest.raises(AssertionError, match="unsupported stream on CUDA: 0."):
        t.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="per-thread default stream is not supported."):
        t.__dlpack__(stream=2)
    with pytest.raises(TypeError, match="stream must be ``int`` or ``none``"):
        t.__dlpack__(stream="1")
    for stream in (None, -1, 1):
        assert ember.from_dlpack(t.__dlpack__(stream=stream)).sum().item() == 3.0
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        u = ember.from_dlpack(t)  # the consumer passes its current stream
    assert u.sum().item() == 3.0


def test_a_tensor_that_requires_grad_refuses_export():
    x = ember.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        x.__dlpack__()
    with pytest.raises(RuntimeError, match="Can't get __cuda_array_interface__ on Variable that requires grad"):
        x.__cuda_array_interface__


def test_devices_and_copies():
    t = _grid()
    on_host = ember.from_dlpack(t.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0)))
    assert not on_host.is_cuda
    np.testing.assert_array_equal(on_host.numpy(), t.cpu().numpy())
    with pytest.raises(BufferError, match="without a copy"):
        t.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=False)
    assert not ember.from_dlpack(t, device="cpu").is_cuda
    moved = ember.from_dlpack(ember.arange(3.0), device="cuda")
    assert moved.is_cuda and moved.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="without copying"):
        ember.from_dlpack(t, device="cpu", copy=False)
    copied = ember.from_dlpack(t, copy=True)
    assert dlpack_abi.describe(t.__dlpack__(max_version=(1, 0), copy=True)).shape == (3, 4)
    copied[0, 0] = 1000.0
    assert t[0, 0].item() == 0.0


def test_empty_and_zero_dim_tensors():
    assert ember.from_dlpack(ember.empty(0, 3, device="cuda")).shape == (0, 3)
    s = ember.from_dlpack(ember.tensor(2.5, device="cuda"))
    assert s.shape == () and s.is_cuda and s.item() == 2.5


def test_cuda_array_interface_of_a_tensor():
    t = _grid()
    interface = t.__cuda_array_interface__
    assert interface["typestr"] == "<f4" and interface["shape"] == (3, 4) and interface["strides"] is None
    assert interface["version"] == 3 and interface["stream"] == 1 and interface["data"][1] is False
    assert t.t().__cuda_array_interface__["strides"] == (4, 16)
    assert ember.empty(0, device="cuda").__cuda_array_interface__["data"] == (0, False)
    assert not hasattr(ember.ones(2), "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="Can't get __cuda_array_interface__ on non-CUDA tensor type"):
        ember.ones(2).__cuda_array_interface__


def test_as_tensor_and_from_dlpack_take_the_cuda_array_interface_without_a_copy():
    t = _grid()
    view = t.t()
    shared = ember.as_tensor(_Interface(view.__cuda_array_interface__, view))
    assert shared.is_cuda and shared.shape == (4, 3) and shared.stride() == (1, 4)
    shared[3, 2] = -5.0
    assert t[2, 3].item() == -5.0
    taken = ember.from_dlpack(_Interface(t.__cuda_array_interface__, t))
    taken[0, 1] = 8.0
    assert t[0, 1].item() == 8.0
    widened = ember.as_tensor(_Interface(t.__cuda_array_interface__, t), dtype=ember.float64)
    assert widened.dtype is ember.float64 and widened[0, 1].item() == 8.0
    host = ember.as_tensor(_Interface(t.__cuda_array_interface__, t), device="cpu")
    assert not host.is_cuda and host[0, 1].item() == 8.0


def test_the_interface_is_checked():
    t = ember.arange(4, dtype=ember.int16, device="cuda")
    interface = dict(t.__cuda_array_interface__, strides=(3,))
    with pytest.raises(ValueError, match="not multiples of the element size"):
        ember.as_tensor(_Interface(interface, t))
    with pytest.raises(TypeError, match="masked"):
        ember.as_tensor(_Interface(dict(t.__cuda_array_interface__, mask=object()), t))


def test_numpy_conversions_of_a_cuda_tensor():
    t = ember.ones(2, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(t)
    with pytest.raises(ValueError):
        np.asarray(t, copy=False)
    with pytest.raises(TypeError, match="can't convert cuda:0"):
        t + np.ones(2)  # torch hands the array operand to NumPy, which asks for the tensor's memory
    forced = t.numpy(force=True)
    assert forced.tolist() == [1.0, 1.0]


# ------------------------------------------------------------------------------------------- real hardware
def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    return torch


@pytest.mark.gpu
def test_torch_cuda_tensors_share_memory_both_ways():
    torch = _torch_cuda()
    x = torch.arange(12.0, device="cuda").reshape(3, 4)
    t = ember.from_dlpack(x)
    assert t.is_cuda and t.data_ptr() == x.data_ptr()
    t[1, 1] = -1.0
    torch.cuda.synchronize()
    assert x[1, 1].item() == -1.0
    back = torch.from_dlpack(_grid())
    assert back.is_cuda and back[2, 3].item() == 11.0
    through_interface = ember.as_tensor(x[:, ::2])
    assert through_interface.data_ptr() == x.data_ptr() and through_interface.stride() == (4, 2)
    seen = torch.as_tensor(_grid(), device="cuda")
    assert seen[0, 1].item() == 1.0


@pytest.mark.gpu
def test_a_torch_stream_is_ordered_after_embers_work():
    torch = _torch_cuda()
    t = ember.zeros(1 << 20, device="cuda")
    t.add_(1.0)
    s = torch.cuda.Stream()
    capsule = t.__dlpack__(stream=s.cuda_stream)
    with torch.cuda.stream(s):
        x = torch.from_dlpack(capsule)
        total = x.sum()
    s.synchronize()
    assert total.item() == float(1 << 20)


@pytest.mark.gpu
def test_numba_device_arrays_are_taken_without_a_copy():
    from numba import cuda

    d = cuda.to_device(np.arange(6, dtype=np.float32))
    t = ember.as_tensor(d)
    assert t.is_cuda and t.data_ptr() == d.__cuda_array_interface__["data"][0]
    t[0] = 9.0
    assert d.copy_to_host()[0] == 9.0
    assert ember.from_dlpack(d).data_ptr() == t.data_ptr()
