"""The everyday names real scripts reach for (issue 16, part A): dtype limits, splitting and shape helpers, the
scatter and ``*_copy`` ops, the new factories, the real-tensor predicates and the warnings torch gives, each
checked against torch (skipped cleanly without it)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
from ember import _user_warnings

# torch's own warnings on the reference side (ember's are asserted where they are recorded)
pytestmark = pytest.mark.filterwarnings("ignore:The given buffer is not writable", "ignore:The use of `x.T`")

X = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _np(t) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _same(got, want) -> None:
    """Same structure, shapes, dtypes (by name) and values."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    if not hasattr(want, "dtype"):
        assert got == want
        return
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(got).astype(np.float64), _np(want).astype(np.float64))


def _both(torch, call) -> None:
    """``call(lib)`` gives the same result with ember as with torch."""
    _same(call(ember), call(torch))


def _same_error(torch, call, match_exactly: bool = True) -> None:
    """``call`` raises the same exception class in both, with torch's message (which may follow ember's
    "op(): " prefix; dtypes print as ``ember.``)."""
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(want.type) as got:
        call(ember)
    if match_exactly:
        message, expected = str(got.value), str(want.value)
        dtypes_as_ember = re.sub(r"\btorch\.(?=(u?int\d+|float\d+|bool)\b)", "ember.", expected)
        assert message.endswith(expected) or message.endswith(dtypes_as_ember), (message, expected)


# ------------------------------------------------------------------------------------------------- finfo / iinfo
@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo_matches_torch(torch_ref, name):
    got, want = ember.finfo(getattr(ember, name)), torch_ref.finfo(getattr(torch_ref, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, field) == getattr(want, field), field
    assert repr(got) == repr(want) and type(got.eps) is float


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(torch_ref, name):
    got, want = ember.iinfo(getattr(ember, name)), torch_ref.iinfo(getattr(torch_ref, name))
    assert (got.bits, got.max, got.min, got.dtype) == (want.bits, want.max, want.min, want.dtype)
    assert repr(got) == repr(want) and type(got.max) is int


def test_type_info_defaults_python_types_and_errors(torch_ref):
    assert ember.finfo().dtype == "float32"
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.finfo().dtype == "float64"
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.finfo(float).dtype == "float64" and ember.iinfo(int).dtype == "int64"
    assert ember.finfo(ember.float32) == ember.finfo(ember.float32) != ember.finfo(ember.float64)
    with pytest.raises(AttributeError):
        ember.finfo(ember.float32).eps = 1.0
    for call in (lambda t: t.finfo(t.int32), lambda t: t.iinfo(t.float32), lambda t: t.iinfo(t.bool),
                 lambda t: t.finfo(t.bool), lambda t: t.finfo("float32"), lambda t: t.finfo(None),
                 lambda t: t.iinfo(bool)):
        _same_error(torch_ref, call)


# ---------------------------------------------------------------------------------------------------- splitting
@pytest.mark.parametrize("how, dim", [(3, 1), (5, 0), ([1, 3], 1), ((1, 10), 0), ([3, 1], 0), ([-1], 0), ([], 0),
                                      ((0, 0), 0)])
def test_tensor_split_matches_torch(torch_ref, how, dim):
    _both(torch_ref, lambda t: t.tensor_split(t.tensor(X), how, dim))
    _both(torch_ref, lambda t: t.tensor(X).tensor_split(how, dim=dim))


def test_tensor_split_takes_a_tensor_and_torch_keywords(torch_ref):
    _both(torch_ref, lambda t: t.tensor_split(t.tensor(X), t.tensor(2)))
    _both(torch_ref, lambda t: t.tensor_split(t.tensor(X), t.tensor([1, 2]), 1))
    _both(torch_ref, lambda t: t.tensor_split(t.tensor(X), sections=2, dim=1))
    _both(torch_ref, lambda t: t.tensor_split(t.tensor(X), indices=[1]))
    for call in (lambda t: t.tensor_split(t.tensor(X), t.tensor([1.0])),
                 lambda t: t.tensor_split(t.tensor(X), t.tensor([[1]])), lambda t: t.tensor_split(t.tensor(X), 0),
                 lambda t: t.tensor_split(t.tensor(1.0), 2), lambda t: t.tensor_split(t.tensor(X), 2, 5)):
        _same_error(torch_ref, call)
    for call in (lambda t: t.tensor_split(t.tensor(X), 2.0), lambda t: t.tensor_split(t.tensor(X), [True])):
        _same_error(torch_ref, call, match_exactly=False)


def test_split_pieces_are_views_with_gradients(torch_ref):
    x = ember.tensor(X, requires_grad=True)
    pieces = ember.tensor_split(x, [1, 3], 1)
    assert all(p._base is x for p in pieces) and pieces[0].grad_fn.name() == "SliceBackward0"
    (pieces[0].sum() * 2 + pieces[2].sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 0, 0, 1]] * 3)
    base = ember.zeros(2, 4)
    ember.hsplit(base, 2)[1].fill_(1.0)
    assert base.tolist() == [[0, 0, 1, 1]] * 2


