"""The one-element float fast path (Python float arithmetic) gives the NumPy ufunc's result bit for bit, and hands
back every case it must not take (division by zero, overflow, NaN) to the ufunc path."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import opcodes as op
from ember.kernels.cpu import elementwise as cpu_elementwise
from ember.kernels.cpu.one_element import one_value

_UFUNCS = {op.ADD: np.add, op.SUB: np.subtract, op.MUL: np.multiply, op.DIV: np.true_divide}
_DTYPES = [np.float16, np.float32, np.float64]


def _floats(dtype: type) -> st.SearchStrategy:
    width = {np.float16: 16, np.float32: 32, np.float64: 64}[dtype]
    return st.floats(width=width, allow_nan=True, allow_infinity=True)


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("code", sorted(_UFUNCS))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_value_matches_the_ufunc_bit_for_bit(dtype: type, code: int, data: st.DataObject) -> None:
    x = np.array([data.draw(_floats(dtype))], dtype)
    y = np.array([data.draw(_floats(dtype))], dtype)
    value = one_value(code, x.item(), y.item(), x.dtype)
    with np.errstate(all="ignore"):
        expected = _UFUNCS[code](x, y)
    if value is None:  # not handled: the caller's ufunc path decides
        return
    got = np.empty(1, dtype)
    got.fill(value)
    assert _same_bits(got, expected), (x, y, got, expected)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_unsafe_cases_are_left_to_the_ufunc(dtype: type) -> None:
    big = float(np.finfo(dtype).max)
    assert one_value(op.DIV, 1.0, 0.0, np.dtype(dtype)) is None  # Python would raise ZeroDivisionError
    assert one_value(op.ADD, float("nan"), 1.0, np.dtype(dtype)) is None
    if dtype is not np.float64:
        assert one_value(op.MUL, big, 2.0, np.dtype(dtype)) is None  # storing would warn of overflow
    assert one_value(op.POW, 2.0, 3.0, np.dtype(dtype)) is None  # no Python twin


@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.float64])
def test_tensor_ops_on_one_element_keep_ieee_results(dtype: ember.dtype) -> None:
    one = ember.ones(1, dtype=dtype)
    zero = ember.zeros(1, dtype=dtype)
    assert ember.isinf(one / zero).item() and (one / zero).item() > 0
    assert ember.isnan(zero / zero).item()
    assert str((-zero + zero).item()) == "0.0"
    big = ember.full((1,), float(np.finfo(dtype.np).max), dtype=dtype)
    assert ember.isinf(big + big).item()
    assert (one + one).dtype is dtype and (one + one).shape == (1,)


def test_engine_sums_into_a_one_element_gradient_exactly() -> None:
    x = ember.tensor([0.1], dtype=ember.float32, requires_grad=True)
    y = x
    for _ in range(10):
        y = y * 1.0 + x
    y.backward()
    expected = np.float32(1)
    for _ in range(10):
        expected = np.float32(expected * np.float32(1.0)) + np.float32(1)  # dy/dx by the same recurrence
    assert x.grad.item() == float(expected)


def test_add_into_takes_the_fast_path_only_for_floats() -> None:
    total = np.array([2], np.int64)
    assert cpu_elementwise.add_into(total, np.array([3], np.int64)) and total[0] == 5
    total = np.array([1.5], np.float32)
    assert cpu_elementwise.add_into(total, np.array([2.25], np.float32)) and total[0] == np.float32(3.75)
