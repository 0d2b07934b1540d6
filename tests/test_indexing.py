"""Advanced indexing and the index/gather/scatter/mask ops: values vs NumPy, gradients, errors, and torch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.tensor import indexing as M

from conftest import fn, method, get_torch

SETTINGS = dict(max_examples=25, deadline=None, derandomize=True)


def T(a, **kw):
    return ember.tensor(np.asarray(a), **kw)


def f64(shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.standard_normal(shape), dtype=ember.float64, requires_grad=requires_grad)


def scalar_items():
    bound = st.integers(-3, 3) | st.none()
    return st.one_of(st.just(slice(None)), st.builds(slice, bound, bound, st.integers(1, 3) | st.none()))


@st.composite
def advanced_keys(draw, max_dims=3):
    """(shape, key) with slices, index arrays (NumPy/list/tensor, negatives, duplicates, empty), masks and None."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=max_dims)))
    key, dim, arrays = [], 0, 0
    index_shape = draw(st.sampled_from([(0,), (1,), (2,), (3,), (2, 2), ()]))
    while dim < len(shape):
        kind = draw(st.sampled_from(["slice", "index", "mask", "none", "stop"]))
        n = shape[dim]
        if kind == "stop":
            break
        if kind == "none":
            key.append(None)
            continue
        if kind == "slice" or (kind == "index" and n == 0 and index_shape != (0,)):
            key.append(draw(scalar_items()))
        elif kind == "index":
            seed = draw(st.integers(0, 1000))
            idx = np.random.default_rng(seed).integers(-n, n, size=index_shape) if n else np.zeros(index_shape, int)
            form = draw(st.sampled_from(["numpy", "tensor", "list"]))
            key.append(idx if form == "numpy" else T(idx) if form == "tensor" else idx.tolist())
            arrays += 1
        else:
            seed = draw(st.integers(0, 1000))
            mask = np.random.default_rng(seed).random(n) < 0.5
            # a mask makes an index array of its own length: keep it broadcastable with the others
            if arrays and (index_shape != (int(mask.sum()),) and index_shape not in ((), (1,))):
                key.append(slice(None))
            else:
                key.append(T(mask) if draw(st.booleans()) else mask.tolist())
                arrays += 1
        dim += 1
    if not arrays:
        key.append([0] if shape[0] and len(key) == 0 else Ellipsis)
    return shape, tuple(key)


def _np_list(k: list) -> np.ndarray:
    # torch reads an empty list as an empty integer index; NumPy would make it a float array
    return np.asarray(k) if k else np.zeros(0, np.int64)


def np_key(key):
    return tuple(np.asarray(k.numpy()) if isinstance(k, ember.Tensor) else _np_list(k) if isinstance(k, list) else k
                 for k in key)


# ----------------------------------------------------------------------------- getitem / setitem values
@given(advanced_keys(), st.integers(0, 1000))
@settings(**SETTINGS)
def test_getitem_matches_numpy(case, seed):
    shape, key = case
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    try:
        expected = a[np_key(key)]
    except IndexError:
        with pytest.raises(IndexError):
            M.getitem(ember.tensor(a), key)
        return
    out = M.getitem(ember.tensor(a), key)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


@given(advanced_keys(), st.integers(0, 1000), st.sampled_from(["scalar", "full", "row"]))
@settings(**SETTINGS)
def test_setitem_matches_numpy(case, seed, value_kind):
    shape, key = case
    a = np.zeros(shape, np.int64)  # NumPy gives empty random arrays zero strides, which in-place ops reject
    a[...] = np.random.default_rng(seed).integers(-9, 9, shape)
    try:
        target_shape = a[np_key(key)].shape
    except IndexError:
        return
    if value_kind == "scalar":
        value, ember_value = 7, 7.9  # a float into an int tensor is cast (truncated) like torch
    else:
        vshape = target_shape if value_kind == "full" else target_shape[-1:]
        value = np.arange(int(np.prod(vshape)), dtype=np.int64).reshape(vshape) + 3
        ember_value = T(value)  # in the tensor's dtype: torch's index_put takes no other
    expected = a.copy()
    expected[np_key(key)] = value
    x = ember.tensor(a.copy())
    M.setitem(x, key, ember_value)
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x.dtype is ember.int64


@pytest.mark.skipif(ember.Tensor.__getitem__ is not M.getitem, reason="Tensor.__getitem__ not bound to indexing yet")
def test_tensor_subscript_is_wired():
    x = ember.arange(12.0).reshape(3, 4)
    assert x[[0, 2], 1].numpy().tolist() == [1.0, 9.0]
    x[x > 5] = 0.0
    assert x.numpy().max() == 5.0


def test_getitem_basic_keys_stay_views():
    x = ember.zeros(3, 4)
    y = M.getitem(x, (slice(None), 1))
    y.fill_(5.0)
    assert x.numpy()[:, 1].tolist() == [5.0, 5.0, 5.0]
    z = M.getitem(x, (T(1), slice(None)))  # a 0-d integer tensor selects, as torch's does
    z.fill_(2.0)
    assert x.numpy()[1].tolist() == [2.0] * 4


