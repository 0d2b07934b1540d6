"""ember.dist and ember.matrix_exp / ember.linalg.matrix_exp / Tensor.matrix_exp: values against torch and SciPy,
gradients (and gradients of gradients) by finite differences and against torch, torch's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

import ember
from ember.autograd import gradcheck, gradgradcheck

_RNG = np.random.default_rng(3)
P_VALUES = [2, 1, 0, 3, 0.5, -1, math.inf, -math.inf]


def _pair(dtype=np.float64):
    a = _RNG.normal(size=(2, 3)).astype(dtype)
    b = _RNG.normal(size=(3,)).astype(dtype)
    return a, b


@pytest.mark.parametrize("p, zero", [(p, zero) for p in P_VALUES for zero in (False, True)])
def test_dist_values_and_gradients_match_torch(torch_ref, p, zero):
    a, b = _pair()
    if zero:
        b[1] = a[0, 1]  # one difference exactly zero: the gradient there is torch's choice
    ea, eb = (ember.tensor(v, requires_grad=True) for v in (a, b))
    ta, tb = (torch_ref.tensor(v, requires_grad=True) for v in (a, b))
    e, t = ember.dist(ea, eb, p), torch_ref.dist(ta, tb, p)
    assert e.shape == () and e.dtype is ember.float64
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-12)
    if p == 0:  # torch's backward raises at p=0; ember's gradient there is 0
        e.backward()
        assert not ea.grad.numpy().any() and not eb.grad.numpy().any()
        return
    e.backward()
    t.backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf])
def test_dist_gradcheck_and_gradgradcheck(p):
    a, b = _pair()
    ea, eb = (ember.tensor(v, requires_grad=True) for v in (a, b))
    fn = lambda x, y: ember.dist(x, y, p)  # noqa: E731
    assert gradcheck(fn, (ea, eb))
    if p != math.inf:  # max is piecewise linear: its second derivative is 0 and finite differences agree
        assert gradgradcheck(fn, (ea, eb))


def test_dist_promotes_broadcasts_and_checks(torch_ref):
    a, b = _pair(np.float32)
    e = ember.dist(ember.tensor(a), ember.tensor(b.astype(np.float64)))
    t = torch_ref.dist(torch_ref.tensor(a), torch_ref.tensor(b.astype(np.float64)))
    assert e.dtype is ember.float64 and str(t.dtype) == "torch.float64"
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-6)
    assert ember.dist(ember.tensor(1.0), ember.tensor(3.0)).item() == 2.0
    assert ember.dist(ember.ones(0), ember.ones(0)).item() == 0.0
    assert ember.ones(2, 2).dist(ember.zeros(2), ember.tensor(1.0)).item() == 4.0
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ember.dist(ember.ones(2, 3), ember.ones(4))
    with pytest.raises(RuntimeError, match="input dtype should be either floating point or complex. Got Long"):
        ember.dist(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    with pytest.raises(TypeError, match="argument 'other'"):
        ember.dist(ember.ones(2), [1.0, 2.0])


# -------------------------------------------------------------------------------------------- matrix_exp
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2), (1, 1), (0, 0), (0, 3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_exp_values_match_torch_and_scipy(torch_ref, shape, dtype):
    a = _RNG.normal(size=shape).astype(dtype)
    e = ember.matrix_exp(ember.tensor(a))
    t = torch_ref.matrix_exp(torch_ref.tensor(a))
    assert e.shape == shape and e.dtype is getattr(ember, dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=rtol, atol=rtol)
    if a.size:
        np.testing.assert_allclose(e.numpy(), scipy.linalg.expm(a.astype(np.float64)), rtol=rtol, atol=rtol)
    assert ember.linalg.matrix_exp is ember.matrix_exp
    np.testing.assert_array_equal(ember.tensor(a).matrix_exp().numpy(), e.numpy())


def test_matrix_exp_of_known_matrices():
    rotation = ember.tensor([[0.0, -math.pi / 2], [math.pi / 2, 0.0]], dtype=ember.float64)
    np.testing.assert_allclose(ember.matrix_exp(rotation).numpy(), [[0, -1], [1, 0]], atol=1e-12)
    nilpotent = ember.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=ember.float64)
    np.testing.assert_allclose(ember.matrix_exp(nilpotent).numpy(), [[1, 1], [0, 1]])
    diagonal = ember.diag(ember.tensor([1.0, 2.0], dtype=ember.float64))
    np.testing.assert_allclose(ember.matrix_exp(diagonal).numpy(), np.diag(np.exp([1.0, 2.0])))


def test_matrix_exp_gradient_matches_torch(torch_ref):
    a = _RNG.normal(size=(2, 3, 3))
    g = _RNG.normal(size=(2, 3, 3))
    ea, ta = ember.tensor(a, requires_grad=True), torch_ref.tensor(a, requires_grad=True)
    (ember.matrix_exp(ea) * ember.tensor(g)).sum().backward()
    (torch_ref.matrix_exp(ta) * torch_ref.tensor(g)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_matrix_exp_gradcheck_and_gradgradcheck():
    a = ember.tensor(_RNG.normal(size=(2, 3, 3)) * 0.5, requires_grad=True)
    assert gradcheck(ember.matrix_exp, (a,))
    assert gradgradcheck(ember.matrix_exp, (a,))
    one = ember.tensor(_RNG.normal(size=(2, 2)), requires_grad=True)
    assert gradcheck(lambda x: ember.linalg.matrix_exp(x).sum(), (one,))


def test_matrix_exp_errors_are_torch_s():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        ember.matrix_exp(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dimensions"):
        ember.matrix_exp(ember.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        ember.matrix_exp(ember.ones(2, 2, dtype=ember.int64))
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.matrix_exp([[1.0]])


def test_matrix_exp_in_half_precision_is_computed_wide():
    a = np.array([[0.5, 0.25], [0.0, 0.5]], dtype=np.float16)
    e = ember.matrix_exp(ember.tensor(a))
    assert e.dtype is ember.float16
    np.testing.assert_allclose(e.numpy().astype(np.float64), scipy.linalg.expm(a.astype(np.float64)), rtol=2e-3)
