"""torch.linalg's factorization family and torch's legacy linear-algebra names (lu, ldl, householder, the *_ex
variants, cond, tensorinv/tensorsolve, vander, cholesky_solve, triangular_solve, ...): results, result types,
errors and out= against torch; gradients (and gradients of gradients) against finite differences."""
from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated")

RNG = np.random.default_rng(7)


def arr(*shape, spd=False, sym=False):
    a = RNG.standard_normal(shape)
    if spd:
        return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    return a + np.swapaxes(a, -1, -2) if sym else a


def E(a, requires_grad=False):
    return ember.tensor(np.asarray(a), requires_grad=requires_grad)


def values(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def same(got, want, rtol=1e-10, atol=1e-12):
    """Tensors (or tuples of them) equal in shape, dtype and values (nan/inf where torch has them)."""
    got, want = (tuple(got), tuple(want)) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(values(g).astype(np.float64), values(w).astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


def both(torch, fn, *arrays, **kwargs):
    """``fn`` of ember and of torch (a dotted name) on the same arrays."""
    def call(lib):
        target = lib
        for part in fn.split("."):
            target = getattr(target, part)
        return target(*[lib.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays], **kwargs)
    return call(ember), call(torch)


def check_grads(fn, *arrays):
    inputs = tuple(E(a, requires_grad=True) for a in arrays)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def grads_like_torch(torch, name, arrays, kwargs=None, pick=lambda r: r):
    """The gradients of ``<sum(w * pick(name(*arrays)))>`` wrt every array agree with torch's."""
    kwargs = kwargs or {}
    results = {}
    for lib in (ember, torch):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        target = lib
        for part in name.split("."):
            target = getattr(target, part)
        out = pick(target(*inputs, **kwargs))
        weights = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        (out * weights).sum().backward()
        results[lib] = [x.grad for x in inputs]
    for g, w in zip(results[ember], results[torch]):
        np.testing.assert_allclose(values(g), values(w), rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------------------------------------------------- LU
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 1, 2, 3), (0, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lu_factor_and_lu_match_torch(torch_ref, shape, dtype):
    a = arr(*shape).astype(dtype)
    same(*both(torch_ref, "linalg.lu_factor", a), rtol=1e-5)
    same(*both(torch_ref, "linalg.lu_factor_ex", a), rtol=1e-5)
    same(*both(torch_ref, "linalg.lu", a), rtol=1e-5, atol=1e-6)
    LU, pivots = torch_ref.linalg.lu_factor(torch_ref.tensor(a))
    same(*both(torch_ref, "lu_unpack", LU.numpy(), pivots.numpy()), rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (2, 4), (4, 2)])
def test_lu_gradients(torch_ref, shape):
    a = arr(*shape)
    check_grads(lambda A: ember.linalg.lu_factor(A).LU, a)
    check_grads(lambda A: ember.linalg.lu(A)[1:], a)
    grads_like_torch(torch_ref, "linalg.lu_factor", [a], pick=lambda r: r.LU)
    grads_like_torch(torch_ref, "linalg.lu", [a], pick=lambda r: r.L @ r.U)


def test_singular_lu(torch_ref):
    S = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])
    same(*both(torch_ref, "linalg.lu_factor_ex", S))
    same(*both(torch_ref, "linalg.lu", S))
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match=r"Batch element 1\): U\[2,2\] is zero"):
            lib.linalg.lu_factor(lib.tensor(S))
        with pytest.raises(RuntimeError, match="U\\[2,2\\] is zero"):
            lib.linalg.lu_factor_ex(lib.tensor(S), check_errors=True)
        with pytest.raises(RuntimeError, match="without pivoting"):
            lib.linalg.lu_factor(lib.tensor(S), pivot=False)


