"""torch.special's full function set: values against scipy/NumPy and torch, dtypes, broadcasting, gradients."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special as sp

import ember
from ember.autograd import gradcheck, gradgradcheck

X = np.array([-3.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.5, 7.0])
POSITIVE = np.array([0.05, 0.4, 1.0, 2.5, 7.0])
PROBABILITY = np.array([0.01, 0.2, 0.5, 0.8, 0.99])

# name -> (scipy/NumPy reference, sample points)
UNARY = {
    "airy_ai": (lambda x: sp.airy(x)[0], X), "bessel_j0": (sp.j0, X), "bessel_j1": (sp.j1, X),
    "bessel_y0": (sp.y0, POSITIVE), "bessel_y1": (sp.y1, POSITIVE),
    "modified_bessel_i0": (sp.i0, X), "modified_bessel_i1": (sp.i1, X),
    "modified_bessel_k0": (sp.k0, POSITIVE), "modified_bessel_k1": (sp.k1, POSITIVE),
    "scaled_modified_bessel_k0": (sp.k0e, POSITIVE), "scaled_modified_bessel_k1": (sp.k1e, POSITIVE),
    "spherical_bessel_j0": (lambda x: np.sinc(x / np.pi), X),
    "i0e": (sp.i0e, X), "i1": (sp.i1, X), "i1e": (sp.i1e, X), "ndtr": (sp.ndtr, X),
    "ndtri": (sp.ndtri, PROBABILITY), "log_ndtr": (sp.log_ndtr, X),
}
DIFFERENTIABLE = {"i0e": X, "i1": X, "i1e": X, "ndtr": X, "ndtri": PROBABILITY, "log_ndtr": X}


def _numpy_polynomial(name, x, n):
    """The reference: NumPy's polynomial classes (the shifted Chebyshev ones at 2x - 1)."""
    from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre
    n = int(n)
    if name.startswith("shifted_"):
        return _numpy_polynomial(name[len("shifted_"):], 2 * x - 1, n)
    kind = name[-1]
    if name.startswith("chebyshev"):
        t = lambda m: chebyshev.chebval(x, [0] * m + [1]) if m >= 0 else 0 * x  # noqa: E731
        u = lambda m: sp.eval_chebyu(m, x) if m >= 0 else 0 * x  # noqa: E731
        return {"t": t(n), "u": u(n), "v": u(n) - u(n - 1), "w": u(n) + u(n - 1)}[kind]
    evaluate = {"h": hermite.hermval, "e": hermite_e.hermeval, "l": laguerre.lagval, "p": legendre.legval}[kind]
    return evaluate(x, [0] * n + [1])


POLYNOMIALS = [f"{p}chebyshev_polynomial_{k}" for p in ("", "shifted_") for k in "tuvw"] + [
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


def test_every_public_function_of_torch_special_is_there():
    torch = pytest.importorskip("torch")
    names = [n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))
             and n != "Tensor"]
    assert [n for n in names if not hasattr(ember.special, n)] == []


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_scipy(name):
    reference, x = UNARY[name]
    got = getattr(ember.special, name)(ember.tensor(x))
    assert got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), reference(x), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_numpy(name):
    x = np.array([-0.9, -0.3, 0.0, 0.2, 0.75, 1.0]) if not name.startswith("shifted") else \
        np.array([0.0, 0.1, 0.35, 0.6, 0.95, 1.0])
    for n in (0, 1, 2, 5, 9, 12):
        got = getattr(ember.special, name)(ember.tensor(x), n).numpy()
        np.testing.assert_allclose(got, _numpy_polynomial(name, x, n), rtol=1e-9, atol=1e-9, err_msg=f"n={n}")
    assert np.all(getattr(ember.special, name)(ember.tensor(x), -1).numpy() == 0)


