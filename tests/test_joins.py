"""Joins and reorders against NumPy, dtype promotion, errors, gradients, and PyTorch itself."""
from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck

from conftest import check_against_torch, fn, method, make_layout, np_array, shapes, small_dim

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


def T(a, dtype=None, requires_grad=False):
    return ember.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def rand(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def check(out, expected, dtype=None):
    expected = np.asarray(expected)
    assert tuple(out.shape) == expected.shape, (tuple(out.shape), expected.shape)
    if dtype is not None:
        assert out.dtype is dtype
    np.testing.assert_array_equal(out.numpy(), expected)


# ----------------------------------------------------------------------------- cat and stacks
@st.composite
def cat_case(draw):
    ndim = draw(st.integers(1, 4))
    base = [draw(small_dim) for _ in range(ndim)]
    dim = draw(st.integers(-ndim, ndim - 1))
    count = draw(st.integers(1, 4))
    arrays, layouts = [], []
    for _ in range(count):
        shape = list(base)
        shape[dim] = draw(small_dim)
        arrays.append(np_array(draw, tuple(shape), draw(st.sampled_from(["float32", "float64", "int32", "int64"]))))
        layouts.append(draw(st.sampled_from(["contiguous", "transpose", "reversed", "step2"])))
    return arrays, layouts, dim


@SETTINGS
@given(cat_case())
def test_cat_matches_numpy_with_promotion(case):
    arrays, layouts, dim = case
    tensors = [make_layout(a, layout)[0] for a, layout in zip(arrays, layouts)]
    out = fn("cat")(tensors, dim)
    expected_dtype = functools.reduce(ember.promote_types, (t.dtype for t in tensors))
    check(out, np.concatenate([a.astype(expected_dtype.np) for a in arrays], axis=dim), expected_dtype)


def test_cat_aliases_and_skipped_empty_vectors():
    a = T(np.arange(6.0).reshape(2, 3))
    empty64 = ember.zeros(0, dtype=ember.float64)
    for name in ("cat", "concat", "concatenate"):
        check(fn(name)([empty64, a, ember.zeros(0)], dim=1), np.arange(6.0).reshape(2, 3), ember.float64)
    check(fn("cat")([ember.zeros(0), ember.zeros(0, dtype=ember.int32)]), np.zeros(0), ember.float32)
    out = fn("cat")([a, a])
    out.numpy()[0, 0] = 100.0
    assert a[0, 0].item() == 0.0  # a copy, not a view


@SETTINGS
@given(shapes, st.integers(1, 3), st.data())
def test_stack_matches_numpy(shape, count, data):
    arrays = [np_array(data.draw, shape, "float64") for _ in range(count)]
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    tensors = [make_layout(a, data.draw(st.sampled_from(["contiguous", "reversed", "transpose"])))[0] for a in arrays]
    check(fn("stack")(tensors, dim), np.stack(arrays, axis=dim))


STACKERS = [("hstack", np.hstack), ("vstack", np.vstack), ("row_stack", np.vstack), ("dstack", np.dstack),
            ("column_stack", np.column_stack)]


@pytest.mark.parametrize("name,ref,shape", [(n, r, s) for n, r in STACKERS
                                            for s in [(), (3,), (3, 1), (3, 2, 1), (1, 3, 2, 2)]])
def test_stack_family(name, ref, shape):
    arrays = [np.arange(np.prod(shape, dtype=int) * k, np.prod(shape, dtype=int) * (k + 1)).reshape(shape) * 1.0
              for k in range(3)]
    check(fn(name)([T(a) for a in arrays]), ref(arrays))


def test_atleast():
    for k, ref in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
        for shape in [(), (2,), (2, 3), (2, 3, 4)]:
            a = np.arange(float(np.prod(shape, dtype=int))).reshape(shape)
            check(fn(f"atleast_{k}d")(T(a)), ref(a))


# ----------------------------------------------------------------------------- flips, rolls, rot90
@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 1), st.data())
def test_flip_roll_match_numpy(shape, data):
    a = np_array(data.draw, shape, data.draw(st.sampled_from(["float32", "int64"])))
    t, _ = make_layout(a, data.draw(st.sampled_from(["contiguous", "transpose", "reversed", "step2", "expand"])))
    a = t.numpy().copy()
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    check(fn("flip")(t, dims), np.flip(a, axis=tuple(dims)) if dims else a, t.dtype)
    shifts = [data.draw(st.integers(-7, 7)) for _ in dims]
    if dims:
        check(fn("roll")(t, shifts, dims), np.roll(a, shifts, axis=dims))
    check(fn("roll")(t, 3), np.roll(a, 3))
    if len(shape) >= 2:
        k = data.draw(st.integers(-5, 5))
        check(fn("rot90")(t, k, (0, 1)), np.rot90(a, k, (0, 1)))
        check(fn("rot90")(t, k, (1, 0)), np.rot90(a, k, (1, 0)))
        check(fn("fliplr")(t), np.fliplr(a))
    check(fn("flipud")(t), np.flipud(a))


