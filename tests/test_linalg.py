"""ember.linalg: values against NumPy/SciPy, gradients against finite differences, errors and results against
torch.linalg."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.linalg as M
from ember.autograd import gradcheck, gradgradcheck

L = getattr(ember, "linalg", M)
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}
HYP = dict(max_examples=20, deadline=None, derandomize=True)


def top(name):
    """``ember.<name>`` once the lead wires it, else this package's function for it."""
    return getattr(ember, name, None) or M.TORCH_FUNCTIONS[name]


def method(t, name, *args, **kwargs):
    """``t.<name>(...)`` once bound, else the function the lead binds."""
    bound = getattr(type(t), name, None)
    return bound(t, *args, **kwargs) if bound is not None else M.TENSOR_METHODS[name](t, *args, **kwargs)


def close(actual, expected, dtype="float64", **kw):
    tol = dict(TOL[dtype])
    tol.update(kw)
    a = actual.detach().numpy() if isinstance(actual, ember.Tensor) else np.asarray(actual)
    assert a.shape == np.shape(expected), (a.shape, np.shape(expected))
    np.testing.assert_allclose(a.astype(np.float64), np.asarray(expected, dtype=np.float64), **tol)


def T(arr, requires_grad=False):
    return ember.tensor(np.asarray(arr), requires_grad=requires_grad)


def orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def well_conditioned(rng, batch, n, symmetric=False, spd=False):
    """``Q diag(s) P^T`` with s in [1, 3] (distinct, random signs unless positive-definite)."""
    s = np.sort(rng.uniform(1, 3, batch + (n,)))[..., ::-1]
    if not spd:
        s = s * rng.choice([-1.0, 1.0], batch + (n,))
    q = orthogonal(rng, batch, n)
    p = q if (symmetric or spd) else orthogonal(rng, batch, n)
    return (q * s[..., None, :]) @ np.swapaxes(p, -1, -2)


def rect(rng, batch, m, n):
    """A well-conditioned m x n matrix (singular values in [1, 3])."""
    k = min(m, n)
    u = orthogonal(rng, batch, m)[..., :, :k]
    v = orthogonal(rng, batch, n)[..., :, :k]
    s = np.sort(rng.uniform(1, 3, batch + (k,)))[..., ::-1]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


batches = st.lists(st.integers(0, 3), max_size=2).map(tuple)
sizes = st.integers(1, 4)
dtypes_ = st.sampled_from(["float32", "float64"])
seeds = st.integers(0, 2**31 - 1)


# --------------------------------------------------------------------------------------------------- values
@settings(**HYP)
@given(batch=batches, n=sizes, dt=dtypes_, seed=seeds)
def test_inv_det_slogdet_values(batch, n, dt, seed):
    a = well_conditioned(np.random.default_rng(seed), batch, n).astype(dt)
    A = T(a)
    close(L.inv(A), np.linalg.inv(a.astype(np.float64)), dt)
    close(L.det(A), np.linalg.det(a.astype(np.float64)), dt)
    sign, logabsdet = L.slogdet(A)
    ref_sign, ref_log = np.linalg.slogdet(a.astype(np.float64))
    close(sign, ref_sign, dt)
    close(logabsdet, ref_log, dt)
    assert L.inv(A).dtype is A.dtype and L.det(A).dtype is A.dtype


@settings(**HYP)
@given(batch=batches, n=sizes, k=st.integers(0, 3), dt=dtypes_, seed=seeds,
       b_batch=st.sampled_from(["same", "one", "none"]))
def test_solve_values(batch, n, k, dt, seed, b_batch):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, batch, n).astype(dt)
    bshape = {"same": batch, "one": (1,) * len(batch), "none": ()}[b_batch]
    b = rng.standard_normal(bshape + (n, k)).astype(dt)
    ref = np.linalg.solve(a.astype(np.float64), np.broadcast_to(b, batch + (n, k)).astype(np.float64))
    close(L.solve(T(a), T(b)), ref, dt)
    # X A = B
    bt = np.swapaxes(b, -1, -2).copy()
    close(L.solve(T(a), T(bt), left=False), np.swapaxes(
        np.linalg.solve(np.swapaxes(a, -1, -2).astype(np.float64), np.broadcast_to(b, batch + (n, k))), -1, -2), dt)
    # a batch of vectors B (*, n)
    v = rng.standard_normal(batch + (n,)).astype(dt)
    close(L.solve(T(a), T(v)), np.linalg.solve(a.astype(np.float64), v[..., None].astype(np.float64))[..., 0], dt)