@pytest.mark.parametrize("name", POLYNOMIALS + ["zeta"])
def test_two_argument_functions_match_torch_with_broadcasting_and_promotion(name):
    torch = pytest.importorskip("torch")
    x = np.array([[0.1, 0.7, 1.5], [2.0, 0.5, 0.25]])
    n = np.array([[3.0], [2.7]]) if name != "zeta" else np.array([[1.5], [3.0]])
    ours, theirs = getattr(ember.special, name), getattr(torch.special, name)
    np.testing.assert_allclose(ours(ember.tensor(x), ember.tensor(n)).numpy(),
                               theirs(torch.tensor(x), torch.tensor(n)).numpy(), rtol=1e-10)
    mixed = ((ember.tensor([1, 2]), 3), (2.0, ember.tensor([1, 2])),
             (ember.tensor([1, 2]), ember.tensor(3.0, dtype=ember.float64)))
    for a, b in mixed:
        ta = torch.tensor(a.numpy()) if isinstance(a, ember.Tensor) else a
        tb = torch.tensor(b.numpy()) if isinstance(b, ember.Tensor) else b
        got, want = ours(a, b), theirs(ta, tb)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        ours(1.0, 2.0)
    with pytest.raises(RuntimeError):
        ours(ember.ones(3), ember.ones(2))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_dtypes_and_grad_modes_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(ember.special, name), getattr(torch.special, name)
    assert ours(ember.tensor([1, 2])).dtype == ember.float32
    assert ours(ember.tensor([True])).dtype == ember.float32
    try:
        theirs(torch.ones(2, dtype=torch.float16))
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
            ours(ember.ones(2, dtype=ember.float16))
        assert "Half" in str(e)
    else:
        assert ours(ember.ones(2, dtype=ember.float16)).dtype == ember.float16
    x = ember.tensor([0.3, 0.6], requires_grad=True)
    assert ours(x).requires_grad == theirs(torch.tensor([0.3, 0.6], requires_grad=True)).requires_grad
    _, sample = UNARY[name]
    np.testing.assert_allclose(ours(ember.tensor(sample, dtype=ember.float32)).numpy(),
                               theirs(torch.tensor(sample, dtype=torch.float32)).numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradients_in_float64(name):
    x = ember.tensor(DIFFERENTIABLE[name][DIFFERENTIABLE[name] != 0], requires_grad=True)
    fn = getattr(ember.special, name)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    sample = DIFFERENTIABLE[name]
    x, tx = ember.tensor(sample, requires_grad=True), torch.tensor(sample, requires_grad=True)
    getattr(ember.special, name)(x).sum().backward()
    getattr(torch.special, name)(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_zeta_differentiates_in_q_only():
    x = ember.tensor([2.0, 3.5], dtype=ember.float64)
    q = ember.tensor([1.5, 0.7], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda q: ember.special.zeta(x, q), (q,))
    x.requires_grad_()
    with pytest.raises(NotImplementedError, match="derivative for 'zeta'"):
        ember.special.zeta(x, q).sum().backward()


def test_out_argument():
    out = ember.empty(3, dtype=ember.float64)
    result = ember.special.bessel_j0(ember.tensor([0.0, 1.0, 2.0]), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), sp.j0([0.0, 1.0, 2.0]), rtol=1e-6)
    out = ember.empty(2)
    ember.special.legendre_polynomial_p(ember.tensor([0.5, 0.25]), 2, out=out)
    np.testing.assert_allclose(out.numpy(), [-0.125, -0.40625])


def test_edge_values_match_torch():
    torch = pytest.importorskip("torch")
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 1e300]
    for name in sorted(UNARY):
        got = getattr(ember.special, name)(ember.tensor(edges, dtype=ember.float64)).numpy()
        want = getattr(torch.special, name)(torch.tensor(edges, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
    ends = torch.tensor([-1.0, 1.0, 0.0, 0.5], dtype=torch.float64)
    for name in POLYNOMIALS:
        for n in (3, 4, 10):
            np.testing.assert_allclose(getattr(ember.special, name)(ember.tensor(ends.numpy()), n).numpy(),
                                       getattr(torch.special, name)(ends, n).numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name} n={n}")


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=3),
       dtype=st.sampled_from(["float32", "float64", "int64"]), name=st.sampled_from(sorted(UNARY) + POLYNOMIALS))
def test_hypothesis_shapes_and_dtypes(shape, dtype, name):
    rng = np.random.default_rng(len(shape))
    values = rng.uniform(0.05, 0.95, size=shape)
    x = ember.tensor(values).to(getattr(ember, dtype)) if dtype != "int64" else ember.tensor(
        (values * 3).astype(np.int64))
    fn = getattr(ember.special, name)
    got = fn(x) if name in UNARY else fn(x, 3)
    assert tuple(got.shape) == tuple(shape)
    assert got.dtype == (ember.float64 if dtype == "float64" else ember.float32)
    host = x.numpy().astype(np.float64)
    want = UNARY[name][0](host) if name in UNARY else _numpy_polynomial(name, host, 3)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
