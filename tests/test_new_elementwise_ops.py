"""The three ops added through the declarations alone (``ember.opcodes`` rows, ``scalar_ops`` functions):
``special.entr``, ``special.erfcx`` and ``special.xlog1py``. Values against SciPy in float64 and against torch
(values and gradients) on every layout (the op harness; ``tests/cuda/test_device_new_elementwise_ops.py`` runs the
same cases on CUDA), gradcheck and gradgradcheck, torch's dtypes, edge values, number operands, ``out=`` and names.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from op_harness import Case, Input, op_tests

special = pytest.importorskip("scipy.special")

INF, NAN = math.inf, math.nan
TOL = {"float32": (2e-6, 1e-7), "float64": (1e-13, 1e-300)}
SHAPES = (((0, 3),), ((),), ((2, 1, 3),))


def _positive_or_zero(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """entr's domain with its boundary: values in (0, 3] with about a quarter exactly 0."""
    return np.where(rng.random(shape) < 0.25, 0.0, rng.uniform(0.05, 3.0, shape))


def _some_zeros(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """xlog1py's first operand, where x == 0 gives 0 whatever log1p(y) is."""
    return np.where(rng.random(shape) < 0.25, 0.0, rng.uniform(-3.0, 3.0, shape))


NEW_OPS = [
    Case("entr", lambda m, x: m.special.entr(x), [Input((3, 4), values=_positive_or_zero)], special.entr, tol=TOL,
         shapes=SHAPES, grad_inputs=[Input((3, 4), 0.1, 3)]),
    Case("erfcx", lambda m, x: m.special.erfcx(x), [Input((3, 4), -5, 30)], special.erfcx, tol=TOL, shapes=SHAPES),
    Case("xlog1py", lambda m, a, b: m.special.xlog1py(a, b), [Input((2, 3), values=_some_zeros),
         Input((3,), -0.9, 5)], special.xlog1py, tol=TOL, shapes=(((3, 1), (1, 4)), ((0, 3), (3,)), ((), (2, 3))),
         grad_inputs=[Input((2, 3), 0.5, 3), Input((3,), -0.5, 3)]),
    # torch as the reference: its values and the gradients of sum(out * w), on every layout
    Case("entr-torch", lambda m, x: m.special.entr(x), [Input((3, 4), 0.05, 3)], tol=TOL, grad=False),
    # erfcx' = 2 x erfcx(x) - 2/sqrt(pi) cancels for large x (torch's formula too): gradients agree to fewer digits
    Case("erfcx-torch", lambda m, x: m.special.erfcx(x), [Input((3, 4), -3, 30)],
         tol={"float32": (1e-4, 1e-6), "float64": (1e-11, 1e-15)}, grad=False),
    Case("xlog1py-torch", lambda m, a, b: m.special.xlog1py(a, b), [Input((2, 3), 0.5, 3), Input((3,), -0.5, 3)],
         tol=TOL, grad=False),
]
test_forward, test_gradcheck, test_gradgradcheck = op_tests(NEW_OPS)


def _t(values, dtype=ember.float64, grad=False):
    return ember.tensor(values, dtype=dtype, requires_grad=grad)


def test_erfcx_edge_values_and_accuracy_where_the_product_overflows():
    x = np.array([-INF, -30.0, -26.7, -26.6, -9.3, -1.0, -0.0, 0.0, 1e-300, 0.5, 10.0, 25.99, 26.0, 26.01, 1e3,
                  1e10, 1e200, 1e308, INF, NAN])
    got = ember.special.erfcx(_t(x)).numpy()
    np.testing.assert_allclose(got, special.erfcx(x), rtol=2e-14, atol=0, equal_nan=True)
    assert got[0] == got[1] == got[2] == INF and got[-2] == 0.0
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):  # a few ulp where exp(x*x) erfc(x) over- or underflows (SciPy's is 75 ulp at -26.6)
        exact = [float(mpmath.exp(mpmath.mpf(v) ** 2) * mpmath.erfc(v)) for v in x[3:-4]]
    np.testing.assert_allclose(got[3:-4], exact, rtol=1e-15, atol=0)