@settings(**HYP)
@given(batch=batches, n=sizes, k=st.integers(1, 3), upper=st.booleans(), unit=st.booleans(), seed=seeds)
def test_solve_triangular_values(batch, n, k, upper, unit, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, batch + (n, n)) + 3 * np.eye(n)            # the other triangle must be ignored
    b = rng.standard_normal(batch + (n, k))
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri = tri - tri * np.eye(n) + np.eye(n)
    close(L.solve_triangular(T(a), T(b), upper=upper, unitriangular=unit), np.linalg.solve(tri, b))
    bt = np.swapaxes(b, -1, -2).copy()
    close(L.solve_triangular(T(a), T(bt), upper=upper, left=False, unitriangular=unit),
          np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2), b), -1, -2))


def test_solve_triangular_zero_pivot_gives_inf_not_error():
    out = L.solve_triangular(T(np.zeros((3, 3))), T(np.ones((3, 2))), upper=True)
    assert not np.isfinite(out.numpy()).any()


@settings(**HYP)
@given(batch=batches, n=sizes, dt=dtypes_, seed=seeds)
def test_cholesky_values(batch, n, dt, seed):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, batch, n, spd=True)
    noisy_upper = a + np.triu(rng.standard_normal(a.shape), 1)          # only the lower triangle is read
    ref = np.linalg.cholesky(a)
    close(L.cholesky(T(noisy_upper.astype(dt))), ref, dt)
    close(L.cholesky(T(a.astype(dt)), upper=True), np.swapaxes(ref, -1, -2), dt)
    close(top("cholesky")(T(a.astype(dt))), ref, dt)


@settings(**HYP)
@given(batch=batches, m=st.integers(0, 4), n=st.integers(0, 4), dt=dtypes_, seed=seeds,
       mode=st.sampled_from(["reduced", "complete", "r"]))
def test_qr_values(batch, m, n, dt, seed, mode):
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dt)
    Q, R = L.qr(T(a), mode)
    _, ref_r = np.linalg.qr(a.astype(np.float64), mode="complete" if mode == "complete" else "reduced")
    assert R.shape == ref_r.shape
    assert np.allclose(np.tril(R.numpy(), -1), 0)
    close(np.abs(np.diagonal(R.numpy(), axis1=-2, axis2=-1)), np.abs(np.diagonal(ref_r, axis1=-2, axis2=-1)), dt)
    if mode == "r":
        assert Q.shape == (0,)
        return
    q = Q.numpy().astype(np.float64)
    close(q @ R.numpy(), a, dt)
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), batch + (q.shape[-1],) * 2), dt)


@settings(**HYP)
@given(batch=batches, m=st.integers(0, 4), n=st.integers(0, 4), dt=dtypes_, seed=seeds, full=st.booleans())
def test_svd_values(batch, m, n, dt, seed, full):
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dt)
    U, S, Vh = L.svd(T(a), full_matrices=full)
    ref_s = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    close(S, ref_s, dt)
    close(L.svdvals(T(a)), ref_s, dt)
    k = min(m, n)
    assert U.shape == batch + (m, m if full else k) and Vh.shape == batch + (n if full else k, n)
    u, vh = U.numpy()[..., :k].astype(np.float64), Vh.numpy()[..., :k, :]
    close((u * S.numpy()[..., None, :]) @ vh, a, dt)
    legacy = top("svd")(T(a))
    close(legacy.V, np.swapaxes(L.svd(T(a), full_matrices=False).Vh.numpy(), -1, -2), dt)


@settings(**HYP)
@given(batch=batches, n=st.integers(0, 4), dt=dtypes_, seed=seeds, uplo=st.sampled_from(["L", "U"]))
def test_eigh_values(batch, n, dt, seed, uplo):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, batch, n, symmetric=True) if n else np.zeros(batch + (0, 0))
    garbage = (np.triu if uplo == "L" else np.tril)(rng.standard_normal(a.shape), 1 if uplo == "L" else -1)
    A = T((a + garbage).astype(dt))
    w, V = L.eigh(A, UPLO=uplo)
    ref = np.linalg.eigvalsh(a)
    close(w, ref, dt)
    close(L.eigvalsh(A, UPLO=uplo), ref, dt)
    v = V.numpy().astype(np.float64)
    close((v * w.numpy()[..., None, :]) @ np.swapaxes(v, -1, -2), a, dt)


@settings(**HYP)
@given(batch=batches, m=sizes, n=sizes, k=st.integers(1, 3), seed=seeds,
       driver=st.sampled_from([None, "gelsy", "gelsd", "gelss", "gels"]))
