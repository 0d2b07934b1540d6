"""Normalization layers and distances: values, gradients and running statistics against torch, finite
differences (gradcheck/gradgradcheck) and NumPy; error types; modules."""
from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def _arrays(shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [None if s is None else rng.standard_normal(s).astype(dtype) for s in shapes]


def _compare(torch, ours, theirs, shapes, *, dtype=np.float64, rtol=1e-10, atol=1e-12, seed=0):
    """Run ``ours(ember, *inputs)`` and ``theirs(torch, *inputs)`` on the same inputs (None stays None); compare
    values and the gradients of a weighted sum for every input."""
    arrays = _arrays(shapes, seed, dtype)
    mine = [None if a is None else ember.tensor(a, requires_grad=True) for a in arrays]
    ref = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    y, y_ref = ours(ember, *mine), theirs(torch, *ref)
    assert y.dtype.name == str(y_ref.dtype).split(".")[-1]
    assert tuple(y.shape) == tuple(y_ref.shape)
    np.testing.assert_allclose(y.detach().numpy(), y_ref.detach().numpy(), rtol=rtol, atol=atol)
    w = np.random.default_rng(seed + 1).standard_normal(tuple(y_ref.shape)).astype(dtype)
    (y * ember.tensor(w)).sum().backward()
    (y_ref * torch.tensor(w)).sum().backward()
    for a, b in zip(mine, ref):
        if b is not None and b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


def _fn(name):
    """Call ``F.<name>`` for ember and ``torch.nn.functional.<name>`` for torch."""
    return lambda lib, *args, **kw: getattr(lib.nn.functional, name)(*args, **kw)


# ----------------------------------------------------------------------------- layer norm
@pytest.mark.parametrize("shape,normalized", [((3, 5), (5,)), ((2, 3, 4), (3, 4)), ((4,), (4,)), ((2, 1, 3), (1, 3))])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_matches_torch(torch_ref, shape, normalized, affine):
    wshape = normalized if affine != "none" else None
    bshape = normalized if affine == "both" else None
    f = lambda lib, x, w, b: lib.nn.functional.layer_norm(x, normalized, w, b, eps=1e-3)  # noqa: E731
    _compare(torch_ref, f, f, [shape, wshape, bshape])


def test_layer_norm_float32_and_noncontiguous(torch_ref):
    x = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)
    ours = F.layer_norm(ember.tensor(x).t(), (6,))
    theirs = torch_ref.nn.functional.layer_norm(torch_ref.tensor(x).t(), (6,))
    assert ours.dtype is ember.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), k=st.integers(1, 3), seed=st.integers(0, 99))
def test_layer_norm_matches_numpy(shape, k, seed):
    k = min(k, len(shape))
    x = np.random.default_rng(seed).standard_normal(shape)
    axes = tuple(range(len(shape) - k, len(shape)))
    expected = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    got = F.layer_norm(ember.tensor(x), tuple(shape[-k:])).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_layer_norm_gradcheck_and_gradgradcheck():
    x, w, b = (ember.tensor(a, requires_grad=True) for a in _arrays([(3, 4), (4,), (4,)], seed=5))
    f = lambda x, w, b: F.layer_norm(x, (4,), w, b)  # noqa: E731
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