@pytest.mark.parametrize("lshape, bshape", [((3, 3), (3, 2)), ((2, 3, 3), (3, 1)), ((3, 3), (4, 3, 2)),
                                            ((1, 3, 3), (2, 3, 2))])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_matches_torch_and_differentiates(torch_ref, lshape, bshape, left, adjoint):
    b = arr(*bshape)
    b = b if left else np.swapaxes(b, -1, -2)
    LU, pivots = (t.numpy() for t in torch_ref.linalg.lu_factor(torch_ref.tensor(arr(*lshape))))
    kw = dict(left=left, adjoint=adjoint)
    got, want = both(torch_ref, "linalg.lu_solve", LU, pivots, b, **kw)
    same(got, want, rtol=1e-9)
    P = E(pivots)
    check_grads(lambda F, B: ember.linalg.lu_solve(F, P, B, **kw), LU, b)
    for lib, piv in ((ember, E(pivots)), (torch_ref, torch_ref.tensor(pivots))):
        F, B = lib.tensor(LU, requires_grad=True), lib.tensor(b, requires_grad=True)
        (lib.linalg.lu_solve(F, piv, B, **kw) * lib.tensor(np.cos(values(want)))).sum().backward()
        if lib is ember:
            mine = F.grad.numpy(), B.grad.numpy()
    np.testing.assert_allclose(mine[0], F.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(mine[1], B.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_legacy_lu_names(torch_ref):
    a, b = arr(2, 3, 3), arr(2, 3, 1)
    same(*both(torch_ref, "lu", a))
    got, want = both(torch_ref, "lu", a, get_infos=True)
    same(got, want)
    assert type(got).__name__ == type(want).__name__ == "_lu_with_info"
    LU, pivots = torch_ref.linalg.lu_factor(torch_ref.tensor(a))
    same(*both(torch_ref, "lu_solve", b, LU.numpy(), pivots.numpy()))
    x = E(a)
    same(x.lu(), torch_ref.tensor(a).lu())
    same(E(b).lu_solve(E(LU.numpy()), E(pivots.numpy())), torch_ref.tensor(b).lu_solve(LU, pivots))
    with pytest.warns(UserWarning, match="torch.lu is deprecated") as record:
        ember.lu(x)
    assert record[0].filename == __file__


def test_lu_unpack_options_and_pivot_checks(torch_ref):
    LU, pivots = (t.numpy() for t in torch_ref.linalg.lu_factor(torch_ref.tensor(arr(2, 3, 3))))
    same(*both(torch_ref, "lu_unpack", LU, pivots, unpack_data=False))
    same(*both(torch_ref, "lu_unpack", LU, pivots, unpack_pivots=False))
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="int32"):
            lib.lu_unpack(lib.tensor(LU), lib.tensor(pivots.astype(np.int64)))
        with pytest.raises(RuntimeError, match="between 1 and LU.size"):
            lib.lu_unpack(lib.tensor(LU), lib.tensor(pivots + 5))
        with pytest.raises(RuntimeError, match="int32"):
            lib.linalg.lu_solve(lib.tensor(LU), lib.tensor(pivots.astype(np.int64)), lib.tensor(arr(3, 1)))
        with pytest.raises(RuntimeError, match="shape"):
            lib.linalg.lu_solve(lib.tensor(LU), lib.tensor(pivots[0]), lib.tensor(arr(3, 1)))
        with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
            lib.linalg.lu_solve(lib.tensor(LU), lib.tensor(pivots), lib.tensor(arr(4, 1)))
        with pytest.raises(RuntimeError, match="same dtype"):
            lib.linalg.lu_solve(lib.tensor(LU), lib.tensor(pivots), lib.tensor(arr(3, 1).astype(np.float32)))
        with pytest.raises(NotImplementedError, match="lu_cpu"):
            lib.linalg.lu_factor(lib.tensor(np.ones((2, 2), np.int64)))


# ------------------------------------------------------------------------------------------------ *_ex forms
SINGULAR = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])


@pytest.mark.parametrize("name, arrays", [
    ("linalg.inv_ex", (SINGULAR,)), ("linalg.inv_ex", (arr(2, 3, 3),)),
    ("linalg.cholesky_ex", (-SINGULAR,)), ("linalg.cholesky_ex", (arr(2, 3, 3, spd=True),)),
    ("linalg.solve_ex", (SINGULAR, SINGULAR)), ("linalg.solve_ex", (arr(3, 3), arr(2, 3, 2))),
])
def test_ex_forms_match_torch_bit_for_bit(torch_ref, name, arrays):
    got, want = both(torch_ref, name, *arrays)
    assert type(got).__name__ == type(want).__name__ and got._fields == type(want).__match_args__
    same(got, want)
    fails = bool((values(want.info) > 0).any())
    for lib in (ember, torch_ref):
        fn = getattr(lib.linalg, name.split(".")[1])
        if fails:
            with pytest.raises(lib.linalg.LinAlgError, match=r"\(Batch element \d\)"):
                fn(*map(lib.tensor, arrays), check_errors=True)
        else:
            assert (fn(*map(lib.tensor, arrays), check_errors=True).info == 0).all()


