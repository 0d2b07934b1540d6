"""The host buffer cache: large temporaries reuse freed memory, and never while a view of them lives."""
from __future__ import annotations

import gc

import numpy as np

import ember
from ember.kernels.cpu import host_cache


def test_small_arrays_are_plain_and_large_ones_reuse_freed_buffers():
    host_cache.empty_cache()
    small = host_cache.empty((10,), np.float32)
    assert small.base is None and small.flags.owndata
    a = host_cache.empty((1024, 512), np.float32)
    address = a.__array_interface__["data"][0]
    del a
    gc.collect()
    assert host_cache.cached_bytes() >= 1024 * 512 * 4
    b = host_cache.empty((512, 1024), np.float32)  # same size: the same memory, no page faults
    assert b.__array_interface__["data"][0] == address and b.shape == (512, 1024) and b.flags.writeable
    assert host_cache.cached_bytes() == 0


def test_a_buffer_is_not_reused_while_any_view_of_it_lives():
    host_cache.empty_cache()
    a = host_cache.empty((1 << 18,), np.float64)
    a[:] = 7.0
    view = a.reshape(512, 512)[::2].T  # a view of a view: must keep the buffer out of the cache
    del a
    gc.collect()
    assert host_cache.cached_bytes() == 0
    other = host_cache.empty((1 << 18,), np.float64)
    other[:] = -1.0
    assert (view == 7.0).all()  # untouched by the new array
    del view, other
    gc.collect()
    assert host_cache.cached_bytes() >= (1 << 18) * 8


def test_tensor_ops_on_large_tensors_use_the_cache_and_stay_correct():
    host_cache.empty_cache()
    x = ember.randn(1 << 19)
    for _ in range(3):
        y = x * 2 + 1
        np.testing.assert_allclose(y.numpy(), x.numpy() * 2 + 1, rtol=1e-6)
        del y
        gc.collect()
    assert host_cache.cached_bytes() > 0
    host_cache.empty_cache()
    assert host_cache.cached_bytes() == 0