def test_advanced_getitem_copies():
    x = ember.zeros(3, 4)
    y = M.getitem(x, [0, 1])
    y.fill_(1.0)
    assert x.numpy().sum() == 0


def test_setitem_through_view_updates_base():
    base = ember.zeros(3, 4)
    M.setitem(base, (1, [0, 3]), ember.tensor([1.0, 2.0]))
    M.setitem(base, (slice(1, None), T([True, False, False, True])), 9.0)
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0, 0], [9, 0, 0, 9], [9, 0, 0, 9]])


def test_setitem_strips_leading_ones_and_errors():
    x = ember.zeros(2, 3)
    M.setitem(x, T([0, 0]), ember.ones(1, 1, 3))
    assert x.numpy()[0].tolist() == [1.0] * 3
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        M.setitem(x, ([0, 1], [0, 1]), ember.ones(3))


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("key, error, message", [
    ([5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), [-5]), IndexError, "index -5 is out of bounds for dimension 0 with size 4"),
    ((T([0, 1]), slice(None), [7]), IndexError, "index 7 is out of bounds for dimension 1 with size 5"),
    ((0, [9]), IndexError, "out of bounds for dimension 0 with size 4"),
    (ember.tensor([0.5]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (ember.tensor([1], dtype=ember.int16), IndexError, "tensors used as indices must be long, int, byte or bool"),
    (([0, 1], [0, 1, 2]), IndexError, "shape mismatch: indexing tensors could not be broadcast together"),
    ([True, False], IndexError, "The shape of the mask \\[2\\] at index 0 does not match"),
    ((slice(None), slice(None), slice(None), [0]), IndexError, "too many indices for tensor of dimension 3"),
    ((Ellipsis, Ellipsis, [0]), IndexError, "single ellipsis"),
    ((1.5, [0]), IndexError, "only integers, slices"),
])
def test_getitem_errors(key, error, message):
    x = ember.zeros(3, 4, 5)
    with pytest.raises(error, match=message):
        M.getitem(x, key)
    with pytest.raises(error, match=message):
        M.setitem(x, key, 1.0)


def test_op_errors():
    x = ember.zeros(3, 4)
    i = T([[0, 1]])
    cases = [
        (lambda: fn("gather")(x, 0, T([[5]])), RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
        (lambda: fn("gather")(x, 0, T([[-1]])), RuntimeError, "index -1 is out of bounds"),
        (lambda: fn("gather")(x, 0, T([0])), RuntimeError, "same number of dimensions as input"),
        (lambda: fn("gather")(x, 0, T([[0.0]])), RuntimeError, "Expected dtype int32/int64 for index"),
        (lambda: fn("gather")(x, 0, T([[0] * 5])), RuntimeError, "Size does not match at dimension 1"),
        (lambda: fn("gather")(x, 2, i), IndexError, "Dimension out of range"),
        (lambda: fn("scatter")(x, 0, i, ember.ones(1, 1)), RuntimeError, "to be no larger size than src"),
        (lambda: fn("scatter")(x, 0, i, ember.ones(1, 2, dtype=ember.float64)), RuntimeError, "self.dtype"),
        (lambda: fn("scatter")(x, 0, i, ember.ones(1, 2), reduce="mean"), RuntimeError, "either add or multiply"),
        (lambda: fn("scatter_reduce")(x, 0, i, ember.ones(1, 2), "foo"), RuntimeError, "sum, prod, mean, amax"),
        (lambda: fn("scatter_add")(x, 0, T([[7]]), ember.ones(1, 1)), RuntimeError, "index 7 is out of bounds"),
        (lambda: fn("index_select")(x, 0, T([[0]])), IndexError, "Index is supposed to be a vector"),
        (lambda: fn("index_select")(x, 0, T([3])), IndexError, "index out of range in self"),
        (lambda: fn("index_select")(x, 0, T([1.0])), RuntimeError, "int32 or int64"),
        (lambda: fn("index_add")(x, 0, T([0]), ember.ones(1, 4, dtype=ember.float64)), RuntimeError, "same scalar"),
        (lambda: fn("index_add")(x, 0, T([0]), ember.ones(2, 4)), RuntimeError, "Number of indices \\(1\\)"),
        (lambda: fn("index_add")(x, 0, T([0]), ember.ones(1, 5)), RuntimeError, "source tensor shape must match"),
        (lambda: fn("index_add")(x, 0, T([3]), ember.ones(1, 4)), IndexError, "index 3 is out of bounds"),
        (lambda: fn("index_copy")(x, 0, T([5]), ember.ones(1, 4)), IndexError, "index_copy_\\(\\): index 5"),
        (lambda: fn("index_fill")(x, 0, T([5]), 1), IndexError, "index 5 is out of bounds"),
        (lambda: fn("index_fill")(x, 0, T([1]), ember.ones(1)), RuntimeError, "0-dimensional value tensor"),
        (lambda: fn("index_put")(x, (T([0]),), ember.ones(4, dtype=ember.float64)), RuntimeError, "dtypes match"),
        (lambda: fn("index_put")(x, (T([0]),), ember.ones(3)), RuntimeError, "shape mismatch"),
        (lambda: fn("masked_fill")(x, ember.ones(4, dtype=ember.uint8), 1), RuntimeError, "only supports boolean"),
        (lambda: fn("masked_fill")(x, ember.ones(4, dtype=ember.bool), ember.ones(1)), RuntimeError, "0-dimensional"),
        (lambda: fn("masked_scatter")(x, ember.ones(4, dtype=ember.bool), ember.ones(3)), RuntimeError, "source <"),
        (lambda: fn("masked_select")(x, ember.ones(4, dtype=ember.uint8)), RuntimeError, "expected BoolTensor"),
        (lambda: fn("take")(x, T([12])), IndexError, "tried to access index 12 on a tensor of 12 elements"),
        (lambda: fn("take")(x, T([1], dtype=ember.int32)), RuntimeError, "Expected a long tensor for index"),
        (lambda: fn("put")(x, T([1, 2]), ember.ones(3)), IndexError, "same number of elements"),
        (lambda: fn("put")(x, T([-13]), ember.ones(1)), IndexError, "tried to access index -13"),
        (lambda: fn("take_along_dim")(x, T([[[0]]]), 1), RuntimeError, "same number of dimensions"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_inplace_on_leaf_requiring_grad_raises():
    x = f64((3,))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        M.setitem(x, [0], 1.0)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        method(x, "index_fill_", 0, T([0]), 1.0)


# ----------------------------------------------------------------------------- gather / scatter family vs NumPy
def _along(index: np.ndarray, dim: int):
    """Yield (position in index, position in the target) pairs along ``dim``."""
    for p in np.ndindex(*index.shape):
        q = list(p)
        q[dim] = index[p]
        yield p, tuple(q)


def ref_gather(a, dim, index):
    out = np.empty(index.shape, a.dtype)
    for p, q in _along(index, dim):
        out[p] = a[q]
    return out


def ref_scatter(a, dim, index, src, reduce, include_self=True):
    out = a.astype(np.float64).copy()
    hits: dict = {}
    for p, q in _along(index, dim):
        hits.setdefault(q, []).append(src[p])
    for q, vals in hits.items():
        vals = ([out[q]] if include_self else []) + list(vals)
        out[q] = {"assign": lambda v: v[-1], "sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max,
                  "amin": np.min}[reduce](vals)
    return out


@st.composite
def along_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(0, len(shape) - 1))
    ishape = tuple(draw(st.integers(0 if k == dim else 1, n if k != dim else 5)) for k, n in enumerate(shape))
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    index = rng.integers(0, shape[dim], ishape)
    src_shape = tuple(n + draw(st.integers(0, 1)) for n in ishape)
    return shape, dim, index, rng, src_shape


@given(along_cases(), st.sampled_from(["float32", "float64", "int64", "int32"]))
@settings(**SETTINGS)
def test_gather_matches_reference(case, dtype):
    shape, dim, index, rng, _ = case
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    out = fn("gather")(ember.tensor(a), dim, T(index))
    np.testing.assert_array_equal(out.numpy(), ref_gather(a, dim, index))
    assert out.dtype is ember.tensor(a).dtype


@given(along_cases(), st.sampled_from(["assign", "sum", "prod", "mean", "amax", "amin"]), st.booleans(),
       st.sampled_from(["float32", "float64", "int64"]))
@settings(**SETTINGS)
def test_scatter_reduce_matches_reference(case, reduce, include_self, dtype):
    shape, dim, index, rng, src_shape = case
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    src = (rng.standard_normal(src_shape) * 4).astype(dtype)
    x, s, i = ember.tensor(a), ember.tensor(src), T(index)
    if reduce == "assign":
        out = fn("scatter")(x, dim, i, s)  # duplicates: the last write wins, in the reference too
        expected = ref_scatter(a, dim, index, src, "assign")
    else:
        out = fn("scatter_reduce")(x, dim, i, s, reduce, include_self=include_self)
        expected = ref_scatter(a, dim, index, src, reduce, include_self)
        if reduce == "mean" and dtype == "int64":
            expected = np.floor(expected)
    assert out.dtype is x.dtype
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected.astype(a.dtype), rtol=1e-5, atol=1e-5)


def test_scatter_add_value_and_legacy_reduce():
    x = ember.zeros(3, 4)
    i = T([[0, 1, 0], [2, 2, 2]])
    out = fn("scatter_add")(x, 0, i, ember.ones(2, 3))
    np.testing.assert_array_equal(out.numpy(), ref_scatter(np.zeros((3, 4)), 0, i.numpy(), np.ones((2, 3)), "sum"))
    v = fn("scatter")(ember.ones(3, 4), 1, i, value=2.5, reduce="multiply")
    np.testing.assert_array_equal(v.numpy(), ref_scatter(np.ones((3, 4)), 1, i.numpy(), np.full((2, 3), 2.5), "prod"))
    w = fn("scatter")(ember.zeros(3, 4), 1, i, 1.5)
    assert w.numpy()[0].tolist() == [1.5, 1.5, 0, 0]
    assert fn("scatter")(ember.zeros(3, 4), 1, i, ember.ones(2, 3), reduce="add").numpy()[1, 2] == 3.0


def test_scatter_reduce_nan_propagates_and_bool_and_float16():
    out = fn("scatter_reduce")(ember.zeros(3), 0, T([0, 0]), ember.tensor([float("nan"), 1.0]), "amax")
    assert np.isnan(out.numpy()[0])
    h = fn("scatter_add")(ember.zeros(3, dtype=ember.float16), 0, T([1, 1]), ember.ones(2, dtype=ember.float16))
    assert h.dtype is ember.float16 and h.numpy().tolist() == [0, 2, 0]
    b = fn("scatter_add")(ember.zeros(3, dtype=ember.bool), 0, T([2]), ember.ones(1, dtype=ember.bool))
    assert b.numpy().tolist() == [False, False, True]


def test_zero_dim_gather_scatter():
    x = ember.tensor(2.0)
    assert fn("gather")(x, 0, T(0)).shape == ()
    assert fn("gather")(x, 0, T([0, 0])).numpy().tolist() == [2.0, 2.0]
    assert fn("gather")(ember.tensor([2.0, 3.0]), 0, T(1)).item() == 3.0
    assert fn("scatter_add")(x, 0, T([0, 0]), ember.ones(2)).item() == 4.0
    assert fn("gather")(ember.zeros(3, 4), 0, ember.zeros(0, 4, dtype=ember.int64)).shape == (0, 4)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.integers(0, 1000), st.integers(0, 4))
@settings(**SETTINGS)
def test_index_ops_match_numpy(shape, seed, n):
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(0, len(shape)))
    a = rng.standard_normal(shape)
    index = rng.integers(-shape[dim], shape[dim], n)
    pos = np.where(index < 0, index + shape[dim], index)
    src_shape = shape[:dim] + (n,) + shape[dim + 1:]
    src = rng.standard_normal(src_shape)
    x, i, s = ember.tensor(a), T(index), ember.tensor(src)
    # torch's index_select and index_add take no negative index
    np.testing.assert_array_equal(fn("index_select")(x, dim, T(pos)).numpy(), np.take(a, pos, axis=dim))
    expected = a.copy()
    np.add.at(expected, (slice(None),) * dim + (pos,), 2 * src)
    np.testing.assert_allclose(fn("index_add")(x, dim, T(pos), s, alpha=2).numpy(), expected, rtol=1e-12)
    unique = np.unique(pos)
    first = np.array([np.flatnonzero(pos == u)[-1] for u in unique], dtype=np.int64)
    expected = a.copy()
    expected[(slice(None),) * dim + (unique,)] = np.take(src, first, axis=dim)
    np.testing.assert_array_equal(fn("index_copy")(x, dim, T(pos), s).numpy(), expected)
    expected = a.copy()
    expected[(slice(None),) * dim + (pos,)] = -3.5
    np.testing.assert_array_equal(fn("index_fill")(x, dim, i, -3.5).numpy(), expected)
    np.testing.assert_array_equal(fn("index_fill")(x, dim, i, ember.tensor(-3.5)).numpy(), expected)