def test_ex_forms_differentiate():
    a, spd = arr(2, 3, 3), arr(3, 3, spd=True)
    check_grads(lambda A: ember.linalg.inv_ex(A).inverse, a)
    check_grads(lambda A, B: ember.linalg.solve_ex(A, B, left=False).result, a, arr(2, 2, 3))
    check_grads(lambda A: ember.linalg.cholesky_ex((A + A.mT) / 2, upper=True).L, spd)  # it reads one triangle


def test_cholesky_ex_upper(torch_ref):
    same(*both(torch_ref, "linalg.cholesky_ex", arr(2, 3, 3, spd=True), upper=True))


# ------------------------------------------------------------------------------------------------------ LDL
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5), (3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ldl_matches_torch(torch_ref, shape, dtype):
    a = arr(*shape, sym=True)
    a[..., 0, 0] = 0.0                                    # forces 2x2 pivot blocks (negative pivots)
    a = a.astype(dtype)
    got, want = both(torch_ref, "linalg.ldl_factor", a)
    same(got, want, rtol=1e-5)
    same(*both(torch_ref, "linalg.ldl_factor_ex", a, hermitian=True), rtol=1e-5)
    b = arr(*shape[:-1], 2).astype(dtype)
    same(*both(torch_ref, "linalg.ldl_solve", want.LD.numpy(), want.pivots.numpy(), b), rtol=1e-4, atol=1e-5)


def test_ldl_broadcasts_and_checks(torch_ref):
    a = arr(1, 3, 3, sym=True)
    LD, pivots = ember.linalg.ldl_factor(E(a))
    assert not LD.requires_grad
    b = arr(4, 3, 2)
    np.testing.assert_allclose(ember.linalg.ldl_solve(LD, pivots, E(b)).numpy(), np.linalg.solve(a, b), rtol=1e-9)
    with pytest.raises(ember.linalg.LinAlgError, match="D is singular"):
        ember.linalg.ldl_factor(ember.zeros(2, 2))
    info = ember.linalg.ldl_factor_ex(ember.zeros(2, 2)).info
    assert info.item() == torch_ref.linalg.ldl_factor_ex(torch_ref.zeros(2, 2)).info.item()
    for lib in (ember, torch_ref):
        LDt, pt = lib.linalg.ldl_factor(lib.tensor(a[0]))
        with pytest.raises(RuntimeError, match="square"):
            lib.linalg.ldl_factor(lib.tensor(arr(2, 3)))
        with pytest.raises(RuntimeError, match="Incompatible matrix sizes"):
            lib.linalg.ldl_solve(LDt, pt, lib.tensor(arr(4, 2)))
        with pytest.raises(RuntimeError, match="same dtype"):
            lib.linalg.ldl_solve(LDt, pt, lib.tensor(arr(3, 2).astype(np.float32)))
        with pytest.raises(RuntimeError, match="pivot"):
            lib.linalg.ldl_solve(LDt, pt + 7, lib.tensor(arr(3, 2)))


# ----------------------------------------------------------------------------------------------- Householder
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 2), (3, 3), (3, 5)])
def test_geqrf_householder_product_ormqr_match_torch(torch_ref, shape):
    a = arr(*shape)
    got, want = both(torch_ref, "geqrf", a)
    assert type(got).__name__ == "geqrf" and got._fields == ("a", "tau")
    same(got, want)
    h, tau = want.a.numpy(), want.tau.numpy()
    m, n = shape[-2:]
    if m >= n:
        same(*both(torch_ref, "linalg.householder_product", h, tau))
        same(*both(torch_ref, "orgqr", h, tau))
        check_grads(ember.linalg.householder_product, h, tau)
        grads_like_torch(torch_ref, "linalg.householder_product", [h, tau])
    for left in (True, False):
        for transpose in (True, False):
            c = arr(*shape[:-2], *((m, 2) if left else (2, m)))
            kw = dict(left=left, transpose=transpose)
            same(*both(torch_ref, "ormqr", h, tau, c, **kw))
            check_grads(lambda A, T, C: ember.ormqr(A, T, C, **kw), h, tau, c)
            grads_like_torch(torch_ref, "ormqr", [h, tau, c], kw)