@pytest.mark.parametrize("name, how", [("hsplit", 2), ("hsplit", [1]), ("hsplit", (1, 2)), ("vsplit", 3),
                                       ("vsplit", [2]), ("dsplit", 2), ("dsplit", [1])])
def test_directional_splits_match_torch(torch_ref, name, how):
    data = np.arange(24.0, dtype=np.float32).reshape(3, 2, 4) if name == "dsplit" else X
    _both(torch_ref, lambda t: getattr(t, name)(t.tensor(data), how))
    _both(torch_ref, lambda t: getattr(t.tensor(data), name)(how))


def test_directional_split_errors_and_1d_hsplit(torch_ref):
    _both(torch_ref, lambda t: t.hsplit(t.arange(4), 2))
    _both(torch_ref, lambda t: t.hsplit(t.tensor(X), sections=2))
    for call in (lambda t: t.hsplit(t.tensor(X), 3), lambda t: t.hsplit(t.tensor(X), 0),
                 lambda t: t.hsplit(t.tensor(1.0), 2), lambda t: t.vsplit(t.arange(4), 2),
                 lambda t: t.vsplit(t.tensor(X), 2), lambda t: t.dsplit(t.tensor(X), 2)):
        _same_error(torch_ref, call)


def test_split_with_sizes_and_the_unsafe_spellings(torch_ref):
    _both(torch_ref, lambda t: t.split_with_sizes(t.tensor(X), [1, 2]))
    _both(torch_ref, lambda t: t.tensor(X).split_with_sizes([1, 3], 1))
    _both(torch_ref, lambda t: t.unsafe_split(t.tensor(X), 2, 1))
    _both(torch_ref, lambda t: t.unsafe_chunk(t.tensor(X), 2, 1))
    _both(torch_ref, lambda t: t.unsafe_split_with_sizes(t.tensor(X), [1, 3], dim=1))
    for call in (lambda t: t.split_with_sizes(t.tensor(X), [1, 1]),
                 lambda t: t.split_with_sizes(t.tensor(X), [-1, 4]), lambda t: t.split_with_sizes(t.tensor(X), 2),
                 lambda t: t.unsafe_split(t.tensor(X), [1, 2]), lambda t: t.unsafe_chunk(t.tensor(X), 0)):
        _same_error(torch_ref, call)
    x = ember.tensor(X, requires_grad=True)
    assert {p.grad_fn.name() for p in ember.unsafe_split(x, 2)} == {"UnsafeSplitBackward0"}
    assert {p.grad_fn.name() for p in ember.unsafe_split_with_sizes(x, [1, 2])} == {"UnsafeSplitWithSizesBackward0"}


# ------------------------------------------------------------------------------------------------ shape helpers
@pytest.mark.parametrize("shapes", [((2, 1), (3,)), (), (2, (3, 1)), ((4, 1, 3), (2, 1)), ((0,), (1,)),
                                    ((True,),), (None,), ([1, 4], (2, 1))])
def test_broadcast_shapes_matches_torch(torch_ref, shapes):
    got = ember.broadcast_shapes(*shapes)
    assert isinstance(got, ember.Size) and tuple(got) == tuple(torch_ref.broadcast_shapes(*shapes))


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((5, 2, 3), (4, 1)), ((1, 3), (2, 1), (5, 3)), ((2,), [3]),
                                    (3, 4), ((2,), (1, 2, 3)), ((-1,), (2,))])
def test_broadcast_shapes_errors_match_torch(torch_ref, shapes):
    _same_error(torch_ref, lambda t: t.broadcast_shapes(*shapes))