@given(st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple), st.integers(0, 1000))
@settings(**SETTINGS)
def test_mask_ops_match_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    mask = rng.random(shape[-1:] if shape else ()) < 0.5  # broadcast over the leading dims
    x, m = ember.tensor(a), ember.tensor(mask)
    full = np.broadcast_to(mask, shape)
    np.testing.assert_array_equal(fn("masked_fill")(x, m, 7.0).numpy(), np.where(full, 7.0, a))
    np.testing.assert_array_equal(fn("masked_select")(x, m).numpy(), a[full])
    k = int(full.sum())
    source = rng.standard_normal(k + 2)
    expected = a.copy()
    expected[full] = source[:k]
    np.testing.assert_array_equal(fn("masked_scatter")(x, m, ember.tensor(source)).numpy(), expected)
    ints = ember.tensor(a.astype(np.int64))
    assert fn("masked_fill")(ints, m, 2.7).dtype is ember.int64
    np.testing.assert_array_equal(fn("nonzero")(m).numpy(), np.argwhere(mask))
    np.testing.assert_array_equal(fn("argwhere")(x).numpy(), np.argwhere(a))
    for got, want in zip(fn("nonzero")(x, as_tuple=True), np.nonzero(a) if a.ndim else (np.flatnonzero(a),)):
        np.testing.assert_array_equal(got.numpy(), want)
    assert len(M.where(x)) == max(a.ndim, 1)