# ----------------------------------------------------------------------------- group norm
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((2, 4, 2, 3), 1), ((3, 4), 4), ((2, 4, 5), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_matches_torch(torch_ref, shape, groups, affine):
    c = shape[1]
    f = lambda lib, x, w, b: lib.nn.functional.group_norm(x, groups, w, b, eps=1e-4)  # noqa: E731
    _compare(torch_ref, f, f, [shape, (c,) if affine else None, (c,) if affine else None])


def test_group_norm_gradcheck_and_gradgradcheck():
    x, w, b = (ember.tensor(a, requires_grad=True) for a in _arrays([(2, 4, 3), (4,), (4,)], seed=6))
    f = lambda x, w, b: F.group_norm(x, 2, w, b)  # noqa: E731
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("shape, groups", [((1, 1), 1), ((1, 3), 3), ((1, 3, 1), 3), ((1, 3), 2), ((1, 4), 4)])
def test_group_norm_needs_more_than_one_value_per_group(torch_ref, shape, groups):
    """torch checks (N * C // G) * prod(spatial) > 1 before divisibility, naming that per-group size."""
    with pytest.raises(ValueError) as theirs:
        torch_ref.nn.functional.group_norm(torch_ref.ones(shape), groups)
    with pytest.raises(ValueError) as ours:
        F.group_norm(ember.ones(shape), groups)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("row", [[1e20, 0.5, -0.3, 1.2], [1e20, -1e20], [1e20, -1e20, 0.5, 2.0], [1e19, 2.0, 3.0],
                                 [0.5, np.nan, 1.0], [1.0, np.inf, 2.0], [np.inf, -np.inf], [1e200, 3.0]])
@pytest.mark.parametrize("norm", ["group_norm", "layer_norm"])
def test_row_norms_of_nan_inf_and_huge_values_follow_torch(torch_ref, dtype, row, norm):
    """torch's statistics are E[x^2] - E[x]^2 in the data dtype: past its range the row is NaN or (var = inf) 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 1e200 is inf in float32
        x = np.array([row, [0.25, -1.0] + [0.5] * (len(row) - 2)], dtype=dtype)

    def call(lib, t):
        f = lib.nn.functional
        return f.group_norm(t.unsqueeze(1), 1) if norm == "group_norm" else f.layer_norm(t, [len(row)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = call(ember, ember.tensor(x)).numpy().reshape(x.shape)
    theirs = call(torch_ref, torch_ref.tensor(x)).numpy().reshape(x.shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, equal_nan=True)


# ----------------------------------------------------------------------------- batch norm
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2), (2, 3, 2, 2), (2, 2, 2, 1, 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_torch(torch_ref, shape, affine):
    c = shape[1]
    f = lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=1e-3)  # noqa
    _compare(torch_ref, f, f, [shape, (c,) if affine else None, (c,) if affine else None])


def test_batch_norm_eval_matches_torch(torch_ref):
    rm, rv = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.2, 3.0])

    def f(lib, x, w, b):
        return lib.nn.functional.batch_norm(x, lib.tensor(rm), lib.tensor(rv), w, b, training=False, eps=1e-2)
    _compare(torch_ref, f, f, [(4, 3, 2), (3,), (3,)])


@pytest.mark.parametrize("momentum", [0.1, 0.7])
def test_batch_norm_running_stats_match_torch(torch_ref, momentum):
    x = _arrays([(6, 3, 4)], seed=2, dtype=np.float32)[0] * 3 + 1
    stats = {lib: (lib.zeros(3), lib.ones(3)) for lib in (ember, torch_ref)}
    for lib, (rm, rv) in stats.items():
        lib.nn.functional.batch_norm(lib.tensor(x), rm, rv, training=True, momentum=momentum)
        lib.nn.functional.batch_norm(lib.tensor(x[:3]), rm, rv, training=True, momentum=momentum)
    for ours, theirs in zip(stats[ember], stats[torch_ref]):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_batch_norm_updates_expanded_running_stats(torch_ref):
    """An expanded (zero-stride) running buffer is written without torch's overlap check, channel after channel (the
    value torch's loop gives when its threads do not race); the output is torch's and the buffer's version moves."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    outs = [lib.nn.functional.batch_norm(lib.tensor(x), lib.tensor([0.5]).expand(3), lib.tensor([2.0]).expand(3),
                                         training=True).numpy() for lib in (ember, torch_ref)]
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)
    rm, rv = ember.tensor([0.5]).expand(3), ember.tensor([2.0]).expand(3)
    before = rm._version_value
    F.batch_norm(ember.tensor(x), rm, rv, training=True)
    assert rm._version_value > before
    expected_mean, expected_var = 0.5, 2.0
    for mean, var in zip(x.mean(0), x.var(0, ddof=1)):
        expected_mean, expected_var = 0.1 * mean + 0.9 * expected_mean, 0.1 * var + 0.9 * expected_var
    np.testing.assert_allclose(rm.numpy(), [expected_mean] * 3, rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), [expected_var] * 3, rtol=1e-6)
    with pytest.raises(ValueError, match="running_mean and running_var must either both be None or neither be None"):
        F.batch_norm(ember.tensor(x), rm, None, training=True)