def test_ravel_and_unravel_index(torch_ref):
    _both(torch_ref, lambda t: t.ravel(t.tensor(X).t()))
    _both(torch_ref, lambda t: t.tensor(X).ravel())
    _both(torch_ref, lambda t: t.ravel(t.tensor(3.0)))
    x = ember.tensor(X)
    assert ember.ravel(x)._base is x  # a view when the strides allow
    for indices, shape in [([4, 1, 6, -1, -7], (2, 3)), ([[1, 2]], (2, 3)), (5, 3), ([7, 0], (2, 2, 2))]:
        _both(torch_ref, lambda t: t.unravel_index(t.tensor(indices), shape))
    _both(torch_ref, lambda t: t.unravel_index(t.tensor([1, 2], dtype=t.int32), t.Size([2, 3])))
    assert ember.unravel_index(ember.tensor(1), ()) == ()
    for call in (lambda t: t.unravel_index(t.tensor(1.0), (2, 3)), lambda t: t.unravel_index(t.tensor(True), (2,)),
                 lambda t: t.unravel_index(t.tensor(1), (-2, 3)), lambda t: t.unravel_index(t.tensor(1), (2.0, 3))):
        _same_error(torch_ref, call)


@pytest.mark.parametrize("r, replace", [(2, False), (3, False), (1, False), (4, False), (2, True), (3, True),
                                        (0, False)])
def test_combinations_match_torch(torch_ref, r, replace):
    _both(torch_ref, lambda t: t.combinations(t.tensor([1, 2, 3]), r, replace))


def test_combinations_gradient_and_errors(torch_ref):
    _both(torch_ref, lambda t: t.combinations(t.tensor([], dtype=t.int64)))
    got = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    want = torch_ref.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for lib, x in ((ember, got), (torch_ref, want)):
        (lib.combinations(x, with_replacement=True) * lib.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy())
    assert ember.combinations(got).grad_fn.name() == "StackBackward0"
    for call in (lambda t: t.combinations(t.tensor([1, 2]), r=-1), lambda t: t.combinations(t.tensor(X))):
        _same_error(torch_ref, call)


@pytest.mark.parametrize("size", [(1, 4), ((4,),), (3, 1), (1,), ([1, 1],)])
def test_sum_to_size_matches_torch(torch_ref, size):
    _both(torch_ref, lambda t: t.tensor(X).sum_to_size(*size))


def test_sum_to_size_identity_gradient_and_errors(torch_ref):
    x = ember.tensor(X, requires_grad=True)
    assert x.sum_to_size(3, 4) is x
    x.sum_to_size(1, 4).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))
    for call in (lambda t: t.tensor(X).sum_to_size(3, 3), lambda t: t.tensor(X).sum_to_size(1, 1, 4),
                 lambda t: t.tensor(X).sum_to_size()):
        _same_error(torch_ref, call)


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((3, 4), False), ((7, 3), False), ((7, 3), True),
                                         ((6, 2), True), ((10, 3), True), ((4, 3), True), ((2, 2, 2), False)])
def test_fill_diagonal_matches_torch(torch_ref, shape, wrap):
    def call(t):
        x = t.zeros(shape)
        assert x.fill_diagonal_(5.0, wrap=wrap) is x
        return x
    _both(torch_ref, call)


def test_fill_diagonal_dtype_errors_and_autograd(torch_ref):
    _both(torch_ref, lambda t: t.zeros(3, 3, dtype=t.int64).fill_diagonal_(2.7))
    _both(torch_ref, lambda t: t.zeros(3, 3).t().fill_diagonal_(2))
    for call in (lambda t: t.zeros(2, 3, 2).fill_diagonal_(1), lambda t: t.zeros(3).fill_diagonal_(1),
                 lambda t: t.zeros(3, 3, dtype=t.uint8).fill_diagonal_(300)):
        _same_error(torch_ref, call)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ember.zeros(3, 3, requires_grad=True).fill_diagonal_(1)
    w = ember.ones(2, 2, requires_grad=True)
    y = (w * 3).fill_diagonal_(0)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0, 3], [3, 0]])


# ---------------------------------------------------------------------------------------------------- factories
def test_empty_strided(torch_ref):
    for size, stride in [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((2, 3), (0, 0)), ((2, 3), (6, 2)), ((0, 3), (3, 1))]:
        got, want = ember.empty_strided(size, stride), torch_ref.empty_strided(size, stride)
        assert got.shape == want.shape and got.stride() == want.stride()
        assert got.is_contiguous() == want.is_contiguous()
    t = ember.empty_strided([2, 3], [1, 2], dtype=ember.float64, requires_grad=True)
    assert t.dtype is ember.float64 and t.requires_grad
    t.detach().fill_(1.0)
    assert t.sum().item() == 6.0
    for call in (lambda t: t.empty_strided((2, 3), (3,)), lambda t: t.empty_strided((2, -3), (3, 1)),
                 lambda t: t.empty_strided((2, 3), (-3, 1))):
        _same_error(torch_ref, call)