def test_masked_ops_broadcast_result_shape():
    x = ember.zeros(3, 4)
    m = ember.ones(2, 3, 4, dtype=ember.bool)
    assert fn("masked_fill")(x, m, 1.0).shape == (2, 3, 4)
    assert fn("masked_select")(x, m).shape == (24,)
    assert fn("masked_scatter")(x, m, ember.arange(30.0)).shape == (2, 3, 4)
    assert fn("nonzero")(ember.tensor(3)).shape == (1, 0)
    assert fn("nonzero")(ember.tensor(0)).shape == (0, 0)
    assert [t.numpy().tolist() for t in M.where(ember.tensor([1.0, 0.0, 2.0]))] == [[0, 2]]


@given(st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple), st.integers(0, 1000), st.booleans())
@settings(**SETTINGS)
def test_take_put_match_numpy(shape, seed, accumulate):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    n = a.size
    index = rng.integers(-n, n, (2, 3)) if n else np.zeros((0,), np.int64)
    x = ember.tensor(a)
    np.testing.assert_array_equal(fn("take")(x, T(index)).numpy(), a.reshape(-1)[index])
    src = rng.standard_normal(index.shape)
    expected = a.copy().reshape(-1)
    flat = np.where(index < 0, index + n, index).reshape(-1)
    if accumulate:
        np.add.at(expected, flat, src.reshape(-1))
    else:
        expected[flat] = src.reshape(-1)
    out = fn("put")(x, T(index), ember.tensor(src), accumulate=accumulate)
    np.testing.assert_allclose(out.numpy(), expected.reshape(shape), rtol=1e-12)


