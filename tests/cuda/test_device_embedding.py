"""CUDA bag_argmax against the CPU kernel, on tiny shapes (runs under NUMBA_ENABLE_CUDASIM=1)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember.kernels.cpu import embedding as cpu  # noqa: E402
from ember.kernels.cuda import embedding as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage, c_strides  # noqa: E402


def _at_offset(a: np.ndarray, shift: int) -> DeviceStorage:
    """A device copy of ``a`` that starts ``shift`` elements into a larger buffer (sentinels around it)."""
    flat = np.concatenate([np.full(shift, 7, a.dtype), a.reshape(-1), np.full(3, -7, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, c_strides(a.shape), offset=shift)


def _both(values, bag, n_bags, shift=0):
    want = np.full((n_bags, values.shape[1]), -1, np.int64)
    cpu.bag_argmax(values, bag, want)
    out = _at_offset(np.full(want.shape, -1, np.int64), shift)
    dev.bag_argmax(_at_offset(values, shift), _at_offset(bag, shift + 1), out)
    if shift:
        host = out.buffer.copy_to_host()
        assert (host[:shift] == 7).all() and (host[-3:] == -7).all()
    return want, out.to_numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sorted_bags", [True, False])
def test_matches_cpu(dtype, sorted_bags):
    rng = np.random.default_rng(1 + sorted_bags)
    rows, dim, n_bags = 23, 5, 6
    values = rng.integers(-3, 4, (rows, dim)).astype(dtype)  # small integers: many ties
    bag = rng.integers(0, n_bags, rows).astype(np.int64)
    bag[bag == 4] = 3  # bag 4 is empty
    if sorted_bags:
        bag.sort()
    want, got = _both(values, bag, n_bags, shift=4 if dtype == np.float32 else 0)
    np.testing.assert_array_equal(got, want)
    assert (got[4] == -1).all()
    for b in (0, 1, 2, 3, 5):  # the chosen row is in the bag, holds the max, and is the first such
        members = np.flatnonzero(bag == b)
        if members.size:
            best = values[members].max(0)
            first = np.array([members[values[members, d] == best[d]][0] for d in range(dim)])
            np.testing.assert_array_equal(got[b], first)


def test_nan_follows_the_cpu():
    """A NaN first row is never beaten; a later NaN never wins; all-NaN keeps the first row."""
    nan = np.nan
    values = np.array([[nan, 1.0, nan, 2.0],
                       [5.0, nan, nan, 2.0],
                       [9.0, 3.0, nan, -np.inf],
                       [1.0, 1.0, 4.0, 7.0],
                       [nan, -np.inf, 2.0, 1.0]])
    bag = np.array([0, 0, 0, 1, 1], np.int64)
    want, got = _both(values, bag, 2)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[0, 2, 0, 0], [3, 3, 3, 3]])


def test_single_row_bags_and_empty_input():
    values = np.array([[-np.inf, 0.0], [2.0, -1.0]], np.float32)
    want, got = _both(values, np.array([1, 0], np.int64), 3)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[1, 1], [0, 0], [-1, -1]])
    out = DeviceStorage.from_numpy(np.full((2, 3), -1, np.int64))
    dev.bag_argmax(DeviceStorage.empty((0, 3), np.float64), DeviceStorage.empty((0,), np.int64), out)
    np.testing.assert_array_equal(out.to_numpy(), np.full((2, 3), -1))