def test_scalar_tensor(torch_ref):
    for args, kwargs in [((3,), {}), ((3.5,), {"dtype": "int64"}), ((True,), {}), ((2,), {"requires_grad": True})]:
        def call(t, args=args, kwargs=kwargs):
            kw = {k: (getattr(t, v) if k == "dtype" else v) for k, v in kwargs.items()}
            return t.scalar_tensor(*args, **kw)
        got, want = call(ember), call(torch_ref)
        _same(got, want)
        assert got.requires_grad == want.requires_grad and got.ndim == 0
    _both(torch_ref, lambda t: t.scalar_tensor(t.tensor(2)))
    for call in (lambda t: t.scalar_tensor("a"), lambda t: t.scalar_tensor(1e300),
                 lambda t: t.scalar_tensor(300, dtype=t.uint8)):
        _same_error(torch_ref, call)


@pytest.mark.parametrize("args, dtype", [((0, 3), None), ((1, 2, 0.5), None), ((0, 3), "int64"),
                                         ((0, 1, 0.3), None), ((3, 0, -1), None), ((0, 0), None), ((0, 2.5), None),
                                         ((0, 10, 3), "int32")])
def test_range_is_inclusive_and_warns(torch_ref, args, dtype):
    def call(t):
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            return t.range(*args, **({"dtype": getattr(t, dtype)} if dtype else {}))
    _both(torch_ref, call)


def test_range_errors_out_and_default_dtype(torch_ref):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for call in (lambda t: t.range(0, 3, -1), lambda t: t.range(0, 3, 0), lambda t: t.range(0, float("inf"))):
            _same_error(torch_ref, call)
        _same_error(torch_ref, lambda t: t.range(3), match_exactly=False)
        out = ember.empty(0, dtype=ember.int64)
        assert ember.range(0, 2, out=out) is out and out.tolist() == [0, 1, 2]
        ember.set_default_dtype(ember.float64)
        try:
            assert ember.range(0, 1).dtype is ember.float64
        finally:
            ember.set_default_dtype(ember.float32)
        assert ember.range(0, 3, requires_grad=True).requires_grad


# -------------------------------------------------------------------------------------------------------- asarray
def test_asarray_of_a_tensor_is_the_tensor_unless_a_copy_is_needed(torch_ref):
    x = ember.tensor(X)
    assert ember.asarray(x) is x and ember.asarray(x, copy=False) is x and ember.asarray(x, device="cpu") is x
    assert ember.asarray(x, dtype=ember.float32) is x
    copied = ember.asarray(x, copy=True)
    assert copied is not x and copied.data_ptr() != x.data_ptr() and np.array_equal(copied.numpy(), X)
    assert ember.asarray(x, dtype=ember.float64).dtype is ember.float64
    for call in (lambda t: t.asarray(t.tensor(X), dtype=t.float64, copy=False),
                 lambda t: t.asarray(np.arange(3.0), dtype=t.float32, copy=False),
                 lambda t: t.asarray([1, 2], copy=False), lambda t: t.asarray(3, copy=False),
                 lambda t: t.asarray(np.float32(1), copy=False)):
        _same_error(torch_ref, call)