def test_take_along_dim_and_index_put():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    idx = rng.integers(0, 4, (1, 2))
    np.testing.assert_array_equal(fn("take_along_dim")(ember.tensor(a), T(idx), 1).numpy(),
                                  np.take_along_axis(a, np.broadcast_to(idx, (3, 2)), 1))
    np.testing.assert_array_equal(fn("take_along_dim")(ember.tensor(a), T(idx)).numpy(), a.reshape(-1)[idx.reshape(-1)])
    out = fn("index_put")(ember.tensor(a), (T([0, 0, 2]), T([1, 1, 3])), T([1.0, 2.0, 3.0]),
                          accumulate=True)
    expected = a.copy()
    np.add.at(expected, ([0, 0, 2], [1, 1, 3]), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    masked = fn("index_put")(ember.tensor(a), (ember.tensor(a > 0),), ember.tensor(0.0, dtype=ember.float64))
    np.testing.assert_array_equal(masked.numpy(), np.where(a > 0, 0.0, a))


def test_inplace_variants_modify_self():
    x = ember.zeros(3, 4)
    i = T([[0, 1, 0]])
    assert method(x, "scatter_add_", 0, i, ember.ones(1, 3)) is x
    method(x, "scatter_", 1, T([[3]]), 5.0)
    method(x, "scatter_reduce_", 0, T([[2]]), ember.full((1, 1), 4.0), "amax")
    method(x, "index_add_", 1, T([1, 1]), ember.ones(3, 2))
    method(x, "index_copy_", 0, T([2]), ember.full((1, 4), -1.0))
    method(x, "index_fill_", 1, T([2]), 8.0)
    method(x, "index_put_", (T([1]), T([0])), ember.tensor(6.0), accumulate=True)
    method(x, "masked_fill_", x < 0, 0.5)
    method(x, "masked_scatter_", x == 8.0, ember.tensor([10.0, 20.0, 30.0]))
    method(x, "put_", T([0]), ember.tensor([1.5]), accumulate=True)
    expected = np.zeros((3, 4))
    np.add.at(expected, ([0, 1, 0], [0, 1, 2]), 1.0)
    expected[0, 3] = 5.0
    expected[2, 0] = max(expected[2, 0], 4.0)
    np.add.at(expected, (slice(None), [1, 1]), 1.0)
    expected[2] = -1.0
    expected[:, 2] = 8.0
    expected[1, 0] += 6.0
    expected[expected < 0] = 0.5
    expected[expected == 8.0] = [10.0, 20.0, 30.0]
    expected[0, 0] += 1.5
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x._version.value == 10


# ----------------------------------------------------------------------------- gradients
DUP = T([0, 2, 0, 0])


GRAD_CASES = {
    "getitem_dup": (lambda x: M.getitem(x, (DUP, slice(1, None))), [(3, 4)]),
    "getitem_separated": (lambda x: M.getitem(x, (T([1, 1]), slice(None), T([0, 2]))), [(3, 2, 4)]),
    "getitem_mask": (lambda x: M.getitem(x, T(np.array([[True, False], [True, True]]))), [(2, 2, 3)]),
    "index_select": (lambda x: fn("index_select")(x, 1, T([1, 1, 0])), [(2, 3)]),
    "gather": (lambda x: fn("gather")(x, 1, T([[0, 0, 2], [1, 1, 1]])), [(2, 3)]),
    "scatter": (lambda x, s: fn("scatter")(x, 0, T([[0, 1], [2, 0]]), s), [(3, 2), (2, 2)]),
    "scatter_add": (lambda x, s: fn("scatter_add")(x, 0, T([[0, 0], [0, 1]]), s), [(2, 2), (3, 3)]),
    "index_add": (lambda x, s: fn("index_add")(x, 0, T([1, 1, 0]), s, alpha=1.5), [(2, 3), (3, 3)]),
    "index_copy": (lambda x, s: fn("index_copy")(x, 1, T([2, 0]), s), [(2, 3), (2, 2)]),
    "index_fill": (lambda x, v: fn("index_fill")(x, 0, T([1, 1]), v), [(2, 3), ()]),
    "index_put_acc": (lambda x, v: fn("index_put")(x, (T([0, 0, 1]),), v, accumulate=True), [(2, 3), (3, 3)]),
    "index_put": (lambda x, v: fn("index_put")(x, (T([1, 0]), T([2, 2])), v), [(2, 3), (1,)]),
    "masked_fill": (lambda x, v: fn("masked_fill")(x, T([True, False, True]), v), [(2, 3), ()]),
    "masked_scatter": (lambda x, s: fn("masked_scatter")(x, T([[True, False], [True, True]]), s), [(2, 2), (5,)]),
    "masked_select": (lambda x: fn("masked_select")(x, T([[True], [False]])), [(2, 3)]),
    "take": (lambda x: fn("take")(x, T([[5, 0], [5, -1]])), [(2, 3)]),
    "take_along_dim": (lambda x: fn("take_along_dim")(x, T([[1], [1]]), 1), [(2, 3)]),
    "put_acc": (lambda x, s: fn("put")(x, T([1, 1, 4]), s, accumulate=True), [(2, 3), (3,)]),
    "put": (lambda x, s: fn("put")(x, T([1, 4]), s), [(2, 3), (2,)]),
}
for _r in ("sum", "mean", "amax", "amin", "prod"):
    for _inc in (True, False):
        GRAD_CASES[f"scatter_reduce_{_r}_{_inc}"] = (
            lambda x, s, r=_r, inc=_inc: fn("scatter_reduce")(x, 1, T([[0, 0, 2], [1, 1, 1]]), s, r, include_self=inc),
            [(2, 3), (2, 3)])


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    op, shapes = GRAD_CASES[name]
    inputs = tuple(f64(s, seed=k) for k, s in enumerate(shapes))
    assert gradcheck(op, inputs)
    assert gradgradcheck(op, inputs)


def test_amax_ties_and_prod_zeros_gradcheck():
    x = ember.tensor([[1.0, 5.0, 0.0]], dtype=ember.float64, requires_grad=True)
    s = ember.tensor([[5.0, 2.0, 5.0]], dtype=ember.float64, requires_grad=True)
    y = fn("scatter_reduce")(x, 1, T([[1, 0, 1]]), s, "amax")
    y.sum().backward()
    assert x.grad.numpy().tolist() == [[0.0, 1 / 3, 1.0]]  # the tie at position 1 is shared three ways
    assert s.grad.numpy().tolist() == [[1 / 3, 1.0, 1 / 3]]
    z = ember.tensor([[0.0, 2.0, 3.0]], dtype=ember.float64, requires_grad=True)
    src = ember.tensor([[4.0, 0.0, 0.0]], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: fn("scatter_reduce")(a, 1, T([[0, 1, 2]]), b, "prod"), (z, src))


def test_setitem_gradients_flow_to_destination_and_value():
    leaf = f64((3, 4))
    v = f64((2, 4), seed=3)

    def op(a, b):
        y = a * 1.0
        M.setitem(y, [2, 0], b)
        M.setitem(y, (slice(None), [1, 1]), 0.0)
        return y * y

    assert gradcheck(op, (leaf, v))
    assert gradgradcheck(op, (leaf, v))

    def through_view(a, b):
        y = a * 1.0
        M.setitem(M.getitem(y, slice(1, None)), T([[True, False, True, False], [False] * 4]), b[0, :2])
        return y

    assert gradcheck(through_view, (leaf, v))


def test_inplace_gradients():
    x, s = f64((3, 4)), f64((3, 4), seed=1)

    def op(a, b):
        y = a * 1.0
        method(y, "scatter_add_", 0, T([[0, 0, 1, 1]]), b)
        method(y, "index_fill_", 1, T([3]), 0.0)
        method(y, "masked_fill_", T([True, False, False, False]), -1.0)
        return y

    assert gradcheck(op, (x, s))


# ----------------------------------------------------------------------------- differential tests against torch
TORCH_KEYS = [
    "[i, :, 0]", "[i, 0, i]", "[i, None, i]", "[:, i, None, i]", "[True]", "[False]", "[t1]", "[t1, :, i]",
    "[i, ..., i]", "[t1b]", "[[0, 1]]", "[[True, False, True]]", "[1, [True, False, True, True]]", "[[]]",
    "[(0, 1),]", "[None, i, :, i]", "[..., i]", "[[1, 2], 0]", "[:, [[0], [1]], [1, 2]]", "[i2d]",
    "[m2d]", "[..., m45]", "[[True, False, True], [True, True, False, False]]", "[::2, i, 1:]", "[-1, i, -2]",
    "[i.numpy()]", "[1::2, [[1, 0]], None]",
]


def _torch_env(torch, backend):
    wrap = torch.tensor if backend == "torch" else T
    return {"i": wrap([0, 2]), "t1": wrap(1), "t1b": wrap(True), "i2d": wrap([[0, 1], [1, 2]]),
            "m2d": wrap(np.array([[True, False, True, True]] * 3)), "m45": wrap(np.ones((4, 5), bool))}


@pytest.mark.parametrize("expr", TORCH_KEYS)
def test_getitem_setitem_against_torch(expr):
    torch = get_torch()
    a = np.arange(60.0).reshape(3, 4, 5)
    tx, ex = torch.tensor(a), ember.tensor(a)
    tenv, eenv = _torch_env(torch, "torch"), _torch_env(torch, "ember")
    want = eval("tx" + expr, {"tx": tx, **tenv})
    got = eval("M.getitem(ex, K)", {"M": M, "ex": ex, "K": _key_of(expr, eenv)})
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    exec("tx" + expr + " = -tx" + expr + " - 1", {"tx": tx, **tenv})
    M.setitem(ex, _key_of(expr, eenv), -got - 1)
    np.testing.assert_array_equal(ex.numpy(), tx.numpy())


def _key_of(expr, env):
    """The key object that ``x<expr>`` passes to __getitem__."""
    class Grab:
        def __getitem__(self, key):
            return key

    return eval("G" + expr, {"G": Grab(), **env})


@pytest.mark.parametrize("reduce, include_self", list(itertools.product(["sum", "prod", "mean", "amax", "amin"],
                                                                         [True, False])))
def test_scatter_reduce_values_and_grads_against_torch(reduce, include_self):
    torch = get_torch()
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (3, 5)).astype(np.float64)  # small integers: ties and zeros happen
    src = rng.integers(-3, 4, (3, 4)).astype(np.float64)
    index = rng.integers(0, 5, (3, 3))
    g = rng.standard_normal((3, 5))
    tx, ts = torch.tensor(a, requires_grad=True), torch.tensor(src, requires_grad=True)
    tout = tx.scatter_reduce(1, torch.tensor(index), ts[:, :3], reduce, include_self=include_self)
    tout.backward(torch.tensor(g))
    ex, es = ember.tensor(a, requires_grad=True), ember.tensor(src, requires_grad=True)
    eout = fn("scatter_reduce")(ex, 1, T(index), es, reduce, include_self=include_self)
    eout.backward(ember.tensor(g))
    np.testing.assert_allclose(eout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(es.grad.numpy(), ts.grad.numpy(), rtol=1e-10, atol=1e-12)
    ints = fn("scatter_reduce")(ember.tensor(a.astype(np.int64)), 1, T(index), ember.tensor(src.astype(np.int64)),
                                reduce, include_self=include_self)
    tints = torch.tensor(a.astype(np.int64)).scatter_reduce(1, torch.tensor(index),
                                                            torch.tensor(src.astype(np.int64))[:, :3], reduce,
                                                            include_self=include_self)
    np.testing.assert_array_equal(ints.numpy(), tints.numpy())


def test_index_ops_against_torch():
    torch = get_torch()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3))
    src = rng.standard_normal((5, 3))
    idx = np.array([3, 0, 3, -1, 1])
    pos = idx % 4
    mask = rng.random((4, 3)) < 0.5
    ops = [
        ("index_add", lambda m, x, s: m.index_add(x, 0, m.tensor(pos), s, alpha=-2.0)),
        ("index_select", lambda m, x, s: m.index_select(x, 1, m.tensor([2, 2, 0]))),
        ("index_fill", lambda m, x, s: m.index_fill(x, 0, m.tensor(pos), 4.0)),
        ("index_put", lambda m, x, s: m.index_put(x, (m.tensor(idx), m.tensor([0, 1, 0, 2, 2])), s[:, 0], True)),
        ("masked_fill", lambda m, x, s: m.masked_fill(x, m.tensor(mask), -7.0)),
        ("masked_select", lambda m, x, s: m.masked_select(x, m.tensor(mask))),
        ("masked_scatter", lambda m, x, s: m.masked_scatter(x, m.tensor(mask), s)),
        ("take", lambda m, x, s: m.take(x, m.tensor([[0, 11], [-12, 5]]))),
        ("take_along_dim", lambda m, x, s: m.take_along_dim(x, m.tensor([[2], [0], [1], [1]]), dim=1)),
        ("put", lambda m, x, s: m.put(x, m.tensor([0, 0, 11]), s[0], accumulate=True)),
        ("gather", lambda m, x, s: m.gather(x, 0, m.tensor([[3, 0, 3], [1, 1, 1]]))),
        ("scatter", lambda m, x, s: m.scatter(x, 0, m.tensor([[3, 0, 2]]), s[:1])),  # torch: src as big as index
    ]

    class E:
        """ember with the indexing ops, before the lead wires them into the namespace."""

        def __getattr__(self, name):
            return fn(name) if name != "tensor" else T

    for name, op in ops:
        tx, ts = torch.tensor(a, requires_grad=True), torch.tensor(src, requires_grad=True)
        ex, es = ember.tensor(a, requires_grad=True), ember.tensor(src, requires_grad=True)
        want = op(torch, tx, ts)
        got = op(E(), ex, es)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, err_msg=name)
        g = rng.standard_normal(tuple(want.shape))
        want.backward(torch.tensor(g))
        got.backward(ember.tensor(g))
        for e, t in ((ex, tx), (es, ts)):
            if t.grad is not None:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, err_msg=name)