def test_batch_norm_gradcheck_and_gradgradcheck():
    x, w, b = (ember.tensor(a, requires_grad=True) for a in _arrays([(4, 3), (3,), (3,)], seed=7))
    f = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_batch_norm_empty_batch_leaves_running_stats():
    rm, rv = ember.zeros(3), ember.ones(3)
    x = ember.zeros(0, 3, requires_grad=True)
    y = F.batch_norm(x, rm, rv, training=True)
    assert tuple(y.shape) == (0, 3)
    assert rm.numpy().tolist() == [0, 0, 0] and rv.numpy().tolist() == [1, 1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3)


@pytest.mark.parametrize("fn", ["layer", "group", "batch", "instance"])
def test_constant_input_is_stable(torch_ref, fn):
    """Zero variance: output is the bias, gradients are finite and match torch."""
    calls = {
        "layer": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (3,), w, b),
        "group": lambda lib, x, w, b: lib.nn.functional.group_norm(x, 3, w, b),
        "batch": lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True),
        "instance": lambda lib, x, w, b: lib.nn.functional.instance_norm(x.unsqueeze(-1).expand(4, 3, 2), weight=w,
                                                                         bias=b),
    }
    results = []
    for lib in (ember, torch_ref):
        x = lib.full((4, 3), 7.25, dtype=lib.float64, requires_grad=True)
        w = lib.tensor([1.0, 2.0, -1.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([0.5, 0.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = calls[fn](lib, x, w, b)
        (y * lib.arange(y.numel(), dtype=lib.float64).reshape(y.shape)).sum().backward()
        results.append([t.detach().numpy() for t in (y, x.grad, w.grad, b.grad)])
    for ours, theirs in zip(*results):
        assert np.isfinite(ours).all()
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fn", ["layer", "batch", "group"])
def test_float16_is_computed_in_float32(fn):
    x = _arrays([(4, 6)], seed=4, dtype=np.float32)[0] * 10 + 100
    call = {"layer": lambda x: F.layer_norm(x, (6,)),
            "batch": lambda x: F.batch_norm(x, None, None, training=True),
            "group": lambda x: F.group_norm(x, 2)}[fn]
    half = ember.tensor(x).half().requires_grad_()
    y = call(half)
    assert y.dtype is ember.float16
    reference = call(half.detach().float())
    np.testing.assert_allclose(y.detach().float().numpy(), reference.numpy(), rtol=2e-3, atol=2e-3)
    y.float().sum().backward()
    assert half.grad.dtype is ember.float16 and np.isfinite(half.grad.float().numpy()).all()


@pytest.mark.skipif(numba.get_num_threads() < 2, reason="parallel kernels run only with more than one thread")
def test_parallel_kernels_match_torch(torch_ref):
    """Inputs above the parallel threshold take the prange kernels."""
    f_ln = lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (1024,), w, b)  # noqa: E731
    _compare(torch_ref, f_ln, f_ln, [(70, 1024), (1024,), (1024,)], dtype=np.float32, rtol=1e-4, atol=1e-4)
    f_bn = lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    _compare(torch_ref, f_bn, f_bn, [(64, 8, 130), (8,), (8,)], dtype=np.float32, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- instance norm
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 2, 3)])
def test_instance_norm_matches_torch(torch_ref, shape):
    f = lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b, eps=1e-3)  # noqa: E731
    _compare(torch_ref, f, f, [shape, (3,), (3,)])


def test_instance_norm_running_stats_and_eval_match_torch(torch_ref):
    x = _arrays([(3, 2, 5)], seed=9)[0] * 2 + 1
    results = []
    for lib in (ember, torch_ref):
        rm, rv = lib.zeros(2, dtype=lib.float64), lib.ones(2, dtype=lib.float64)
        lib.nn.functional.instance_norm(lib.tensor(x), rm, rv, momentum=0.4)
        y = lib.nn.functional.instance_norm(lib.tensor(x), rm, rv, use_input_stats=False)
        results.append([rm.numpy(), rv.numpy(), y.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_instance_norm_gradcheck():
    x, w, b = (ember.tensor(a, requires_grad=True) for a in _arrays([(2, 2, 3), (2,), (2,)], seed=8))
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))