def test_asarray_requires_grad_rules_match_torch(torch_ref, monkeypatch):
    def outcome(t, make, **kwargs):
        x = make(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = t.asarray(x, **kwargs)
        return y is x, y.requires_grad, x.requires_grad, y.is_leaf

    leaf = lambda t: t.ones(2, requires_grad=True)  # noqa: E731
    plain = lambda t: t.ones(2)  # noqa: E731
    inner = lambda t: t.ones(2, requires_grad=True) * 2  # noqa: E731
    for make, kwargs in [(leaf, {}), (leaf, {"requires_grad": False}), (leaf, {"copy": True}),
                         (leaf, {"dtype": "float64"}), (leaf, {"dtype": "float64", "requires_grad": False}),
                         (plain, {"requires_grad": True}), (inner, {"requires_grad": False}), (inner, {}),
                         (inner, {"copy": True})]:
        def kw(t, kwargs=kwargs):
            return {k: (getattr(t, v) if k == "dtype" else v) for k, v in kwargs.items()}
        assert outcome(ember, make, **kw(ember)) == outcome(torch_ref, make, **kw(torch_ref)), kwargs
    monkeypatch.setattr(_user_warnings, "_WARNED", set())
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults") as caught:
        ember.asarray(ember.ones(2, requires_grad=True))
        ember.asarray(ember.ones(2, requires_grad=True), copy=True)
    assert len(caught) == 1  # once per process, as torch
    assert not _messages(lambda: ember.asarray(ember.ones(2, requires_grad=True), requires_grad=True))


def test_asarray_shares_numpy_and_buffer_memory(torch_ref):
    a = np.arange(3.0)
    t = ember.asarray(a)
    t[0] = 7.0
    assert a[0] == 7.0 and t.dtype is ember.float64
    assert ember.asarray(a, dtype=ember.float32).dtype is ember.float32 and a.dtype == np.float64
    assert ember.asarray(a, copy=True).data_ptr() != a.ctypes.data
    strided = np.arange(6).reshape(2, 3)[:, ::2]
    assert ember.asarray(strided).stride() == torch_ref.asarray(strided).stride()
    buffer = bytearray(b"abcd")
    shared = ember.asarray(buffer, dtype=ember.uint8)
    shared[0] = 65
    assert buffer[:1] == b"A"
    for obj, kwargs in [(np.float32(2.5), {}), (np.arange(3), {}), ([1, 2], {}), ([1.0, 2], {}), (3, {}),
                        (3.5, {}), (True, {}), ((1, 2), {}), (b"abcd", {"dtype": "uint8"}),
                        (memoryview(np.arange(3, dtype=np.float32)), {}), ([[1], [2]], {}),
                        ([1, 2.5], {"dtype": "int32"})]:
        _both(torch_ref, lambda t: t.asarray(obj, **{k: getattr(t, v) for k, v in kwargs.items()}))
    for call in (lambda t: t.asarray(bytearray(b"ab")), lambda t: t.asarray(np.arange(3.0).astype(">f8"))):
        _same_error(torch_ref, call)
    with pytest.raises(RuntimeError, match="floating point"):
        ember.asarray([1, 2], requires_grad=True)
    assert ember.asarray(np.arange(3.0), requires_grad=True).requires_grad


# ------------------------------------------------------------------------------------------------------ scatters
SCATTERS = [
    ("slice_scatter", (4, 4), (4, 2), {"dim": 1, "start": 0, "end": 4, "step": 2}),
    ("slice_scatter", (4, 4), (1, 4), {"start": -1}),
    ("slice_scatter", (4, 4), (4, 2), {"dim": 1, "start": 2}),
    ("select_scatter", (4, 4), (4,), {"dim": 0, "index": 1}),
    ("select_scatter", (4, 4), (4,), {"dim": 1, "index": -1}),
    ("diagonal_scatter", (4, 4), (4,), {}),
    ("diagonal_scatter", (4, 4), (3,), {"offset": 1}),
    ("diagonal_scatter", (2, 3, 3), (3, 2), {"offset": 0, "dim1": 0, "dim2": 1}),
    ("as_strided_scatter", (4, 4), (2, 2), {"size": (2, 2), "stride": (4, 1)}),
    ("as_strided_scatter", (16,), (2, 2), {"size": (2, 2), "stride": (5, 1), "storage_offset": 3}),
]


@pytest.mark.parametrize("name, shape, src_shape, kwargs", SCATTERS)
def test_scatters_and_their_gradients_match_torch(torch_ref, name, shape, src_shape, kwargs):
    rng = np.random.default_rng(0)
    base, src = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(src_shape).astype(np.float32)
    weight = rng.standard_normal(shape).astype(np.float32)
    results = []
    for lib in (ember, torch_ref):
        x, s = lib.tensor(base, requires_grad=True), lib.tensor(src, requires_grad=True)
        out = getattr(lib, name)(x, s, **kwargs)
        (out * lib.tensor(weight)).sum().backward()
        results.append((out, x.grad, s.grad, out.grad_fn.name()))
        method = getattr(lib.tensor(base), name)(lib.tensor(src), **kwargs)
        np.testing.assert_allclose(_np(method), _np(out))
    (got, gx, gs, node), (want, tx, ts, torch_node) = results
    _same(got, want)
    _same(gs, ts)
    assert node == torch_node
    # input's gradient: the incoming one wherever src did not overwrite it (torch's as_strided_scatter formula
    # gets this backwards, https://github.com/pytorch/pytorch/pull/77128: there gradcheck fails)
    untouched = _np(getattr(ember, name)(ember.zeros(shape), ember.ones(src_shape), **kwargs)) == 0
    np.testing.assert_allclose(_np(gx), weight * untouched)
    if name != "as_strided_scatter":
        _same(gx, tx)


def test_as_strided_scatter_passes_gradcheck_twice():
    x = ember.tensor(np.random.default_rng(1).standard_normal((4, 4)), requires_grad=True)
    s = ember.tensor(np.random.default_rng(2).standard_normal((2, 2)), requires_grad=True)
    call = lambda a, b: ember.as_strided_scatter(a.t(), b, (2, 2), (1, 4), 1) * a.t()  # noqa: E731
    assert ember.autograd.gradcheck(call, (x, s))
    assert ember.autograd.gradgradcheck(call, (x, s))


def test_scatters_keep_the_input_untouched_and_check_shapes(torch_ref):
    x = ember.zeros(3, 4)
    ember.select_scatter(x, ember.ones(4), 0, 1)
    assert x.sum().item() == 0
    _both(torch_ref, lambda t: t.slice_scatter(t.zeros(3, 4), t.ones(3, 2, dtype=t.float64), 1, 2))
    _both(torch_ref, lambda t: t.as_strided_scatter(t.zeros(10)[2:], t.ones(2), (2,), (1,), 5))
    _both(torch_ref, lambda t: t.as_strided_scatter(t.arange(6.0).reshape(2, 3).t(), t.ones(2), (2,), (1,)))
    _both(torch_ref, lambda t: t.as_strided_scatter(t.zeros(4, 4)[:, 1:3], t.ones(2), (2,), (1,)))
    for call in (lambda t: t.slice_scatter(t.zeros(3, 4), t.ones(1, 4)),
                 lambda t: t.slice_scatter(t.zeros(3, 4), t.ones(3, 2), 1, 2, step=0),
                 lambda t: t.select_scatter(t.zeros(3, 4), t.ones(4), 0, 3),
                 lambda t: t.select_scatter(t.zeros(3, 4), t.ones(3), 0, 0),
                 lambda t: t.diagonal_scatter(t.zeros(3, 4), t.ones(4)),
                 lambda t: t.as_strided_scatter(t.zeros(6), t.ones(3), (2, 2), (3, 1)),
                 lambda t: t.as_strided_scatter(t.zeros(6), t.ones(2, 2), (2, 2), (3, 1), 4),
                 lambda t: t.as_strided_scatter(t.zeros(6), t.ones(2, 2), (2, 2), (0, 1))):
        _same_error(torch_ref, call)
    out = ember.empty(0)
    assert ember.slice_scatter(ember.zeros(2, 2), ember.ones(2, 1), 1, 1, out=out) is out
    assert out.tolist() == [[0, 1], [0, 1]]


# ------------------------------------------------------------------------------------------------------- copies
COPIES = [
    ("view_copy", ((6, 2),), {}), ("permute_copy", ((1, 0),), {}), ("transpose_copy", (0, 1), {}),
    ("t_copy", (), {}), ("unsqueeze_copy", (1,), {}), ("select_copy", (1, 2), {}), ("slice_copy", (1, 0, 4, 2), {}),
    ("slice_copy", (), {}), ("diagonal_copy", (), {"offset": 1}), ("narrow_copy", (1, 1, 2), {}),
    ("alias_copy", (), {}), ("unfold_copy", (1, 2, 1), {}), ("as_strided_copy", ((2, 2), (1, 2), 1), {}),
    ("unbind_copy", (1,), {}), ("split_copy", (2,), {}), ("split_with_sizes_copy", ([1, 2],), {}),
]


@pytest.mark.parametrize("name, args, kwargs", COPIES)
def test_copies_match_torch_own_their_memory_and_name_their_nodes(torch_ref, name, args, kwargs):
    data = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    results = []
    for lib in (ember, torch_ref):
        x = lib.tensor(data, requires_grad=True)
        out = getattr(lib, name)(x, *args, **kwargs)
        pieces = out if isinstance(out, tuple) else (out,)
        sum(p.sum() * (i + 1) for i, p in enumerate(pieces)).backward()
        results.append((out, x.grad, {p.grad_fn.name() for p in pieces}, [p.is_contiguous() for p in pieces]))
        assert all(p.data_ptr() != x.data_ptr() or p.numel() == 0 for p in pieces)
    (got, gx, nodes, contiguous), (want, tx, torch_nodes, torch_contiguous) = results
    _same(got, want)
    _same(gx, tx)
    assert nodes == torch_nodes and contiguous == torch_contiguous


def test_the_other_copies(torch_ref):
    data = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    _both(torch_ref, lambda t: t.expand_copy(t.tensor(data[:1]), (2, 4)))
    _both(torch_ref, lambda t: t.squeeze_copy(t.tensor(data[None]), 0))
    _both(torch_ref, lambda t: t.squeeze_copy(t.tensor(data[None])))
    _both(torch_ref, lambda t: t.view_copy(t.tensor(data), t.int32))
    _both(torch_ref, lambda t: t.view_copy(t.tensor(data), t.int16))
    _both(torch_ref, lambda t: t.tensor(data).narrow_copy(0, 1, 2))
    detached = ember.detach_copy(ember.tensor(data, requires_grad=True))
    assert not detached.requires_grad and np.array_equal(detached.numpy(), data)
    for call in (lambda t: t.split_copy(t.tensor(data), [1, 2]), lambda t: t.view_copy(t.tensor(data), 3, 2),
                 lambda t: t.view_copy(t.tensor(data), -1)):
        _same_error(torch_ref, call, match_exactly=False)


def test_list_out_of_the_copies_is_filled_like_torch(torch_ref):
    def fill(t, outs, call):
        outs = [t.empty(s, dtype=getattr(t, d)) for s, d in outs]
        return call(t, outs), outs

    cases = [("split_with_sizes_copy", ([1, 2],), [((0,), "float32"), ((0,), "float32")]),
             ("split_with_sizes_copy", ([1, 2],), [((1, 4), "float32"), ((2, 4), "float32")]),
             ("unbind_copy", (), [((0,), "float32")] * 3),
             ("split_copy", (2,), [((2, 2, 4), "float64"), ((1, 4), "int64")])]  # split_copy: copy_'s rules
    for name, args, outs in cases:
        got, got_outs = fill(ember, outs, lambda t, o: getattr(t, name)(t.tensor(X), *args, out=o))
        want, want_outs = fill(torch_ref, outs, lambda t, o: getattr(t, name)(t.tensor(X), *args, out=o))
        assert got is None and want is None
        _same(got_outs, want_outs)
    with pytest.warns(UserWarning, match="was resized"):
        ember.unbind_copy(ember.tensor(X), out=[ember.empty(5)] * 3)
    for call in (lambda t: t.split_copy(t.tensor(X), 1, out=[t.empty(1, 4)]),
                 lambda t: t.unbind_copy(t.tensor(X), out=[t.empty(0, dtype=t.float64)] * 3),
                 lambda t: t.split_copy(t.tensor(X), 2, out=[t.empty(1, 1), t.empty(1, 4)])):
        _same_error(torch_ref, call, match_exactly=False)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.unbind_copy(ember.ones(2, requires_grad=True), out=[ember.empty(0), ember.empty(0)])


# --------------------------------------------------------------------------------------------------- predicates
def test_predicates_match_torch(torch_ref):
    for call in (lambda t: t.is_nonzero(t.tensor(0.0)), lambda t: t.is_nonzero(t.tensor([1])),
                 lambda t: t.is_nonzero(t.tensor(float("nan"))), lambda t: t.is_same_size(t.ones(2, 3), t.ones(3, 2)),
                 lambda t: t.is_same_size(t.ones(2), t.zeros(2)), lambda t: t.ones(2).is_same_size(t.ones(2)),
                 lambda t: t.is_complex(t.ones(2)), lambda t: t.is_conj(t.ones(2)), lambda t: t.is_neg(t.ones(2)),
                 lambda t: t.get_device(t.ones(2)), lambda t: t.ones(2).is_conj(), lambda t: t.ones(2).is_neg()):
        assert call(ember) == call(torch_ref)
    for dtype in ("uint8", "bool", "int8", "int64", "float16", "float64"):
        assert ember.is_signed(ember.ones(1, dtype=getattr(ember, dtype))) == \
            torch_ref.is_signed(torch_ref.ones(1, dtype=getattr(torch_ref, dtype)))
        assert ember.ones(1, dtype=getattr(ember, dtype)).is_signed() == \
            torch_ref.ones(1, dtype=getattr(torch_ref, dtype)).is_signed()
    for call in (lambda t: t.is_nonzero(t.tensor([1, 2])), lambda t: t.is_nonzero(t.tensor([])),
                 lambda t: t.is_nonzero(3), lambda t: t.is_same_size(t.ones(2), 3), lambda t: t.get_device(3)):
        _same_error(torch_ref, call)


def test_conjugation_of_real_tensors_is_the_tensor_itself(torch_ref):
    x = ember.ones(2, 3)
    for fn in (ember.conj, ember.resolve_conj, ember.resolve_neg, ember.conj_physical, ember.Tensor.conj,
               ember.Tensor.resolve_conj, ember.Tensor.resolve_neg, ember.Tensor.conj_physical):
        assert fn(x) is x
    version = x._version_value
    assert x.conj_physical_() is x and x._version_value == version + 1
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ember.ones(2, requires_grad=True).conj_physical_()
    out = ember.empty(0)
    assert ember.conj_physical(x, out=out) is out and out.tolist() == x.tolist()
    _both(torch_ref, lambda t: t.adjoint(t.tensor(X)))
    _both(torch_ref, lambda t: t.arange(24.0).reshape(2, 3, 4).adjoint())
    _same_error(torch_ref, lambda t: t.adjoint(t.ones(3)))
    assert ember.adjoint(ember.ones(2, 3, requires_grad=True)).grad_fn.name() == "TransposeBackward0"
    assert ember.resize_as_(ember.ones(2), ember.ones(3, 1)).shape == (3, 1)


# ----------------------------------------------------------------------------------------------------- warnings
def _messages(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if w.category is UserWarning]


def test_copy_constructing_from_a_tensor_warns_like_torch(torch_ref):
    for lib in (ember, torch_ref):
        assert any("sourceTensor.detach().clone()" in m for m in _messages(lambda: lib.tensor(lib.ones(2))))
        assert not _messages(lambda: lib.tensor([lib.tensor(1.0), lib.tensor(2.0)]))
        assert not _messages(lambda: lib.as_tensor(lib.ones(2)))


def test_reading_grad_of_a_non_leaf_warns_like_torch(torch_ref):
    for lib in (ember, torch_ref):
        a = lib.ones(2, requires_grad=True)
        b = a * 2
        assert any("not a leaf Tensor is being accessed" in m for m in _messages(lambda: b.grad))
        assert not _messages(lambda: a.grad)
        assert not _messages(lambda: lib.ones(2).grad)
        b.retain_grad()
        assert not _messages(lambda: b.grad)


def test_the_warning_points_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.tensor(ember.ones(1))
    assert caught and caught[0].filename == __file__


def test_T_on_tensors_that_are_not_2d_warns_once_and_H_is_for_matrices(torch_ref, monkeypatch):
    monkeypatch.setattr(_user_warnings, "_WARNED", set())
    assert any("`x.T` on tensors of dimension other than 2" in m for m in _messages(lambda: ember.ones(3).T))
    assert not _messages(lambda: ember.ones(2, 3, 4).T)  # once per process, as torch's TORCH_WARN_ONCE
    assert not _messages(lambda: ember.ones(2, 3).T)
    assert any("Tensor.T is deprecated on 0-D" in m for m in _messages(lambda: ember.tensor(1.0).T))
    _both(torch_ref, lambda t: t.arange(24.0).reshape(2, 3, 4).T)
    _both(torch_ref, lambda t: t.tensor(X).H)
    _both(torch_ref, lambda t: t.arange(24.0).reshape(2, 3, 4).mH)
    scalar = ember.tensor(2.0)
    assert any("Tensor.H is deprecated on 0-D" in m for m in _messages(lambda: scalar.H)) and scalar.H is scalar
    for call in (lambda t: t.ones(3).H, lambda t: t.ones(2, 3, 4).H, lambda t: t.ones(3).mH):
        _same_error(torch_ref, call)


# ---------------------------------------------------------------------------------------------- default device
def test_factories_follow_the_default_device_and_explicit_devices(torch_ref):
    dev = ember.device("cpu")
    with dev:
        assert ember.tril_indices(3, 3).device == dev and ember.triu_indices(3, 3, 1).device == dev
    _both(torch_ref, lambda t: t.tril_indices(3, 4, 1))
    mask = ember.nn.Transformer.generate_square_subsequent_mask(3, device="cpu", dtype=ember.float16)
    _same(mask, torch_ref.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch_ref.float16))
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.nn.Transformer.generate_square_subsequent_mask(2).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.nn.BatchNorm1d(3, device="cpu").num_batches_tracked.device == dev
