"""einsum, tensordot, kron, cross, trace, cdist, inner: values, errors, gradients, and PyTorch itself."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck

from conftest import check_against_torch, fn, method, make_layout, np_array

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


def linalg_cross(*args, **kwargs):
    """cross is implemented in ``ember.linalg`` (another module); these tests check it too."""
    return ember.linalg.cross(*args, **kwargs)


def T(a, dtype=None, requires_grad=False):
    return ember.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def rand(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def close(out, expected, dtype=None, rtol=1e-10, atol=1e-10):
    expected = np.asarray(expected)
    assert tuple(out.shape) == expected.shape, (tuple(out.shape), expected.shape)
    if dtype is not None:
        assert out.dtype is dtype
    np.testing.assert_allclose(out.detach().numpy().astype(np.float64), expected.astype(np.float64), rtol=rtol,
                               atol=atol)


# ----------------------------------------------------------------------------- einsum values
# (equation, operand shapes); NumPy's einsum is the reference
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("i,i", [(4,), (4,)]), ("i,j->ij", [(2,), (3,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 4)]),
    ("...ij,...jk", [(2, 2, 3), (3, 4)]), ("bA,Ab", [(2, 3), (3, 2)]), ("aB", [(2, 3)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]), ("iji->j", [(2, 3, 2)]), ("iii->i", [(3, 3, 3)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ijk,ikj->", [(2, 3, 3), (2, 3, 3)]), ("", [()]), (",i->i", [(), (4,)]), ("...", [(2, 3)]),
    ("i,i", [(0,), (0,)]), ("ij,jk", [(2, 0), (0, 3)]), ("bij,bjk->bik", [(0, 2, 3), (0, 3, 4)]),
    ("ab,cd->abcd", [(2, 1), (0, 3)]), ("i...->...", [(3, 2, 2)]), ("ij,kj->ikj", [(2, 3), (4, 3)]),
    (" i j , j k -> k i ", [(2, 3), (3, 4)]), ("abc,cda,db->", [(2, 3, 4), (4, 5, 2), (5, 3)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] or "scalar" for c in EINSUM_CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_einsum_matches_numpy(equation, shapes, dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-3, 4, size=s).astype(dtype) for s in shapes]
    out = fn("einsum")(equation, *[T(a) for a in arrays])
    expected = np.einsum(equation.replace(" ", ""), *arrays)
    close(out, expected, getattr(ember, dtype), rtol=1e-6)
    if len(arrays) > 1:
        close(fn("einsum")(equation, [T(a) for a in arrays]), expected)


@pytest.mark.parametrize("equation,dtype,expected_dtype", [
    ("ij,j->i", "int32", "int32"), ("ij,k->i", "int32", "int64"), ("ii", "int32", "int64"),
    ("ij->ji", "int32", "int32"), ("ij,jk->ij", "int32", "int64"), ("ij,jk,kl->il", "int32", "int32"),
    ("ii->i", "bool", "bool"), ("ij->i", "bool", "int64"),
])
def test_einsum_integer_result_dtypes(equation, dtype, expected_dtype):
    """torch sums subscripts seen in one operand only with ``sum`` (ints -> int64); products keep the dtype."""
    arrays = [np.arange(3 ** len(term)).reshape((3,) * len(term)).astype(dtype)
              for term in equation.split("->")[0].split(",")]
    out = fn("einsum")(equation, *[T(a) for a in arrays])
    assert out.dtype is getattr(ember, expected_dtype)
    close(out, np.einsum(equation, *[a.astype(np.int64) for a in arrays]))


def test_einsum_broadcasts_size_one_subscripts():
    a, b = np.arange(3.0).reshape(1, 3), np.arange(6.0).reshape(2, 3)
    close(fn("einsum")("ij,ij->ij", T(a), T(b)), a * b)
    c = np.arange(2.0).reshape(2, 1)
    close(fn("einsum")("ij,ij->i", T(c), T(b)), (c * b).sum(1))
    close(fn("einsum")("ij,ij->", T(c), T(b)), (c * b).sum())


@st.composite
def matmul_like(draw):
    """Random labelled operands: a batch label, a contracted label, free labels, and layouts."""
    sizes = {s: draw(st.integers(0, 3)) for s in "bijk"}
    left = "".join(draw(st.permutations("bij")))
    right = "".join(draw(st.permutations("bjk")))
    out = "".join(draw(st.permutations(draw(st.sampled_from(["bik", "ik", "bk", "b", ""])))))
    arrays = [np_array(draw, tuple(sizes[s] for s in term), "float64") for term in (left, right)]
    layouts = [draw(st.sampled_from(["contiguous", "transpose", "reversed", "step2"])) for _ in arrays]
    return f"{left},{right}->{out}", arrays, layouts


@SETTINGS
@given(matmul_like())
def test_einsum_random_equations(case):
    equation, arrays, layouts = case
    tensors = [make_layout(a, layout)[0] for a, layout in zip(arrays, layouts)]
    close(fn("einsum")(equation, *tensors), np.einsum(equation, *arrays))


# ----------------------------------------------------------------------------- other contractions
@SETTINGS
@given(st.integers(0, 3), st.data())
def test_tensordot_int_dims(n, data):
    shared = [data.draw(st.integers(0, 3)) for _ in range(n)]
    a_shape = tuple(data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 2)))) + tuple(shared)
    b_shape = tuple(shared) + tuple(data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 2))))
    a, b = np_array(data.draw, a_shape, "float64"), np_array(data.draw, b_shape, "float64")
    close(fn("tensordot")(T(a), T(b), n), np.tensordot(a, b, n))


@pytest.mark.parametrize("dims", [([1, 2], [1, 0]), ([0], [2]), ([], []), ([-1, 0], [0, 2]), ((2,), (0,))])
def test_tensordot_explicit_dims(dims):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 2))
    expected = np.tensordot(a, b, dims)
    close(fn("tensordot")(T(a), T(b), dims), expected)
    close(fn("tensordot")(T(a), T(b), ember.tensor(list(dims), dtype=ember.int64)), expected)


@SETTINGS
@given(st.data())
def test_kron_matches_numpy(data):
    a = np_array(data.draw, tuple(data.draw(st.lists(st.integers(0, 3), max_size=3))), "int32")
    b = np_array(data.draw, tuple(data.draw(st.lists(st.integers(0, 3), max_size=3))), "float32")
    out = method(T(a), "kron", T(b))
    assert out.dtype is ember.float32
    close(out, np.kron(a, b), rtol=1e-6)


@SETTINGS
@given(st.lists(st.integers(1, 3), min_size=0, max_size=2), st.data())
def test_cross_matches_numpy(batch, data):
    pos = data.draw(st.integers(0, len(batch)))
    shape = tuple(batch[:pos]) + (3,) + tuple(batch[pos:])
    a, b = np_array(data.draw, shape, "float64"), np_array(data.draw, shape, "float64")
    t, a = make_layout(a, data.draw(st.sampled_from(["contiguous", "transpose", "reversed"])))
    expected = np.cross(a, b, axis=pos)
    close(fn("cross")(t, T(b), dim=pos), expected)
    close(linalg_cross(t, T(b), dim=pos - len(shape)), expected)
    with pytest.warns(UserWarning):
        first = fn("cross")(t, T(b))
    close(first, np.cross(a, b, axis=shape.index(3)))


def test_cross_broadcasts_and_keeps_int_dtype():
    a, b = np.arange(3).reshape(1, 3), np.arange(12).reshape(4, 3)[::-1]
    out = linalg_cross(T(a), T(b.copy()))
    assert out.dtype is ember.int64
    close(out, np.cross(a, b))


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (0, 3), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_trace(shape, dtype):
    a = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    out = method(T(a), "trace")
    assert out.dtype is (ember.int64 if dtype == "int32" else getattr(ember, dtype))
    close(out, np.trace(a))


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((2, 1, 3, 2), (4, 6, 2)), ((0, 3), (2, 3)), ((2, 0), (3, 0))])
def test_cdist_matches_scipy(p, shapes):
    distance = pytest.importorskip("scipy.spatial.distance")
    rng = np.random.default_rng(2)
    x1, x2 = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    if x1.size and x2.size:  # one pair at distance zero
        x2[..., :1, :] = x1.reshape(-1, x1.shape[-1])[:1]
    batch = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    b1 = np.broadcast_to(x1, batch + x1.shape[-2:]).reshape(math.prod(batch), *x1.shape[-2:])
    b2 = np.broadcast_to(x2, batch + x2.shape[-2:]).reshape(math.prod(batch), *x2.shape[-2:])

    def ref(u, v):
        if p == 0:
            return distance.cdist(u, v, lambda s, t: np.count_nonzero(s - t)) if u.size and v.size else \
                np.zeros((u.shape[0], v.shape[0]))
        if u.shape[1] == 0:
            return np.zeros((u.shape[0], v.shape[0]))
        return distance.cdist(u, v, "chebyshev") if math.isinf(p) else distance.cdist(u, v, "minkowski", p=p)

    expected = np.stack([ref(u, v) for u, v in zip(b1, b2)]).reshape(batch + (x1.shape[-2], x2.shape[-2]))
    close(fn("cdist")(T(x1), T(x2), p), expected, ember.float64)
    close(fn("cdist")(T(x1.astype(np.float32)), T(x2.astype(np.float32)), p), expected, ember.float32, rtol=1e-5,
          atol=1e-5)


@pytest.mark.parametrize("shapes", [((2, 3), (4, 3)), ((3,), (2, 3)), ((2, 3), ()), ((), ()), ((0, 2), (2,))])
def test_inner(shapes):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    close(method(T(a), "inner", T(b)), np.inner(a, b))


# ----------------------------------------------------------------------------- gradients
GRAD_CASES = {
    "einsum_matmul": (lambda x, y: fn("einsum")("ij,jk->ik", x, y), [(2, 3), (3, 4)]),
    "einsum_batch_bcast": (lambda x, y: fn("einsum")("...ij,...jk", x, y), [(2, 1, 2, 3), (3, 3, 2)]),
    "einsum_trace": (lambda x: fn("einsum")("ii", x), [(3, 3)]),
    "einsum_diag_outer": (lambda x, y: fn("einsum")("iij,k->ijk", x, y), [(2, 2, 3), (2,)]),
    "einsum_three": (lambda x, y, z: fn("einsum")("ab,bc,ca->", x, y, z), [(2, 3), (3, 2), (2, 2)]),
    "einsum_size_one": (lambda x, y: fn("einsum")("ij,ij->i", x, y), [(2, 1), (2, 3)]),
    "tensordot": (lambda x, y: fn("tensordot")(x, y, ([0, 2], [1, 0])), [(2, 3, 2), (2, 2, 3)]),
    "inner": (lambda x, y: fn("inner")(x, y), [(2, 3), (4, 3)]),
    "kron": (lambda x, y: fn("kron")(x, y), [(2, 3), (2, 1, 2)]),
    "cross": (lambda x, y: fn("cross")(x, y, dim=0), [(3, 2), (3, 2)]),
    "linalg_cross": (lambda x, y: linalg_cross(x, y), [(2, 3), (1, 3)]),
    "trace": (lambda x: fn("trace")(x), [(3, 4)]),
    "cdist_p2": (lambda x, y: fn("cdist")(x, y), [(3, 2), (4, 2)]),
    "cdist_p1": (lambda x, y: fn("cdist")(x, y, 1.0), [(3, 2), (4, 2)]),
    "cdist_p3": (lambda x, y: fn("cdist")(x, y, 3.0), [(2, 3, 2), (1, 4, 2)]),
    "cdist_p05": (lambda x, y: fn("cdist")(x, y, 0.5), [(3, 2), (4, 2)]),
    "cdist_inf": (lambda x, y: fn("cdist")(x, y, math.inf), [(3, 2), (4, 2)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_and_gradgradcheck(name):
    f, shapes = GRAD_CASES[name]
    inputs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    assert gradcheck(f, inputs)
    assert gradgradcheck(lambda *xs: f(*xs) ** 2 if name.startswith("cdist") else f(*xs), inputs)


def test_cdist_gradient_is_zero_at_zero_distance():
    for p in (0.0, 1.0, 2.0, 3.0, math.inf):
        x = ember.zeros(2, 3, dtype=ember.float64, requires_grad=True)
        y = ember.zeros(4, 3, dtype=ember.float64, requires_grad=True)
        fn("cdist")(x, y, p).sum().backward()
        assert np.array_equal(x.grad.numpy(), np.zeros((2, 3))) and np.array_equal(y.grad.numpy(), np.zeros((4, 3)))


# ----------------------------------------------------------------------------- errors
A, B = np.ones((2, 3)), np.ones((3, 4))
ERRORS = [
    (lambda: fn("einsum")("ijk,jk", T(A), T(B)), RuntimeError, "number of subscripts in the equation \\(3\\)"),
    (lambda: fn("einsum")("ij", T(A), T(B)), RuntimeError, "more operands were provided"),
    (lambda: fn("einsum")("ij,jk,kl", T(A), T(B)), RuntimeError, "fewer operands were provided"),
    (lambda: fn("einsum")("ij,jk->ii", T(A), T(B)), RuntimeError, "appears more than once in the output"),
    (lambda: fn("einsum")("ij,jk->iz", T(A), T(B)), RuntimeError, "output subscript z does not appear"),
    (lambda: fn("einsum")("i1,jk", T(A), T(B)), RuntimeError, "invalid subscript given at index 1"),
    (lambda: fn("einsum")("ij->j->i", T(A)), RuntimeError, "invalid subscript given at index 5"),
    (lambda: fn("einsum")("ij,ik", T(A), T(B)), RuntimeError, "subscript i has size 3 for operand 1"),
    (lambda: fn("einsum")("ii->i", T(A)), RuntimeError, "repeated for operand 0 but the sizes don't match"),
    (lambda: fn("einsum")("......ij->ij", T(A)), RuntimeError, "an ellipsis was already found"),
    (lambda: fn("einsum")("..ij->ij", T(A)), RuntimeError, "not part of any ellipsis"),
    (lambda: fn("einsum")("...ij,...jk", T(np.ones((5, 2, 3))), T(np.ones((4, 3, 4)))), RuntimeError,
     "covered by ellipsis"),
    (lambda: fn("einsum")("ij,jk", T(A), T(B, dtype=ember.float32)), RuntimeError, "expected scalar type"),
    (lambda: fn("einsum")("ij,jk", T(A > 0), T(B > 0)), NotImplementedError, "not implemented for 'Bool'"),
    (lambda: fn("einsum")("ij"), ValueError, "must specify the equation string"),
    (lambda: fn("tensordot")(T(A), T(B), -1), RuntimeError, "dims >= 0"),
    (lambda: fn("tensordot")(T(A), T(B), 3), RuntimeError, "dims < ndim_a or ndim_b"),
    (lambda: fn("tensordot")(T(A), T(B), ([0], [0])), RuntimeError, "contracted dimensions need to match"),
    (lambda: fn("tensordot")(T(A), T(B), ([0, 1], [0])), RuntimeError, "same length"),
    (lambda: fn("tensordot")(T(A), T(B, dtype=ember.float32), 1), RuntimeError, "same dtype"),
    (lambda: fn("tensordot")(T(A), T(B), [1, 0]), TypeError, "tuple of ints"),
    (lambda: fn("cross")(T(np.ones((2, 2))), T(np.ones((2, 2)))), RuntimeError, "no dimension of size 3 in input"),
    (lambda: fn("cross")(T(A), T(A), dim=0), RuntimeError, "dimension 0 must have length 3. Got 2 and 2"),
    (lambda: linalg_cross(T(np.ones(3)), T(np.ones((4, 3)))), RuntimeError, "same number of dimensions"),
    (lambda: linalg_cross(T(np.ones(3)), T(np.ones(3), dtype=ember.float32)), RuntimeError, "expected scalar type"),
    (lambda: linalg_cross(T(np.ones((2, 3))), T(np.ones((4, 3)))), RuntimeError, "must match"),
    (lambda: fn("trace")(T(np.ones((2, 2, 2)))), RuntimeError, "expected a matrix"),
    (lambda: fn("trace")(T(A > 0)), NotImplementedError, "not implemented for 'Bool'"),
    (lambda: fn("cdist")(T(np.ones((2, 3), np.int64)), T(A)), RuntimeError, "floating-point dtypes, X1 got: Long"),
    (lambda: fn("cdist")(T(np.ones(3)), T(A)), RuntimeError, "at least 2D tensors, X1 got: 1D"),
    (lambda: fn("cdist")(T(A), T(B)), RuntimeError, "same number of columns"),
    (lambda: fn("cdist")(T(A), T(A), -1.0), RuntimeError, "non-negative p"),
    (lambda: fn("cdist")(T(np.ones((5, 2, 3))), T(np.ones((4, 2, 3)))), RuntimeError, "must match"),
    (lambda: fn("inner")(T(A), T(np.ones(4))), RuntimeError, "last dimension must match"),
    (lambda: fn("cdist")(T(A), T(A), compute_mode="x"), ValueError, "not a valid value for compute_mode"),
]


@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    call, exc, text = ERRORS[case]
    with pytest.raises(exc, match=text):
        call()


# ----------------------------------------------------------------------------- differential against torch
TORCH_CASES = {
    "einsum_mm": (lambda m, c, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    "einsum_implicit": (lambda m, c, a, b: m.einsum("bA,Ab", a, b), [(2, 3), (3, 2)]),
    "einsum_ellipsis": (lambda m, c, a, b: m.einsum("...ij,...jk->...ik", a, b), [(2, 1, 2, 3), (3, 3, 2)]),
    "einsum_trace": (lambda m, c, a: m.einsum("ii", a), [(3, 3)]),
    "einsum_diag": (lambda m, c, a: m.einsum("iji->ij", a), [(2, 3, 2)]),
    "einsum_list": (lambda m, c, a, b: m.einsum("i,j->ji", [a, b]), [(2,), (3,)]),
    "einsum_bcast": (lambda m, c, a, b: m.einsum("ij,ij->i", a, b), [(2, 1), (2, 3)]),
    "einsum_three": (lambda m, c, a, b, d: m.einsum("ab,bc,cd->da", a, b, d), [(2, 3), (3, 4), (4, 2)]),
    "einsum_sum_all": (lambda m, c, a: m.einsum("ijk->", a), [(2, 3, 4)]),
    "einsum_outer_ell": (lambda m, c, a: m.einsum("i...->...i", a), [(2, 3, 4)]),
    "tensordot_int": (lambda m, c, a, b: m.tensordot(a, b, 2), [(2, 3, 4), (3, 4, 5)]),
    "tensordot_lists": (lambda m, c, a, b: m.tensordot(a, b, ([0, 2], [2, 0])), [(2, 3, 4), (4, 5, 2)]),
    "tensordot_zero": (lambda m, c, a, b: m.tensordot(a, b, 0), [(2,), (3,)]),
    "inner": (lambda m, c, a, b: c(a, "inner", b), [(2, 3), (4, 3)]),
    "kron": (lambda m, c, a, b: c(a, "kron", b), [(2, 3), (3, 1, 2)]),
    "cross_dim": (lambda m, c, a, b: m.cross(a, b, dim=1), [(2, 3), (2, 3)]),
    "cross_bcast": (lambda m, c, a, b: m.cross(a, b, dim=-1), [(4, 3), (1, 3)]),
    "linalg_cross": (lambda m, c, a, b: m.linalg.cross(a, b, dim=0), [(3, 2), (3, 2)]),
    "trace": (lambda m, c, a: c(a, "trace"), [(3, 5)]),
    "cdist_p2": (lambda m, c, a, b: m.cdist(a, b), [(2, 4, 3), (5, 3)]),
    "cdist_p1": (lambda m, c, a, b: m.cdist(a, b, 1.0), [(4, 3), (5, 3)]),
    "cdist_p_frac": (lambda m, c, a, b: m.cdist(a, b, 1.5), [(4, 3), (5, 3)]),
    "cdist_inf": (lambda m, c, a, b: m.cdist(a, b, float("inf")), [(4, 3), (5, 3)]),
    "cdist_p0": (lambda m, c, a, b: m.cdist(a, b, 0.0), [(4, 3), (5, 3)]),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch(name, torch_ref):
    f, shapes = TORCH_CASES[name]
    check_against_torch(torch_ref, f, shapes, rtol=1e-10, atol=1e-10)


# ---- matmul / bmm / addmm dtype checks agreeing with torch (issue 8) -------------------------------------------------
def test_bmm_path_allows_mixed_dtypes_only_with_nothing_to_compute():
    """torch's bmm checks dtypes in its kernel: an empty result or contraction gives zeros in mat2's dtype."""
    L, D = ember.int64, ember.float64
    out = ember.matmul(ember.ones(2, 2, dtype=L), ember.ones(3, 2, 2, 0, dtype=D))
    assert out.shape == (3, 2, 2, 0) and out.dtype is D
    out = ember.bmm(ember.ones(3, 2, 0, dtype=D), ember.ones(3, 0, 2, dtype=L))
    assert out.dtype is L and out.tolist() == [[[0, 0], [0, 0]]] * 3
    with pytest.raises(RuntimeError, match="matmul: expected scalar type Long but found Double"):
        ember.matmul(ember.ones(2, 2, dtype=L), ember.ones(3, 2, 2, 1, dtype=D))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):   # folded into mm
        ember.matmul(ember.ones(0, 2, 2, dtype=L), ember.ones(2, 2, dtype=D))


def test_addmm_needs_one_dtype():
    f, d = ember.ones(2, 2), ember.ones(2, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="addmm: self and mat2 must have the same dtype, but got Double and Float"):
        ember.addmm(d, f, f, beta=0)
    with pytest.raises(RuntimeError, match="addmm: mat1 and mat2 must have the same dtype, but got Double and Float"):
        ember.addmm(f, d, f)
