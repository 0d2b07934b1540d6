"""torch's ``out=`` keyword: results land in the given tensor, which is returned; misuse raises."""
import numpy as np
import pytest

import ember


def test_out_receives_result_and_is_returned():
    a = ember.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=ember.float64)
    out = ember.empty(2, 2, dtype=ember.float64)
    result = ember.linalg.inv(a, out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), np.linalg.inv(a.numpy()))


def test_empty_out_is_resized_and_tuple_out_keeps_named_fields():
    out = ember.empty(0)
    ember.ones(2, 3, out=out)
    assert out.shape == (2, 3) and out.sum().item() == 6
    a = ember.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=ember.float64)
    q, r = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64)
    result = ember.linalg.qr(a, out=(q, r))
    assert result.Q is q and result.R is r
    np.testing.assert_allclose((q @ r).numpy(), a.numpy())


def test_out_errors():
    a = ember.eye(2, dtype=ember.float64)
    wrong_shape = ember.empty(3, dtype=ember.float64)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):  # torch 2.x resizes
        assert ember.linalg.inv(a, out=wrong_shape) is wrong_shape and wrong_shape.shape == (2, 2)
    with pytest.raises(RuntimeError, match="dtype"):
        ember.linalg.inv(a, out=ember.empty(2, 2))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.linalg.det(a.clone().requires_grad_(), out=ember.empty(()))