# ----------------------------------------------------------------------------- rms norm, LRN, normalize
@pytest.mark.parametrize("eps", [None, 1e-2])
@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm_matches_torch(torch_ref, eps, weighted):
    f = lambda lib, x, w: lib.nn.functional.rms_norm(x, (3, 4), w, eps)  # noqa: E731
    _compare(torch_ref, f, f, [(2, 3, 4), (3, 4) if weighted else None])


def test_rms_norm_default_eps_is_compute_dtype_eps(torch_ref):
    x = np.array([[1e-3, 2e-3, -1e-3]], dtype=np.float16)
    ours = F.rms_norm(ember.tensor(x), (3,))
    theirs = torch_ref.nn.functional.rms_norm(torch_ref.tensor(x), (3,))
    assert ours.dtype is ember.float16
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-3)


@pytest.mark.parametrize("shape,size", [((2, 5, 3), 3), ((2, 5, 3), 2), ((1, 4, 2, 3), 5), ((2, 3, 2, 1, 2), 1)])
def test_local_response_norm_matches_torch(torch_ref, shape, size):
    f = lambda lib, x: lib.nn.functional.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5)  # noqa: E731
    _compare(torch_ref, f, f, [shape])


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, -1), (3.0, 0)])
def test_normalize_matches_torch(torch_ref, p, dim):
    f = lambda lib, x: lib.nn.functional.normalize(x, p=p, dim=dim)  # noqa: E731
    _compare(torch_ref, f, f, [(3, 4)])