def test_lstsq_values(batch, m, n, k, seed, driver):
    rng = np.random.default_rng(seed)
    if driver == "gels" and m < n:
        m, n = n, m
    a = rect(rng, batch, m, n)
    b = rng.standard_normal(batch + (m, k))
    result = L.lstsq(T(a), T(b), driver=driver)
    ref = np.zeros(batch + (n, k))
    for idx in np.ndindex(*batch):
        ref[idx] = np.linalg.lstsq(a[idx], b[idx], rcond=None)[0]
    close(result.solution, ref, rtol=1e-8, atol=1e-10)
    driver = driver or "gelsy"
    if driver != "gelsy" and m > n:
        close(result.residuals, np.square(a @ ref - b).sum(-2), rtol=1e-8, atol=1e-10)
    else:
        assert result.residuals.shape == (0,)
    assert result.rank.shape == ((0,) if driver == "gels" else batch)
    if driver != "gels":
        assert (result.rank.numpy() == min(m, n)).all() and result.rank.dtype is ember.int64
    if driver in ("gelsd", "gelss"):
        close(result.singular_values, np.linalg.svd(a, compute_uv=False), rtol=1e-8, atol=1e-10)
    else:
        assert result.singular_values.shape == (0,)
    vec = L.lstsq(T(a), T(b[..., 0]), driver=driver).solution
    close(vec, ref[..., 0], rtol=1e-8, atol=1e-10)


MATRIX_ORDS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]


@settings(**HYP)
@given(batch=batches, m=st.integers(0, 4), n=st.integers(0, 4), dt=dtypes_, seed=seeds,
       ord=st.sampled_from(MATRIX_ORDS), keepdim=st.booleans())
def test_matrix_norm_values(batch, m, n, dt, seed, ord, keepdim):
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dt)
    got = L.matrix_norm(T(a), ord, keepdim=keepdim)
    if a.size == 0:
        ref = np.zeros(batch + ((1, 1) if keepdim else ()))
    else:
        ref = np.linalg.norm(a.astype(np.float64), ord, axis=(-2, -1), keepdims=keepdim)
    close(got, ref, dt)
    if a.size and batch:    # other dims, in either order
        close(L.matrix_norm(T(a), ord, dim=(-1, 0)),
              np.linalg.norm(a.astype(np.float64), ord, axis=(-1, 0)), dt)


@settings(**HYP)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple), dt=dtypes_, seed=seeds,
       ord=st.sampled_from([2, 1, 0, math.inf, -math.inf, 3, 0.5, -1]), keepdim=st.booleans(), use_dim=st.booleans())
def test_vector_norm_values(shape, dt, seed, ord, keepdim, use_dim):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dt)
    dim = -1 if (use_dim and shape) else None
    got = L.vector_norm(T(x), ord, dim, keepdim)
    ref = np.linalg.norm(x.astype(np.float64).reshape(-1) if dim is None else x.astype(np.float64), ord,
                         axis=None if dim is None else dim, keepdims=keepdim and dim is not None)
    if dim is None and keepdim:
        ref = np.reshape(ref, (1,) * len(shape))
    close(got, ref, dt, rtol=1e-4 if dt == "float32" else 1e-9)


def test_norm_dispatch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((2, 3, 4))
    close(L.norm(T(a)), np.linalg.norm(a.reshape(-1)))
    close(L.norm(T(b)), np.linalg.norm(b.reshape(-1)))
    close(L.norm(T(a), 2), np.linalg.norm(a, 2))               # 2-D with ord: a matrix norm
    close(L.norm(T(a[0]), 3), np.linalg.norm(a[0], 3))         # 1-D with ord: a vector norm
    close(L.norm(T(b), dim=1), np.linalg.norm(b, axis=1))
    close(L.norm(T(b), "nuc", dim=(0, 2)), np.linalg.norm(b, "nuc", axis=(0, 2)))
    close(L.norm(T(b), -1, dim=(2, 1), keepdim=True), np.linalg.norm(b, -1, axis=(2, 1), keepdims=True))
    close(L.matrix_norm(T(a.astype(np.float32)), dtype=ember.float64), np.linalg.norm(a.astype(np.float32)
                                                                                       .astype(np.float64)))


@settings(**HYP)
@given(batch=batches, m=sizes, n=sizes, seed=seeds, hermitian=st.booleans())
def test_pinv_and_rank_values(batch, m, n, seed, hermitian):
    rng = np.random.default_rng(seed)
    if hermitian:
        n = m
        a = well_conditioned(rng, batch, n, symmetric=True)
    else:
        a = rect(rng, batch, m, n)
    if min(m, n) > 1:   # make it rank deficient: the last singular value 0
        u, s, vh = np.linalg.svd(a)
        s[..., -1] = 0
        a = (u[..., :, :s.shape[-1]] * s[..., None, :]) @ vh[..., :s.shape[-1], :]
        if hermitian:
            a = (a + np.swapaxes(a, -1, -2)) / 2
    rank = min(m, n) - (min(m, n) > 1)
    close(L.pinv(T(a), hermitian=hermitian), np.linalg.pinv(a, rcond=1e-10), rtol=1e-7, atol=1e-9)
    assert (L.matrix_rank(T(a), hermitian=hermitian).numpy() == rank).all()
    # an atol above every singular value drops them all
    assert (L.matrix_rank(T(a), atol=10.0).numpy() == 0).all()
    close(L.pinv(T(a), atol=10.0), np.zeros(batch + (n, m)))


