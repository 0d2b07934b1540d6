"""NumPy semantics as torch's: ``np.array``/``np.asarray`` (NumPy 2's ``copy=`` rules), ``numpy(force=)``, the
refusal of tensors that require grad, operators between tensors and arrays, and NumPy ufuncs on tensors.

The first tests pin ember's behaviour with plain values; the differential table at the end runs every expression
against torch 2.13 and compares result type, dtype and values (or the exception type), skipped without torch.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

# torch's own __array__/__array_wrap__ predate NumPy 2's signatures: NumPy warns about them on every reference call
pytestmark = [pytest.mark.filterwarnings("ignore:__array_wrap__ must accept context:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy:DeprecationWarning")]

_GRAD = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."


def test_asarray_shares_and_array_copies():
    t = ember.arange(4.0)
    shared = np.asarray(t)
    shared[0] = 10.0
    assert t[0].item() == 10.0
    copied = np.array(t)
    copied[1] = 20.0
    assert t[1].item() == 1.0
    assert np.asarray(t, dtype=np.float32) is t.numpy()


def test_numpy_2_copy_rules():
    t = ember.arange(3.0)
    same = np.asarray(t, copy=False)
    same[2] = -2.0
    assert t[2].item() == -2.0
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float64, copy=False)
    widened = np.asarray(t, dtype=np.float64)
    assert widened.dtype == np.float64 and widened.tolist() == [0.0, 1.0, -2.0]
    forced = np.array(t, copy=True)
    assert not np.shares_memory(forced, t.numpy())


def test_numpy_refuses_a_tensor_that_requires_grad_in_grad_mode():
    x = ember.arange(3.0, requires_grad=True)
    for convert in (lambda: x.numpy(), lambda: np.asarray(x), lambda: np.array(x), lambda: np.exp(x)):
        with pytest.raises(RuntimeError) as info:
            convert()
        assert str(info.value) == _GRAD
    with ember.no_grad():
        shared = x.numpy()  # torch's check is "grad mode and requires grad"
    assert np.shares_memory(shared, x.detach().numpy())


def test_numpy_force_detaches_and_shares_on_the_cpu():
    x = ember.arange(3.0, requires_grad=True)
    forced = x.numpy(force=True)
    assert forced.dtype == np.float32 and forced.tolist() == [0.0, 1.0, 2.0]
    forced[0] = 5.0
    assert x.detach()[0].item() == 5.0


def test_tensor_operator_array_is_numpys_result_as_a_tensor():
    t = ember.arange(3, dtype=ember.float32)
    out = t + np.arange(3.0)
    assert isinstance(out, ember.Tensor) and out.dtype is ember.float64 and out.tolist() == [0.0, 2.0, 4.0]
    assert (t * np.arange(3, dtype=np.int64)).dtype is ember.float64  # NumPy's promotion, as torch gives it
    assert (t - np.array([True, False, True])).tolist() == [-1.0, 1.0, 1.0]
    assert (ember.arange(3) // np.full(3, 2)).tolist() == [0, 0, 1]
    assert (t == np.array([0.0, 5.0, 2.0])).tolist() == [True, False, True]
    assert (t != np.array([0.0, 5.0, 2.0])).tolist() == [False, True, False]
    assert (t / np.array(2.0)).tolist() == [0.0, 0.5, 1.0]


def test_array_operator_tensor_raises_as_torch_except_division():
    t = ember.arange(1, 4, dtype=ember.float32)
    a = np.arange(3.0)
    for op in (lambda: a + t, lambda: a - t, lambda: a * t, lambda: a ** t, lambda: t > a, lambda: a < t):
        with pytest.raises(TypeError):
            op()
    quotient = np.array([2.0, 2.0, 3.0]) / t  # torch's __rtruediv__: t.reciprocal() * a
    assert isinstance(quotient, ember.Tensor) and quotient.dtype is ember.float64
    np.testing.assert_allclose(quotient.numpy(), [2.0, 1.0, 1.0], rtol=1e-7)
    assert (a == t).tolist() == [False, False, False]


def test_ufuncs_on_tensors_return_tensors():
    t = ember.tensor([0.0, 1.0, 4.0])
    e = np.exp(t)
    assert isinstance(e, ember.Tensor) and e.dtype is ember.float32
    np.testing.assert_allclose(e.numpy(), np.exp([0.0, 1.0, 4.0]).astype(np.float32))
    assert np.sqrt(t).tolist() == [0.0, 1.0, 2.0]
    s = np.add(t, t)
    assert isinstance(s, ember.Tensor) and s.tolist() == [0.0, 2.0, 8.0]
    mixed = np.add(np.ones(3), t)
    assert isinstance(mixed, ember.Tensor) and mixed.dtype is ember.float64
    greater = np.greater(t, 0.5)  # bool results come back uint8, as torch's __array_wrap__
    assert greater.dtype is ember.uint8 and greater.tolist() == [0, 1, 1]
    scalar = np.exp(ember.tensor(0.0))
    assert isinstance(scalar, ember.Tensor) and scalar.shape == () and scalar.item() == 1.0
    total = np.add.reduce(t)
    assert isinstance(total, ember.Tensor) and total.item() == 5.0
    out = np.empty(3, np.float32)
    assert np.add(t, t, out=out) is out


# --------------------------------------------------------------------------------------------- differential
_ARRAYS = {"f64": np.arange(3.0), "f32": np.arange(3, dtype=np.float32), "i64": np.arange(3),
           "i32": np.arange(3, dtype=np.int32), "bool": np.array([True, False, True]), "0d": np.array(2.0),
           "np.float64": np.float64(2.0), "np.int64": np.int64(2)}
_OPERATORS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
              "//": lambda x, y: x // y, "**": lambda x, y: x ** y, ">": lambda x, y: x > y,
              "==": lambda x, y: x == y}
_TENSORS = {"f32": lambda T: T.arange(1, 4, dtype=T.float32), "i64": lambda T: T.arange(1, 4),
            "0d": lambda T: T.tensor(2.0), "bool": lambda T: T.tensor([True, False, True])}
_UFUNCS = ["exp", "sqrt", "negative", "absolute", "sin", "floor", "isnan", "logical_not", "add", "multiply",
           "greater", "maximum", "true_divide", "power", "equal"]


def _outcome(run):
    """(kind, dtype name, values) of a result, or ("raise", exception type) of a failure."""
    try:
        r = run()
    except Exception as e:  # noqa: BLE001 - the exception type is the outcome
        return ("raise", type(e).__name__)
    if isinstance(r, tuple):
        return tuple(_outcome(lambda x=x: x) for x in r)
    if hasattr(r, "detach"):
        return ("Tensor", str(r.dtype).split(".")[-1], _values(np.asarray(r.detach())))
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), _values(r))
    return (type(r).__name__, None, r)


def _values(a: np.ndarray):
    return [("nan" if isinstance(v, float) and math.isnan(v) else v) for v in np.ravel(a).tolist()]


def _expression(case):
    """The case's expression written against ``T`` (torch or ember): a zero-argument callable."""
    kind, tn, other, name = case
    if kind == "ufunc":
        ufunc = getattr(np, name)
        if ufunc.nin == 1:
            return lambda T: ufunc(_TENSORS[tn](T))
        if other == "tensor":
            return lambda T: ufunc(_TENSORS[tn](T), _TENSORS[tn](T))
        return lambda T: ufunc(np.full(tuple(_TENSORS[tn](T).shape), 2.0), _TENSORS[tn](T))
    fn, a = _OPERATORS[name], _ARRAYS[other]
    if kind == "reflected":
        return lambda T: fn(a, _TENSORS[tn](T))
    return lambda T: fn(_TENSORS[tn](T), a)