def test_take_with_0d_index_gives_0d():
    """Regression (fuzz): take() with a 0-dim index returned shape (1,); torch gives the index's shape ()."""
    out = fn("take")(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), ember.tensor(2))
    assert tuple(out.shape) == () and out.item() == 3.0


# ---- argument checks agreeing with torch (issue 8) -------------------------------------------------------------------
def test_masked_fill_refuses_numbers_the_dtype_cannot_hold():
    mask = ember.tensor([True, False])
    for dt, value, name in ((ember.int64, float("inf"), "int64_t"), (ember.int64, float("nan"), "int64_t"),
                            (ember.int8, 128, "int8_t"), (ember.int32, 1e20, "int"), (ember.float16, 1e10, "c10::Half"),
                            (ember.uint8, -256, "uint8_t")):
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} without overflow"):
            ember.masked_fill(ember.tensor([1, 2], dtype=dt), mask, value)
    assert ember.masked_fill(ember.tensor([1, 2], dtype=ember.uint8), mask, -1).tolist() == [255, 2]
    assert ember.masked_fill(ember.tensor([1.0, 2.0]), mask, float("inf")).tolist() == [float("inf"), 2.0]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 300.0, 1e30])
def test_full_and_fill_refuse_floats_an_int_dtype_cannot_hold(value):
    """Found by the API sweep: these wrapped or turned to 0 silently (NaN cast to int8 is 0)."""
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ember.full((2,), value, dtype=ember.int8)
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        ember.tensor([7, 1], dtype=ember.int8).fill_(value)
    assert ember.full((2,), 2.7, dtype=ember.int8).tolist() == [2, 2]   # in range: truncated, as in torch