def test_pinverse_legacy_and_tensor_rtol():
    a = np.diag([4.0, 2.0, 1e-3])
    close(top("pinverse")(T(a)), np.diag([0.25, 0.5, 1e3]))
    close(L.pinv(T(a), rtol=T(np.array(1e-2))), np.diag([0.25, 0.5, 0.0]))


@settings(**HYP)
@given(batch=batches, n=sizes, p=st.integers(-3, 4), seed=seeds)
def test_matrix_power_values(batch, n, p, seed):
    a = well_conditioned(np.random.default_rng(seed), batch, n)
    ref = np.zeros(batch + (n, n))
    for idx in np.ndindex(*batch):
        ref[idx] = np.linalg.matrix_power(a[idx], p)
    close(L.matrix_power(T(a), p), ref, rtol=1e-8, atol=1e-10)


def test_matrix_power_integers():
    a = np.arange(4).reshape(2, 2)
    out = L.matrix_power(T(a), 3)
    assert out.dtype is ember.int64 and (out.numpy() == np.linalg.matrix_power(a, 3)).all()
    assert (L.matrix_power(T(a), 0).numpy() == np.eye(2)).all()


@settings(**HYP)
@given(dims=st.lists(st.integers(1, 5), min_size=3, max_size=6), v_first=st.booleans(), v_last=st.booleans(),
       seed=seeds)
def test_multi_dot_values(dims, v_first, v_last, seed):
    rng = np.random.default_rng(seed)
    mats = [rng.standard_normal((dims[i], dims[i + 1])) for i in range(len(dims) - 1)]
    if v_first:
        mats[0] = mats[0][0]
    if v_last:
        mats[-1] = mats[-1][:, 0]
    close(L.multi_dot([T(m) for m in mats]), np.linalg.multi_dot(mats))


@settings(**HYP)
@given(shape=st.lists(st.integers(1, 3), max_size=2).map(tuple), dim=st.integers(0, 2), seed=seeds)
def test_cross_vecdot_values(shape, dim, seed):
    rng = np.random.default_rng(seed)
    dim = min(dim, len(shape))
    full = shape[:dim] + (3,) + shape[dim:]
    a, b = rng.standard_normal(full), rng.standard_normal(full)
    close(L.cross(T(a), T(b), dim=dim), np.cross(a, b, axis=dim))
    close(L.vecdot(T(a), T(b), dim=dim), (a * b).sum(dim))
    ai = rng.integers(-5, 5, full)
    bi = rng.integers(-5, 5, full)
    assert (L.cross(T(ai), T(bi), dim=dim).numpy() == np.cross(ai, bi, axis=dim)).all()


def test_legacy_and_methods():
    rng = np.random.default_rng(1)
    a = well_conditioned(rng, (2,), 3)
    A = T(a)
    close(method(A, "det"), np.linalg.det(a))
    close(method(A, "inverse"), np.linalg.inv(a))
    sign, logabs = np.linalg.slogdet(a)
    close(method(A, "logdet"), np.where(sign > 0, logabs, np.nan))
    assert type(method(A, "slogdet")).__name__ == "slogdet"
    q, r = method(A, "qr")
    close(q.numpy() @ r.numpy(), a)
    assert type(method(A, "svd")).__name__ == "svd"
    u, s, v = method(A, "svd", compute_uv=False)
    assert (u.numpy() == 0).all() and u.shape == (2, 3, 3)
    close(method(A, "matrix_power", 2), a @ a)
    assert method(T(np.zeros((2, 2))), "logdet").item() == -math.inf
    with pytest.warns(UserWarning):
        close(top("cross")(T(a), T(a[::-1].copy())), np.cross(a, a[::-1], axis=1))


def test_empty_batches_and_matrices():
    for shape in [(0, 3, 3), (2, 0, 0), (0, 0)]:
        a = np.zeros(shape)
        assert L.inv(T(a)).shape == shape
        close(L.det(T(a)), np.linalg.det(a))
        assert L.cholesky(T(a)).shape == shape
        assert L.eigh(T(a)).eigenvectors.shape == shape
        assert L.solve(T(a), T(np.zeros(shape[:-1] + (2,)))).shape == shape[:-1] + (2,)
    assert L.svd(T(np.zeros((0, 3)))).Vh.shape == (3, 3)
    assert L.lstsq(T(np.zeros((0, 4, 2))), T(np.zeros((0, 4, 1)))).solution.shape == (0, 2, 1)


