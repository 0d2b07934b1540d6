"""CUDA scatter (assign, sum, prod, amax, amin) against the CPU backend, duplicate indices included."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember.kernels.cpu import indexing as cpu  # noqa: E402
from ember.kernels.cuda.indexing import REDUCTIONS, index_range, scatter  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

RNG = np.random.default_rng(2)
INDEX = np.array([3, 0, 3, 5, 3, 0, 1], np.int64)  # duplicates; 2 and 4 untouched


def _values(dtype, n: int) -> np.ndarray:
    if dtype == np.bool_:
        return RNG.random(n) < 0.5
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(n).astype(dtype)
    return RNG.integers(0 if np.dtype(dtype).kind == "u" else -4, 5, n).astype(dtype)


def _both(device_view, reduce: str, out: np.ndarray, index: np.ndarray, src: np.ndarray):
    """(device result, CPU result) of one scatter, every operand laid out like the given NumPy array."""
    expected = np.ascontiguousarray(out).copy()
    cpu.scatter(reduce, expected, index, src)
    dev = device_view(out)
    scatter(reduce, dev, device_view(index), device_view(src))
    return dev.to_numpy(), expected


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.int8, np.uint8, np.bool_])
def test_duplicates_match_the_serial_loop(device_view, reduce, dtype):
    out, src = _values(dtype, 6), _values(dtype, INDEX.size)
    got, expected = _both(device_view, reduce, out, INDEX, src)
    assert got.dtype == dtype
    if dtype in (np.float32, np.float64) and reduce in ("sum", "prod"):
        np.testing.assert_allclose(got, expected, rtol=1e-6)  # atomics add in any order
    else:
        np.testing.assert_array_equal(got, expected)


def test_assign_last_write_wins():
    out = DeviceStorage.from_numpy(np.zeros(4))
    scatter("assign", out, DeviceStorage.from_numpy(np.array([2, 2, 0, 2])),
            DeviceStorage.from_numpy(np.array([1.0, 2.0, 3.0, 4.0])))
    np.testing.assert_array_equal(out.to_numpy(), [3.0, 0.0, 4.0, 0.0])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_wins_in_amax_amin(device_view, reduce, dtype):
    out = np.array([np.nan, 0.0, 0.0, 0.0], dtype)
    index = np.array([0, 1, 1, 2, 2, 3], np.int64)
    src = np.array([5.0, np.nan, 7.0, -7.0, np.nan, -2.0], dtype)
    got, expected = _both(device_view, reduce, out, index, src)
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[:3]).all() and got[3] == (0.0 if reduce == "amax" else -2.0)


@pytest.mark.parametrize("reduce", ["assign", "sum", "prod", "amax"])
def test_strided_operands(device_view, reduce):
    out = np.zeros(12)[::-2]  # six targets, negative stride
    index = np.ascontiguousarray(INDEX[:6].reshape(3, 2).T).T  # 2-d, not one run: copied first
    src = RNG.standard_normal((3, 4))[:, ::2]  # 2-d, strided
    got, expected = _both(device_view, reduce, out, index, src)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_empty_index_is_a_no_op(device_view):
    out = device_view(np.arange(3.0))
    scatter("sum", out, device_view(np.zeros(0, np.int64)), device_view(np.zeros(0)))
    np.testing.assert_array_equal(out.to_numpy(), [0.0, 1.0, 2.0])


def test_bad_arguments_raise(device_view):
    out, src = device_view(np.zeros(3)), device_view(np.ones(2))
    with pytest.raises(ValueError):
        scatter("mean", out, device_view(np.zeros(2, np.int64)), src)
    with pytest.raises(TypeError):
        scatter("sum", out, device_view(np.zeros(2, np.int32)), src)
    with pytest.raises(TypeError):
        scatter("sum", out, device_view(np.zeros(2, np.int64)), device_view(np.ones(2, np.float32)))
    with pytest.raises(ValueError):
        scatter("sum", out, device_view(np.zeros(3, np.int64)), src)
    with pytest.raises(ValueError):
        scatter("sum", device_view(np.zeros((4, 4))[:, :2]), device_view(np.zeros(2, np.int64)), src)


def test_index_range(device_view):
    assert index_range(device_view(INDEX)) == (0, 5)
    assert index_range(device_view(np.array([[7, -3], [2, 40]], np.int64).T)) == (-3, 40)  # copied first
    assert index_range(device_view(np.arange(400, dtype=np.int64)[::-3])) == (0, 399)  # more items than threads
    assert index_range(device_view(np.zeros(0, np.int64))) == (0, -1)
    with pytest.raises(TypeError):
        index_range(device_view(np.zeros(2, np.int32)))