def test_householder_methods_and_checks(torch_ref):
    a = arr(4, 3)
    h, tau = ember.tensor(a).geqrf()
    np.testing.assert_allclose(h.orgqr(tau).numpy(), torch_ref.linalg.qr(torch_ref.tensor(a)).Q.numpy(), atol=1e-12)
    np.testing.assert_allclose(h.ormqr(tau, ember.eye(4, dtype=ember.float64))[:, :3].numpy(), h.orgqr(tau).numpy(),
                               atol=1e-12)
    for lib in (ember, torch_ref):
        h, tau = lib.geqrf(lib.tensor(a))
        with pytest.raises(RuntimeError, match="greater than or equal to input.shape"):
            lib.linalg.householder_product(h.mT, tau)
        with pytest.raises(RuntimeError, match="one dimension less"):
            lib.linalg.householder_product(h.expand(2, 4, 3), tau)
        with pytest.raises(RuntimeError, match="dtype"):
            lib.linalg.householder_product(h, tau.float())
        with pytest.raises(RuntimeError, match="tau.shape\\[-1\\] must be equal to min"):
            lib.ormqr(h, tau[:2], lib.tensor(arr(4, 2)))
        with pytest.raises(RuntimeError, match="must be equal to input.shape\\[-2\\]"):
            lib.ormqr(h, tau, lib.tensor(arr(3, 2)))
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            lib.geqrf(lib.tensor(arr(3)))
        with pytest.raises(NotImplementedError, match="geqrf_cpu"):
            lib.geqrf(lib.ones(2, 2, dtype=lib.int64))


# --------------------------------------------------------------------------------------- Cholesky solves
@pytest.mark.parametrize("lshape, bshape", [((3, 3), (3, 2)), ((2, 3, 3), (3, 1)), ((3, 3), (4, 3, 2))])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_match_torch(torch_ref, lshape, bshape, upper):
    factor = np.linalg.cholesky(arr(*lshape, spd=True))
    factor = np.swapaxes(factor, -1, -2) if upper else factor
    b = arr(*bshape)
    same(*both(torch_ref, "cholesky_solve", b, factor, upper))
    same(*both(torch_ref, "cholesky_inverse", factor, upper))
    grads_like_torch(torch_ref, "cholesky_solve", [b, factor], {"upper": upper})
    grads_like_torch(torch_ref, "cholesky_inverse", [factor], {"upper": upper})
    triangle = (lambda t: t.triu()) if upper else (lambda t: t.tril())   # torch's gradient is not restricted to it
    check_grads(lambda B, F: ember.cholesky_solve(B, triangle(F), upper), b, factor)
    check_grads(lambda F: ember.cholesky_inverse(triangle(F), upper), factor)
    same(E(b).cholesky_solve(E(factor), upper), torch_ref.tensor(b).cholesky_solve(torch_ref.tensor(factor), upper))


def test_cholesky_solve_errors(torch_ref):
    L = np.linalg.cholesky(arr(3, 3, spd=True))
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            lib.cholesky_solve(lib.tensor(arr(3)), lib.tensor(L))
        with pytest.raises(RuntimeError, match="Incompatible matrix sizes for cholesky_solve"):
            lib.cholesky_solve(lib.tensor(arr(4, 2)), lib.tensor(L))
        with pytest.raises(RuntimeError, match="same dtype"):
            lib.cholesky_solve(lib.tensor(arr(3, 2).astype(np.float32)), lib.tensor(L))
        with pytest.raises(NotImplementedError, match="cholesky_solve_cpu"):
            lib.cholesky_solve(lib.ones(3, 2, dtype=lib.int64), lib.ones(3, 3, dtype=lib.int64))
        with pytest.raises(lib.linalg.LinAlgError, match="diagonal element 1 is zero"):
            lib.cholesky_inverse(lib.zeros(3, 3))


