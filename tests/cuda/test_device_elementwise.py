"""Elementwise CUDA kernels against the CPU backend (the semantics reference) and NumPy, on tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember import opcodes as op
from ember.kernels import cpu  # noqa: E402
from ember.kernels.cpu.elementwise import BINARY, TERNARY, UNARY  # noqa: E402
from ember.kernels.cuda import elementwise as ew, launch  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

PREDICATES = {op.ISNAN, op.ISINF, op.ISFINITE, op.ISPOSINF, op.ISNEGINF, op.SIGNBIT, op.LOGICAL_NOT,
              op.EQ, op.NE, op.LT, op.LE, op.GT, op.GE, op.LOGICAL_AND, op.LOGICAL_OR, op.LOGICAL_XOR}
UNIT_DOMAIN = {op.LOG, op.LOG2, op.LOG10, op.LOG1P, op.ASIN, op.ACOS, op.ATANH, op.SQRT, op.RSQRT, op.ERFINV}
INT_UNARY = [op.NEG, op.ABS, op.SQUARE, op.SIGN, op.RELU, op.LOGICAL_NOT, op.BITWISE_NOT, op.COPY, op.ISNAN,
             op.ISFINITE]
INT_BINARY = [op.ADD, op.SUB, op.MUL, op.MAXIMUM, op.MINIMUM, op.EQ, op.NE, op.LT, op.GE, op.LOGICAL_XOR,
              op.IFLOOR_DIV, op.ITRUNC_DIV, op.IREMAINDER, op.IFMOD, op.IPOW, op.BITWISE_AND, op.BITWISE_OR,
              op.BITWISE_XOR, op.LSHIFT, op.RSHIFT]
FLOAT_BINARY = [c for c in BINARY if c not in ew.INTEGER_ONLY[2]]

# no zeros (division), no integers (poles of lgamma and friends)
VALUES = np.array([-2.3, -1.7, -0.6, 0.4, 1.2, 2.5, -0.35, 0.8, 1.9, -1.1, 0.15, 3.3])


def _unary_input(code: int, dtype) -> np.ndarray:
    x = VALUES
    if code in UNIT_DOMAIN:
        x = np.abs(x) / 3.5 + 0.02
    elif code == op.ACOSH:
        x = np.abs(x) + 1.0
    return x.reshape(3, 4).astype(dtype)


def _out_dtype(code: int, dtype) -> np.dtype:
    return np.dtype(np.bool_ if code in PREDICATES else dtype)


def _check(name: str, cuda_fn, cpu_fn, inputs, out_dtype, device_view, rtol) -> None:
    out_shape = np.broadcast_shapes(*(x.shape for x in inputs))
    expected = np.zeros(out_shape, out_dtype)
    cpu_fn(*inputs, expected)
    out = DeviceStorage.empty(out_shape, out_dtype)
    cuda_fn(*(device_view(x) for x in inputs), out)
    got = out.to_numpy()
    if out_dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("code", [c for c in UNARY if c != op.BITWISE_NOT], ids=lambda c: UNARY[c])
def test_unary_float_ops_match_cpu(code, dtype, device_view):
    x = _unary_input(code, dtype)
    _check(UNARY[code], lambda x, o: ew.unary(code, x, o), lambda x, o: cpu.unary(code, x, o), (x,),
           _out_dtype(code, dtype), device_view, 1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
@pytest.mark.parametrize("code", INT_UNARY, ids=lambda c: UNARY[c])
def test_unary_int_ops_match_cpu(code, dtype, device_view):
    x = (np.arange(12) - 5).reshape(3, 4).astype(dtype)
    _check(UNARY[code], lambda x, o: ew.unary(code, x, o), lambda x, o: cpu.unary(code, x, o), (x,),
           _out_dtype(code, dtype), device_view, 0)


@pytest.mark.parametrize("code", [op.LOGICAL_NOT, op.BITWISE_NOT, op.COPY])
def test_unary_bool_ops_match_cpu(code, device_view):
    x = np.array([[True, False, True], [False, False, True]])
    _check(UNARY[code], lambda x, o: ew.unary(code, x, o), lambda x, o: cpu.unary(code, x, o), (x,),
           np.dtype(np.bool_), device_view, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("code", FLOAT_BINARY, ids=lambda c: BINARY[c])
def test_binary_float_ops_match_cpu(code, dtype, device_view):
    a = VALUES.reshape(3, 4).astype(dtype)
    b = VALUES[[4, 5, 7, 8]].reshape(1, 4).astype(dtype)  # broadcast row, all positive (xlogy, pow)
    if code in (op.POW,):
        a = np.abs(a)
    _check(BINARY[code], lambda a, b, o: ew.binary(code, a, b, o), lambda a, b, o: cpu.binary(code, a, b, o),
           (a, b), _out_dtype(code, dtype), device_view, 1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("code", INT_BINARY, ids=lambda c: BINARY[c])
def test_binary_int_ops_match_cpu(code, dtype, device_view):
    a = (np.arange(12).reshape(3, 4) * 7 - (0 if dtype == np.uint8 else 40)).astype(dtype)
    b = np.array([3, -2, 1, 5] if dtype != np.uint8 else [3, 2, 1, 5], dtype)
    if code in (op.IPOW, op.LSHIFT, op.RSHIFT):
        b = np.abs(b)
    _check(BINARY[code], lambda a, b, o: ew.binary(code, a, b, o), lambda a, b, o: cpu.binary(code, a, b, o),
           (a, b), _out_dtype(code, dtype), device_view, 0)


@pytest.mark.parametrize("code", TERNARY, ids=lambda c: TERNARY[c])
def test_ternary_ops_match_cpu(code, device_view):
    a = VALUES.reshape(3, 4)
    b = np.array([[-0.5], [0.1], [1.0]])
    c = np.array(0.3) if code != op.WHERE else np.array([True, False, False, True])
    if code == op.WHERE:
        a, c = c, a  # condition first
        a = np.broadcast_to(a, (3, 4))
    _check(TERNARY[code], lambda a, b, c, o: ew.ternary(code, a, b, c, o),
           lambda a, b, c, o: cpu.ternary(code, a, b, c, o), (a, b, c), np.dtype(np.float64), device_view, 1e-12)


def test_nan_semantics(device_view):
    a = np.array([np.nan, 1.0, np.nan, 2.0])
    b = np.array([1.0, np.nan, np.nan, 3.0])
    for code, expected in ((op.MAXIMUM, [np.nan, np.nan, np.nan, 3.0]), (op.FMAX, [1.0, 1.0, np.nan, 3.0]),
                           (op.MINIMUM, [np.nan, np.nan, np.nan, 2.0]), (op.FMIN, [1.0, 1.0, np.nan, 2.0])):
        out = DeviceStorage.empty((4,), np.float64)
        ew.binary(code, device_view(a), device_view(b), out)
        np.testing.assert_array_equal(out.to_numpy(), expected)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-15), (np.float32, 1e-6)])
def test_logaddexp_is_stable_at_the_edges(dtype, rtol, device_view):
    a = np.array([1e4, -1e4, 1e4, -np.inf, np.inf, np.inf, np.nan, 1.0, -np.inf, 0.5], dtype)
    b = np.array([1e4, -1e4, -1e4, -np.inf, -np.inf, np.inf, 1.0, np.nan, 2.0, 0.5], dtype)
    for code, reference in ((op.LOGADDEXP, np.logaddexp), (op.LOGADDEXP2, np.logaddexp2)):
        out = DeviceStorage.empty(a.shape, dtype)
        ew.binary(code, device_view(a), device_view(b), out)
        with np.errstate(invalid="ignore"):
            expected = reference(a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(out.to_numpy(), expected, rtol=rtol, err_msg=BINARY[code])


def test_every_layout_and_strided_output(layout_name, layouts, device_view):
    base = VALUES[:12].reshape(2, 2, 3).repeat(2, axis=1)  # (2, 4, 3)
    x = layouts(base)[layout_name]
    y = np.arange(2.0 * x.shape[-1])[::-2]  # negative stride, broadcast along the leading dims
    host_out = np.zeros(x.shape[::-1])
    out = DeviceStorage.from_numpy(host_out).permute(tuple(range(x.ndim))[::-1])  # non-contiguous out
    ew.binary(op.SUB, device_view(x), device_view(y), out)
    np.testing.assert_allclose(out.to_numpy(), x - y, rtol=1e-15)


def test_fast_path_with_scalar_operand_and_casting(device_view):
    a = np.arange(10, dtype=np.float32) - 4.5
    out = DeviceStorage.empty((10,), np.int32)
    ew.binary(op.MUL, device_view(a), device_view(np.array(2.0, np.float32)), out)
    np.testing.assert_array_equal(out.to_numpy(), (a * 2).astype(np.int32))


def test_grid_stride_loop_covers_all(monkeypatch, device_view):
    monkeypatch.setattr(launch, "MAX_BLOCKS", 2)
    monkeypatch.setattr(launch, "THREADS", 8)
    x = np.arange(70, dtype=np.float64).reshape(7, 10)
    for view in (x, x.T):  # flat and strided kernels
        out = DeviceStorage.empty(view.shape, np.float64)
        ew.unary(op.NEG, device_view(view), out)
        np.testing.assert_array_equal(out.to_numpy(), -view)


def test_empty_and_zero_dim(device_view):
    out = DeviceStorage.empty((0, 3), np.float32)
    ew.unary(op.EXP, DeviceStorage.empty((0, 3), np.float32), out)
    assert out.to_numpy().shape == (0, 3)
    out0 = DeviceStorage.empty((), np.float64)
    ew.binary(op.ADD, device_view(np.array(1.5)), device_view(np.array(2.0)), out0)
    assert out0.to_numpy() == 3.5


def test_bad_input_is_refused_before_launch(device_view):
    out = DeviceStorage.empty((3,), np.float64)
    with pytest.raises(TypeError):
        ew.unary(op.BITWISE_NOT, device_view(np.ones(3)), out)
    with pytest.raises(ValueError):
        ew.binary(op.ADD, device_view(np.ones(3)), device_view(np.ones(4)), out)
    with pytest.raises(ValueError):
        ew.unary(999, device_view(np.ones(3)), out)
    bad = DeviceStorage(out.buffer, (4,), (1,), 0)  # reaches past the buffer
    with pytest.raises(ValueError):
        ew.unary(op.NEG, device_view(np.ones(4)), bad)