# ------------------------------------------------------------------------------------------------------ errors
def test_singular_errors():
    with pytest.raises(M.LinAlgError, match=r"^linalg\.inv: The diagonal element 2 is zero, the inversion could not "
                                              r"be completed because the input matrix is singular\.$"):
        L.inv(T(np.array([[1.0, 2.0], [2.0, 4.0]])))
    with pytest.raises(RuntimeError, match=r"linalg\.inv: \(Batch element 1\): The diagonal element 1 is zero"):
        L.inv(T(np.stack([np.eye(3), np.zeros((3, 3))])))
    with pytest.raises(M.LinAlgError, match=r"torch\.linalg\.solve: The solver failed because the input matrix is "
                                              r"singular\."):
        L.solve(T(np.zeros((2, 2))), T(np.ones(2)))
    with pytest.raises(M.LinAlgError, match=r"leading minor of order 2 is not positive-definite"):
        L.cholesky(T(np.array([[1.0, 2.0], [2.0, 1.0]])))
    with pytest.raises(M.LinAlgError, match="diagonal element 1 is zero"):
        L.matrix_power(T(np.zeros((2, 2))), -1)
    assert issubclass(M.LinAlgError, RuntimeError)
    assert L.det(T(np.zeros((2, 2)))).item() == 0.0


