"""CUDA scans (cumsum, cumprod, cummax/cummin with indices, logcumsumexp) against the CPU backend."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember import opcodes as op  # noqa: E402
from ember.kernels.cpu import scans as cpu  # noqa: E402
from ember.kernels.cuda.scans import scan, scan_indices  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

RNG = np.random.default_rng(1)
CODES = {"cumsum": op.S_SUM, "cumprod": op.S_PROD, "cummax": op.S_MAX, "cummin": op.S_MIN,
         "logcumsumexp": op.S_LOGSUMEXP}


def _with_nans(shape) -> np.ndarray:
    base = RNG.standard_normal(shape)
    base.flat[[3, 10]] = np.nan
    return base


def _cpu_scan(code: int, x: np.ndarray, dim: int, dtype) -> np.ndarray:
    out = np.empty(x.shape, dtype)
    cpu.scan(code, x, dim, out)
    return out


def _cuda_scan(device_view, code: int, x: np.ndarray, dim: int, out: np.ndarray) -> np.ndarray:
    """Scan of ``x`` into a device copy of ``out`` laid out like ``out``; returns the result."""
    dev = device_view(out)
    scan(code, device_view(x), dim, dev)
    return dev.to_numpy()


@pytest.mark.parametrize("name", CODES)
def test_every_scan_in_every_layout(name, layout_name, layouts, device_view):
    x = layouts(_with_nans((2, 3, 4)))[layout_name]
    for dim in (0, x.ndim - 1):
        expected = _cpu_scan(CODES[name], x, dim, np.float64)
        got = _cuda_scan(device_view, CODES[name], x, dim, np.zeros(x.shape))
        np.testing.assert_allclose(got, expected, rtol=1e-13, equal_nan=True)


def test_strided_output(device_view):
    x = RNG.standard_normal((3, 4))
    out = np.zeros((4, 3)).T  # a transposed destination
    np.testing.assert_allclose(_cuda_scan(device_view, op.S_SUM, x, 1, out), np.cumsum(x, 1), rtol=1e-13)


def test_float32_accumulates_in_float64(device_view):
    x = np.array([1.0, 1e-8, 1e-8, -1.0] * 3, np.float32)[None, :]
    got = _cuda_scan(device_view, op.S_SUM, x, 1, np.zeros(x.shape, np.float32))
    np.testing.assert_array_equal(got, _cpu_scan(op.S_SUM, x, 1, np.float32))
    assert got.dtype == np.float32


@pytest.mark.parametrize("dtype,code,out_dtype", [
    (np.int32, op.S_SUM, np.int64), (np.int8, op.S_PROD, np.int64), (np.int8, op.S_MAX, np.int8),
    (np.uint8, op.S_MIN, np.uint8), (np.bool_, op.S_SUM, np.int64), (np.bool_, op.S_MAX, np.bool_),
    (np.bool_, op.S_MIN, np.bool_), (np.int64, op.S_SUM, np.int64),
])
def test_integer_and_bool_dtypes(device_view, dtype, code, out_dtype):
    x = (RNG.integers(-3, 4, (3, 5)) if dtype != np.uint8 else RNG.integers(0, 200, (3, 5))).astype(dtype)
    if dtype == np.int64:
        x[:, 0] = 2 ** 62  # exact in int64, not in float64
    got = _cuda_scan(device_view, code, x, 1, np.zeros(x.shape, out_dtype))
    assert got.dtype == out_dtype
    np.testing.assert_array_equal(got, _cpu_scan(code, x, 1, out_dtype))


def test_zero_dim_and_empty(device_view):
    x = np.array(2.5)
    for code in CODES.values():
        np.testing.assert_allclose(_cuda_scan(device_view, code, x, 0, np.zeros(())), _cpu_scan(code, x, 0, float))
    empty = DeviceStorage.empty((2, 0), np.float64)
    scan(op.S_SUM, empty, 1, empty)  # nothing to do, nothing launched


@pytest.mark.parametrize("code", [op.S_MAX, op.S_MIN])
def test_scan_indices_ties_and_nans(device_view, code, layout_name, layouts):
    base = RNG.integers(0, 3, (2, 3, 4)).astype(np.float64)  # many ties
    base.flat[[5, 17]] = np.nan
    x = layouts(base)[layout_name]
    for dim in range(x.ndim):
        values, indices = np.empty(x.shape), np.empty(x.shape, np.int64)
        cpu.scan_indices(code, x, dim, values, indices)
        dv, di = device_view(np.zeros(x.shape)), device_view(np.zeros(x.shape, np.int64).T.copy().T)
        scan_indices(code, device_view(x), dim, dv, di)
        np.testing.assert_array_equal(dv.to_numpy(), values)
        np.testing.assert_array_equal(di.to_numpy(), indices)


def test_scan_indices_int_ties_move_the_index(device_view):
    x = np.array([1, 3, 3, 2, 3], np.int16)
    values, indices = device_view(np.zeros(5, np.int16)), device_view(np.zeros(5, np.int64))
    scan_indices(op.S_MAX, device_view(x), 0, values, indices)
    np.testing.assert_array_equal(values.to_numpy(), [1, 3, 3, 3, 3])
    np.testing.assert_array_equal(indices.to_numpy(), [0, 1, 2, 2, 4])


def test_bad_arguments_raise(device_view):
    x = device_view(np.zeros((2, 3)))
    with pytest.raises(ValueError):
        scan(op.S_SUM, x, 0, device_view(np.zeros((3, 2))))
    with pytest.raises(IndexError):
        scan(op.S_SUM, x, 2, device_view(np.zeros((2, 3))))
    with pytest.raises(ValueError):
        scan_indices(op.S_SUM, x, 0, x, device_view(np.zeros((2, 3), np.int64)))
    with pytest.raises(TypeError):
        scan_indices(op.S_MAX, x, 0, x, x)