def test_flip_method_varargs_and_0d():
    a = T(np.arange(6.0).reshape(2, 3))
    check(method(a, "flip", 0, 1), np.flip(a.numpy()))
    check(method(a, "flip", (1,)), np.flip(a.numpy(), 1))
    check(fn("flip")(T(5.0), ()), np.array(5.0))
    check(fn("roll")(T(5.0), 1), np.array(5.0))


# ----------------------------------------------------------------------------- repeats
@SETTINGS
@given(shapes, st.data())
def test_repeat_tile_match_numpy(shape, data):
    a = np_array(data.draw, shape, "float64")
    t, a = make_layout(a, data.draw(st.sampled_from(["contiguous", "transpose", "expand"])))
    extra = data.draw(st.integers(0, 2))
    reps = tuple(data.draw(st.integers(0, 3)) for _ in range(len(shape) + extra))
    check(method(t, "repeat", reps), np.tile(a, reps))   # a tuple: torch's repeat() needs an argument
    dims = tuple(data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, len(shape) + 1))))
    check(fn("tile")(t, dims), np.tile(a, dims))
    if dims:
        check(method(t, "tile", *dims), np.tile(a, dims))


@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 1), st.data())
def test_repeat_interleave_matches_numpy(shape, data):
    a = np_array(data.draw, shape, "float32")
    t = T(a)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    r = data.draw(st.integers(0, 3))
    check(fn("repeat_interleave")(t, r, dim), np.repeat(a, r, axis=dim))
    check(fn("repeat_interleave")(t, r), np.repeat(a, r))
    counts = np.array([data.draw(st.integers(0, 3)) for _ in range(shape[dim])], dtype=np.int64)
    out = method(t, "repeat_interleave", T(counts), dim, output_size=int(counts.sum()))
    check(out, np.repeat(a, counts, axis=dim))


def test_repeat_interleave_counts_only_and_broadcast_repeats():
    check(fn("repeat_interleave")(T(np.array([1, 2, 0, 3], dtype=np.int32))), np.repeat(np.arange(4), [1, 2, 0, 3]),
          ember.int32)
    a = np.arange(6.0).reshape(2, 3)
    check(fn("repeat_interleave")(T(a), T(np.array([2])), 1), np.repeat(a, 2, axis=1))
    check(fn("repeat_interleave")(T(a), T(np.array(2)), 0), np.repeat(a, 2, axis=0))


# ----------------------------------------------------------------------------- triangles
@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 2), st.integers(-4, 4), st.data())
def test_tril_triu_match_numpy(shape, k, data):
    a = np_array(data.draw, shape, data.draw(st.sampled_from(["float64", "int16"])))
    t, a = make_layout(a, data.draw(st.sampled_from(["contiguous", "transpose", "reversed"])))
    check(fn("tril")(t, k), np.tril(a, k), t.dtype)
    check(method(t, "triu", k), np.triu(a, k), t.dtype)
    if a.size == 0:
        return
    c = T(a.copy())
    assert method(c, "tril_", k) is c
    check(c, np.tril(a, k))
    method(c, "triu_", k + 1)
    check(c, np.triu(np.tril(a, k), k + 1))


@pytest.mark.parametrize("row,col,offset", [(3, 4, 1), (4, 3, -1), (0, 0, 0), (1, 5, -3), (5, 5, 0), (3, 3, 7)])
def test_triangle_indices(row, col, offset):
    check(fn("tril_indices")(row, col, offset), np.stack(np.tril_indices(row, offset, col)).reshape(2, -1),
          ember.int64)
    check(fn("triu_indices")(row, col, offset, dtype=ember.int32),
          np.stack(np.triu_indices(row, offset, col)).reshape(2, -1), ember.int32)


