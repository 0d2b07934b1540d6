"""DLPack on the CPU: ``Tensor.__dlpack__``/``__dlpack_device__``, ``ember.from_dlpack``, ``ember.utils.dlpack``.

Memory is shared both ways with NumPy and torch (each test writes through one side and reads the other), capsules
are consumed once, and torch's checks (requires grad, streams on the CPU) raise torch's errors. The torch rows
are differential and skip without torch. CUDA tensors: ``tests/cuda/test_device_dlpack.py``.
"""
from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import ember
from ember.tensor import dlpack_abi
from ember.utils import dlpack

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
_CONSUMED = "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once"


def _torch():
    return pytest.importorskip("torch")


def test_dlpack_device_is_the_cpu_and_names_are_torchs():
    assert ember.arange(3.0).__dlpack_device__() == (dlpack.DLDeviceType.kDLCPU, 0)
    assert dlpack.DLDeviceType.kDLCUDA == 2 and dlpack.DLDeviceType.kDLCUDAHost == 3
    assert ember.from_dlpack is dlpack.from_dlpack
    assert ember.utils.dlpack.to_dlpack is dlpack.to_dlpack


def test_numpy_reads_and_writes_a_tensor_through_dlpack():
    t = ember.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    assert a.dtype == np.float32 and a.shape == (2, 3) and a.flags.writeable
    a[1, 2] = 50.0
    assert t[1, 2].item() == 50.0
    t[0, 0] = -1.0
    assert a[0, 0] == -1.0


def test_a_view_keeps_its_strides_and_offset():
    base = ember.arange(12.0).reshape(3, 4)
    view = base[:, 1::2].t()
    a = np.from_dlpack(view)
    assert a.shape == (2, 3) and tuple(s // 4 for s in a.strides) == view.stride()
    np.testing.assert_array_equal(a, view.numpy())
    a[1, 2] = 99.0
    assert base[2, 3].item() == 99.0


def test_from_dlpack_of_a_numpy_array_shares_it():
    a = np.arange(5, dtype=np.int32)
    t = ember.from_dlpack(a)
    assert t.dtype is ember.int32 and t.shape == (5,)
    t[0] = 40
    assert a[0] == 40
    a[4] = -4
    assert t[4].item() == -4


def test_capsules_round_trip_and_are_consumed_once():
    t = ember.arange(4.0)
    capsule = dlpack.to_dlpack(t)
    assert "dltensor" in repr(capsule) and "used" not in repr(capsule)
    u = dlpack.from_dlpack(capsule)
    assert "used_dltensor" in repr(capsule)
    u[1] = 10.0  # a capsule of the unversioned kind still comes back writable (NumPy's reader would not)
    assert t[1].item() == 10.0
    with pytest.raises(RuntimeError, match=_CONSUMED):
        ember.from_dlpack(capsule)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    v = ember.from_dlpack(versioned)
    v[2] = 20.0
    assert t[2].item() == 20.0
    with pytest.raises(RuntimeError, match=_CONSUMED):
        ember.from_dlpack(versioned)


def test_a_capsule_takes_no_device_or_copy_argument():
    with pytest.raises(AssertionError, match="device and copy kwargs not supported"):
        ember.from_dlpack(dlpack.to_dlpack(ember.ones(2)), copy=True)


def test_anything_else_is_an_invalid_capsule():
    with pytest.raises(RuntimeError, match=_CONSUMED):
        ember.from_dlpack(3)


def test_a_tensor_that_requires_grad_refuses_export_as_torch():
    x = ember.ones(3, requires_grad=True)
    message = "Can't export tensors that require gradient, use tensor.detach()"
    with pytest.raises(BufferError, match=message):
        x.__dlpack__()
    with pytest.raises(BufferError, match=message):
        np.from_dlpack(x)
    np.testing.assert_array_equal(np.from_dlpack(x.detach()), [1.0, 1.0, 1.0])
    assert "dltensor" in repr(dlpack.to_dlpack(x))  # torch's to_dlpack does not check it either


def test_streams_on_the_cpu_are_refused_as_torch():
    t = ember.ones(2)
    with pytest.raises(AssertionError, match="stream should be None on cpu."):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="stream must be ``int`` or ``none``"):
        t.__dlpack__(stream=1.0)
    for stream in (None, -1):
        np.testing.assert_array_equal(ember.from_dlpack(t.__dlpack__(stream=stream)).numpy(), [1.0, 1.0])


