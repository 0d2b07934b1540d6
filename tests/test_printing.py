"""ember's tensor repr must be character-for-character PyTorch's (with ember. dtype names)."""
from __future__ import annotations

import math
import types

import numpy as np
import pytest

from ember.tensor import printing
from ember.tensor.printing import get_printoptions, set_printoptions, tensor_repr

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


def _stand_in(array, requires_grad=False, grad_fn_name=None):
    """An object with just the attributes tensor_repr reads, since Tensor is written elsewhere."""
    array = np.asarray(array)
    dtype = types.SimpleNamespace(name=str(array.dtype), is_floating_point=array.dtype.kind == "f")
    grad_fn = None if grad_fn_name is None else types.SimpleNamespace(name=lambda: grad_fn_name)
    return types.SimpleNamespace(
        _array=array, dtype=dtype, requires_grad=requires_grad, grad_fn=grad_fn,
        is_leaf=grad_fn is None, device=types.SimpleNamespace(type="cpu"),
    )


def _from_torch(t):
    """The stand-in holding the same values, dtype and autograd state as a torch tensor."""
    grad_fn_name = None if t.grad_fn is None else type(t.grad_fn).__name__
    return _stand_in(t.detach().numpy(), t.requires_grad, grad_fn_name)


def _torch_repr(t) -> str:
    return repr(t).replace("torch.", "ember.")


def _check(t) -> None:
    assert tensor_repr(_from_torch(t)) == _torch_repr(t)


@pytest.fixture(autouse=True)
def _restore_options():
    """Each test starts from, and leaves behind, the default options in both libraries."""
    torch.set_printoptions(profile="default")
    set_printoptions(profile="default")
    yield
    torch.set_printoptions(profile="default")
    set_printoptions(profile="default")


VALUES = {
    "scalar_float": 3.25,
    "scalar_int_valued": 2.0,
    "scalar_tiny": 1e-8,
    "scalar_huge": 1e10,
    "scalar_neg_zero": -0.0,
    "scalar_nan": math.nan,
    "scalar_ninf": -math.inf,
    "vec_fixed": [0.1, 0.25, -1.5],
    "vec_int_valued": [1.0, -2.0, 300.0],
    "vec_int_valued_wide_range": [1.0, 2000.0],
    "vec_int_valued_big": [1.0, 1e9],
    "vec_neg_zero": [-0.0, 0.0, 1.0],
    "vec_neg_zero_only": [-0.0, 0.0],
    "vec_zeros": [0.0, 0.0, 0.0],
    "vec_small": [1e-8, 2e-8],
    "vec_big": [1e10, 3e10],
    "vec_mixed_sci": [1e-8, 1.0, 1e10, -3.5],
    "vec_ratio_sci": [0.001, 1.5],
    "vec_nan_inf": [math.nan, math.inf, -math.inf, 1.5],
    "vec_nan_inf_ints": [math.nan, math.inf, -math.inf, 2.0],
    "vec_nan_only": [math.nan, math.inf],
    "vec_nan_sci": [math.nan, 1e-9, 3.0],
    "vec_round_up": [9.99999, 0.5],
    "vec_long_wrap": [i * 1.37 for i in range(40)],
    "mat": [[1.5, -2.25], [3.0, 4.125]],
    "mat_wrap": [[i * 0.5 + j * 11.1 for i in range(30)] for j in range(3)],
    "cube": [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.5]]],
    "four_d": np.arange(24, dtype=np.float64).reshape(2, 3, 2, 2).tolist(),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(VALUES))