def test_normalize_zero_rows_stay_zero():
    assert not F.normalize(ember.zeros(2, 3)).numpy().any()


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call,error,match", [
    (lambda: F.layer_norm(ember.zeros(4, 3), (4,)), RuntimeError, r"expected input with shape \[\*, 4\]"),
    (lambda: F.layer_norm(ember.zeros(4, 3), (3,), ember.ones(4)), RuntimeError, "weight of shape"),
    (lambda: F.layer_norm(ember.zeros(4, 3), 3), TypeError, "tuple of ints"),
    (lambda: F.layer_norm(ember.zeros(4, 3), ()), RuntimeError, "at least 1-dimensional"),
    (lambda: F.layer_norm(ember.zeros(4, 3, dtype=ember.float64), (3,), ember.ones(3)), RuntimeError, "mixed dtype"),
    (lambda: F.group_norm(ember.zeros(2, 6, 3), 4), RuntimeError, "divisible by num_groups"),
    (lambda: F.group_norm(ember.zeros(6), 3), RuntimeError, "at least 2 dimensions"),
    (lambda: F.group_norm(ember.zeros(2, 6), 3, ember.ones(3)), RuntimeError, "number of channels"),
    (lambda: F.batch_norm(ember.zeros(4, 3), None, None), RuntimeError, "running_mean must be defined"),
    (lambda: F.batch_norm(ember.zeros(4, 3), ember.zeros(4), ember.ones(4)), RuntimeError, "contain 3 elements"),
    (lambda: F.batch_norm(ember.zeros(1, 3), None, None, training=True), ValueError, "more than 1 value"),
    (lambda: F.instance_norm(ember.zeros(2, 3, 1)), ValueError, "more than 1 spatial element"),
    (lambda: F.instance_norm(ember.zeros(2, 3, 4), use_input_stats=False), RuntimeError, "to be defined"),
    (lambda: F.rms_norm(ember.zeros(4, 3), (4,)), RuntimeError, r"expected input with shape \[\*4\]"),
    (lambda: F.local_response_norm(ember.zeros(2, 3), 2), ValueError, "3D or higher"),
])
def test_errors_like_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- modules
def _copy_params(mine, theirs):
    mine.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("BatchNorm1d", (3,), {}, (4, 3)),
    ("BatchNorm1d", (3,), {"momentum": None}, (4, 3, 5)),
    ("BatchNorm2d", (3,), {"affine": False}, (2, 3, 2, 2)),
    ("BatchNorm2d", (3,), {"track_running_stats": False}, (2, 3, 2, 2)),
    ("BatchNorm3d", (2,), {"bias": False}, (2, 2, 2, 1, 2)),
    ("InstanceNorm1d", (3,), {"affine": True, "track_running_stats": True}, (2, 3, 4)),
    ("InstanceNorm2d", (3,), {}, (3, 2, 4)),
    ("InstanceNorm3d", (2,), {}, (2, 2, 2, 2, 2)),
])
def test_running_stat_modules_match_torch(torch_ref, name, args, kwargs, shape):
    """Three training steps then eval: outputs, running stats, num_batches_tracked and repr match torch."""
    mine, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch_ref.nn, name)(*args, **kwargs)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    for step in range(3):
        x = _arrays([shape], seed=step, dtype=np.float32)[0] * (step + 1)
        np.testing.assert_allclose(mine(ember.tensor(x)).detach().numpy(),
                                   theirs(torch_ref.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    mine.eval(), theirs.eval()
    np.testing.assert_allclose(mine(ember.tensor(x)).detach().numpy(), theirs(torch_ref.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    for (key, ours), (_, ref) in zip(mine.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6, err_msg=key)


def test_batch_norm_module_loads_torch_state_dict(torch_ref):
    theirs = torch_ref.nn.BatchNorm1d(3)
    theirs(torch_ref.randn(8, 3) * 2 + 1)
    theirs.eval()
    mine = nn.BatchNorm1d(3)
    _copy_params(mine, theirs)
    mine.eval()
    x = _arrays([(4, 3)], dtype=np.float32)[0]
    np.testing.assert_allclose(mine(ember.tensor(x)).detach().numpy(), theirs(torch_ref.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    assert int(mine.num_batches_tracked.item()) == 1


@pytest.mark.parametrize("module,shape", [(nn.BatchNorm1d(3), (2, 3, 4, 5)), (nn.BatchNorm2d(3), (2, 3, 4)),
                                          (nn.BatchNorm3d(3), (2, 3, 4, 5)), (nn.InstanceNorm1d(3), (2, 3, 4, 5))])
def test_norm_modules_check_input_dims(module, shape):
    with pytest.raises(ValueError, match=f"got {len(shape)}D input"):
        module(ember.zeros(*shape))


def test_instance_norm_feature_mismatch():
    with pytest.raises(ValueError, match="match num_features"):
        nn.InstanceNorm1d(4, affine=True)(ember.zeros(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(ember.randn(2, 3, 5))


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("LayerNorm", ((3, 4),), {}, (2, 3, 4)),
    ("LayerNorm", (4,), {"bias": False}, (2, 3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False, "eps": 1e-3}, (2, 4)),
    ("GroupNorm", (2, 4), {}, (2, 4, 3)),
    ("GroupNorm", (4, 4), {"affine": False}, (2, 4, 3, 2)),
    ("RMSNorm", (4,), {}, (3, 4)),
    ("RMSNorm", ([2, 4],), {"eps": 1e-3, "elementwise_affine": False}, (3, 2, 4)),
    ("LocalResponseNorm", (3,), {"alpha": 0.1}, (2, 5, 3)),
])
def test_parametrised_modules_match_torch(torch_ref, name, args, kwargs, shape):
    mine, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch_ref.nn, name)(*args, **kwargs)
    assert repr(mine) == repr(theirs)
    for p in theirs.parameters():  # non-trivial affine values
        p.data.uniform_(0.5, 1.5)
    _copy_params(mine, theirs)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    x = _arrays([shape], dtype=np.float32)[0]
    np.testing.assert_allclose(mine(ember.tensor(x)).detach().numpy(), theirs(torch_ref.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_group_norm_module_checks_divisibility():
    with pytest.raises(ValueError, match="must be divisible"):
        nn.GroupNorm(3, 4)


def test_norm_module_defaults():
    bn = nn.BatchNorm2d(4)
    assert bn.weight.tolist() == [1, 1, 1, 1] and bn.bias.tolist() == [0, 0, 0, 0]
    assert bn.num_batches_tracked.dtype is ember.int64
    ln = nn.LayerNorm(3)
    assert ln.weight.requires_grad and ln.normalized_shape == (3,)
    assert nn.InstanceNorm2d(3).weight is None and nn.InstanceNorm2d(3).running_mean is None


# ----------------------------------------------------------------------------- distances
@pytest.mark.parametrize("s1,s2,dim", [((3, 4), (3, 4), 1), ((3, 4), (4,), -1), ((2, 3, 4), (2, 1, 4), 1),
                                       ((5,), (5,), 0)])
def test_cosine_similarity_matches_torch(torch_ref, s1, s2, dim):
    f = lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b, dim=dim)  # noqa: E731
    _compare(torch_ref, f, f, [s1, s2])


def test_cosine_similarity_eps_clamp_matches_torch(torch_ref):
    """Tiny vectors: the norm is raised to eps in value while the gradient stays the norm's, as in torch."""
    def f(lib, a, b):
        return lib.nn.functional.cosine_similarity(a * 1e-5, b, eps=1e-4)
    _compare(torch_ref, f, f, [(3, 4), (3, 4)], rtol=1e-8)


@pytest.mark.parametrize("p,keepdim,s1,s2", [(2.0, False, (3, 4), (3, 4)), (1.0, True, (2, 3, 4), (4,)),
                                             (3.0, False, (4,), (4,)), (float("inf"), True, (3, 4), (3, 4))])
def test_pairwise_distance_matches_torch(torch_ref, p, keepdim, s1, s2):
    f = lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b, p=p, keepdim=keepdim)  # noqa: E731
    _compare(torch_ref, f, f, [s1, s2])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pdist_matches_torch(torch_ref, p):
    f = lambda lib, x: lib.pdist(x, p)  # noqa: E731
    _compare(torch_ref, f, f, [(5, 3)])


def test_distance_gradcheck():
    a, b = (ember.tensor(x, requires_grad=True) for x in _arrays([(3, 4), (3, 4)], seed=11))
    assert gradcheck(lambda a, b: F.cosine_similarity(a, b), (a, b))
    assert gradcheck(lambda a, b: F.pairwise_distance(a, b), (a, b))
    assert gradcheck(lambda a: F.pdist(a), (a,))


def test_distance_errors():
    with pytest.raises(RuntimeError, match="floating point"):
        F.cosine_similarity(ember.ones(2, 3, dtype=ember.int64), ember.ones(2, 3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        F.pairwise_distance(ember.ones(2, 3), ember.ones(2, 4))
    with pytest.raises(RuntimeError, match="2D tensors"):
        F.pdist(ember.ones(4))
    with pytest.raises(RuntimeError, match="non-negative"):
        F.pdist(ember.ones(4, 3), -1.0)


def test_distance_modules(torch_ref):
    a, b = _arrays([(3, 4), (3, 4)], seed=12, dtype=np.float32)
    for name, kwargs in (("CosineSimilarity", {"dim": 0}), ("PairwiseDistance", {"p": 1.0, "keepdim": True})):
        mine, theirs = getattr(nn, name)(**kwargs), getattr(torch_ref.nn, name)(**kwargs)
        assert repr(mine) == repr(theirs)
        np.testing.assert_allclose(mine(ember.tensor(a), ember.tensor(b)).numpy(),
                                   theirs(torch_ref.tensor(a), torch_ref.tensor(b)).numpy(), rtol=1e-5)


def test_torch_level_functions(torch_ref):
    """``ember.batch_norm`` etc. take torch's native argument order."""
    x = _arrays([(4, 3, 2)], seed=13)[0]
    w, b = np.array([1.0, 2.0, 0.5]), np.array([0.0, 1.0, -1.0])
    for name, args in (("batch_norm", (w, b, None, None, True, 0.1, 1e-5, False)),
                       ("instance_norm", (w, b, None, None, True, 0.1, 1e-5, False)),
                       ("layer_norm", ((2,),)), ("group_norm", (3, w, b)), ("rms_norm", ((3, 2),))):
        ours = getattr(ember, name)(ember.tensor(x), *[ember.tensor(a) if isinstance(a, np.ndarray) else a
                                                       for a in args])
        theirs = getattr(torch_ref, name)(torch_ref.tensor(x), *[torch_ref.tensor(a) if isinstance(a, np.ndarray)
                                                                 else a for a in args])
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def test_no_warnings_for_matching_features():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.InstanceNorm1d(3)(ember.randn(2, 3, 5))