def test_copy_argument():
    t = ember.arange(3.0)
    copied = ember.from_dlpack(t, copy=True)
    copied[0] = 7.0
    assert t[0].item() == 0.0
    shared = ember.from_dlpack(t, copy=False)
    shared[0] = 5.0
    assert t[0].item() == 5.0
    assert np.from_dlpack(t, copy=True).ctypes.data != t.data_ptr()


def test_a_read_only_numpy_array_is_shared_and_stays_read_only():
    """torch shares a read-only array's memory without a copy (and lets writes through); ember shares it too and
    keeps NumPy's read-only flag, so a write raises instead of changing memory NumPy promised not to."""
    a = np.arange(3.0)
    a.flags.writeable = False
    t = ember.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal((t * 2).numpy(), [0.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="read-only"):
        t.add_(1.0)


def test_every_dtype_round_trips_through_numpy():
    for name in DTYPES:
        a = (np.arange(4) % 2).astype(name)
        t = ember.from_dlpack(a)
        assert t.dtype is getattr(ember, name)
        back = np.from_dlpack(t)
        assert back.dtype == a.dtype and back.ctypes.data == a.ctypes.data
        np.testing.assert_array_equal(back, a)


def test_zero_dim_and_empty_tensors():
    s = ember.from_dlpack(np.array(2.5))
    assert s.shape == () and s.item() == 2.5
    e = ember.from_dlpack(ember.zeros(0, 3))
    assert e.shape == (0, 3) and e.dtype is ember.float32


def test_an_unsupported_dtype_is_refused_before_the_capsule_is_taken():
    capsule = np.zeros(2, np.complex64).__dlpack__()
    with pytest.raises(TypeError):
        ember.from_dlpack(capsule)
    assert "used" not in repr(capsule)


def test_imported_memory_lives_as_long_as_the_tensor():
    a = np.arange(1000.0)
    before = sys.getrefcount(a)
    t = ember.from_dlpack(a.__dlpack__())
    assert sys.getrefcount(a) == before + 1  # NumPy's capsule holds the array until ember lets go
    view = t[10:20]
    del t
    gc.collect()
    assert view.sum().item() == sum(range(10, 20))
    del view
    gc.collect()
    assert sys.getrefcount(a) == before


def test_ember_capsules_release_what_they_hold():
    """The ctypes producer (CUDA memory) frees its struct when the consumer's deleter runs or, unconsumed, when the
    capsule is dropped; exercised here over host memory."""
    owner = np.arange(6.0)
    strides = (1,)
    capsule = dlpack_abi.make_capsule(owner.ctypes.data, (6,), strides, owner.dtype,
                                      (dlpack.DLDeviceType.kDLCPU, 0), owner, versioned=False)
    assert len(dlpack_abi._LIVE) == 1
    t = ember.from_dlpack(capsule)
    t[5] = -6.0
    assert owner[5] == -6.0
    del t
    gc.collect()
    assert dlpack_abi._LIVE == {}
    flagged = dlpack_abi.make_capsule(owner.ctypes.data, (6,), strides, owner.dtype,
                                      (dlpack.DLDeviceType.kDLCPU, 0), owner, True, dlpack_abi.READ_ONLY)
    read_only = ember.from_dlpack(flagged)
    with pytest.raises(ValueError, match="read-only"):
        read_only[0] = 1.0
    del read_only, flagged
    gc.collect()
    assert dlpack_abi._LIVE == {}
    unconsumed = dlpack_abi.make_capsule(owner.ctypes.data, (6,), strides, owner.dtype,
                                         (dlpack.DLDeviceType.kDLCPU, 0), owner, versioned=False)
    del unconsumed
    gc.collect()
    assert dlpack_abi._LIVE == {}


def test_an_older_producer_without_keywords_is_asked_again():
    class Old:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(3.0)
    t = ember.from_dlpack(Old(a), copy=True)
    t[0] = 9.0
    assert a[0] == 0.0  # the producer could not copy: ember did


# ------------------------------------------------------------------------------------------------ torch, both ways
def test_torch_reads_and_writes_an_ember_tensor():
    torch = _torch()
    t = ember.arange(6.0).reshape(2, 3)
    u = torch.from_dlpack(t)
    assert u.dtype == torch.float32 and tuple(u.shape) == (2, 3) and u.data_ptr() == t.data_ptr()
    u[0, 1] = 11.0
    assert t[0, 1].item() == 11.0
    t[1, 1] = -3.0
    assert u[1, 1].item() == -3.0
    view = t[:, ::2]
    v = torch.from_dlpack(view)
    assert v.stride() == view.stride() and v.data_ptr() == view.data_ptr()


def test_ember_reads_and_writes_a_torch_tensor():
    torch = _torch()
    x = torch.arange(12.0).reshape(3, 4)[:, 1::2]
    t = ember.from_dlpack(x)
    assert t.dtype is ember.float32 and t.shape == (3, 2) and t.stride() == x.stride()
    assert t.data_ptr() == x.data_ptr()
    t[2, 1] = 100.0
    assert x[2, 1].item() == 100.0
    x[0, 0] = -7.0
    assert t[0, 0].item() == -7.0


def test_torch_capsules_both_ways_and_torchs_consumed_error():
    torch = _torch()
    x = torch.arange(4)
    capsule = torch.utils.dlpack.to_dlpack(x)
    t = dlpack.from_dlpack(capsule)
    t[3] = 30
    assert x[3].item() == 30 and t.dtype is ember.int64
    with pytest.raises(RuntimeError, match=_CONSUMED):
        ember.from_dlpack(capsule)
    ours = dlpack.to_dlpack(ember.arange(3))
    y = torch.utils.dlpack.from_dlpack(ours)
    assert y.tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError) as theirs:
        torch.utils.dlpack.from_dlpack(ours)
    with pytest.raises(RuntimeError) as mine:
        ember.from_dlpack(ours)
    assert str(mine.value) == str(theirs.value)


