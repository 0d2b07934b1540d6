"""Legacy tensor types (FloatTensor & co.), the legacy constructor (Tensor(...), x.new(...)) and x.type()."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

NAMES = ("FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "ByteTensor",
         "CharTensor", "BoolTensor")


def _same_type_and_values(got, want) -> None:
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("args", [([1, 0, 3],), ([[1, 2], [3, 4]],), ((2, 1),), (np.array([1, 0, 2]),)],
                         ids=["list", "nested", "tuple-is-data", "ndarray"])
def test_data_constructor_matches_torch(torch_ref, name, args):
    got, want = getattr(ember, name)(*args), getattr(torch_ref, name)(*args)
    _same_type_and_values(got, want)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("args,kwargs", [((2, 3), {}), ((ember.Size([2, 3]),), {}), ((4,), {}), ((), {}),
                                         ((np.int64(3),), {}), ((), {"size": (2,)}), ((2,), {"device": "cpu"})])
def test_size_constructor_matches_torch(torch_ref, name, args, kwargs):
    targs = tuple(torch_ref.Size(a) if isinstance(a, ember.Size) else a for a in args)
    got, want = getattr(ember, name)(*args, **kwargs), getattr(torch_ref, name)(*targs, **kwargs)
    _same_type_and_values(got, want)


@pytest.mark.parametrize("args,kwargs", [
    (("a",), {}), ((2.5,), {}), ((None,), {}), ((True,), {}), (([1, 2], 3), {}), ((2, 3.0), {}), ((2, [3]), {}),
    ((2,), {"dtype": "float64"}), ((2,), {"foo": 1}),
])
def test_bad_constructor_arguments_raise_torch_error_type(torch_ref, args, kwargs):
    tkwargs = {k: getattr(torch_ref, v) if k == "dtype" else v for k, v in kwargs.items()}
    with pytest.raises(Exception) as want:
        torch_ref.FloatTensor(*args, **tkwargs)
    ekwargs = {k: getattr(ember, v) if k == "dtype" else v for k, v in kwargs.items()}
    with pytest.raises(type(want.value)):
        ember.FloatTensor(*args, **ekwargs)


def test_negative_size_is_runtime_error():
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.FloatTensor(2, -1)


def test_tensor_argument_is_an_alias_of_the_same_type():
    x = ember.tensor([1.0, 2.0])
    y = ember.FloatTensor(x)
    y[0] = 5.0
    assert x[0].item() == 5.0 and y.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match="torch.FloatTensor"):
        ember.FloatTensor(x.double())
    with pytest.raises(RuntimeError, match="not supported"):
        ember.FloatTensor(x, device="cpu")


def test_alias_keeps_the_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (ember.FloatTensor(x) * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_wrong_device_type_is_runtime_error():
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        ember.FloatTensor(2, device="cuda")


def test_isinstance_checks_dtype_and_device():
    x = ember.zeros(2)
    assert isinstance(x, ember.FloatTensor) and isinstance(x, ember.Tensor)
    assert not isinstance(x, ember.DoubleTensor) and not isinstance(x, ember.cuda.FloatTensor)
    assert isinstance(x.long(), ember.LongTensor) and isinstance(x.bool(), ember.BoolTensor)
    assert not isinstance(3.0, ember.FloatTensor) and not isinstance(x.numpy(), ember.FloatTensor)
    assert not issubclass(ember.FloatTensor, ember.Tensor)


def test_type_attributes_and_pickle():
    assert ember.FloatTensor.dtype is ember.float32 and ember.cuda.LongTensor.dtype is ember.int64
    assert ember.cuda.FloatTensor.is_cuda and not ember.FloatTensor.is_cuda and not ember.FloatTensor.is_sparse
    assert ember.FloatTensor.__name__ == "FloatTensor"
    assert pickle.loads(pickle.dumps(ember.cuda.HalfTensor)) is ember.cuda.HalfTensor


def test_cuda_types_without_cuda_raise_type_error():
    if ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(TypeError, match="torch.cuda.FloatTensor not available"):
        ember.cuda.FloatTensor(2)


@pytest.mark.parametrize("name", NAMES)
def test_type_string_matches_torch(torch_ref, name):
    assert getattr(ember, name)([1]).type() == getattr(torch_ref, name)([1]).type() == f"torch.{name}"


@pytest.mark.parametrize("target", ["DoubleTensor", "torch.LongTensor", "float16", "Tensor", "torch.Tensor",
                                    "torch.BoolTensor"])
def test_type_conversion_matches_torch(torch_ref, target):
    def resolve(module):
        if target.startswith("torch."):
            return target
        return getattr(module, target)

    got = ember.tensor([1.5, 0.0]).type(resolve(ember))
    want = torch_ref.tensor([1.5, 0.0]).type(resolve(torch_ref))
    _same_type_and_values(got, want)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_type_returns_self_when_nothing_changes():
    x = ember.zeros(2)
    assert x.type(ember.FloatTensor) is x and x.type(ember.float32) is x and x.type("ember.FloatTensor") is x


@pytest.mark.parametrize("target", ["torch.Foo", "torch.float32", "FloatTensor", int, float, 3])
def test_bad_type_targets_raise_torch_error_type(torch_ref, target):
    with pytest.raises(Exception) as want:
        torch_ref.zeros(2).type(target)
    with pytest.raises(type(want.value)):
        ember.zeros(2).type(target)


def test_tensor_constructor_uses_the_default_dtype():
    assert ember.Tensor(2, 3).shape == (2, 3) and ember.Tensor([1, 2]).dtype is ember.float32
    assert ember.Tensor().shape == (0,)
    x = ember.zeros(2, dtype=ember.int64)
    assert ember.Tensor(x).dtype is ember.int64  # torch.Tensor(t) aliases t whatever its dtype
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.Tensor([1]).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.Tensor("a")


@pytest.mark.parametrize("args", [(2, 3), ([1, 2],), (), (ember.Size([3]),)])
def test_new_matches_torch(torch_ref, args):
    targs = tuple(torch_ref.Size(a) if isinstance(a, ember.Size) else a for a in args)
    got = ember.zeros(1, dtype=ember.float64).new(*args)
    want = torch_ref.zeros(1, dtype=torch_ref.float64).new(*targs)
    _same_type_and_values(got, want)


def test_new_rejects_dtype_keyword_and_other_dtype_tensors():
    x = ember.zeros(1, dtype=ember.float64)
    with pytest.raises(TypeError):
        x.new(2, dtype=ember.float32)
    with pytest.raises(TypeError):
        x.new(ember.zeros(2, dtype=ember.int64))
    assert x.new(x).data_ptr() == x.data_ptr()


def test_new_empty_strided(torch_ref):
    got = ember.zeros(1, dtype=ember.int32).new_empty_strided((2, 3), (1, 2))
    want = torch_ref.zeros(1, dtype=torch_ref.int32).new_empty_strided((2, 3), (1, 2))
    assert got.stride() == want.stride() and got.shape == tuple(want.shape) and got.dtype is ember.int32


def test_set_default_tensor_type(torch_ref):
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type("torch.DoubleTensor")
        assert ember.get_default_dtype() is ember.float64 and ember.tensor([1.0]).dtype is ember.float64
        assert ember.Tensor(1).dtype is ember.float64 and ember.zeros(1).device.type == "cpu"
        with pytest.warns(UserWarning):
            ember.set_default_tensor_type(ember.FloatTensor)
        assert ember.get_default_dtype() is ember.float32
        for bad in (ember.LongTensor, ember.float64):
            with pytest.raises(Exception) as want:
                torch_ref.set_default_tensor_type(getattr(torch_ref, bad.__name__ if isinstance(bad, type)
                                                          else "float64"))
            with pytest.raises(type(want.value)), pytest.warns(UserWarning):
                ember.set_default_tensor_type(bad)
    finally:
        ember.set_default_dtype(ember.float32)
        torch_ref.set_default_dtype(torch_ref.float32)
