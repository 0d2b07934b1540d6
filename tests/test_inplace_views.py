"""In-place view ops (unsqueeze_, squeeze_, t_, transpose_, swapdims_, swapaxes_, as_strided_), resize_,
resize_as_ and set_: the tensor object itself changes shape, strides or storage, as in torch."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OPS = {
    "unsqueeze_": ((1,), (1, 2, 1, 3)),
    "squeeze_": ((), (1, 2, 1, 3)),
    "squeeze_dim": ((0,), (1, 2, 1, 3)),
    "squeeze_tuple": (((0, 2),), (1, 2, 1, 3)),
    "squeeze_negative": ((-2,), (1, 2, 1, 3)),
    "t_": ((), (2, 3)),
    "t_1d": ((), (3,)),
    "transpose_": ((0, 2), (2, 3, 4)),
    "swapdims_": ((1, -1), (2, 3, 4)),
    "swapaxes_": ((0, 1), (2, 3, 4)),
    "as_strided_": (((2, 2), (1, 2), 1), (6,)),
}


def _method(name: str) -> str:
    return name if name.endswith("_") else name.rsplit("_", 1)[0] + "_"


@pytest.mark.parametrize("name", sorted(OPS))
def test_the_same_object_takes_torch_s_shape_and_strides(name):
    args, shape = OPS[name]
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    e, t = ember.tensor(data), torch.tensor(data)
    before = e.data_ptr()
    assert getattr(e, _method(name))(*args) is e
    getattr(t, _method(name))(*args)
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e._version_value == t._version == 1
    assert e.data_ptr() - before == t.storage_offset() * 4  # no copy: the same storage


def test_a_view_stays_a_view_of_its_base_and_writes_through():
    base = ember.zeros(2, 3)
    v = base[:, 1:]
    v.t_()
    v.unsqueeze_(0)
    assert v.shape == (1, 2, 2) and v._base is base
    v.fill_(5.0)
    np.testing.assert_array_equal(base.numpy(), [[0, 5, 5], [0, 5, 5]])


def test_leaves_that_require_grad_refuse_outside_no_grad():
    a = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        a.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a[:2].t_()
    with ember.no_grad():
        a.unsqueeze_(0)
    assert a.shape == (1, 3) and a.requires_grad


def test_errors_are_torch_s():
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        ember.zeros(1, 2, 3).t_()
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ember.zeros(1, 2).squeeze_((0, 0))
    for call in (lambda: ember.zeros(2).unsqueeze_(3), lambda: ember.zeros(2).squeeze_(3),
                 lambda: ember.zeros(2).transpose_(0, 3)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            call()
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
        ember.arange(6.0).as_strided_((2, 2), (3, 3), 1)


def _graph(lib, steps):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return a, steps(lib, a * 2)


def _non_leaf(lib, c):
    c.unsqueeze_(0)
    c.t_()
    return (c * lib.tensor([[1.0], [2.0], [3.0]])).sum()


def _through_a_view(lib, c):
    v = c[:2]
    v.unsqueeze_(0)
    v.transpose_(0, 1)
    v.mul_(lib.tensor([[10.0], [100.0]]))  # an in-place op on the reshaped view rebases c's history
    return (c * lib.tensor([1.0, 2.0, 3.0])).sum() + (v * v).sum()


@pytest.mark.parametrize("steps", [_non_leaf, _through_a_view])
def test_gradients_flow_through_in_place_view_ops_as_in_torch(steps):
    (ae, le), (at, lt) = _graph(ember, steps), _graph(torch, steps)
    np.testing.assert_allclose(le.item(), lt.item())
    le.backward()
    lt.backward()
    np.testing.assert_allclose(ae.grad.numpy(), at.grad.numpy())


def test_a_tensor_saved_for_backward_then_reshaped_in_place_is_caught():
    x = ember.ones(3, requires_grad=True) * 1
    y = x.sin()
    x.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# -------------------------------------------------------------------------------------------- resize_
@pytest.mark.parametrize("steps", [
    [(4,)], [(10,)], [(2, 2)], [(0,)], [(3, 2), (2, 2)], [(2, 3), (1, 2, 2, 2)],
])
@pytest.mark.parametrize("start", ["slice", "transposed", "plain"])
def test_resize_keeps_storage_order_and_grows_like_torch(start, steps):
    def begin(lib):
        x = lib.arange(6.0)
        return {"slice": x[1:3], "transposed": x.view(2, 3).t(), "plain": x}[start]

    e, t = begin(ember), begin(torch)
    for size in steps:
        assert e.resize_(*size) is e
        t.resize_(*size)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        assert e.storage_offset() == t.storage_offset()
        known = min(t.numel(), 6 - t.storage_offset())  # the storage's old elements (the rest is uninitialised)
        expected = t.detach().clone().numpy()  # (numpy() of t itself would pin its storage: no more resizing)
        np.testing.assert_array_equal(e.numpy().reshape(-1)[:known], expected.reshape(-1)[:known])


def test_resize_within_the_storage_shares_it_and_growing_keeps_values():
    base = ember.arange(6.0)
    v = base[1:3]
    v.resize_(4)
    v.fill_(-1.0)
    np.testing.assert_array_equal(base.numpy(), [0, -1, -1, -1, -1, 5])
    v.resize_(20)
    np.testing.assert_array_equal(v.numpy()[:5], [-1, -1, -1, -1, 5])
    assert v.shape == (20,) and v.storage_offset() == 1


def test_resize_memory_format_resize_as_and_errors():
    x = ember.zeros(2)
    assert x.resize_(1, 2, 2, 2, memory_format=ember.channels_last).stride() == \
        torch.zeros(2).resize_(1, 2, 2, 2, memory_format=torch.channels_last).stride()
    y = ember.zeros(2).resize_as_(ember.ones(3, 3))
    assert y.shape == (3, 3) and y.is_contiguous()
    version = y._version_value
    y.resize_((2, 2))
    assert y._version_value == version + 1
    a = ember.ones(3, requires_grad=True)
    for call in (lambda: a.resize_(2), lambda: (a * 2).resize_(3)):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            call()
    with ember.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        a.resize_(2)
    with pytest.raises(RuntimeError, match="Unsupported memory format"):
        ember.zeros(2).resize_(2, memory_format=ember.preserve_format)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(2).resize_(2, -1)


# -------------------------------------------------------------------------------------------- set_
def test_set_shares_the_source_storage():
    for lib in (ember, torch):
        src = lib.arange(6.0)
        x = lib.ones(2)
        assert x.set_(src) is x
        x.add_(1)
        np.testing.assert_array_equal(src.numpy(), np.arange(1.0, 7.0))
        y = lib.ones(2)
        y.set_(src, 1, (2, 2), (2, 1))
        np.testing.assert_array_equal(y.numpy(), [[2, 3], [4, 5]])
        assert y.stride() == (2, 1) and y.storage_offset() == 1
        z = lib.ones(2).set_(src, 0, (2, 3))
        assert z.stride() == (3, 1)
        empty = lib.ones(2).set_()
        assert empty.shape == (0,) and empty._version == 1 if lib is torch else empty._version_value == 1


def test_set_errors_and_its_missing_derivative():
    with pytest.raises(RuntimeError, match="Could not set tensor of type double to a tensor of type float"):
        ember.ones(2).set_(ember.ones(2, dtype=ember.float64))
    a = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        a.set_(ember.ones(2))
    b = a * 2
    b.set_(ember.ones(2))
    with pytest.raises(RuntimeError, match="the derivative for 'set_' is not implemented"):
        b.sum().backward()
