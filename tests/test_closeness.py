"""isclose / allclose / equal against NumPy's and torch's rules (tolerances, NaN, infinities, dtypes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember

try:
    import torch
except ImportError:  # the differential checks skip without the oracle
    torch = None

VALUES = [0.0, 1.0, -1.0, 1e-9, 1.00001, np.nan, np.inf, -np.inf, 1e10, 1.0000101e10]


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_matches_numpy_on_the_edge_values(equal_nan):
    a = np.array(VALUES).repeat(len(VALUES))
    b = np.tile(np.array(VALUES), len(VALUES))
    got = ember.isclose(ember.tensor(a), ember.tensor(b), equal_nan=equal_nan)
    assert got.dtype is ember.bool
    np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=equal_nan))


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=12),
       st.floats(0, 1e-2), st.floats(0, 1e-2))
def test_isclose_matches_numpy_for_any_floats(values, rtol, atol):
    a = np.array(values, np.float32)
    b = (a * np.float32(1.001)).astype(np.float32)
    got = ember.isclose(ember.tensor(a), ember.tensor(b), rtol=rtol, atol=atol).numpy()
    np.testing.assert_array_equal(got, np.isclose(a, b, rtol=rtol, atol=atol))


def test_allclose_equal_and_methods():
    x = ember.tensor([1.0, 2.0, float("nan")])
    assert not ember.allclose(x, x) and ember.allclose(x, x, equal_nan=True) and x.allclose(x + 1e-9, equal_nan=True)
    assert ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2])) and ember.tensor([1, 2]).equal(ember.tensor([1, 2]))
    assert not ember.equal(x, x)  # NaN equals nothing
    assert not ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2, 3]))
    assert ember.isclose(ember.tensor([1, 2]), ember.tensor([1, 3])).tolist() == [True, False]
    assert ember.isclose(ember.tensor([True, False]), ember.tensor([True, True])).tolist() == [True, False]
    assert ember.isclose(ember.tensor([1.0, 2.0]), 1.0).tolist() == [True, False]


def test_isclose_errors_name_the_problem():
    with pytest.raises(RuntimeError, match=r"isclose\(\): Float did not match Long"):
        ember.isclose(ember.tensor([1.0]), ember.tensor([1]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        ember.isclose(ember.tensor([1.0]), ember.tensor([1.0]), rtol=-1)
    with pytest.raises(TypeError, match="argument 'other'"):
        ember.allclose(ember.tensor([1.0]), "a")


def test_no_graph_is_recorded():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert not ember.isclose(x, x).requires_grad


@pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")
def test_isclose_agrees_with_torch_for_integers_and_floats():
    for a, b in (([0, 5, -7, 100], [0, 6, -7, 101]), ([1.0, 1e-9, 1e5], [1.0 + 1e-6, 0.0, 1e5 + 1.0])):
        got = ember.isclose(ember.tensor(a), ember.tensor(b), rtol=1e-2, atol=0.5).tolist()
        assert got == torch.isclose(torch.tensor(a), torch.tensor(b), rtol=1e-2, atol=0.5).tolist()
