"""The caching allocator: size classes, free-list reuse, counters, cache release, OOM retry, and its simulator
front end feeding ember.cuda's memory API."""
from __future__ import annotations

import gc

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():
    pytest.skip("CUDA (or the simulator) is not available", allow_module_level=True)

import ember.cuda  # noqa: E402
from ember.kernels.cuda.allocator import CachingPool, OutOfMemoryError, device_empty, size_class  # noqa: E402


@pytest.mark.parametrize("nbytes", [1, 511, 512, 513, 4000, (1 << 20) - 1, 1 << 20, (1 << 20) + 1,
                                    3_000_000, (1 << 30) + 7])
def test_size_class_covers_the_request_with_bounded_waste(nbytes):
    size = size_class(nbytes)
    assert size >= nbytes
    if nbytes <= 1 << 20:
        assert size % 512 == 0 and size - nbytes < 512
    else:
        assert size <= nbytes * 1.25 + 1
    assert size_class(size) == size  # a class size is its own class


def test_size_class_is_monotonic_and_empty_is_zero():
    sizes = [size_class(n) for n in range(0, 5_000_000, 9973)]
    assert sizes == sorted(sizes) and size_class(0) == 0


class FakeDevice:
    """A backing that counts driver calls and can run out of memory."""

    def __init__(self, capacity=1 << 40):
        self.capacity, self.used, self.mallocs, self.frees = capacity, 0, 0, 0

    def alloc(self, size):
        if self.used + size > self.capacity:
            raise OutOfMemoryError("fake device full")
        self.used += size
        self.mallocs += 1
        return ("ptr", self.mallocs, size)

    def free(self, handle):
        self.used -= handle[2]
        self.frees += 1


def test_freed_blocks_are_reused_by_size_class():
    dev = FakeDevice()
    pool = CachingPool(dev.alloc, dev.free)
    a = pool.allocate(1000)
    assert (a.size, pool.allocated, pool.reserved, dev.mallocs) == (1024, 1024, 1024, 1)
    pool.free(a)
    assert pool.allocated == 0 and pool.reserved == 1024 and pool.cached_bytes() == 1024
    b = pool.allocate(700)  # same class (1024): a cache hit, no driver call
    assert b.handle == a.handle and dev.mallocs == 1 and pool.num_cache_hits == 1
    c = pool.allocate(5000)  # another class: the driver
    assert dev.mallocs == 2 and c.handle != b.handle
    assert pool.allocated == 1024 + 5120 and pool.requested == 700 + 5000


def test_peaks_and_reset():
    dev = FakeDevice()
    pool = CachingPool(dev.alloc, dev.free)
    blocks = [pool.allocate(512) for _ in range(4)]
    for block in blocks:
        pool.free(block)
    assert pool.peak_allocated == 2048 and pool.allocated == 0 and pool.peak_reserved == 2048
    pool.reset_peaks()
    assert pool.peak_allocated == 0 and pool.peak_reserved == 2048  # still reserved (cached)
    stats = pool.stats()
    assert stats["allocation.all.allocated"] == 4 and stats["allocation.all.freed"] == 4
    assert stats["active.all.current"] == 0


def test_release_cached_returns_only_free_blocks():
    dev = FakeDevice()
    pool = CachingPool(dev.alloc, dev.free)
    kept, dropped = pool.allocate(512), pool.allocate(4096)
    pool.free(dropped)
    assert pool.release_cached() == 4096
    assert dev.frees == 1 and dev.used == 512 and pool.reserved == 512 and pool.allocated == 512
    pool.free(kept)
    assert pool.release_cached() == 512 and pool.reserved == 0 and dev.used == 0


def test_out_of_memory_empties_the_cache_and_retries_once():
    dev = FakeDevice(capacity=4096)
    pool = CachingPool(dev.alloc, dev.free)
    pool.free(pool.allocate(3000))  # 3072 cached
    block = pool.allocate(2048)  # does not fit beside the cached block: cache released, retried
    assert block.size == 2048 and pool.num_oom_retries == 1 and pool.reserved == 2048 and dev.frees == 1
    with pytest.raises(OutOfMemoryError, match="Tried to allocate 4.00 KiB"):
        pool.allocate(4096)
    assert isinstance(OutOfMemoryError("x"), RuntimeError) and ember.cuda.OutOfMemoryError is OutOfMemoryError


def test_device_empty_feeds_the_memory_api_and_reuses_blocks():
    gc.collect()
    ember.cuda.empty_cache()
    base_alloc, base_reserved = ember.cuda.memory_allocated(), ember.cuda.memory_reserved()
    x = device_empty(100, np.float32)
    assert x.shape == (100,) and x.dtype == np.float32
    assert ember.cuda.memory_allocated() == base_alloc + 512
    assert ember.cuda.max_memory_allocated() >= base_alloc + 512
    x[:] = np.arange(100, dtype=np.float32)
    view = x[10:20]
    del x
    gc.collect()
    assert ember.cuda.memory_allocated() == base_alloc + 512  # the view keeps the block alive
    np.testing.assert_array_equal(view.copy_to_host(), np.arange(10, 20, dtype=np.float32))
    del view
    gc.collect()
    assert ember.cuda.memory_allocated() == base_alloc
    assert ember.cuda.memory_reserved() == base_reserved + 512  # cached, not returned
    hits = ember.cuda.memory_stats()["num_cache_hits"]
    y = device_empty(64, np.float64)  # 512 bytes: the cached block again
    assert ember.cuda.memory_stats()["num_cache_hits"] == hits + 1
    del y
    gc.collect()
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() == base_reserved


def test_device_empty_arrays_work_in_kernels():
    @cuda.jit
    def fill(out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = 2 * i

    x = device_empty(20, np.int64)
    fill[1, 32](x)
    np.testing.assert_array_equal(x.copy_to_host(), 2 * np.arange(20))
    assert device_empty(0, np.float32).shape == (0,)
    with pytest.raises(ValueError):
        device_empty(-1, np.float32)


def test_peak_reset_and_summary_through_the_api():
    x = device_empty(4096, np.uint8)
    del x
    gc.collect()
    assert ember.cuda.max_memory_allocated() >= 4096
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == ember.cuda.memory_allocated()
    assert ember.cuda.max_memory_reserved() == ember.cuda.memory_reserved()
    summary = ember.cuda.memory_summary()
    assert "Allocated memory" in summary and "Reserved memory" in summary and "Cache hits" in summary
    assert "Cache hits" not in ember.cuda.memory_summary(abbreviated=True)
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == ember.cuda.memory_allocated()