def test_float_values_match_torch(name, dtype):
    _check(torch.tensor(VALUES[name], dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize(
    "values",
    [5, [1, 2, 3], [[1, 100], [7, 8]], list(range(60)), [[[0, 1]], [[2, 120]]]],
    ids=["scalar", "vec", "mat", "wrap", "cube"],
)
def test_int_dtypes_match_torch(values, dtype):
    _check(torch.tensor(values, dtype=getattr(torch, dtype)))


def test_negative_ints_match_torch():
    _check(torch.tensor([-1000000, 5, -3]))
    _check(torch.tensor([[-7, 8], [9, -10]], dtype=torch.int8))


@pytest.mark.parametrize(
    "values", [True, [True, False], [[True], [False]], [True] * 30], ids=["scalar", "vec", "mat", "wrap"]
)
def test_bool_matches_torch(values):
    _check(torch.tensor(values))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (1, 0, 4), (3, 0, 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "float16"])
def test_empty_matches_torch(shape, dtype):
    _check(torch.zeros(shape, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize(
    "shape", [(2000,), (40, 40), (1001,), (10, 10, 11), (2, 600), (600, 2), (7, 7, 7, 7)]
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_summarized_matches_torch(shape, dtype):
    values = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
    if dtype == "bool":
        t = values.remainder(3) == 0
    elif dtype == "int64":
        t = values.to(torch.int64) - 500
    else:
        t = (values * 0.731 - 400).to(getattr(torch, dtype))
    _check(t)


def test_summary_uses_only_shown_values_for_format():
    """A huge value hidden in the middle must not switch the shown ones to sci notation."""
    t = torch.ones(2000)
    t[1000] = 1e20
    _check(t)
    _check(torch.linspace(-1, 1, 5000).reshape(50, 100))


def test_non_contiguous_array():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    stand_in = _stand_in(array.T[::-1])
    assert tensor_repr(stand_in) == _torch_repr(torch.tensor(np.ascontiguousarray(array.T[::-1])))


def test_requires_grad_and_grad_fn_match_torch():
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    _check(leaf)
    _check(leaf + 1)
    _check((leaf * 2).sum())
    _check(torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True))
    _check(torch.zeros(0, 3, requires_grad=True))
    _check(torch.arange(50, dtype=torch.float64, requires_grad=True) * 1.5)


def test_suffix_wraps_onto_new_line_like_torch():
    for n in range(1, 14):
        _check(torch.arange(n, dtype=torch.float64, requires_grad=True) * 1.125)
        _check(torch.arange(n, dtype=torch.int16))
        _check(torch.arange(n, dtype=torch.float16, requires_grad=True))


def test_grad_fn_name_is_taken_from_the_node():
    assert tensor_repr(_stand_in(np.float32(2.0), True, "MulBackward0")) == "tensor(2., grad_fn=<MulBackward0>)"


@pytest.mark.parametrize(
    "options",
    [
        {"precision": 2},
        {"precision": 8},
        {"precision": 0},
        {"sci_mode": True},
        {"sci_mode": False},
        {"precision": 1, "sci_mode": True},
        {"linewidth": 40},
        {"linewidth": 200},
        {"threshold": 10},
        {"threshold": 10, "edgeitems": 1},
        {"threshold": 10, "edgeitems": 0},
        {"profile": "short"},
        {"profile": "full"},
        {"profile": "full", "precision": 6},
    ],
    ids=repr,
)
def test_print_options_match_torch(options):
    torch.set_printoptions(**options)
    set_printoptions(**options)
    cases = [
        torch.tensor(3.14159),
        torch.tensor([0.1, 1.0, 123.456, -7.5]),
        torch.tensor([1e-8, 1e10, 0.5]),
        torch.tensor([1.0, 2.0, 0.0]),
        torch.tensor([0.0, -0.0]),
        torch.tensor([math.nan, 2.5]),
        torch.arange(30, dtype=torch.float64).reshape(5, 6) / 7,
        torch.arange(2000, dtype=torch.float32),
        torch.arange(100).reshape(4, 5, 5),
        torch.tensor([True, False] * 20),
        torch.arange(20, dtype=torch.int32, requires_grad=False),
    ]
    for t in cases:
        _check(t)


def test_printoptions_roundtrip_and_profiles():
    assert get_printoptions() == torch._tensor_str.get_printoptions()
    assert get_printoptions() == {
        "precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None,
    }
    set_printoptions(profile="short", linewidth=50, sci_mode=True)
    assert get_printoptions() == {
        "precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 50, "sci_mode": True,
    }
    saved = get_printoptions()
    set_printoptions(precision=7)
    assert get_printoptions()["sci_mode"] is None  # sci_mode is reset whenever it is omitted
    set_printoptions(**saved)
    assert get_printoptions() == saved
    set_printoptions(profile="full")
    assert get_printoptions()["threshold"] == math.inf


def test_non_default_float_dtype(monkeypatch):
    """With float64 as the default, float64 goes unnamed and float32 gets named."""
    monkeypatch.setattr(printing, "get_default_dtype", lambda: types.SimpleNamespace(name="float64"))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for t in [torch.tensor([1.5, 2.0]), torch.tensor([1.5], dtype=torch.float32), torch.zeros(0),
                  torch.zeros(0, dtype=torch.float32), torch.tensor([3])]:
            _check(t)
    finally:
        torch.set_default_dtype(previous)


_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(min_value=-1e3, max_value=1e3, width=32),
    st.integers(-1000, 1000).map(float),
    st.sampled_from([0.0, -0.0, 1e-5, 1e-4, 1e8, 1.5e8, 999.0, 1000.0, 0.0001]),
)


@settings(max_examples=300, deadline=None)
@given(
    hnp.arrays(
        dtype=np.float64,
        shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6),
        elements=_FLOATS,
    ),
    st.sampled_from([np.float32, np.float64, np.float16]),
)
def test_random_float_arrays_match_torch(array, dtype):
    with np.errstate(over="ignore"):
        _check(torch.from_numpy(array.astype(dtype)))


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([np.int64, np.int32, np.int8, np.uint8, np.bool_]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=8),
    )
)
def test_random_int_and_bool_arrays_match_torch(array):
    _check(torch.from_numpy(array))


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(
        dtype=np.float64,
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=9),
        elements=_FLOATS,
    ),
    st.fixed_dictionaries({
        "precision": st.integers(0, 8),
        "threshold": st.integers(0, 40),
        "edgeitems": st.integers(0, 4),
        "linewidth": st.integers(1, 120),
        "sci_mode": st.sampled_from([None, True, False]),
    }),
)
def test_random_print_options_match_torch(array, options):
    torch.set_printoptions(**options)
    set_printoptions(**options)
    try:
        _check(torch.from_numpy(array))
        _check(torch.from_numpy(array).to(torch.float32).requires_grad_())
        _check(torch.from_numpy(array).nan_to_num().to(torch.int32))
    finally:
        torch.set_printoptions(profile="default")
        set_printoptions(profile="default")