def test_empty_index_skips_gather_and_scatter_checks():
    x = ember.ones(3, 3)
    index = ember.zeros(3, 0, 1, dtype=ember.int64)
    assert ember.gather(x, 0, index).shape == (3, 0, 1)
    assert ember.scatter(x, 0, index, ember.zeros(3, 0, 1)).tolist() == x.tolist()
    assert ember.scatter_add(x, 0, ember.zeros(0), ember.zeros(0)).tolist() == x.tolist()
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.gather(x, 5, index)


def test_index_add_out_of_range_is_an_index_error():
    for bad in (5, -1):
        with pytest.raises(IndexError, match=f"index_add\\(\\): index {bad} is out of bounds for dimension 0"):
            ember.index_add(ember.ones(3), 0, ember.tensor([bad]), ember.ones(1))


# ---- found by the long fuzz run (issue 8), torch as the oracle -------------------------------------------------------
def _outcome(f):
    """The exception's type name, or the result as a nested list."""
    try:
        return f().tolist()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__


@pytest.mark.parametrize("shape, dim, index", [
    ((2, 3), 1, 2), ((2, 3), 0, 1), ((), 0, 0), ((2, 3), 1, 5), ((2, 3), 1, -1), ((2, 3), 0, -1), ((2, 3), 0, [-1]),
    ((2, 3, 4), 2, 5), ((2, 3, 4), 1, [-1]), ((4,), 0, [7]), ((4,), 0, -1), ((), 0, 1), ((), 0, [0, 0]),
    ((0, 2), 1, 5), ((0, 2), 0, [1]), ((2, 0), 1, 0), ((0, 2, 3), 1, [-1]), ((0, 3), 0, [])])