# --------------------------------------------------------------------------------------- triangular_solve
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_triangular_solve_matches_torch(torch_ref, upper, transpose, unitriangular):
    A = arr(3, 3) + 3 * np.eye(3)
    b = arr(2, 3, 2)
    kw = dict(upper=upper, transpose=transpose, unitriangular=unitriangular)
    got, want = both(torch_ref, "triangular_solve", b, A, **kw)
    assert got._fields == ("solution", "cloned_coefficient") and type(got).__name__ == "triangular_solve"
    same(got, want)
    grads_like_torch(torch_ref, "triangular_solve", [b, A], kw, pick=lambda r: r.solution)
    check_grads(lambda B, M: ember.triangular_solve(B, M, **kw), b, A)
    same(E(b).triangular_solve(E(A), **kw), torch_ref.tensor(b).triangular_solve(torch_ref.tensor(A), **kw))


def test_triangular_solve_errors(torch_ref):
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            lib.triangular_solve(lib.tensor(arr(3)), lib.eye(3, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="Incompatible matrix sizes for triangular_solve"):
            lib.triangular_solve(lib.tensor(arr(4, 2)), lib.eye(3, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="square"):
            lib.triangular_solve(lib.tensor(arr(3, 2)), lib.tensor(arr(3, 2)))


# ---------------------------------------------------------------------------------------------------- cond
@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 3)])
def test_cond_matches_torch_and_differentiates(torch_ref, p, shape):
    if shape[-1] != shape[-2] and p not in (None, 2, -2):
        for lib in (ember, torch_ref):
            with pytest.raises(RuntimeError, match="square"):
                lib.linalg.cond(lib.tensor(arr(*shape)), p)
        return
    a = arr(*shape)
    same(*both(torch_ref, "linalg.cond", a, p), rtol=1e-9)
    same(*both(torch_ref, "linalg.cond", a.astype(np.float32), p), rtol=1e-4)
    check_grads(lambda A: ember.linalg.cond(A, p), a)


def test_cond_singular_empty_and_bad_p(torch_ref):
    S = np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in ("fro", 1, math.inf):
        same(*both(torch_ref, "linalg.cond", S, p))
    same(*both(torch_ref, "linalg.cond", np.zeros((2, 0, 0))))
    same(*both(torch_ref, "linalg.cond", np.zeros((3, 3)), 2))
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="invalid norm type"):
            lib.linalg.cond(lib.eye(3), 3)
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            lib.linalg.cond(lib.ones(3))


# --------------------------------------------------------------------------------- tensorinv / tensorsolve
def test_tensorinv_tensorsolve_match_torch(torch_ref):
    same(*both(torch_ref, "linalg.tensorinv", arr(4, 6, 8, 3)), rtol=1e-8, atol=1e-10)
    same(*both(torch_ref, "linalg.tensorinv", arr(6, 2, 3), ind=1), rtol=1e-8, atol=1e-10)
    same(*both(torch_ref, "linalg.tensorsolve", arr(6, 4, 2, 3), arr(4, 3), dims=(0, 2)), rtol=1e-8)
    same(*both(torch_ref, "linalg.tensorsolve", arr(2, 3, 6), arr(3, 2)), rtol=1e-8)
    check_grads(lambda A: ember.linalg.tensorinv(A, ind=1), arr(6, 2, 3))
    check_grads(ember.linalg.tensorsolve, arr(2, 3, 6), arr(2, 3))
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="144 != 4"):
            lib.linalg.tensorinv(lib.zeros(4, 6, 8, 3), ind=1)
        with pytest.raises(RuntimeError, match="strictly positive"):
            lib.linalg.tensorinv(lib.zeros(4, 4), ind=0)
        with pytest.raises(RuntimeError, match="8 != 4"):
            lib.linalg.tensorsolve(lib.zeros(2, 2, 2, 2), lib.ones(4))
        with pytest.raises(lib.linalg.LinAlgError):
            lib.linalg.tensorinv(lib.zeros(2, 2, 2, 2))


