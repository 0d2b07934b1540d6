"""channels_last semantics of the tensor layer, differentially against PyTorch: the strides and values of every
result (and of the gradients) in both formats, 4-d and 5-d, plus float64 gradchecks on channels_last inputs."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")

SHAPES = {4: (2, 3, 2, 4), 5: (2, 3, 2, 2, 3)}
# (x's layout, y's layout): contiguous, channels_last, a non-dense channels_last slice, a permuted dense layout
PAIRS = [("c", "c"), ("cl", "cl"), ("cl", "c"), ("c", "cl"), ("sliced", "cl"), ("perm", "c")]


def _cl(lib, ndim):
    return lib.channels_last if ndim == 4 else lib.channels_last_3d


def make(lib, ndim, layout, seed=0):
    """The same values in ``lib``, laid out as ``layout``."""
    shape = SHAPES[ndim]
    rng = np.random.RandomState(seed)
    if layout == "sliced":  # every other row of a channels_last tensor twice as tall: not dense
        big = rng.randn(*shape[:2], 2 * shape[2], *shape[3:]).astype(np.float32)
        t = lib.tensor(big).contiguous(memory_format=_cl(lib, ndim))[:, :, ::2]
    else:
        t = lib.tensor(rng.randn(*shape).astype(np.float32))
        if layout == "cl":
            t = t.contiguous(memory_format=_cl(lib, ndim))
        elif layout == "perm":  # dense, W before H in memory
            t = t.transpose(2, 3).contiguous().transpose(2, 3)
    return t


def check_same(expected, got, values=True):
    assert tuple(got.shape) == tuple(expected.shape)
    assert tuple(got.stride()) == tuple(expected.stride()), (tuple(expected.stride()), tuple(got.stride()))
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    if values:
        np.testing.assert_allclose(np.asarray(got.detach().double().numpy()),
                                   expected.detach().double().numpy(), rtol=1e-5, atol=1e-6)


FORWARD = {
    # conversions and copies
    "clone": lambda L, x, y: x.clone(),
    "clone_cl": lambda L, x, y: x.clone(memory_format=_cl(L, x.ndim)),
    "clone_contiguous": lambda L, x, y: x.clone(memory_format=L.contiguous_format),
    "to_cl": lambda L, x, y: x.to(memory_format=_cl(L, x.ndim)),
    "to_dtype_cl": lambda L, x, y: x.to(L.float64, memory_format=_cl(L, x.ndim)),
    "to_contiguous": lambda L, x, y: x.to(memory_format=L.contiguous_format),
    "to_dtype": lambda L, x, y: x.to(L.float64),
    "double": lambda L, x, y: x.double(),
    "int": lambda L, x, y: (x * 4).int(),
    "contiguous_cl": lambda L, x, y: x.contiguous(memory_format=_cl(L, x.ndim)),
    "copy_into": lambda L, x, y: L.zeros_like(y).copy_(x),
    # *_like (values only where defined)
    "zeros_like": lambda L, x, y: L.zeros_like(x),
    "ones_like": lambda L, x, y: L.ones_like(x, dtype=L.float64),
    "full_like": lambda L, x, y: L.full_like(x, 2.5),
    "zeros_like_contiguous": lambda L, x, y: L.zeros_like(x, memory_format=L.contiguous_format),
    "full_like_cl": lambda L, x, y: L.full_like(x, 1.0, memory_format=_cl(L, x.ndim)),
    # elementwise, activations, dropout, where
    "neg": lambda L, x, y: -x,
    "exp": lambda L, x, y: x.exp(),
    "abs_scalar": lambda L, x, y: x.abs() * 2,
    "add": lambda L, x, y: x + y,
    "radd": lambda L, x, y: y + x,
    "mul_broadcast_batch": lambda L, x, y: x * y[:1],
    "add_bias": lambda L, x, y: x + y[0, :, :1, :1],
    "outer_broadcast": lambda L, x, y: x[:, :1] + y[:1],  # no operand of the result's shape
    "gt": lambda L, x, y: x > y,
    "where": lambda L, x, y: L.where(x > 0, x, y),
    "relu": lambda L, x, y: L.relu(x),
    "gelu": lambda L, x, y: L.nn.functional.gelu(x),
    "silu": lambda L, x, y: L.nn.functional.silu(x),
    "sigmoid": lambda L, x, y: L.sigmoid(x),
    "hardtanh": lambda L, x, y: L.nn.functional.hardtanh(x),
    "dropout_eval": lambda L, x, y: L.nn.functional.dropout(x, 0.5, training=False),
    # in-place and out=
    "add_": lambda L, x, y: x.clone().add_(y),
    "mul_broadcast_": lambda L, x, y: x.clone().mul_(y[:1]),
    "out_cl": lambda L, x, y: L.add(x, y, out=L.empty(x.shape).contiguous(memory_format=_cl(L, x.ndim))),
    "out_contiguous": lambda L, x, y: L.mul(x, y, out=L.empty(x.shape)),
    # reductions
    "sum_keepdim_c": lambda L, x, y: x.sum(1, keepdim=True),
    "sum_keepdim_hw": lambda L, x, y: x.sum((2, 3), keepdim=True),
    "mean_keepdim_last": lambda L, x, y: x.mean(-1, keepdim=True),
    "amax_keepdim": lambda L, x, y: x.amax(1, keepdim=True),
    "max_keepdim": lambda L, x, y: x.max(2, keepdim=True)[0],
    "sum": lambda L, x, y: x.sum(1),
    # joins
    "cat0": lambda L, x, y: L.cat([x, y], 0),
    "cat1": lambda L, x, y: L.cat([x, y], 1),
    "cat_last": lambda L, x, y: L.cat([x, y], -1),
    "stack0": lambda L, x, y: L.stack([x, y], 0),
    "stack1": lambda L, x, y: L.stack([x, y], 1),
    "stack_last": lambda L, x, y: L.stack([x, y], -1),
}
UNINITIALISED = {
    "empty_like": lambda L, x: L.empty_like(x),
    "empty_like_cl": lambda L, x: L.empty_like(x, memory_format=_cl(L, x.ndim)),
    "empty_like_contiguous": lambda L, x: L.empty_like(x, memory_format=L.contiguous_format),
    "empty_like_dtype": lambda L, x: L.empty_like(x, dtype=L.float16),
    "rand_like": lambda L, x: L.rand_like(x),
    "randn_like": lambda L, x: L.randn_like(x),
    "randint_like": lambda L, x: L.randint_like(x, 5),
    "empty_cl": lambda L, x: L.empty(tuple(x.shape), memory_format=_cl(L, x.ndim)),
    "empty_contiguous": lambda L, x: L.empty(*x.shape, memory_format=L.contiguous_format),
    "new_empty": lambda L, x: x.new_empty(tuple(x.shape)),
    "new_zeros": lambda L, x: x.new_zeros(tuple(x.shape)),
}


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
@pytest.mark.parametrize("ndim", [4, 5])
@pytest.mark.parametrize("op", list(FORWARD))
def test_forward_strides_and_values_match_torch(op, ndim, pair):
    fn = FORWARD[op]
    expected = fn(torch, make(torch, ndim, pair[0]), make(torch, ndim, pair[1], seed=1))
    got = fn(ember, make(ember, ndim, pair[0]), make(ember, ndim, pair[1], seed=1))
    check_same(expected, got)


@pytest.mark.parametrize("layout", ["c", "cl", "perm", "sliced"])
@pytest.mark.parametrize("ndim", [4, 5])
@pytest.mark.parametrize("op", list(UNINITIALISED))
def test_uninitialised_and_random_like_strides_match_torch(op, ndim, layout):
    fn = UNINITIALISED[op]
    check_same(fn(torch, make(torch, ndim, layout)), fn(ember, make(ember, ndim, layout)), values=False)


@pytest.mark.parametrize("pair", [("c", "c"), ("cl", "cl"), ("sliced", "cl")], ids="-".join)
@pytest.mark.parametrize("ndim", [4, 5])
def test_dropout_keeps_the_format_and_scales(ndim, pair):
    expected = torch.nn.functional.dropout(make(torch, ndim, pair[0]), 0.5, training=True)
    x = make(ember, ndim, pair[0])
    got = ember.nn.functional.dropout(x, 0.5, training=True)
    assert tuple(got.stride()) == tuple(expected.stride())
    kept = got.numpy() != 0
    np.testing.assert_allclose(got.numpy()[kept], 2 * x.numpy()[kept], rtol=1e-6)


def test_to_returns_self_when_already_in_the_format():
    x = ember.randn(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert x.to(memory_format=ember.channels_last) is x
    assert x.to(memory_format=ember.preserve_format) is x
    assert x.is_contiguous(memory_format=ember.channels_last) and not x.is_contiguous()
    y = x.to(memory_format=ember.contiguous_format)
    assert y.is_contiguous() and y is not x


@pytest.mark.parametrize("call", [
    lambda L: L.randn(2, 3, 4).to(memory_format=L.channels_last),
    lambda L: L.randn(2, 3, 4, 5).to(memory_format=L.channels_last_3d),
    lambda L: L.randn(2, 3, 4).contiguous(memory_format=L.channels_last),
    lambda L: L.randn(2, 3, 4).clone(memory_format=L.channels_last),
    lambda L: L.empty(2, 3, memory_format=L.channels_last),
    lambda L: L.empty_like(L.randn(2, 3), memory_format=L.channels_last),
    lambda L: L.empty(2, 3, 4, 5, memory_format=L.preserve_format),
    lambda L: L.nn.Conv3d(2, 2, 2).to(memory_format=L.channels_last),
])
def test_wrong_rank_and_unsupported_formats_raise_torchs_error(call):
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError, match=str(expected.value).split(" (")[0]):
        call(ember)


def test_zeros_takes_no_memory_format_as_in_torch():
    with pytest.raises(TypeError):
        torch.zeros(2, 3, 4, 5, memory_format=torch.channels_last)
    with pytest.raises(TypeError):
        ember.zeros(2, 3, 4, 5, memory_format=ember.channels_last)


@pytest.mark.parametrize("fmt,module", [("channels_last", "conv2d"), ("channels_last_3d", "conv3d")])
def test_module_to_converts_4d_and_5d_parameters_and_buffers(fmt, module):
    def build(L):
        L.manual_seed(0)
        conv = L.nn.Conv2d(3, 4, 3) if module == "conv2d" else L.nn.Conv3d(3, 4, 2)
        net = L.nn.Sequential(conv, L.nn.BatchNorm2d(4) if module == "conv2d" else L.nn.BatchNorm3d(4))
        net[0].register_buffer("mask", L.ones_like(net[0].weight))
        return net.to(L.float64, memory_format=getattr(L, fmt))

    expected, got = build(torch), build(ember)
    for (name, e), g in zip(expected.state_dict().items(), got.state_dict().values()):
        assert tuple(g.stride()) == tuple(e.stride()), name
        assert str(g.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], name


GRADS = {
    "mul": lambda L, x, y: (x * y).sum(),
    "exp": lambda L, x, y: x.exp().sum(),
    "relu": lambda L, x, y: (L.relu(x) * y).sum(),
    "sigmoid": lambda L, x, y: (L.sigmoid(x) * y).sum(),
    "sum": lambda L, x, y: x.sum() + y.mean(),
    "sum_keepdim": lambda L, x, y: (x.sum(1, keepdim=True) * 2).sum(),
    "where": lambda L, x, y: L.where(x > 0, x, y * 3).sum(),
    "cat": lambda L, x, y: (L.cat([x, y], 1) ** 2).sum(),
    "stack": lambda L, x, y: (L.stack([x, y], 1) ** 2).sum(),
    "double": lambda L, x, y: (x.double() * y.double()).sum(),
    "to_cl": lambda L, x, y: (x.to(memory_format=_cl(L, x.ndim)) ** 2).sum(),
}


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
@pytest.mark.parametrize("ndim", [4, 5])
@pytest.mark.parametrize("op", list(GRADS))
def test_gradients_come_back_in_torchs_layout(op, ndim, pair):
    xt, yt = make(torch, ndim, pair[0]), make(torch, ndim, pair[1], seed=1)
    xe, ye = make(ember, ndim, pair[0]), make(ember, ndim, pair[1], seed=1)
    for t in (xt, yt, xe, ye):
        t.requires_grad_(True)
    GRADS[op](torch, xt, yt).backward()
    GRADS[op](ember, xe, ye).backward()
    for expected, got in ((xt, xe), (yt, ye)):
        if expected.grad is None:
            assert got.grad is None
        else:
            check_same(expected.grad, got.grad)


GRADCHECKED = {
    "mul_broadcast": lambda L, x: x * x[:1],
    "exp": lambda L, x: x.exp(),
    "where": lambda L, x: L.where(x > 0, x, -2 * x),
    "sum_keepdim": lambda L, x: x.sum((2, 3), keepdim=True),
    "cat": lambda L, x: L.cat([x, x.contiguous()], 1),
    "to_contiguous": lambda L, x: x.to(memory_format=L.contiguous_format) * 3,
}


@pytest.mark.parametrize("ndim", [4, 5])
@pytest.mark.parametrize("op", list(GRADCHECKED))
def test_gradcheck_on_channels_last_inputs(op, ndim):
    x = ember.tensor(np.random.RandomState(3).randn(1, 2, 2, 2, *(() if ndim == 4 else (2,))) + 0.05)
    x = x.contiguous(memory_format=_cl(ember, ndim)).requires_grad_(True)
    assert gradcheck(lambda t: GRADCHECKED[op](ember, t), (x,))