@pytest.mark.parametrize("call, exc, message", [
    (lambda: L.inv(T(np.ones((2, 3)))), RuntimeError, "linalg.inv: A must be batches of square matrices, but they "
                                                      "are 2 by 3 matrices"),
    (lambda: L.det(T(np.ones(3))), RuntimeError, "linalg.det: The input tensor A must have at least 2 dimensions."),
    (lambda: L.inv(T(np.eye(2, dtype=np.int64))), RuntimeError, "linalg.inv: Expected a floating point or complex "
                                                                "tensor as input. Got Long"),
    (lambda: L.eigh(T(np.eye(2, dtype=np.int64))), NotImplementedError, "\"linalg_eigh_cpu\" not implemented for "
                                                                        "'Long'"),
    (lambda: L.eigh(T(np.eye(2)), UPLO="X"), RuntimeError, "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: L.qr(T(np.eye(2)), mode="x"), RuntimeError, "qr received unrecognized mode 'x'"),
    (lambda: L.solve(T(np.eye(3)), T(np.ones(4))), RuntimeError, "linalg.solve: Incompatible shapes of A and B for "
                                                                 "the equation AX = B (3x3 and 4x1)"),
    (lambda: L.solve(T(np.eye(3)), T(np.ones((3, 2))), left=False), RuntimeError, "equation XA = B (3x3 and 3x2)"),
    (lambda: L.solve(T(np.eye(3)), T(np.ones(3, np.float32))), RuntimeError, "Expected A and B to have the same "
                                                                             "dtype"),
    (lambda: L.lstsq(T(np.eye(3)), T(np.ones((3, 1))), driver="foo"), RuntimeError, "parameter `driver` should be "
                                                                                     "one of"),
    (lambda: L.lstsq(T(np.eye(3)), T(np.ones((4, 1)))), RuntimeError, "input.size(-2) should match other.size(-2)"),
    (lambda: L.matrix_norm(T(np.eye(3)), 3), RuntimeError, "linalg.matrix_norm: Order 3 not supported."),
    (lambda: L.matrix_norm(T(np.eye(3)), dim=(0, 0)), RuntimeError, "linalg.matrix_norm: dims must be different. "
                                                                    "Got (0, 0)"),
    (lambda: L.norm(T(np.ones((2, 2, 2))), 2), RuntimeError, "If dim is not specified but ord is, the input must be "
                                                             "1D or 2D. Got 3D."),
    (lambda: L.vector_norm(T(np.ones(3)), "fro"), TypeError, "argument 'ord' must be Number, not str"),
    (lambda: L.vector_norm(T(np.zeros(0)), math.inf), RuntimeError, "cannot compute the inf norm on an empty tensor"),
    (lambda: L.multi_dot([T(np.ones((2, 3))), T(np.ones((4, 5)))]), RuntimeError, "multi_dot(): tensors 0 and 1 "
                                                                                  "with shapes [2, 3] and [4, 5] "
                                                                                  "cannot be multiplied"),
    (lambda: L.multi_dot([T(np.ones(3))]), RuntimeError, "expected at least 2 tensors but got 1"),
    (lambda: L.cross(T(np.ones(4)), T(np.ones(4))), RuntimeError, "linalg.cross: inputs dimension -1 must have "
                                                                  "length 3. Got 4 and 4"),
    (lambda: L.pinv(T(np.ones(3))), RuntimeError, "linalg.pinv(Double{[3]}): expected a tensor with 2 or more"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert message in str(info.value)


# --------------------------------------------------------------------------------------------------- gradients
def rand(shape, seed=0, requires_grad=True):
    return T(np.random.default_rng(seed).standard_normal(shape), requires_grad)


def wc(n, batch=(), seed=0, **kw):
    return T(well_conditioned(np.random.default_rng(seed), batch, n, **kw), True)


def sym(X):
    return (X + X.mT) * 0.5


def spd(X):
    n = X.shape[-1]
    return X @ X.mT + T(np.eye(n) * n)


SECOND_ORDER = {
    "inv": (lambda A: L.inv(A), lambda: (wc(3, (2,)),)),
    "det": (lambda A: L.det(A), lambda: (wc(3, (2,)),)),
    "slogdet": (lambda A: L.slogdet(A).logabsdet, lambda: (wc(3),)),
    "solve": (lambda A, B: L.solve(A, B), lambda: (wc(3, (2,)), rand((1, 3, 2), 1))),
    "solve_vector": (lambda A, B: L.solve(A, B), lambda: (wc(3, (2,)), rand((2, 3), 1))),
    "solve_right": (lambda A, B: L.solve(A, B, left=False), lambda: (wc(3), rand((2, 3), 1))),
    "solve_triangular": (lambda A, B: L.solve_triangular(A, B, upper=True), lambda: (wc(3), rand((3, 2), 1))),
    "cholesky": (lambda X: L.cholesky(spd(X)), lambda: (rand((2, 3, 3)),)),
    "cholesky_upper": (lambda X: L.cholesky(spd(X), upper=True), lambda: (rand((3, 3)),)),
    "eigvalsh": (lambda X: L.eigvalsh(sym(X)), lambda: (wc(3, (2,), symmetric=True),)),
    "svdvals": (lambda A: L.svdvals(A), lambda: (T(rect(np.random.default_rng(0), (2,), 4, 3), True),)),
    "matrix_norm_fro": (lambda A: L.matrix_norm(A), lambda: (rand((2, 3, 4)),)),
    "matrix_norm_nuc": (lambda A: L.matrix_norm(A, "nuc"), lambda: (wc(3),)),
    "matrix_norm_2": (lambda A: L.matrix_norm(A, 2), lambda: (wc(3),)),
    "matrix_norm_1": (lambda A: L.matrix_norm(A, 1, keepdim=True), lambda: (rand((2, 3, 4)),)),
    "matrix_norm_inf": (lambda A: L.matrix_norm(A, -math.inf, dim=(0, 2)), lambda: (rand((3, 2, 4)),)),
    "vector_norm": (lambda x: L.vector_norm(x, 3, dim=1), lambda: (rand((2, 4)),)),
    "vector_norm_2": (lambda x: L.vector_norm(x), lambda: (rand((2, 4)),)),
    "matrix_power": (lambda A: L.matrix_power(A, 3), lambda: (rand((2, 3, 3)),)),
    "matrix_power_neg": (lambda A: L.matrix_power(A, -2), lambda: (wc(3),)),
    "multi_dot": (lambda a, b, c: L.multi_dot([a, b, c]), lambda: (rand(3, 0), rand((3, 4), 1), rand((4, 2), 2))),
    "cross": (lambda a, b: L.cross(a, b), lambda: (rand((2, 3), 0), rand((2, 3), 1))),
}

FIRST_ORDER = {
    # gauge-invariant functions of the factors (signs of vectors are arbitrary)
    "qr": (lambda A: (lambda q, r: (q @ L.inv(r.mT @ r) @ r.mT, r * r))(*L.qr(A)),
           lambda: (T(rect(np.random.default_rng(0), (2,), 4, 3), True),)),
    "qr_square": (lambda A: tuple(L.qr(A)[i] * L.qr(A)[i] for i in range(2)), lambda: (wc(3),)),
    "qr_wide": (lambda A: tuple(L.qr(A)[i] * L.qr(A)[i] for i in range(2)),
                lambda: (T(rect(np.random.default_rng(0), (), 2, 4), True),)),
    "svd": (lambda A: (lambda u, s, vh: (u * u, s, vh * vh, u @ vh))(*L.svd(A, full_matrices=False)),
            lambda: (T(rect(np.random.default_rng(0), (2,), 4, 3), True),)),
    "svd_wide_full": (lambda A: (lambda u, s, vh: (u * u, s, vh[..., :2, :] * vh[..., :2, :]))(*L.svd(A)),
                      lambda: (T(rect(np.random.default_rng(1), (), 2, 4), True),)),
    "eigh": (lambda X: (lambda w, v: (w, v * v))(*L.eigh(sym(X))), lambda: (wc(3, (2,), symmetric=True),)),
    "eigh_upper": (lambda X: (lambda w, v: (w, v * v))(*L.eigh(sym(X), UPLO="U")), lambda: (wc(4, seed=3),)),
    "lstsq": (lambda A, B: L.lstsq(A, B).solution,
              lambda: (T(rect(np.random.default_rng(0), (2,), 4, 3), True), rand((1, 4, 2), 1))),
    "lstsq_vector": (lambda A, B: L.lstsq(A, B, driver="gelsd").solution,
                     lambda: (T(rect(np.random.default_rng(0), (), 3, 3), True), rand(3, 1))),
    "pinv_tall": (lambda A: L.pinv(A), lambda: (T(rect(np.random.default_rng(0), (2,), 4, 3), True),)),
    "pinv_wide": (lambda A: L.pinv(A), lambda: (T(rect(np.random.default_rng(0), (), 2, 4), True),)),
    "pinv_hermitian": (lambda X: L.pinv(sym(X), hermitian=True), lambda: (wc(3, symmetric=True),)),
    "det_singular": (lambda A: L.det(A), lambda: (T(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 7.0]]),
                                                    True),)),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER) + sorted(FIRST_ORDER))
