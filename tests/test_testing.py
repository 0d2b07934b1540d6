"""ember.testing: assert_close / assert_allclose / make_tensor, against torch.testing where it is installed."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_allclose, assert_close, make_tensor


def _outcome(lib, case) -> str:
    """'PASS' or 'ExceptionType: message', with ember's and torch's own names made alike."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            case(lib)
        except Exception as e:  # noqa: BLE001 - the outcome is what is compared
            text = f"{type(e).__name__}: {e}"
            text = re.sub(r"<class '(ember|torch)(\.tensor\.tensor)?\.Tensor'>", "<class 'Tensor'>", text)
            return text.replace("ember.", "torch.")
        return "PASS"


nan, inf = float("nan"), float("inf")

# name -> a comparison written once for both libraries
CASES = {
    "float32 mismatch": lambda t: t.testing.assert_close(t.tensor([1., 2, 3]), t.tensor([1., 2.5, 3.1])),
    "2-d index": lambda t: t.testing.assert_close(t.tensor([[1., 2], [3, 4]]), t.tensor([[1., 2], [3, 5]])),
    "3-d index": lambda t: t.testing.assert_close(t.tensor([[[1.]]]), t.tensor([[[3.]]])),
    "int exact": lambda t: t.testing.assert_close(t.tensor([1, 2, 3]), t.tensor([1, 2, 4])),
    "0-d float": lambda t: t.testing.assert_close(t.tensor(1.), t.tensor(2.)),
    "0-d int": lambda t: t.testing.assert_close(t.tensor(1), t.tensor(3)),
    "dtype": lambda t: t.testing.assert_close(t.tensor([1.]), t.tensor([1.], dtype=t.float64)),
    "shape": lambda t: t.testing.assert_close(t.tensor([1.]), t.tensor([1., 2])),
    "shape before dtype": lambda t: t.testing.assert_close(t.ones(1), t.ones(2, dtype=t.int64)),
    "stride": lambda t: t.testing.assert_close(t.ones(2, 2), t.ones(2, 2).t(), check_stride=True),
    "stride unchecked": lambda t: t.testing.assert_close(t.ones(2, 2), t.ones(2, 2).t()),
    "ints": lambda t: t.testing.assert_close(1, 2),
    "int vs float": lambda t: t.testing.assert_close(1.0, 1),
    "int vs float, no dtype check": lambda t: t.testing.assert_close(1, 1.5, check_dtype=False),
    "complex scalars": lambda t: t.testing.assert_close(1 + 1j, 1 + 2j),
    "complex vs float": lambda t: t.testing.assert_close(1 + 0j, 1.0),
    "float scalars": lambda t: t.testing.assert_close(1.0, 1.1),
    "float scalars, loose": lambda t: t.testing.assert_close(1.0, 1.1, rtol=0.2, atol=0),
    "scalar inf": lambda t: t.testing.assert_close(1.0, inf),
    "scalar nan": lambda t: t.testing.assert_close(nan, nan),
    "scalar nan equal": lambda t: t.testing.assert_close(nan, nan, equal_nan=True),
    "numpy scalars": lambda t: t.testing.assert_close(np.float32(1.0), np.float32(1.1)),
    "numpy int vs int": lambda t: t.testing.assert_close(np.int64(1), 1),
    "booleans": lambda t: t.testing.assert_close(True, False),
    "numpy bool": lambda t: t.testing.assert_close(np.bool_(True), True),
    "None": lambda t: t.testing.assert_close(None, None),
    "None vs 1": lambda t: t.testing.assert_close(None, 1),
    "list vs tuple": lambda t: t.testing.assert_close([1, 2], (1, 2)),
    "lengths": lambda t: t.testing.assert_close([1, 2], [1, 2, 3]),
    "keys": lambda t: t.testing.assert_close({"a": 1}, {"b": 1}),
    "int keys": lambda t: t.testing.assert_close({1: 1, 2: 2}, {3: 2, 1: 1}),
    "key order": lambda t: t.testing.assert_close({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    "nested path": lambda t: t.testing.assert_close([t.tensor([1.]), {"k": [t.tensor([2.])]}],
                                                    [t.tensor([1.]), {"k": [t.tensor([3.])]}]),
    "structure before values": lambda t: t.testing.assert_close([t.tensor(1.), [1]], [t.tensor(2.), [1, 2]]),
    "dict vs list": lambda t: t.testing.assert_close({"a": 1}, [1]),
    "strings": lambda t: t.testing.assert_close("a", "a"),
    "objects": lambda t: t.testing.assert_close(object(), object()),
    "numpy arrays": lambda t: t.testing.assert_close(np.array([1., 2]), np.array([1., 3])),
    "numpy int32 vs int64": lambda t: t.testing.assert_close(np.array([1, 2], dtype=np.int32), np.array([1, 2])),
    "numpy strings": lambda t: t.testing.assert_close(np.array(["a"]), np.array(["a"])),
    "numpy vs tensor": lambda t: t.testing.assert_close(np.array([1., 2]), t.tensor([1., 2], dtype=t.float64)),
    "tensor vs number": lambda t: t.testing.assert_close(t.tensor([1.]), 1.0),
    "lone rtol": lambda t: t.testing.assert_close(t.tensor([1.]), t.tensor([1.]), rtol=1e-3),
    "lone atol": lambda t: t.testing.assert_close(1.0, 1.0, atol=1e-3),
    "nan": lambda t: t.testing.assert_close(t.tensor([nan]), t.tensor([nan])),
    "nan equal": lambda t: t.testing.assert_close(t.tensor([nan, 1.]), t.tensor([nan, 2.]), equal_nan=True),
    "nan among mismatches": lambda t: t.testing.assert_close(t.tensor([0., 1., nan]), t.tensor([0., 2., 1.])),
    "opposite infinities": lambda t: t.testing.assert_close(t.tensor([1., inf]), t.tensor([1., -inf])),
    "same infinities": lambda t: t.testing.assert_close(t.tensor([1., inf]), t.tensor([1., inf])),
    "zero expected": lambda t: t.testing.assert_close(t.tensor([0., 1.]), t.tensor([1., 0.])),
    "matches are masked": lambda t: t.testing.assert_close(t.tensor([1e-6, 1.]), t.tensor([0., 2.])),
    "percentage": lambda t: t.testing.assert_close(t.arange(1000.), t.arange(1000.) + (t.arange(1000) % 3 == 0)),
    "uint8 no wraparound": lambda t: t.testing.assert_close(t.tensor([1, 2], dtype=t.uint8),
                                                            t.tensor([2, 1], dtype=t.uint8)),
    "int8 no overflow": lambda t: t.testing.assert_close(t.tensor([1, 2], dtype=t.int8),
                                                         t.tensor([-128, 1], dtype=t.int8)),
    "float16": lambda t: t.testing.assert_close(t.tensor([1., 2], dtype=t.float16),
                                                t.tensor([1., 2.1], dtype=t.float16)),
    "bool tensors": lambda t: t.testing.assert_close(t.tensor([True]), t.tensor([False])),
    "promoted, loosest tolerance": lambda t: t.testing.assert_close(t.tensor([1., 2]),
                                                                    t.tensor([1., 2.1], dtype=t.float64),
                                                                    check_dtype=False),
    "int promoted to float64": lambda t: t.testing.assert_close(t.tensor([1, 2]), t.tensor([1., 2.1], dtype=t.float64),
                                                                check_dtype=False),
    "exact: not equal": lambda t: t.testing.assert_close(t.tensor([1., 2]), t.tensor([1., 2.1]), rtol=0, atol=0),
    "0-d exact": lambda t: t.testing.assert_close(t.tensor(1.), t.tensor(2.), rtol=0, atol=0),
    "explicit tolerances": lambda t: t.testing.assert_close(t.tensor([1., 2]), t.tensor([1., 2.5]), rtol=0.1,
                                                            atol=0.01),
    "within explicit tolerances": lambda t: t.testing.assert_close(t.tensor([1., 2]), t.tensor([1., 2.1]),
                                                                   rtol=0.1, atol=0),
    "int tolerances": lambda t: t.testing.assert_close(t.tensor([10, 2]), t.tensor([12, 2]), rtol=0.1, atol=0.1),
    "empty": lambda t: t.testing.assert_close(t.tensor([]), t.tensor([])),
    "requires_grad ignored": lambda t: t.testing.assert_close(t.ones(2, requires_grad=True), t.ones(2)),
    "subclass allowed": lambda t: t.testing.assert_close(t.nn.Parameter(t.ones(1)), t.ones(1)),
    "subclass refused": lambda t: t.testing.assert_close(t.nn.Parameter(t.ones(1)), t.ones(1),
                                                         allow_subclasses=False),
    "msg string": lambda t: t.testing.assert_close(t.tensor([1.]), t.tensor([2.]), msg="custom"),
    "msg string, attribute": lambda t: t.testing.assert_close(t.ones(1), t.ones(2), msg="custom"),
    "msg string, structure": lambda t: t.testing.assert_close([1], [1, 2], msg="custom"),
    "msg callable": lambda t: t.testing.assert_close([t.tensor([1.])], [t.tensor([2.])], msg=lambda m: "<" + m + ">"),
    "msg neither": lambda t: t.testing.assert_close(t.tensor([1.]), t.tensor([2.]), msg=1),
    "allclose": lambda t: t.testing.assert_allclose(t.ones(2), t.ones(2) * 2),
    "allclose within": lambda t: t.testing.assert_allclose(t.ones(2), t.ones(2) + 1e-6),
    "allclose scalars": lambda t: t.testing.assert_allclose(1., 2.),
    "allclose shapes": lambda t: t.testing.assert_allclose(t.ones(2), 1.),
    "allclose float64": lambda t: t.testing.assert_allclose(t.tensor([1.], dtype=t.float64),
                                                            t.tensor([1.0001], dtype=t.float64)),
    "allclose dtypes differ": lambda t: t.testing.assert_allclose(t.ones(2), t.ones(2, dtype=t.float64)),
    "allclose nan": lambda t: t.testing.assert_allclose(t.tensor([nan]), t.tensor([nan])),
    "allclose list in actual's dtype": lambda t: t.testing.assert_allclose(t.tensor([1]), [1.5]),
    "allclose msg": lambda t: t.testing.assert_allclose(t.ones(2), t.ones(2) * 2, msg="hi"),
    "allclose lone rtol": lambda t: t.testing.assert_allclose(t.ones(2), t.ones(2) * 2, rtol=1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_matches_torch(name, torch_ref):
    assert _outcome(ember, CASES[name]) == _outcome(torch_ref, CASES[name])


def test_bool_with_number_is_a_runtime_error_as_in_torch(torch_ref):
    for lib in (ember, torch_ref):  # torch's message is an internal-error text: only the type is torch's
        with pytest.raises(RuntimeError):
            lib.testing.assert_close(True, 1)
    with pytest.raises(RuntimeError, match="bool compares only with a bool"):
        assert_close(1, True, check_dtype=False)


def test_message_text_without_torch():
    with pytest.raises(AssertionError) as info:
        assert_close(ember.tensor([[1., 2.], [3., 4.]]), ember.tensor([[1., 2.], [3., 5.]]))
    assert str(info.value) == ("Tensor-likes are not close!\n\n"
                               "Mismatched elements: 1 / 4 (25.0%)\n"
                               "Greatest absolute difference: 1.0 at index (1, 1) (up to 1e-05 allowed)\n"
                               "Greatest relative difference: 0.20000000298023224 at index (1, 1) "
                               "(up to 1.3e-06 allowed)")
    with pytest.raises(AssertionError, match=r"The failure occurred for item \['w'\]\[1\]$"):
        assert_close({"w": [1, 2]}, {"w": [1, 3]})
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close("a", "a")
    with pytest.raises(ValueError, match="but got no atol"):
        assert_close(ember.ones(1), ember.ones(1), rtol=0.1)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        assert_close(ember.ones(1), ember.zeros(1), rtol=-1, atol=0)


@pytest.mark.parametrize("dtype, rtol, atol", [(ember.float16, 1e-3, 1e-5), (ember.float32, 1.3e-6, 1e-5),
                                               (ember.float64, 1e-7, 1e-7), (ember.int64, 0, 0)])
def test_default_tolerances(dtype, rtol, atol):
    base = ember.tensor([100.0], dtype=ember.float64)
    inside = base + (atol + rtol * 100) * 0.5
    outside = base + (atol + rtol * 100) * 4 + (1 if atol == 0 else 0)
    assert_close(inside.to(dtype), base.to(dtype))
    with pytest.raises(AssertionError, match=f"up to {atol} allowed" if atol else "are not equal"):
        assert_close(outside.to(dtype), base.to(dtype))


def test_values_compare_across_devices_only_when_unchecked():
    a = ember.tensor([1.0, 2.0])
    assert_close(a, a.clone(), check_device=False)
    with pytest.raises(AssertionError, match="attribute 'dtype'"):
        assert_close(a, a.double())
    assert_close(a, a.double(), check_dtype=False)


def test_assert_allclose_warns():
    with pytest.warns(FutureWarning, match="assert_close"):
        assert_allclose(ember.ones(2), [1.0, 1.0])


# ---- make_tensor ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, low, high", [(ember.bool, 0, 1), (ember.uint8, 0, 9), (ember.int8, -9, 9),
                                              (ember.int64, -9, 9), (ember.float16, -9, 9), (ember.float32, -9, 9),
                                              (ember.float64, -9, 9)])
def test_make_tensor_default_ranges(dtype, low, high):
    ember.manual_seed(0)
    t = make_tensor(4000, dtype=dtype, device="cpu")
    assert t.dtype is dtype and t.shape == (4000,)
    values = t.double()
    assert values.min().item() >= low and values.max().item() <= high
    if not dtype.is_floating_point:  # every value of the range turns up
        assert set(t.tolist()) == set(range(low, high + 1)) or dtype is ember.bool and set(t.tolist()) == {False, True}


def test_make_tensor_bounds_and_clamping():
    assert set(make_tensor(300, dtype=ember.int64, device="cpu", low=2.5, high=4.5).tolist()) == {3, 4}
    assert set(make_tensor(300, dtype=ember.uint8, device="cpu", low=250, high=1000).tolist()) == set(range(250, 256))
    assert make_tensor(50, dtype=ember.uint8, device="cpu", low=-10, high=3).min().item() >= 0
    wide = make_tensor(50, dtype=ember.float32, device="cpu", low=-float("inf"), high=float("inf"))
    assert bool(wide.isfinite().all())
    half = make_tensor(50, dtype=ember.float16, device="cpu", low=-1e6, high=1e7)
    assert half.abs().max().item() <= 65504
    x = make_tensor(100, dtype=ember.float32, device="cpu", low=0.25, high=0.5)
    assert 0.25 <= x.min().item() and x.max().item() < 0.5
    with pytest.warns(FutureWarning, match="low==high"):
        assert make_tensor(3, dtype=ember.float32, device="cpu", low=2, high=2).tolist() == [2.0, 2.0, 2.0]


def test_make_tensor_shapes_and_layouts():
    assert make_tensor((2, 3), dtype=ember.float32, device="cpu").shape == (2, 3)
    assert make_tensor([2, 3], dtype=ember.float32, device="cpu").shape == (2, 3)
    assert make_tensor(ember.Size([2, 3]), dtype=ember.float32, device="cpu").shape == (2, 3)
    assert make_tensor(dtype=ember.float32, device="cpu").shape == ()
    nc = make_tensor(2, 3, dtype=ember.float32, device="cpu", noncontiguous=True)
    assert nc.shape == (2, 3) and nc.stride() == (6, 2) and not nc.is_contiguous()
    assert make_tensor(1, dtype=ember.float32, device="cpu", noncontiguous=True).is_contiguous()
    cl = make_tensor(2, 3, 4, 5, dtype=ember.float32, device="cpu", memory_format=ember.channels_last)
    assert cl.stride() == (60, 1, 15, 3)
    g = make_tensor(2, 2, dtype=ember.float32, device="cpu", requires_grad=True, noncontiguous=True)
    assert g.requires_grad and g.is_leaf


def test_make_tensor_exclude_zero():
    assert make_tensor(50, dtype=ember.int64, device="cpu", low=0, high=1, exclude_zero=True).tolist() == [1] * 50
    assert make_tensor(5, dtype=ember.bool, device="cpu", exclude_zero=True).tolist() == [True] * 5
    with pytest.warns(FutureWarning):
        tiny = make_tensor(3, dtype=ember.float16, device="cpu", low=0, high=0, exclude_zero=True)
    assert tiny.tolist() == [float(np.finfo(np.float16).tiny)] * 3


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(low=2, high=1), ValueError, "`low` must be less than `high`, but got 2 >= 1"),
    (dict(low=float("nan")), ValueError, "cannot be NaN"),
    (dict(dtype=ember.int64, requires_grad=True), ValueError, "not supported for boolean and integral"),
    (dict(noncontiguous=True, memory_format=ember.channels_last), ValueError, "mutually exclusive"),
    (dict(dtype=ember.uint8, low=256, high=300), ValueError, r"only supports \[0, 256\)"),
    (dict(dtype=ember.float16, low=1e6, high=1e7), ValueError, "only supports"),
    (dict(dtype="float32"), TypeError, "is not supported by"),
])
def test_make_tensor_errors(kwargs, error, match):
    kwargs = {"dtype": ember.float32, "device": "cpu", **kwargs}
    with pytest.raises(error, match=match):
        make_tensor(2, 3, 4, 5, **kwargs)


@pytest.mark.parametrize("kwargs", [dict(low=2, high=1), dict(dtype="int64", low=2, high=2), dict(low=float("nan")),
                                    dict(dtype="uint8", low=-10, high=-1), dict(dtype="int64", low=2.2, high=2.8),
                                    dict(dtype="int8", requires_grad=True)])
def test_make_tensor_errors_match_torch(kwargs, torch_ref):
    def case(lib):
        options = {"device": "cpu", **kwargs, "dtype": getattr(lib, kwargs.get("dtype", "float32"))}
        lib.testing.make_tensor(3, **options)
    assert _outcome(ember, case) == _outcome(torch_ref, case)