# ----------------------------------------------------------------------------- grids, broadcasting
@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 0, 4), (1, 3, 2)])
def test_meshgrid_matches_numpy(indexing, sizes):
    arrays = [np.arange(n, dtype=np.float32) + 10 * k for k, n in enumerate(sizes)]
    outs = fn("meshgrid")(*[T(a) for a in arrays], indexing=indexing)
    for o, e in zip(outs, np.meshgrid(*arrays, indexing=indexing)):
        check(o, e)
    outs_list = fn("meshgrid")([T(a) for a in arrays], indexing=indexing)
    assert len(outs_list) == len(sizes)


def test_meshgrid_default_warns_and_is_ij():
    with pytest.warns(UserWarning):
        a, b = fn("meshgrid")(T([1.0, 2.0]), T([3.0, 4.0, 5.0]))
    assert a.shape == (2, 3) and b.shape == (2, 3)


def test_broadcast_tensors_are_views():
    a, b = T(np.arange(3.0)), T(np.ones((2, 1)))
    x, y = fn("broadcast_tensors")(a, b)
    check(x, np.broadcast_to(np.arange(3.0), (2, 3)))
    check(y, np.ones((2, 3)))
    assert x.stride(0) == 0


@pytest.mark.parametrize("sizes", [(2,), (2, 3), (3, 1, 2), (2, 0)])
def test_cartesian_prod(sizes):
    arrays = [np.arange(n) + 10 * k for k, n in enumerate(sizes)]
    out = fn("cartesian_prod")(*[T(a) for a in arrays])
    expected = np.array(list(itertools.product(*arrays))).reshape(-1, len(sizes)) if len(sizes) > 1 else arrays[0]
    check(out, expected)


# ----------------------------------------------------------------------------- diagonals
@SETTINGS
@given(st.integers(0, 4), st.integers(-4, 4), st.data())
def test_diag_matches_numpy(n, k, data):
    v = np_array(data.draw, (n,), "float64")
    check(fn("diag")(T(v), k), np.diag(v, k))
    m = np_array(data.draw, (n, data.draw(small_dim)), "float64")
    t, m = make_layout(m, data.draw(st.sampled_from(["contiguous", "transpose"])))
    check(method(t, "diag", k), np.diag(m, k))
    check(fn("diagflat")(t, k), np.diagflat(m, k))


@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 1), st.integers(-3, 3), st.data())
def test_diag_embed_inverts_diagonal(shape, offset, data):
    a = np_array(data.draw, shape, "float32")
    nd = len(shape) + 1
    d1, d2 = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2,
                                unique_by=lambda d: d % nd))
    out = fn("diag_embed")(T(a), offset, d1, d2)
    np.testing.assert_array_equal(np.diagonal(out.numpy(), offset, d1, d2), a)
    assert float(np.abs(out.numpy()).sum()) == pytest.approx(float(np.abs(a).sum()), rel=1e-5)


def test_block_diag_matches_scipy():
    linalg = pytest.importorskip("scipy.linalg")
    blocks = [np.array(1), np.arange(2.0), np.arange(6.0).reshape(2, 3), np.ones((0, 2)), np.ones((2, 0))]
    out = fn("block_diag")(*[T(b) for b in blocks])
    check(out, linalg.block_diag(*[np.atleast_2d(b) if b.ndim < 2 else b for b in blocks]), ember.float64)
    assert fn("block_diag")().shape == (1, 0)


# ----------------------------------------------------------------------------- diff
@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 1), st.integers(0, 4), st.data())
def test_diff_matches_numpy(shape, n, data):
    dt = data.draw(st.sampled_from(["float64", "int32", "bool"]))
    a = np_array(data.draw, shape, "int32" if dt == "bool" else dt)
    a = (a > 0) if dt == "bool" else a
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check(method(T(a), "diff", n, dim), np.diff(a, n, axis=dim), T(a).dtype)
    pre_shape = list(shape)
    pre_shape[dim] = 2
    pre = np.ones(pre_shape, dtype=a.dtype)
    expected = np.diff(a, n, axis=dim, prepend=pre, append=pre) if n else a  # both ignore prepend/append for n=0
    check(fn("diff")(T(a), n, dim, prepend=T(pre), append=T(pre)), expected)


@pytest.mark.parametrize("dtype", ["int16", "bool"])
def test_diff_of_huge_order_is_empty_at_once(dtype):
    """An order past the dim's size gives the empty difference without running that many steps (the API sweep
    hung on n=2**62)."""
    a = np.array([2, 3, 5], dtype=dtype)
    check(fn("diff")(T(a), 2**62), np.diff(a, 3), T(a).dtype)