def test_index_select_values_and_errors_match_torch(torch_ref, shape, dim, index):
    """0-d indices, no wrap-around of negative indices, and torch's error type for each of its code paths."""
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ours = _outcome(lambda: ember.index_select(ember.tensor(a), dim, T(index, dtype=ember.int64)))
    theirs = _outcome(lambda: torch_ref.index_select(torch_ref.tensor(a), dim, torch_ref.tensor(index,
                                                                                                 dtype=torch_ref.long)))
    assert ours == theirs


@pytest.mark.parametrize("key", [
    lambda m: m.tensor([1, 2]), lambda m: [1, 2], lambda m: m.tensor([False, True, True, False]),
    lambda m: [False, True, True, False], lambda m: (Ellipsis, m.tensor([1, 2])), lambda m: m.tensor(True),
    lambda m: m.tensor(1), lambda m: 1, lambda m: slice(1, 3)])
@pytest.mark.parametrize("value", [lambda m: m.tensor([1.7, -2.6]), lambda m: m.tensor(2.9), lambda m: 2.9,
                                   lambda m: m.tensor([3, 4], dtype=m.int32), lambda m: m.tensor([3, 4]),
                                   lambda m: m.tensor([[2.9]]), lambda m: m.tensor([[3, 4]])])
def test_setitem_with_an_index_tensor_needs_the_value_in_the_dtype(torch_ref, key, value):
    """Through index_put (an index tensor or list in the key) a value tensor of another dtype is an error; a number,
    a one-element value under one mask (torch's masked_fill), or a basic key (a 0-d integer tensor is one), casts.
    Leading size-1 dims of the value are dropped."""
    def write(m):
        x = m.zeros(4, dtype=m.int64)
        x[key(m)] = value(m)
        return x
    assert _outcome(lambda: write(ember)) == _outcome(lambda: write(torch_ref))


def test_setitem_into_an_empty_tensor_still_checks_the_value_dtype(torch_ref):
    for m in (ember, torch_ref):
        x = m.zeros(0, dtype=m.int64)
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Long "
                                               "for the destination and Float for the source."):
            x[m.tensor([], dtype=m.int64)] = m.tensor(1.5)
        x[m.tensor([], dtype=m.int64)] = m.tensor(1)


def test_setitem_converts_a_number_before_checking_the_key():
    x = ember.zeros(3, 2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without overflow"):
        x[ember.tensor([0, 6]), ember.tensor([0, 4])] = float("nan")
    with pytest.raises(IndexError, match="out of bounds"):
        x[ember.tensor([0, 6])] = 1
