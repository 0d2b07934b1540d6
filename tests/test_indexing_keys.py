"""Every kind of key torch takes in ``x[key]`` and ``x[key] = value``, differential against torch.

Keys mix ints, slices, None, Ellipsis (several too), bools, lists (nested), ranges, NumPy integer/bool/uint8/float
arrays and scalars, int/bool tensors (0-d too) and ``Size``, on contiguous and non-contiguous inputs. For each we
compare values, shape, dtype, whether the result is a view (writing through it must change the input exactly
when it does in torch) and, when torch raises, the exception type.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch's uint8-index deprecation

LAYOUTS = {
    "contiguous": lambda L: L.arange(60).reshape(4, 5, 3),
    "permuted": lambda L: L.arange(60).reshape(3, 4, 5).permute(1, 2, 0),
    "strided": lambda L: L.arange(240).reshape(8, 5, 6)[::2, :, 1::2],
}


# ----------------------------------------------------------------------------- key specs (library-neutral)
def build(spec, L):
    """The key ``spec`` describes, for library ``L`` (torch or ember): tensors and Sizes are made per library."""
    kind = spec[0]
    if kind == "tuple":
        return tuple(build(s, L) for s in spec[1])
    if kind == "listkey":
        return [build(s, L) for s in spec[1]]
    if kind == "tensor":
        return L.tensor(spec[1], dtype=getattr(L, spec[2]))
    if kind == "size":
        return L.Size(spec[1])
    if kind == "np":
        return np.array(spec[1], dtype=spec[2])
    if kind == "callable":
        return spec[1](L)
    return spec[1]


def plain(value):
    return ("plain", value)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return "err", type(e)


def check_getitem(layout, spec):
    xs = {L: LAYOUTS[layout](L) for L in (torch, ember)}
    got = {L: _outcome(lambda L=L: xs[L][build(spec, L)]) for L in (torch, ember)}
    (tk, tr), (ek, er) = got[torch], got[ember]
    assert ek == tk, (spec, got)
    if tk == "err":
        assert issubclass(er, tr), (spec, tr, er)
        return
    assert tuple(er.shape) == tuple(tr.shape), spec
    assert er.dtype.name == str(tr.dtype).removeprefix("torch."), spec
    np.testing.assert_array_equal(er.numpy(), tr.numpy())
    if tr.numel():  # a view writes through to the input, a copy does not
        tr.fill_(-1)
        er.fill_(-1)
        np.testing.assert_array_equal(xs[ember].numpy(), xs[torch].numpy(), err_msg=f"view semantics of {spec}")


VALUES = {
    "int": lambda L, shape: -1,
    "float": lambda L, shape: 2.5,
    "full": lambda L, shape: -L.arange(1, 1 + int(np.prod(shape))).reshape(shape),
    "last": lambda L, shape: -L.arange(1, 1 + shape[-1]) if shape else L.tensor(-3),
    "float_tensor": lambda L, shape: L.full(shape, -1.5),
    "one": lambda L, shape: L.tensor([[-7]]),
    "bad": lambda L, shape: L.tensor([1, 2, 3, 4, 5, 6, 7]),
}


def check_setitem(layout, spec, value):
    shape = _outcome(lambda: tuple(LAYOUTS[layout](torch)[build(spec, torch)].shape))
    shape = shape[1] if shape[0] == "ok" else (2,)
    results = {}
    for L in (torch, ember):
        x = LAYOUTS[layout](L)
        v = VALUES[value](L, shape)
        kind, err = _outcome(lambda: x.__setitem__(build(spec, L), v))
        results[L] = (kind, err, x)
    (tk, te, tx), (ek, ee, ex) = results[torch], results[ember]
    assert ek == tk, (spec, value, te, ee)
    if tk == "err":
        assert issubclass(ee, te), (spec, value, te, ee)
    else:
        np.testing.assert_array_equal(ex.numpy(), tx.numpy(), err_msg=f"{spec} = {value}")


# ----------------------------------------------------------------------------- explicit cases
T = lambda data, dtype="int64": ("tensor", data, dtype)  # noqa: E731
N = lambda data, dtype="int64": ("np", data, dtype)  # noqa: E731
tup = lambda *items: ("tuple", items)  # noqa: E731
E, NONE = plain(Ellipsis), plain(None)
S = lambda *a: plain(slice(*a))  # noqa: E731

CASES = {
    "int": plain(1), "negative int": plain(-1), "int out of range": plain(4), "negative out of range": plain(-5),
    "slice": S(1, 3), "slice step": S(None, None, 2), "negative step": S(None, None, -1), "zero step": S(None, None, 0),
    "huge slice": S(-100, 100), "empty slice": S(3, 1), "range": plain(range(3)), "range step": plain(range(0, 4, 2)),
    "negative range": plain(range(-2, 0)), "range out of bounds": plain(range(5)), "empty range": plain(range(0)),
    "np int64": plain(np.int64(2)), "np int scalars": tup(plain(np.int64(1)), plain(np.int32(2))),
    "np uint8 scalar": plain(np.uint8(1)), "np bool scalar": plain(np.bool_(True)),
    "np float scalar": plain(np.float64(1.0)), "np index": N([0, 2]), "np 2-d index": N([[0], [1]]),
    "np 0-d": N(2), "np 0-d bool": N(True, "bool"), "np mask": N([True, False, True, False], "bool"),
    "np 2-d mask": N([[True, False, True, False, True]] * 4, "bool"), "np uint8 mask": N([1, 0, 1, 0], "uint8"),
    "np float index": N([1.5, 0.2], "float64"), "np int16 index": N([0, 1], "int16"), "np str": N(["a"], "U1"),
    "list": plain([0, 2]), "list dup": plain([1, 1, 0]), "list negative": plain([-1, 0]), "list oob": plain([4]),
    "nested list": plain([[0, 1], [2, 3]]), "list of one list": plain([[0, 1]]), "list float": plain([1.5]),
    "list bool": plain([True, False, True, False]), "list bool short": plain([True]), "list str": plain(["a"]),
    "list None": plain([None]), "list with None": plain([[None]]), "empty list": plain([]),
    "list with slice": ("listkey", (plain(0), S(None))), "list with tensors": ("listkey", (T(0), T(1))),
    "list of ellipses": ("listkey", (E, E)), "tuple pair": tup(plain([0, 1]), plain([1, 2])),
    "mixed": tup(S(None), plain([0, 2]), NONE, plain(1)), "separated": tup(plain([0, 1]), S(None), plain([1, 2])),
    "int then lists": tup(plain(1), plain([0, 1]), plain([1, 2])), "list int list": tup(plain([0, 1]), plain(1),
                                                                                     plain([1, 2])),
    "ellipsis index": tup(E, plain([0, 1])), "index ellipsis index": tup(plain([0, 1]), E, plain([0, 2])),
    "none ellipsis none": tup(NONE, E, NONE), "two ellipses": tup(E, E), "ellipsis int ellipsis": tup(E, plain(0), E),
    "int two ellipses": tup(plain(0), E, E), "ellipses around index": tup(E, plain([0, 1]), E),
    "too many via ellipses": tup(E, E, plain([0])), "none after ellipses": tup(E, E, NONE),
    "three ellipses": tup(E, E, E), "ellipses and ints": tup(E, plain(0), plain(0), E),
    "tensor": T([0, 3]), "tensor int32": T([[0, 1], [1, 2]], "int32"), "tensor int16": T([0, 1], "int16"),
    "tensor float": T([0.5], "float32"), "tensor 0-d": T(1), "tensor 0-d out of range": T(4),
    "tensor 0-d int32": T(3, "int32"), "tensor 0-d pair": tup(T(1), T(2)), "tensor bool 0-d": T(True, "bool"),
    "tensor false 0-d": T(False, "bool"), "tensor mask": T([True, False, True, True], "bool"),
    "tensor 2-d mask": T([[True, False, True, False, True]] * 4, "bool"), "tensor uint8 mask": T([1, 0, 1, 0], "uint8"),
    "tensor 0-d uint8": T(1, "uint8"), "tensor negative": T([0, -1]), "tensor oob": T([-5]), "empty tensor": T([]),
    "empty bool tensor": T([], "bool"), "empty float tensor": T([], "float32"),
    "tensors broadcast": tup(T([[0], [1]]), S(None), T([0, 1, 2])), "tensors mismatch": tup(T([0, 1]), T([0, 1, 2])),
    "tensor slice tensor": tup(T(1), S(None), T(2)), "tensor ellipsis tensor": tup(T([0, 2]), E, T([1])),
    "none tensor none": tup(NONE, T([0, 1]), NONE), "tensor none tensor": tup(T([0, 1]), NONE, T([0, 1])),
    "slice none tensor": tup(S(None), NONE, T([0, 1]), S(None)), "mask then index": tup(T([True, False, True, False],
                                                                                           "bool"), T([0, 2])),
    "size": ("size", [1, 2]), "empty size": ("size", []), "size in tuple": tup(("size", [1]),),
    "true": plain(True), "false": plain(False), "true in tuple": tup(plain(True), plain(0)),
    "false in tuple": tup(plain(0), plain(False)), "true and list": tup(plain(True), plain([0, 1])),
    "bools": tup(plain(True), plain(False)), "none": NONE, "ellipsis": E, "empty tuple": tup(),
    "all ints": tup(plain(0), plain(1), plain(2)), "too many ints": tup(plain(0), plain(0), plain(0), plain(0)),
    "ints then none": tup(plain(0), plain(0), plain(0), NONE), "float": plain(1.5), "float in tuple": tup(plain(1.5),),
    "string": plain("a"), "dict": plain({1: 2}),
    "slice with tensor bounds": ("callable", lambda L: slice(L.tensor(1), L.tensor(3))),
    "long list": plain([1, 2, 3, 0] * 9), "int16 np scalar index": tup(plain(np.int16(1)), plain([0])),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(CASES))
def test_getitem_matches_torch(layout, name):
    check_getitem(layout, CASES[name])


@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("name", list(CASES))
def test_setitem_matches_torch(name, value):
    check_setitem("permuted" if len(name) % 2 else "contiguous", CASES[name], value)


@pytest.mark.parametrize("value", [[1, 2, 3], (1, 2, 3), np.array([1, 2, 3]), np.float32(1.5), np.bool_(True), None,
                                   "a", 2 ** 63, -2 ** 63 - 1, np.uint64(2 ** 64 - 1), np.int64(5), np.float64(2.5),
                                   2 ** 62, float("nan"), 1e300, True])
@pytest.mark.parametrize("key", [0, [0], False])
def test_setitem_value_types_match_torch(key, value):
    outcomes = {}
    for L in (torch, ember):
        x = L.arange(6).reshape(2, 3)
        outcomes[L] = _outcome(lambda: x.__setitem__(key, value)), x.tolist()
    (tk, tv), tx = outcomes[torch]
    (ek, ev), ex = outcomes[ember]
    assert ek == tk, (key, value, tv, ev)
    if tk == "err":
        assert issubclass(ev, tv), (key, value, tv, ev)
    else:
        assert ex == tx


# ----------------------------------------------------------------------------- Hypothesis: random mixed keys
def _item(draw):
    kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis", "bool", "list", "nested", "range", "np",
                                 "np_mask", "np_scalar", "tensor", "tensor0", "mask"]))
    n = draw(st.sampled_from([3, 4, 5]))
    ints = st.integers(-5, 5)
    if kind == "int":
        return plain(draw(ints))
    if kind == "slice":
        bound = st.none() | st.integers(-6, 6)
        return plain(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 3))))
    if kind == "none":
        return NONE
    if kind == "ellipsis":
        return E
    if kind == "bool":
        return plain(draw(st.booleans()))
    if kind == "list":
        return plain(draw(st.lists(ints, max_size=3)))
    if kind == "nested":
        width = draw(st.integers(1, 2))
        return plain([draw(st.lists(ints, min_size=width, max_size=width)) for _ in range(2)])
    if kind == "range":
        return plain(range(draw(st.integers(-4, 2)), draw(st.integers(-2, 5)), draw(st.integers(1, 2))))
    if kind == "np":
        return N(draw(st.lists(ints, min_size=1, max_size=3)))
    if kind == "np_mask":
        return N(draw(st.lists(st.booleans(), min_size=n, max_size=n)), "bool")
    if kind == "np_scalar":
        return plain(np.int64(draw(ints)))
    if kind == "tensor":
        return T(draw(st.lists(ints, min_size=1, max_size=3)), draw(st.sampled_from(["int64", "int32"])))
    if kind == "tensor0":
        return T(draw(ints)) if draw(st.booleans()) else T(draw(st.booleans()), "bool")
    return T(draw(st.lists(st.booleans(), min_size=n, max_size=n)), "bool")


@st.composite
def keys(draw):
    items = [_item(draw) for _ in range(draw(st.integers(1, 4)))]
    return items[0] if len(items) == 1 and draw(st.booleans()) else tup(*items)


@settings(max_examples=120, deadline=None)
@given(spec=keys(), layout=st.sampled_from(list(LAYOUTS)))
def test_random_getitem_matches_torch(spec, layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_getitem(layout, spec)


@settings(max_examples=80, deadline=None)
@given(spec=keys(), layout=st.sampled_from(["contiguous", "permuted"]), value=st.sampled_from(["int", "full", "last"]))
def test_random_setitem_matches_torch(spec, layout, value):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_setitem(layout, spec, value)


def test_basic_keys_give_views_that_share_the_version_counter():
    x = ember.arange(60).reshape(4, 5, 3)
    for key in [np.int64(1), ember.tensor(2), np.array(1), (ember.tensor(0), 1), ember.Size([1, 2]),
                (Ellipsis, Ellipsis)]:
        view = x[key]
        before = x._version_value
        view.add_(1)
        assert x._version_value > before, key
