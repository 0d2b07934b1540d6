"""Focused tests for what running the tutorial programs (tests/programs/) found missing or different from torch:
``autograd.grad(only_inputs=...)``, the math constants, ``quantile``/``nanquantile`` and the printed form of
``ember.return_types`` results."""
from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import ember

NAN = float("nan")


def test_grad_accepts_only_inputs_and_warns_when_false():
    x = ember.ones(2, requires_grad=True)
    (g,) = ember.autograd.grad((x * 3).sum(), x, only_inputs=True, retain_graph=True)
    assert g.tolist() == [3.0, 3.0]
    with pytest.warns(UserWarning, match="only_inputs argument is deprecated"):
        (g,) = ember.autograd.grad((x * 3).sum(), x, only_inputs=False)
    assert g.tolist() == [3.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.autograd.grad((x * 2).sum(), x, only_inputs=True)


def test_grad_positional_order_matches_torch():
    # torch: grad(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused, ...)
    x, y = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    result = ember.autograd.grad((x * 2).sum(), (x, y), None, None, False, True, True)
    assert result[1] is None and result[0].tolist() == [2.0, 2.0]


def test_math_constants(torch_ref):
    for name in ("e", "pi", "inf", "nan"):
        ours, theirs = getattr(ember, name), getattr(torch_ref, name)
        assert ours == theirs or (math.isnan(ours) and math.isnan(theirs)), name


QUANTILE_CASES = [
    ([[1.0, NAN, 3.0, 0.0], [4.0, 5.0, 6.0, 2.0]], [0.25, 0.5], 1, True),
    ([[1.0, 7.0, 3.0, 0.0], [4.0, 5.0, 6.0, 2.0]], [0.1, 0.3, 0.9], None, False),
    ([[1.0, 7.0, 3.0, 0.0], [4.0, 5.0, 6.0, 2.0]], 0.4, 0, False),
    ([[1.0, 7.0, 3.0, 0.0], [4.0, 5.0, 6.0, 2.0]], 0.5, None, True),
    ([1.0, 2.0, 3.0, 4.0, 5.0], [0.125, 0.375, 0.5, 0.625, 1.0], None, False),
    ([[NAN, NAN], [1.0, NAN]], [0.0, 0.7], -1, False),
]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("data, q, dim, keepdim", QUANTILE_CASES)
def test_quantile_matches_torch(torch_ref, name, interpolation, data, q, dim, keepdim):
    def call(lib):
        x = lib.tensor(data)
        qq = lib.tensor(q) if isinstance(q, list) else q
        return getattr(lib, name)(x, qq, dim=dim, keepdim=keepdim, interpolation=interpolation)

    ours, theirs = call(ember), call(torch_ref)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)


def test_quantile_method_scalar_q_and_float64(torch_ref):
    data = np.random.default_rng(0).standard_normal((3, 5))
    for q in (0.0, 0.33, 1.0):
        ours = ember.tensor(data).quantile(q, dim=1)
        theirs = torch_ref.tensor(data).quantile(q, dim=1)
        assert ours.dtype is ember.float64
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    assert ember.quantile(ember.tensor(3.0), 0.5).shape == ()
    assert ember.quantile(ember.arange(24.0).view(2, 3, 4), ember.tensor(0.5)).shape == ()
    assert ember.tensor([1.0, NAN, 3.0]).nanquantile(0.5).item() == 2.0


def test_quantile_gradient_matches_torch(torch_ref):
    data = np.random.default_rng(1).standard_normal((3, 6))
    ours_x = ember.tensor(data, requires_grad=True)
    theirs_x = torch_ref.tensor(data, requires_grad=True)
    ember.quantile(ours_x, ember.tensor([0.2, 0.5, 0.9], dtype=ember.float64), dim=1).sum().backward()
    torch_ref.quantile(theirs_x, torch_ref.tensor([0.2, 0.5, 0.9], dtype=torch_ref.float64), dim=1).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda t: t.quantile(t.tensor([1, 2]), 0.5), RuntimeError, "input tensor must be either float or double"),
    (lambda t: t.quantile(t.tensor([1.0, 2.0]), 1.5), RuntimeError, r"q must be in the range \[0, 1\] but got 1.5"),
    (lambda t: t.quantile(t.tensor([1.0, 2.0]), t.tensor([-0.5])), RuntimeError, r"q values must be in the range"),
    (lambda t: t.quantile(t.tensor([1.0, 2.0]), t.tensor([[0.5]])), RuntimeError, "q must be a scalar or 1D"),
    (lambda t: t.quantile(t.tensor([1.0]), t.tensor([0.5], dtype=t.float64)), RuntimeError, "same dtype"),
    (lambda t: t.quantile(t.tensor([1.0]), 0.5, interpolation="x"), RuntimeError, "interpolation must be one of"),
    (lambda t: t.quantile(t.zeros(2, 0), 0.5, dim=0), RuntimeError, "input tensor must be non-empty"),
    (lambda t: t.quantile(t.tensor([1.0]), 0.5, dim=3), IndexError, "Dimension out of range"),
    (lambda t: t.nanquantile(t.tensor([1.0]), [0.5]), TypeError, "nanquantile"),
])
def test_quantile_errors_match_torch(torch_ref, call, error, message):
    for lib in (ember, torch_ref):
        with pytest.raises(error, match=message):
            call(lib)


def test_quantile_out_argument():
    out = ember.empty(2)
    result = ember.quantile(ember.tensor([[1.0, 3.0], [2.0, 6.0]]), 0.5, dim=1, out=out)
    assert result is out and out.tolist() == [2.0, 4.0]


def test_return_types_print_like_torch(torch_ref):
    data = [[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]
    for op in (lambda t, x: t.max(x, 1), lambda t, x: x.min(dim=0, keepdim=True), lambda t, x: x.sort(),
               lambda t, x: x.topk(2), lambda t, x: x.kthvalue(1), lambda t, x: x.median(1), lambda t, x: x.mode(1),
               lambda t, x: x.cummax(1), lambda t, x: x.cummin(0)):
        ours, theirs = op(ember, ember.tensor(data)), op(torch_ref, torch_ref.tensor(data))
        assert repr(ours) == repr(theirs).replace("torch.", "ember.")
        assert str(ours) == repr(ours)


def test_return_types_keep_tuple_behaviour_and_pickle():
    result = ember.tensor([1.0, 3.0, 2.0]).max(0)
    values, indices = result
    assert values.item() == 3.0 and indices.item() == 1 and result.indices is indices and len(result) == 2
    assert type(result) is ember.return_types.max and type(result).__module__ == "ember.return_types"
    again = pickle.loads(pickle.dumps(result))
    assert type(again) is ember.return_types.max and again.values.item() == 3.0