# ----------------------------------------------------------------------------- gradients
GRAD_CASES = {
    "cat": (lambda x, y: fn("cat")([x, ember.zeros(0, dtype=ember.float64), y], 1), [(2, 3), (2, 2)]),
    "cat_mixed_dtype": (lambda x: fn("cat")([x, T(np.ones((1, 3), np.float32))]), [(2, 3)]),
    "stack": (lambda x, y: fn("stack")([x, y], -1), [(2, 3), (2, 3)]),
    "hstack": (lambda x, y: fn("hstack")([x, y]), [(3,), (2,)]),
    "vstack": (lambda x, y: fn("vstack")([x, y]), [(3,), (2, 3)]),
    "dstack": (lambda x, y: fn("dstack")([x, y]), [(2, 3), (2, 3, 2)]),
    "column_stack": (lambda x, y: fn("column_stack")([x, y]), [(3,), (3, 2)]),
    "flip": (lambda x: fn("flip")(x, (0, 2)), [(2, 3, 2)]),
    "fliplr": (lambda x: fn("fliplr")(x), [(2, 3)]),
    "flipud": (lambda x: fn("flipud")(x), [(2, 3)]),
    "roll": (lambda x: fn("roll")(x, (1, -2), (0, 1)), [(3, 4)]),
    "roll_flat": (lambda x: fn("roll")(x, 5), [(3, 4)]),
    "rot90": (lambda x: fn("rot90")(x, 1, (1, 2)), [(2, 3, 4)]),
    "rot90_k3": (lambda x: fn("rot90")(x, -1), [(2, 3)]),
    "repeat": (lambda x: method(x, "repeat", 2, 1, 3), [(2, 3)]),
    "tile": (lambda x: fn("tile")(x, (2,)), [(2, 3)]),
    "repeat_interleave": (lambda x: fn("repeat_interleave")(x, 2, 0), [(2, 3)]),
    "repeat_interleave_tensor": (lambda x: fn("repeat_interleave")(x, T(np.array([2, 0, 3])), 1), [(2, 3)]),
    "repeat_interleave_flat": (lambda x: fn("repeat_interleave")(x, 3), [(2, 2)]),
    "tril": (lambda x: fn("tril")(x, -1), [(2, 3, 3)]),
    "triu": (lambda x: fn("triu")(x, 1), [(3, 4)]),
    "meshgrid": (lambda x, y: fn("meshgrid")(x, y, indexing="xy"), [(2,), (3,)]),
    "broadcast_tensors": (lambda x, y: fn("broadcast_tensors")(x, y), [(3,), (2, 1)]),
    "diag_1d": (lambda x: fn("diag")(x, 1), [(3,)]),
    "diag_2d": (lambda x: fn("diag")(x, -1), [(3, 4)]),
    "diag_embed": (lambda x: fn("diag_embed")(x, 1, 0, 2), [(2, 3)]),
    "diagflat": (lambda x: fn("diagflat")(x), [(2, 2)]),
    "block_diag": (lambda x, y: fn("block_diag")(x, y), [(2, 3), (2,)]),
    "cartesian_prod": (lambda x, y: fn("cartesian_prod")(x, y), [(2,), (3,)]),
    "diff": (lambda x, y: fn("diff")(x, 2, 0, append=y), [(3, 2), (1, 2)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_and_gradgradcheck(name):
    f, in_shapes = GRAD_CASES[name]
    inputs = [rand(*s, seed=i) for i, s in enumerate(in_shapes)]

    def squared(*xs):  # squaring makes the second derivative non-trivial
        out = f(*xs)
        return tuple(o * o for o in out) if isinstance(out, tuple) else out * out

    assert gradcheck(f, inputs)
    assert gradgradcheck(squared, inputs)


def test_cat_gradient_keeps_input_dtypes():
    x = ember.ones(2, dtype=ember.float32, requires_grad=True)
    y = ember.ones(3, dtype=ember.float64, requires_grad=True)
    out = fn("cat")([x, y])
    assert out.dtype is ember.float64
    out.sum().backward()
    assert x.grad.dtype is ember.float32 and y.grad.dtype is ember.float64


def test_tril_inplace_gradient():
    x = rand(3, 3)
    y = x * 1
    method(y, "tril_")
    y.sum().backward()
    check(x.grad, np.tril(np.ones((3, 3))))


# ----------------------------------------------------------------------------- errors
A = np.ones((2, 3))
ERRORS = [
    (lambda: fn("cat")([]), ValueError, "expected a non-empty list"),
    (lambda: fn("cat")(T(A)), TypeError, "must be tuple of Tensors"),
    (lambda: fn("cat")([T(1.0), T(2.0)]), RuntimeError, "zero-dimensional tensor"),
    (lambda: fn("cat")([T(A), T(np.ones((2, 4)))], 0), RuntimeError, "Sizes of tensors must match except in dim"),
    (lambda: fn("cat")([T(A), T(np.ones((2, 3, 1)))]), RuntimeError, "same number of dimensions"),
    (lambda: fn("cat")([T(A), T(A)], 2), IndexError, "Dimension out of range"),
    (lambda: fn("stack")([]), RuntimeError, "non-empty TensorList"),
    (lambda: fn("stack")([T(A), T(np.ones((2, 4)))]), RuntimeError, "equal size"),
    (lambda: fn("hstack")([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda: fn("flip")(T(A), (0, -2)), RuntimeError, "appears multiple times"),
    (lambda: fn("flip")(T(A), 0), TypeError, "tuple of ints"),
    (lambda: fn("fliplr")(T([1.0])), RuntimeError, ">= 2-d"),
    (lambda: fn("flipud")(T(1.0)), RuntimeError, ">= 1-d"),
    (lambda: fn("roll")(T(A), ()), RuntimeError, "`shifts` required"),
    (lambda: fn("roll")(T(A), (1, 2), (0,)), RuntimeError, "shifts and dimensions must align"),
    (lambda: fn("roll")(T(A), (1, 2)), RuntimeError, "shifts and dimensions must align"),
    (lambda: fn("roll")(T(1.0), 1, 0), IndexError, "no dimensions"),
    (lambda: fn("rot90")(T(A), 1, (0, 1, 2)), RuntimeError, "rotation dims == 2"),
    (lambda: fn("rot90")(T([1.0]), 1, (0, 0)), RuntimeError, "total dims >= 2"),
    (lambda: fn("rot90")(T(A), 1, (0, -2)), RuntimeError, "rotation dims to be different"),
    (lambda: method(T(A), "repeat", 2), RuntimeError, "can not be smaller"),
    (lambda: method(T(A), "repeat", -1, 2), RuntimeError, "negative dimension"),
    (lambda: fn("repeat_interleave")(T(A), -1), RuntimeError, "Repeats must be non-negative"),
    (lambda: fn("repeat_interleave")(T(A), T([1, 2]), 1), RuntimeError, "same size as input along dim"),
    (lambda: fn("repeat_interleave")(T(A), T([[1, 2]]), 1), RuntimeError, "0-dim or 1-dim"),
    (lambda: fn("repeat_interleave")(T(A), T([1, -2, 1]), 1), RuntimeError, "can not be negative"),
    (lambda: fn("repeat_interleave")(T(A), T([1.0, 2.0, 1.0]), 1), NotImplementedError, "not implemented"),
    (lambda: fn("repeat_interleave")(T(A), 2, 1, output_size=3), RuntimeError, "Invalid output_size"),
    (lambda: fn("tril")(T([1.0])), RuntimeError, "at least 2 dimensions"),
    (lambda: fn("tril_indices")(-1, 3), RuntimeError, "row must be non-negative"),
    (lambda: fn("meshgrid")(T(A), T([1.0]), indexing="ij"), RuntimeError, "0D or 1D"),
    (lambda: fn("meshgrid")(T([1.0]), T([1]), indexing="ij"), RuntimeError, "same dtype"),
    (lambda: fn("meshgrid")(T([1.0]), indexing="xx"), RuntimeError, "indexing must be one of"),
    (lambda: fn("broadcast_tensors")(T(A), T(np.ones(4))), RuntimeError, "must match"),
    (lambda: fn("diag")(T(np.ones((2, 2, 2)))), RuntimeError, "Supports 1D or 2D"),
    (lambda: fn("diag_embed")(T(A), 0, 1, 1), RuntimeError, "cannot be identical"),
    (lambda: fn("diag_embed")(T(A), 0, 0, 3), IndexError, "Dimension out of range"),
    (lambda: fn("block_diag")(T(np.ones((2, 2, 2)))), RuntimeError, "2 or fewer dimensions"),
    (lambda: fn("cartesian_prod")(T(A)), RuntimeError, "Expect a 1D vector"),
    (lambda: fn("diff")(T(1.0)), RuntimeError, "at least one-dimensional"),
    (lambda: fn("diff")(T(A), -1), RuntimeError, "order must be non-negative"),
    (lambda: fn("diff")(T(A), 1, 0, prepend=T([1.0, 1.0, 1.0])), RuntimeError, "same dimension as input"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    call, exc, text = ERRORS[case]
    with pytest.raises(exc, match=text.replace("(", r"\(").replace(")", r"\)")):
        call()


# ----------------------------------------------------------------------------- differential against torch
TORCH_CASES = {
    "cat_promote": (lambda m, c, a, b: m.cat([a, b.double()], 1), [(2, 3), (2, 2)]),
    "cat_int_float": (lambda m, c, a, b: m.cat([a.int(), b]), [(2, 3), (1, 3)]),
    "cat_bool_uint8": (lambda m, c, a, b: m.cat([a > 0, (b > 0).byte()]), [(2, 3), (1, 3)]),
    "cat_skip": (lambda m, c, a, b: m.cat([m.zeros(0, dtype=m.float64), a, b], 1), [(2, 3), (2, 1)]),
    "stack": (lambda m, c, a, b: m.stack([a, b], 1), [(2, 3), (2, 3)]),
    "hstack": (lambda m, c, a, b: m.hstack([a, b]), [(3,), (4,)]),
    "vstack": (lambda m, c, a, b: m.vstack([a, b]), [(3,), (2, 3)]),
    "dstack": (lambda m, c, a, b: m.dstack([a, b]), [(2, 3), (2, 3)]),
    "column_stack": (lambda m, c, a, b: m.column_stack([a, b]), [(3,), (3, 2)]),
    "flip": (lambda m, c, a: m.flip(a, (0, -1)), [(2, 3, 4)]),
    "flip_method": (lambda m, c, a: c(a, "flip", 1, 2), [(2, 3, 4)]),
    "roll": (lambda m, c, a: m.roll(a, (-1, 5), (2, 0)), [(2, 3, 4)]),
    "roll_flat": (lambda m, c, a: c(a, "roll", -7), [(2, 3, 4)]),
    "rot90": (lambda m, c, a: m.rot90(a, 3, (2, 0)), [(2, 3, 4)]),
    "repeat": (lambda m, c, a: c(a, "repeat", 2, 1, 3, 2), [(3, 1, 2)]),
    "tile": (lambda m, c, a: c(a, "tile", (3,)), [(2, 2)]),
    "repeat_interleave": (lambda m, c, a: c(a, "repeat_interleave", m.tensor([3, 0, 1]), dim=-1), [(2, 3)]),
    "tril": (lambda m, c, a: m.tril(a, -1), [(2, 4, 3)]),
    "triu": (lambda m, c, a: c(a, "triu", 2), [(4, 5)]),
    "diag_embed": (lambda m, c, a: m.diag_embed(a, -1, 2, 0), [(2, 3)]),
    "diag": (lambda m, c, a: c(a, "diag", 2), [(3, 4)]),
    "diagflat": (lambda m, c, a: m.diagflat(a, -1), [(2, 2)]),
    "block_diag": (lambda m, c, a, b: m.block_diag(a, b.int()), [(2, 3), (1, 2)]),
    "cartesian_prod": (lambda m, c, a, b: m.cartesian_prod(a, b), [(2,), (3,)]),
    "diff": (lambda m, c, a, b: c(a, "diff", 2, 0, prepend=b), [(3, 2), (2, 2)]),
    "meshgrid_xy": (lambda m, c, a, b: m.meshgrid(a, b, indexing="xy")[0], [(2,), (3,)]),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch(name, torch_ref):
    f, shapes = TORCH_CASES[name]
    check_against_torch(torch_ref, f, shapes, rtol=1e-12)


def test_stack_checks_the_dim_before_the_shapes():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got -4"):
        ember.stack([ember.ones(2), ember.ones(0, 2)], -4)


@pytest.mark.parametrize("shape, shifts, dims", [((1, 0, 3), -4, 3), ((1, 0, 3), -4, -4), ((3, 0, 4, 1), -5, -5),
                                                 ((0, 2), (1, 1), (0, 9)), ((0,), 2, None), ((2, 0), 1, 1)])
def test_roll_of_an_empty_tensor_ignores_dims(torch_ref, shape, shifts, dims):
    """torch copies an empty tensor before looking at the dims (found by the long fuzz run, issue 8)."""
    ours = ember.roll(ember.zeros(shape, dtype=ember.int64), shifts, dims)
    theirs = torch_ref.roll(torch_ref.zeros(shape, dtype=torch_ref.int64), shifts, dims)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype is ember.int64
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        ember.roll(ember.zeros(shape), (1, 1), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.roll(ember.zeros(2, 3), 1, 5)