def test_gradcheck(name):
    fn, inputs = {**SECOND_ORDER, **FIRST_ORDER}[name]
    assert gradcheck(fn, inputs(), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(SECOND_ORDER) + sorted(FIRST_ORDER))
def test_gradgradcheck(name):
    fn, inputs = {**SECOND_ORDER, **FIRST_ORDER}[name]
    assert gradgradcheck(fn, inputs(), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_slogdet_sign_has_no_grad_and_qr_r_mode_refuses_backward():
    A = wc(3)
    sign, logabsdet = L.slogdet(A)
    assert not sign.requires_grad and logabsdet.requires_grad
    _, R = L.qr(A, mode="r")
    with pytest.raises(RuntimeError, match="mode='r'"):
        R.sum().backward()


# ---------------------------------------------------------------------------------------- against torch.linalg
def _torch_case(torch, name):
    rng = np.random.default_rng(7)
    a = well_conditioned(rng, (2,), 3)
    s = well_conditioned(rng, (2,), 3, spd=True)
    r = rect(rng, (2,), 4, 3)
    b = rng.standard_normal((2, 3, 2))
    cases = {
        "inv": ((a,), lambda lib, A: lib.linalg.inv(A)),
        "det": ((a,), lambda lib, A: lib.linalg.det(A)),
        "slogdet": ((a,), lambda lib, A: lib.linalg.slogdet(A).logabsdet),
        "solve": ((a, b), lambda lib, A, B: lib.linalg.solve(A, B)),
        "solve_right": ((a, np.swapaxes(b, -1, -2).copy()), lambda lib, A, B: lib.linalg.solve(A, B, left=False)),
        "solve_triangular": ((a, b), lambda lib, A, B: lib.linalg.solve_triangular(A, B, upper=False)),
        "cholesky": ((s,), lambda lib, A: lib.linalg.cholesky(A, upper=True)),
        "qr": ((r,), lambda lib, A: lib.linalg.qr(A).R.abs()),
        "svdvals": ((r,), lambda lib, A: lib.linalg.svdvals(A)),
        "svd": ((r,), lambda lib, A: (lambda u, s_, vh: (u @ vh))(*lib.linalg.svd(A, full_matrices=False))),
        "eigvalsh": ((s,), lambda lib, A: lib.linalg.eigvalsh(A)),
        "eigh": ((s,), lambda lib, A: lib.linalg.eigh(A).eigenvectors.abs()),
        "lstsq": ((r, rng.standard_normal((2, 4, 2))), lambda lib, A, B: lib.linalg.lstsq(A, B).solution),
        "pinv": ((r,), lambda lib, A: lib.linalg.pinv(A)),
        "matrix_norm": ((r,), lambda lib, A: lib.linalg.matrix_norm(A, "nuc") + lib.linalg.matrix_norm(A, -1)),
        "vector_norm": ((r,), lambda lib, A: lib.linalg.vector_norm(A, 3, dim=(0, 2))),
        "norm": ((r,), lambda lib, A: lib.linalg.norm(A, dim=1)),
        "matrix_power": ((a,), lambda lib, A: lib.linalg.matrix_power(A, -3)),
        "multi_dot": ((r[0], r[1].T.copy()), lambda lib, A, B: lib.linalg.multi_dot([A, B, A])),
        "cross": ((r, r[::-1].copy()), lambda lib, A, B: lib.linalg.cross(A, B)),
        "vecdot": ((r, r[::-1].copy()), lambda lib, A, B: lib.linalg.vecdot(A, B)),
        "logdet": ((s,), lambda lib, A: lib.logdet(A)),
        "pinverse": ((r,), lambda lib, A: lib.pinverse(A)),
    }
    return cases[name]


TORCH_CASES = ["inv", "det", "slogdet", "solve", "solve_right", "solve_triangular", "cholesky", "qr", "svdvals",
               "svd", "eigvalsh", "eigh", "lstsq", "pinv", "matrix_norm", "vector_norm", "norm", "matrix_power",
               "multi_dot", "cross", "vecdot", "logdet", "pinverse"]


class _EmberLib:
    linalg = L
    logdet = staticmethod(top("logdet"))
    pinverse = staticmethod(top("pinverse"))


@pytest.mark.parametrize("name", TORCH_CASES)
def test_against_torch(torch_ref, name):
    torch = torch_ref
    arrays, fn = _torch_case(torch, name)
    ours = [T(x, True) for x in arrays]
    theirs = [torch.tensor(x, requires_grad=True) for x in arrays]
    out, ref = fn(_EmberLib, *ours), fn(torch, *theirs)
    close(out, ref.detach().numpy(), rtol=1e-8, atol=1e-10)
    seed = np.random.default_rng(3).standard_normal(tuple(ref.shape))
    grads = ember.autograd.grad(out, ours, T(seed))
    ref_grads = torch.autograd.grad(ref, theirs, torch.tensor(seed))
    for g, rg in zip(grads, ref_grads):
        close(g, rg.numpy(), rtol=1e-7, atol=1e-9)


def test_errors_match_torch(torch_ref):
    torch = torch_ref
    cases = [
        ("inv", lambda lib, A: lib.linalg.inv(A), np.array([[1.0, 2.0], [2.0, 4.0]])),
        ("inv_batch", lambda lib, A: lib.linalg.inv(A), np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0])])),
        ("cholesky", lambda lib, A: lib.linalg.cholesky(A), np.array([[1.0, 2.0], [2.0, 1.0]])),
        ("solve", lambda lib, A: lib.linalg.solve(A, A), np.zeros((2, 3, 3))),
        ("det_int", lambda lib, A: lib.linalg.det(A), np.eye(2, dtype=np.int64)),
        ("eigh_nonsquare", lambda lib, A: lib.linalg.eigh(A), np.ones((2, 3))),
        ("slogdet_1d", lambda lib, A: lib.linalg.slogdet(A), np.ones(3)),
        ("matrix_norm_dim", lambda lib, A: lib.linalg.matrix_norm(A, dim=(0,)), np.ones((2, 3))),
        ("norm_dims", lambda lib, A: lib.linalg.norm(A, dim=(0, 1, 1)), np.ones((2, 3))),
        ("matrix_rank_int", lambda lib, A: lib.linalg.matrix_rank(A), np.eye(2, dtype=np.int64)),
        ("lstsq_dtype", lambda lib, A: lib.linalg.lstsq(A, A.float()), np.eye(2)),
        ("multi_dot_3d", lambda lib, A: lib.linalg.multi_dot([A, A]), np.ones((2, 2, 2))),
        ("cross_ndim", lambda lib, A: lib.linalg.cross(A, A[0]), np.ones((2, 3))),
    ]
    for label, fn, arr in cases:
        with pytest.raises(Exception) as theirs:
            fn(torch, torch.tensor(arr))
        with pytest.raises(Exception) as ours:
            fn(_EmberLib, T(arr))
        assert isinstance(ours.value, type(theirs.value).__mro__[1] if type(theirs.value).__name__ == "_LinAlgError"
                          else type(theirs.value)), label
        assert str(ours.value) == str(theirs.value), (label, str(ours.value), str(theirs.value))