def _cases():
    for tn in _TENSORS:
        for an in _ARRAYS:
            for on in _OPERATORS:
                if tn != "bool" or on not in ("-", "/", "//", "**"):
                    yield f"t{tn} {on} {an}", ("operator", tn, an, on)
                    yield f"{an} {on} t{tn}", ("reflected", tn, an, on)
        for un in _UFUNCS:
            yield f"np.{un}(t{tn}, t{tn})", ("ufunc", tn, "tensor", un)
            if getattr(np, un).nin == 2:
                yield f"np.{un}(array, t{tn})", ("ufunc", tn, "array", un)


@pytest.mark.parametrize("case", [c for _, c in _cases()], ids=[name for name, _ in _cases()])
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    expression = _expression(case)
    with np.errstate(all="ignore"):
        theirs, ours = _outcome(lambda: expression(torch)), _outcome(lambda: expression(ember))
    if theirs[0] == ours[0] == "Tensor" and theirs[1] == ours[1] and theirs[1].startswith("float"):
        np.testing.assert_allclose(np.array(ours[2], dtype=float), np.array(theirs[2], dtype=float), rtol=1e-6)
    else:
        assert ours == theirs


def test_numpy_conversions_match_torch():
    torch = pytest.importorskip("torch")
    for T in (torch, ember):
        x = T.arange(3.0, requires_grad=True)
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            np.asarray(x)
        with T.no_grad():
            assert x.numpy().tolist() == [0.0, 1.0, 2.0]
        assert np.shares_memory(x.numpy(force=True), x.detach().numpy())
        y = T.arange(3.0)
        np.asarray(y)[0] = 4.0
        np.array(y)[1] = 4.0
        assert y.tolist() == [4.0, 1.0, 2.0]
