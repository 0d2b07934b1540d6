"""Reductions and scans of tensors: declared once for the op harness (values against NumPy on every shape, layout and
backend, gradcheck and gradgradcheck), then torch's argument rules above the kernels (the kernels themselves are
tested in tests/test_cpu_kernels_reductions.py and tests/cuda/test_device_reductions.py)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from op_harness import Case, Input, op_tests

# var and std over a dim of size 1 (a shape set below) are NaN with torch's warning, as NumPy's
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0", "ignore:Degrees of freedom <= 0")
FLOATS = ("float32", "float64")
NUMBERS = FLOATS + ("int32", "int64")
# (2, 3, 2) for the gradient checks; longer rows, size-1 dims, empty and 0-d inputs for the values
NONEMPTY = (((3, 5, 1),), ((1, 1, 4),))
EMPTY = (((0, 3, 2),), *NONEMPTY)
ANY_SHAPE = (((),), *EMPTY)
WITH_NAN = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0]])


def _case(name: str, op, reference, dtypes=FLOATS, shapes=NONEMPTY, low=-2.0, high=2.0, **options) -> Case:
    """A reduction of one (2, 3, 2) input."""
    return Case(name, op, [Input((2, 3, 2), low, high)], reference, dtypes=dtypes, shapes=shapes, **options)


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    peak = x.max(axis, keepdims=True)
    return (peak + np.log(np.exp(x - peak).sum(axis, keepdims=True))).squeeze(axis)


REDUCTIONS = [
    _case("sum", lambda m, x: x.sum(), np.sum, NUMBERS + ("bool",), ANY_SHAPE),
    _case("sum-dims-keepdim", lambda m, x: x.sum((0, 2), keepdim=True), lambda x: x.sum((0, 2), keepdims=True),
          NUMBERS, EMPTY),
    _case("mean", lambda m, x: x.mean(), np.mean),
    _case("mean-dim", lambda m, x: x.mean(1), lambda x: x.mean(1), shapes=EMPTY),
    _case("prod", lambda m, x: x.prod(), np.prod, NUMBERS, ANY_SHAPE, low=0.5, high=1.5),
    _case("prod-dim", lambda m, x: x.prod(1), lambda x: x.prod(1), NUMBERS, EMPTY, low=-1.5, high=1.5),
    _case("amax-dims", lambda m, x: m.amax(x, (0, 2)), lambda x: x.max((0, 2)), NUMBERS),
    _case("amin-dim-keepdim", lambda m, x: m.amin(x, 1, keepdim=True), lambda x: x.min(1, keepdims=True), NUMBERS),
    _case("max-dim", lambda m, x: tuple(x.max(1)), lambda x: (x.max(1), x.argmax(1)), NUMBERS),
    _case("min-dim", lambda m, x: tuple(x.min(0)), lambda x: (x.min(0), x.argmin(0)), NUMBERS),
    _case("argmax", lambda m, x: x.argmax(2), lambda x: x.argmax(2), NUMBERS, grad=False),
    _case("argmin-flat", lambda m, x: x.argmin(), np.argmin, NUMBERS, grad=False),
    Case("amax-amin-nan", lambda m, x: (m.amax(x, 1), m.amin(x, 1)), [Input(values=WITH_NAN)],
         lambda x: (x.max(1), x.min(1)), grad=False),
    _case("var-dim", lambda m, x: x.var(1), lambda x: x.var(1, ddof=1)),
    _case("std-dim-keepdim", lambda m, x: x.std(0, keepdim=True), lambda x: x.std(0, ddof=1, keepdims=True)),
    _case("var-correction0", lambda m, x: m.var(x, (0, 2), correction=0), lambda x: x.var((0, 2))),
    _case("var_mean", lambda m, x: tuple(m.var_mean(x, 2)), lambda x: (x.var(2, ddof=1), x.mean(2))),
    _case("logsumexp", lambda m, x: x.logsumexp(1), lambda x: _logsumexp(x, 1), low=-30, high=30),
    _case("norm", lambda m, x: x.norm(), lambda x: np.sqrt((x * x).sum())),
    _case("norm-p1-dim", lambda m, x: x.norm(1, 1), lambda x: np.abs(x).sum(1)),
    _case("norm-inf-dim", lambda m, x: x.norm(float("inf"), 2), lambda x: np.abs(x).max(2)),
    _case("cumsum", lambda m, x: x.cumsum(1), lambda x: x.cumsum(1), NUMBERS),
    _case("cumprod", lambda m, x: x.cumprod(2), lambda x: x.cumprod(2), NUMBERS, low=-1.5, high=1.5),
    _case("logcumsumexp", lambda m, x: x.logcumsumexp(1), lambda x: np.logaddexp.accumulate(x, 1), low=-30, high=30),
    *(_case(name, op, ref, ("bool", "int32", "float64"), EMPTY, low=-1, high=1, grad=False) for name, op, ref in (
        ("all-dim", lambda m, x: x.all(1), lambda x: (x != 0).all(1)),
        ("any-dims", lambda m, x: m.any(x, (0, 2)), lambda x: (x != 0).any((0, 2))),
        ("count_nonzero-dim", lambda m, x: m.count_nonzero(x, 1), lambda x: np.count_nonzero(x, 1)))),
]
test_forward, test_gradcheck, test_gradgradcheck = op_tests(REDUCTIONS)


# ---- argument checks and values of the reductions above the kernels (issue 8 fuzz findings) -----------------------

def _raised(call) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def test_prod_refuses_explicit_dim_none(torch_ref):
    for lib in (ember, torch_ref):
        x = lib.ones(2, 3)
        assert lib.prod(x).item() == 1.0
        assert _raised(lambda: lib.prod(x, dim=None))[0] is TypeError
    assert _raised(lambda: ember.prod(ember.ones(2), dim=None)) == (
        TypeError, "prod(): argument 'dim' must be int, not NoneType")
    np.testing.assert_array_equal(ember.ones(2, 3).prod(1, keepdim=True).numpy(), np.ones((2, 1), np.float32))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dim", [None, 0])
def test_arg_extremes_refuse_bool(torch_ref, name, dim):
    expected = _raised(lambda: getattr(torch_ref, name)(torch_ref.ones(3, dtype=torch_ref.bool), dim))
    assert _raised(lambda: getattr(ember, name)(ember.ones(3, dtype=ember.bool), dim)) == expected
    assert expected == (RuntimeError, f"{name}(): does not support bool input")


@pytest.mark.parametrize("dim", [None, 0])
def test_float32_std_of_huge_values_does_not_overflow(torch_ref, dim):
    """torch accumulates the variance in float64: the std of ~1e20 float32 values is finite, their var is inf."""
    values = np.array([1e20, -1e20, 3e20, 2.5e19], np.float32)
    ours, theirs = ember.tensor(values), torch_ref.tensor(values)
    for name in ("std", "var"):
        got, want = getattr(ours, name)(dim), getattr(theirs, name)(dim)
        assert got.dtype is ember.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert np.isfinite(ours.std(dim).item()) and np.isinf(ours.var(dim).item())