# ---- found by the long fuzz run (issue 8), torch as the oracle -------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_cross_keeps_nan_and_inf_in_their_own_components(torch_ref, dt):
    """Each component reads only its own two products: a NaN or inf elsewhere in the vectors stays out of it."""
    nan, inf = math.nan, math.inf
    rows_a = [[nan, 1.0, 2.0], [1.0, 2.0, 3.0], [-1.2, -6.5, 1e-30], [-1e20, 7.5, 1e20]]
    rows_b = [[1.0, 2.0, 3.0], [inf, 0.0, 1.0], [nan, -4.6, -9.2], [nan, 2.6, 1.4e-45]]
    if dt == "float32":  # a x a of huge values: torch's fused multiply-subtract gives rounding errors and inf
        rows_a.append([-1e20, 7.5688767, 1e20])
        rows_b.append(rows_a[-1])
    a, b = np.array(rows_a, dtype=dt), np.array(rows_b, dtype=dt)
    for dim in (-1, 1):
        ours = M.cross(T(a), T(b), dim=dim).numpy()
        theirs = torch_ref.linalg.cross(torch_ref.tensor(a), torch_ref.tensor(b), dim=dim).numpy()
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    ours = M.cross(T(a.T.copy()), T(b.T.copy()), dim=0).numpy()
    np.testing.assert_array_equal(ours, torch_ref.linalg.cross(torch_ref.tensor(a.T.copy()),
                                                               torch_ref.tensor(b.T.copy()), dim=0).numpy())


def test_float32_cross_rounds_as_torch(torch_ref):
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((64, 3)).astype(np.float32) for _ in range(2))
    np.testing.assert_array_equal(M.cross(T(a), T(b)).numpy(),
                                  torch_ref.linalg.cross(torch_ref.tensor(a), torch_ref.tensor(b)).numpy())
