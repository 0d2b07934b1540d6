"""CUDA reductions and arg-reductions against NumPy and the CPU backend, on tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember import opcodes as op
from ember.kernels import cpu  # noqa: E402
from ember.kernels.common.reductions import REDUCTIONS  # noqa: E402
from ember.kernels.cuda import launch, reductions as red  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

BASE = np.array([0.5, -1.25, 2.0, 3.5, -0.75, 1.5, 0.0, -2.5, 4.0, 0.25, -3.0, 1.0] * 3).reshape(3, 4, 3)


def _keep(shape, dims):
    return tuple(1 if d in dims else n for d, n in enumerate(shape))


def _run(code, x, dims, out_dtype, device_view):
    out = DeviceStorage.empty(_keep(x.shape, dims), out_dtype)
    red.reduce(code, device_view(x), dims, out)
    return out.to_numpy()


NUMPY = {
    op.R_SUM: lambda x, d: x.sum(d, keepdims=True), op.R_PROD: lambda x, d: x.prod(d, keepdims=True),
    op.R_MAX: lambda x, d: x.max(d, keepdims=True), op.R_MIN: lambda x, d: x.min(d, keepdims=True),
    op.R_ALL: lambda x, d: (x != 0).all(d, keepdims=True), op.R_ANY: lambda x, d: (x != 0).any(d, keepdims=True),
    op.R_COUNT_NONZERO: lambda x, d: (x != 0).sum(d, keepdims=True),
    op.R_SUMSQ: lambda x, d: (x * x).sum(d, keepdims=True),
    op.R_ABSMAX: lambda x, d: np.abs(x).max(d, keepdims=True),
    op.R_ABSSUM: lambda x, d: np.abs(x).sum(d, keepdims=True),
}


@pytest.mark.parametrize("code", list(REDUCTIONS), ids=lambda c: REDUCTIONS[c][0])
@pytest.mark.parametrize("dims", [(1,), (0, 2)], ids=str)
def test_float_reductions_match_numpy(code, dims, device_view):
    x = BASE.transpose(1, 0, 2)[:, ::-1]  # non-contiguous, negative stride
    out_dtype = np.float64 if code not in (op.R_ALL, op.R_ANY, op.R_COUNT_NONZERO) else \
        (np.bool_ if code != op.R_COUNT_NONZERO else np.int64)
    got = _run(code, x, dims, out_dtype, device_view)
    np.testing.assert_allclose(got, NUMPY[code](x, dims), rtol=1e-12)


@pytest.mark.parametrize("layout_name_", ["permuted", "sliced", "flipped", "expanded", "selected"])
def test_layouts_sum_and_max(layout_name_, layouts, device_view):
    x = layouts(BASE.astype(np.float32))[layout_name_]
    for code, dims in ((op.R_SUM, (0,)), (op.R_MAX, (x.ndim - 1,)), (op.R_SUM, tuple(range(x.ndim)))):
        got = _run(code, x, dims, np.float32, device_view)
        np.testing.assert_allclose(got, NUMPY[code](x.astype(np.float64), dims), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("code", [op.R_SUM, op.R_PROD, op.R_MAX, op.R_MIN, op.R_ANY, op.R_ALL, op.R_ABSMAX])
def test_int_and_bool_reductions_match_cpu(code, dtype, device_view):
    x = (np.arange(24).reshape(2, 3, 4) % 5 - 1).astype(dtype)
    x = x.transpose(2, 1, 0)
    for dims in ((0,), (1, 2)):
        shape = _keep(x.shape, dims)
        kind = REDUCTIONS[code].kind
        out_dtype = np.bool_ if kind == "bool" else (dtype if kind == "same" else
                                                     (np.int64 if dtype != np.bool_ else np.int64))
        expected = np.zeros(shape, out_dtype)
        cpu.reduce(code, x, dims, expected)
        np.testing.assert_array_equal(_run(code, x, dims, out_dtype, device_view), expected)


def test_nan_propagates_and_output_casts(device_view):
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0]])
    np.testing.assert_array_equal(_run(op.R_MAX, x, (1,), np.float64, device_view), [[np.nan], [5.0]])
    np.testing.assert_array_equal(_run(op.R_MIN, x, (1,), np.float64, device_view), [[np.nan], [-1.0]])
    np.testing.assert_array_equal(_run(op.R_SUM, x, (1,), np.float32, device_view),
                                  np.array([[np.nan], [6.0]], np.float32))


def test_empty_reductions_give_identities(device_view):
    x = np.zeros((2, 0, 3))
    expected = {op.R_SUM: 0.0, op.R_PROD: 1.0, op.R_MAX: -np.inf, op.R_MIN: np.inf, op.R_SUMSQ: 0.0}
    for code, value in expected.items():
        np.testing.assert_array_equal(_run(code, x, (1,), np.float64, device_view), np.full((2, 1, 3), value))
    assert _run(op.R_ALL, x, (1,), np.bool_, device_view).all()
    assert _run(op.R_SUM, x, (0,), np.float64, device_view).shape == (1, 0, 3)


def test_two_pass_full_reduction_and_grid_stride(monkeypatch, device_view):
    monkeypatch.setattr(launch, "TWO_PASS_MIN", 8)
    monkeypatch.setattr(launch, "MAX_BLOCKS", 3)
    x = (np.arange(150, dtype=np.float64) * 0.5 - 20).reshape(10, 15)[:, ::-1].T
    for code in (op.R_SUM, op.R_COUNT_NONZERO, op.R_SUMSQ, op.R_MAX):
        got = _run(code, x, (0, 1), np.float64, device_view)
        np.testing.assert_allclose(got, NUMPY[code](x, (0, 1)), rtol=1e-12)
    # more outputs than blocks: one pass, blocks stride over the outputs
    np.testing.assert_allclose(_run(op.R_SUM, x, (1,), np.float64, device_view), x.sum(1, keepdims=True))


def test_bad_reduce_arguments(device_view):
    x = device_view(np.ones((2, 3)))
    with pytest.raises(ValueError):
        red.reduce(op.R_SUM, x, (1,), DeviceStorage.empty((2, 3), np.float64))
    with pytest.raises(ValueError):
        red.reduce(99, x, (1,), DeviceStorage.empty((2, 1), np.float64))


@pytest.mark.parametrize("code", [op.A_MAX, op.A_MIN])
def test_arg_reduce_first_index_and_nan(code, device_view):
    x = np.array([[1.0, 3.0, 3.0, 0.0, 3.0, -1.0, -1.0],
                  [2.0, np.nan, 1.0, np.nan, 9.0, -4.0, 0.0],
                  [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]] * 2)[::-1].T  # (7, 6), reduce dim 0
    values = DeviceStorage.empty((1, 6), np.float64)
    indices = DeviceStorage.from_numpy(np.full((6, 1), -7, np.int64)).permute((1, 0))
    red.arg_reduce(code, device_view(x), 0, values, indices)
    exp_v, exp_i = np.zeros((1, 6)), np.zeros((1, 6), np.int64)
    cpu.arg_reduce(code, x, 0, exp_v, exp_i)
    np.testing.assert_array_equal(indices.to_numpy(), exp_i)
    np.testing.assert_array_equal(values.to_numpy(), exp_v)
    assert exp_i[0, 1] == 1  # the first NaN wins


def test_arg_reduce_int_last_dim_and_zero_dim(device_view):
    x = np.array([[3, 7, 7, 1], [0, -2, 5, 5]], np.int32)
    values, indices = DeviceStorage.empty((2, 1), np.int32), DeviceStorage.empty((2, 1), np.int64)
    red.arg_reduce(op.A_MAX, device_view(x), 1, values, indices)
    np.testing.assert_array_equal(indices.to_numpy()[:, 0], x.argmax(1))
    np.testing.assert_array_equal(values.to_numpy()[:, 0], x.max(1))
    v0, i0 = DeviceStorage.empty((), np.float64), DeviceStorage.empty((), np.int64)
    red.arg_reduce(op.A_MIN, device_view(np.array(2.5)), 0, v0, i0)
    assert v0.to_numpy() == 2.5 and i0.to_numpy() == 0
    with pytest.raises(IndexError):
        red.arg_reduce(op.A_MAX, device_view(np.zeros((2, 0))), 1, DeviceStorage.empty((2, 1), np.float64),
                       DeviceStorage.empty((2, 1), np.int64))