def test_torch_and_ember_refuse_the_same_exports():
    torch = _torch()
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
            x.__dlpack__()
        with pytest.raises(AssertionError, match="stream should be None on cpu"):
            x.detach().__dlpack__(stream=1)
    assert ember.ones(1).__dlpack_device__() == torch.ones(1).__dlpack_device__()


def test_every_dtype_round_trips_through_torch():
    torch = _torch()
    for name in DTYPES:
        x = (torch.arange(4) % 2).to(getattr(torch, name))
        t = ember.from_dlpack(x)
        assert t.dtype is getattr(ember, name) and t.data_ptr() == x.data_ptr()
        back = torch.from_dlpack(t)
        assert back.dtype == x.dtype and back.data_ptr() == x.data_ptr()
        assert back.tolist() == x.tolist()


def test_a_read_only_array_is_shared_by_torch_and_ember_alike():
    torch = _torch()
    a = np.arange(3.0)
    a.flags.writeable = False
    assert torch.from_dlpack(a).data_ptr() == a.ctypes.data == ember.from_dlpack(a).data_ptr()


# ---- JAX (a differential check that skips without it) ----------------------------------------------------------

def test_jax_shares_an_ember_tensor_and_ember_shares_a_jax_array():
    jnp = pytest.importorskip("jax.numpy")
    jax = pytest.importorskip("jax")
    t = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    j = jax.dlpack.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(j), t.numpy())
    assert j.dtype == jnp.float32 and j.shape == (2, 3)
    if t.data_ptr() % 64 == 0:  # JAX imports without a copy only memory aligned as XLA needs (else it copies)
        t[0, 0] = 42.0  # the memory is ember's: a zero-copy import sees the write
        assert float(j[0, 0]) == 42.0
    a = jnp.arange(4, dtype=jnp.int32) * 3
    back = ember.from_dlpack(a)
    assert back.dtype == ember.int32 and back.tolist() == [0, 3, 6, 9]
    assert back.data_ptr() == a.unsafe_buffer_pointer()