# -------------------------------------------------------------------------------------------------- vander
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_vander_matches_torch(torch_ref, dtype):
    x = np.array([[0, 3, 1], [2, 1, 5]]).astype(dtype)
    same(*both(torch_ref, "linalg.vander", x, N=4))
    same(*both(torch_ref, "linalg.vander", x))
    same(*both(torch_ref, "vander", x[0]))
    same(*both(torch_ref, "vander", x[1], N=2, increasing=True))
    same(*both(torch_ref, "vander", x[1], N=0))


def test_vander_gradients_and_errors(torch_ref):
    x = np.array([[0.0, 3.0, -1.5], [2.0, 1.0, 0.5]])
    check_grads(lambda t: ember.linalg.vander(t, N=4), x)
    check_grads(lambda t: ember.vander(t, 4), x[0])
    grads_like_torch(torch_ref, "linalg.vander", [x], {"N": 4})
    same(*both(torch_ref, "vander", np.array([True, False])))
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="N must be greater than 1"):
            lib.linalg.vander(lib.ones(3), N=1)
        with pytest.raises(RuntimeError, match="Bool"):
            lib.linalg.vander(lib.ones(3, dtype=lib.bool))
        with pytest.raises(RuntimeError, match="one-dimensional"):
            lib.vander(lib.ones(2, 2))
        with pytest.raises(RuntimeError, match="non-negative"):
            lib.vander(lib.ones(2), N=-1)
        with pytest.raises(TypeError, match="must be int"):
            lib.vander(lib.ones(2), N=2.0)


# ------------------------------------------------------------------------------------------ legacy norms
def test_nuclear_and_frobenius_norm(torch_ref):
    a = arr(2, 3, 4)
    same(*both(torch_ref, "nuclear_norm", a))
    same(*both(torch_ref, "nuclear_norm", a, (0, 2), keepdim=True))
    same(*both(torch_ref, "nuclear_norm", a[0], True))
    same(*both(torch_ref, "frobenius_norm", a, (0,)))
    same(*both(torch_ref, "frobenius_norm", a, (0, 1), True))
    check_grads(lambda t: ember.nuclear_norm(t, (1, 2)), a)
    check_grads(lambda t: ember.frobenius_norm(t, (0, 2)), a)
    for lib in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="at most 2 dimensions"):
            lib.frobenius_norm(lib.ones(2, 3, 4), (0, 1, 2))
        with pytest.raises(RuntimeError, match="floating point"):
            lib.nuclear_norm(lib.ones(2, 3, dtype=lib.int64))
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        ember.nuclear_norm(E(a))


# --------------------------------------------------------------------------- result types, removed, out=
def test_existing_results_print_as_torch_return_types(torch_ref):
    a = arr(3, 3, spd=True)
    pivots = np.array([1, 2, 3], np.int32)
    for name, args in [("linalg.slogdet", (a,)), ("linalg.qr", (a,)), ("linalg.svd", (a,)), ("linalg.eigh", (a,)),
                       ("linalg.lstsq", (a, a)), ("slogdet", (a,)), ("qr", (a,)), ("svd", (a,)),
                       ("linalg.lu_factor", (a,)), ("linalg.ldl_factor_ex", (a,)), ("lu_unpack", (a, pivots))]:
        got, want = both(torch_ref, name, *args)
        fields = type(want).__match_args__
        assert type(got).__name__ == type(want).__name__ and got._fields == fields, name
        assert repr(got).startswith(f"ember.return_types.{type(want).__name__}(\n{fields[0]}=tensor(")
        assert type(pickle.loads(pickle.dumps(got))) is type(got)


@pytest.mark.parametrize("name", ["lstsq", "solve", "eig", "symeig", "matrix_rank"])
def test_removed_functions_raise_like_torch(torch_ref, name):
    for lib in (ember, torch_ref):
        a = lib.eye(2)
        with pytest.raises(RuntimeError, match="deprecated.*1.9.*removed"):
            getattr(lib, name)(a, a)
        if name != "matrix_rank":
            with pytest.raises(RuntimeError, match="removed"):
                getattr(a, name)(a) if name in ("lstsq", "solve") else getattr(a, name)()


