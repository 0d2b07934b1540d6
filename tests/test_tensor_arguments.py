"""A non-tensor where a public function takes a tensor is torch's TypeError naming the function and the argument,
not an AttributeError from inside; everything else about the functions is unchanged."""
from __future__ import annotations

import pytest

import ember
import ember.nn.functional as F
from ember.tensor.arguments import tensor_args as guarded


@pytest.mark.parametrize("call, message", [
    (lambda: ember.amax(3), "amax(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda: ember.cumprod([1, 2], 0), "cumprod(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: ember.abs_((1.0,)), "abs_(): argument 'input' (position 1) must be Tensor, not tuple"),
    (lambda: F.cosine_similarity(ember.ones(2), "x"), "argument 'x2' (position 2) must be Tensor, not str"),
    (lambda: ember.diag(input=2.5), "diag(): argument 'input' (position 1) must be Tensor, not float"),
])
def test_non_tensor_arguments_are_type_errors(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert message in str(info.value)


def test_results_and_identities_are_unchanged():
    x = ember.tensor([[1.0, -2.0], [3.0, 0.5]])
    assert ember.amax(x, 1).tolist() == [1.0, 3.0]
    assert ember.selu is F.selu and ember.det is ember.linalg.det and ember.clip is ember.clamp
    assert ember.amax.__name__ == "amax" and ember.amax.__doc__


def test_an_attribute_error_with_tensor_arguments_is_not_rewritten():
    def broken(input: ember.Tensor) -> ember.Tensor:
        return input.no_such_attribute

    with pytest.raises(AttributeError, match="no_such_attribute"):
        guarded(broken)(ember.ones(1))


def test_functions_without_tensor_parameters_are_left_as_they_are():
    def plain(n: int) -> int:
        return n

    assert guarded(plain) is plain


def test_methods_name_the_non_tensor_argument_and_operators_stay_unwrapped():
    x = ember.ones(2, 2)
    with pytest.raises(TypeError, match=r"kron\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        x.kron(3)
    with pytest.raises(TypeError, match=r"index_add\(\): argument 'index' \(position 3\) must be Tensor, not list"):
        x.index_add(0, [0], x)
    # one guarded function for the method and the function (kron's function takes out=, its method does not)
    assert ember.Tensor.masked_fill is ember.masked_fill
    assert not hasattr(ember.Tensor.__matmul__, "__wrapped__") and ember.Tensor.sum.__name__ == "sum"