def test_entr_and_xlog1py_edge_values():
    assert ember.special.entr(_t([-1.0, -0.0, 0.0, 1.0, INF, NAN])).tolist()[:5] == [-INF, 0.0, 0.0, -0.0, -INF]
    assert math.isnan(ember.special.entr(_t([NAN])).item())
    x, y = _t([0.0, 0.0, 0.0, 1.0, 2.0, 0.0]), _t([NAN, -1.0, -2.0, -1.0, -2.0, INF])
    got = ember.special.xlog1py(x, y).tolist()
    assert math.isnan(got[0]) and got[1:4] == [0.0, 0.0, -INF] and math.isnan(got[4]) and got[5] == 0.0


@pytest.mark.parametrize("values, dtype", [([True, False], ember.bool), ([1, 3], ember.int64), ([1, 3], ember.uint8),
                                           ([0.5, 2.0], ember.float16), ([0.5, 2.0], ember.float64)])
def test_result_dtypes_follow_torch(torch_ref, values, dtype):
    torch_dtype = getattr(torch_ref, dtype.name)
    for name in ("entr", "erfcx"):
        try:
            want = getattr(torch_ref.special, name)(torch_ref.tensor(values, dtype=torch_dtype))
        except NotImplementedError as error:  # erfcx has no float16 kernel in torch
            with pytest.raises(NotImplementedError, match=str(error).split(" not")[0]):
                getattr(ember.special, name)(ember.tensor(values, dtype=dtype))
            continue
        got = getattr(ember.special, name)(ember.tensor(values, dtype=dtype))
        assert got.dtype.name == str(want.dtype).split(".")[-1], name
        np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float), rtol=1e-3)


@pytest.mark.parametrize("a, b", [("t", 2.5), (2.5, "t"), ("t", 3), (0, "t"), ("i", "i"), ("b", "t"), ("h", 1.5)])
def test_xlog1py_operands_and_dtypes_follow_torch(torch_ref, a, b):
    values = {"t": ([0.0, 0.5, 2.0], "float32"), "i": ([0, 1, 4], "int64"), "b": ([True, False, True], "bool"),
              "h": ([0.0, 0.5, 2.0], "float16")}

    def operand(lib, x):
        if isinstance(x, str):
            data, dtype = values[x]
            return lib.tensor(data, dtype=getattr(lib, dtype))
        return x

    want = torch_ref.special.xlog1py(operand(torch_ref, a), operand(torch_ref, b))
    got = ember.special.xlog1py(operand(ember, a), operand(ember, b))
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float), rtol=1e-3)


def test_number_operand_gradients_match_torch(torch_ref):
    data = [0.0, 0.5, 2.0]
    for call in (lambda m, x: m.special.xlog1py(x, 1.5), lambda m, x: m.special.xlog1py(2.0, x)):
        x, tx = _t(data, grad=True), torch_ref.tensor(data, dtype=torch_ref.float64, requires_grad=True)
        call(ember, x).sum().backward()
        call(torch_ref, tx).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    assert ember.autograd.gradgradcheck(lambda x: ember.special.xlog1py(x, 1.5), (_t([0.5, 2.0], grad=True),))


def test_out_argument():
    out = ember.empty(3, dtype=ember.float64)
    result = ember.special.entr(_t([0.5, 1.0, 2.0]), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), special.entr([0.5, 1.0, 2.0]))
    out = ember.empty(2)
    assert ember.special.xlog1py(_t([1.0, 2.0]), _t([0.5, 1.0]), out=out) is out
    assert out.dtype is ember.float32
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.special.erfcx(_t([1.0]), out=ember.empty(1, dtype=ember.int64))


def test_names_are_torchs(torch_ref):
    for name in ("entr", "erfcx", "xlog1py"):
        assert hasattr(ember.special, name)
        assert hasattr(ember, name) == hasattr(torch_ref, name)
        assert hasattr(ember.Tensor, name) == hasattr(torch_ref.Tensor, name)
        assert hasattr(ember.special, name + "_") == hasattr(torch_ref.special, name + "_")
    x = _t([0.5, 2.0], grad=True)
    assert type(ember.special.entr(x).grad_fn).__name__ == "SpecialEntrBackward0"
    assert type(ember.special.erfcx(x).grad_fn).__name__ == "SpecialErfcxBackward0"
    assert type(ember.special.xlog1py(x, x).grad_fn).__name__ == "SpecialXlog1PyBackward0"
    assert set(ember.special.__all__) <= set(dir(torch_ref.special))