OUT_CASES = {
    "cholesky_inverse": lambda: (np.linalg.cholesky(arr(3, 3, spd=True)),),
    "cholesky_solve": lambda: (arr(3, 2), np.linalg.cholesky(arr(3, 3, spd=True))),
    "frobenius_norm": lambda: (arr(2, 3), (0,)),
    "nuclear_norm": lambda: (arr(2, 3),),
    "geqrf": lambda: (arr(3, 2),),
    "orgqr": lambda: (np.tril(arr(3, 2), -1), np.array([1.2, 0.5])),
    "ormqr": lambda: (np.tril(arr(3, 2), -1), np.array([1.2, 0.5]), arr(3, 2)),
    "triangular_solve": lambda: (arr(3, 2), arr(3, 3) + 3 * np.eye(3)),
    "lu": lambda: (arr(3, 3),),
    "lu_solve": lambda: (arr(3, 2), *(t.numpy() for t in _torch().linalg.lu_factor(_torch().tensor(arr(3, 3))))),
    "lu_unpack": lambda: tuple(t.numpy() for t in _torch().linalg.lu_factor(_torch().tensor(arr(3, 3)))),
    "linalg.cholesky_ex": lambda: (arr(3, 3, spd=True),),
    "linalg.inv_ex": lambda: (arr(3, 3),),
    "linalg.solve_ex": lambda: (arr(3, 3), arr(3, 2)),
    "linalg.cond": lambda: (arr(3, 3),),
    "linalg.householder_product": lambda: (np.tril(arr(3, 2), -1), np.array([1.2, 0.5])),
    "linalg.ldl_factor": lambda: (arr(3, 3, sym=True),),
    "linalg.ldl_factor_ex": lambda: (arr(3, 3, sym=True),),
    "linalg.ldl_solve": lambda: (*(t.numpy() for t in _torch().linalg.ldl_factor(_torch().tensor(
        arr(3, 3, spd=True)))), arr(3, 2)),
    "linalg.lu": lambda: (arr(3, 4),),
    "linalg.lu_factor": lambda: (arr(3, 3),),
    "linalg.lu_factor_ex": lambda: (arr(3, 3),),
    "linalg.lu_solve": lambda: (*(t.numpy() for t in _torch().linalg.lu_factor(_torch().tensor(arr(3, 3)))),
                                arr(3, 2)),
    "linalg.tensorinv": lambda: (arr(2, 3, 6),),
    "linalg.tensorsolve": lambda: (arr(2, 3, 6), arr(2, 3)),
}


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_receives_the_result(torch_ref, name):
    arrays = OUT_CASES[name]()
    want = both(torch_ref, name, *arrays)[1]
    wants = tuple(want) if isinstance(want, tuple) else (want,)
    outs = tuple(ember.empty(0, dtype=getattr(ember, str(w.dtype).split(".")[-1])) for w in wants)
    target = ember
    for part in name.split("."):
        target = getattr(target, part)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = target(*[E(a) if isinstance(a, np.ndarray) else a for a in arrays],
                     out=outs if isinstance(want, tuple) else outs[0])
    gots = tuple(got) if isinstance(got, tuple) else (got,)
    assert all(g is o for g, o in zip(gots, outs))
    same(got, want, rtol=1e-8, atol=1e-10)
    tracked = [E(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a for a in arrays]
    if name == "lu":  # torch.lu is Python: it copy_s into out, recording the graph
        assert ember.lu(*tracked, out=outs)[0].requires_grad
        return
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        target(*tracked, out=outs if isinstance(want, tuple) else outs[0])


def test_new_names_are_exported(torch_ref):
    for name in ("cholesky_ex", "inv_ex", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "ldl_factor",
                 "ldl_factor_ex", "ldl_solve", "cond", "tensorinv", "tensorsolve", "vander", "householder_product"):
        assert name in ember.linalg.__all__ and callable(getattr(ember.linalg, name))
    for name in ("lu", "lu_solve", "lu_unpack", "cholesky_solve", "cholesky_inverse", "triangular_solve", "vander",
                 "geqrf", "orgqr", "ormqr", "nuclear_norm", "frobenius_norm"):
        assert callable(getattr(ember, name)) and hasattr(torch_ref, name)
    for name in ("lu", "lu_solve", "cholesky_solve", "cholesky_inverse", "triangular_solve", "geqrf", "orgqr",
                 "ormqr"):
        assert callable(getattr(ember.Tensor, name)) and hasattr(torch_ref.Tensor, name)
