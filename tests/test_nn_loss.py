"""Loss functions and modules: values and gradients against torch, finite differences, NumPy references, errors."""
from __future__ import annotations

import inspect
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as enn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

REDUCTIONS = ("none", "mean", "sum")


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _to(lib, value, requires_grad: bool = False):
    """A NumPy array as a tensor of ``lib`` (ember or torch); other values pass through."""
    if isinstance(value, np.ndarray):
        return lib.tensor(value, requires_grad=requires_grad and value.dtype.kind == "f")
    return value


def _run(lib, fn, arrays, kwargs, grad_idx, upstream):
    """Call ``fn`` on ``lib`` tensors; return (output array, gradient arrays of the inputs in ``grad_idx``)."""
    args = [_to(lib, a, i in grad_idx) for i, a in enumerate(arrays)]
    out = fn(*args, **{k: _to(lib, v) for k, v in kwargs.items()})
    grads = []
    if grad_idx and out.requires_grad:
        wanted = [args[i] for i in grad_idx]
        grads = lib.autograd.grad(out, wanted, _to(lib, upstream(tuple(out.shape))), allow_unused=True)
        grads = [None if g is None else g.detach().numpy() for g in grads]
    return out.detach().numpy(), out.dtype, grads


def _compare(torch, name, arrays, kwargs=None, grad_idx=(0,), rtol=1e-7, atol=1e-9, ember_fn=None, torch_fn=None):
    """Same call in ember and torch: same values, dtype, shape and input gradients."""
    kwargs = kwargs or {}
    upstream = lambda shape: _rng(99).standard_normal(shape)  # noqa: E731
    ours, our_dtype, our_grads = _run(ember, ember_fn or getattr(F, name), arrays, kwargs, grad_idx, upstream)
    theirs, their_dtype, their_grads = _run(torch, torch_fn or getattr(torch.nn.functional, name), arrays, kwargs,
                                            grad_idx, upstream)
    assert our_dtype.name == str(their_dtype).split(".")[-1]
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    assert len(our_grads) == len(their_grads)
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol * 10, atol=atol * 10, equal_nan=True)


# ---- cross-entropy and NLL over class indices ---------------------------------------------------------------------

def _class_case(shape, ignore: bool, seed: int = 0):
    """Logits of ``shape`` (C at dim 1, or (C,)), targets with some ignore_index entries when ``ignore``."""
    rng = _rng(seed)
    x = rng.standard_normal(shape)
    n_classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    t = rng.integers(0, n_classes, size=target_shape)
    if ignore and t.ndim:
        t.reshape(-1)[::3] = -100
    return x, np.asarray(t, dtype=np.int64), rng.uniform(0.2, 2.0, n_classes)


CLASS_SHAPES = [(6, 5), (5,), (3, 4, 2, 3)]


@pytest.mark.parametrize("shape", CLASS_SHAPES, ids=str)
@pytest.mark.parametrize("weighted,ignore,smoothing", [
    (w, i, s) for w, i, s in itertools.product((False, True), (False, True), (0.0, 0.3))])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_indices_match_torch(torch_ref, shape, weighted, ignore, smoothing, reduction):
    x, t, w = _class_case(shape, ignore)
    kwargs = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        kwargs["weight"] = w
    _compare(torch_ref, "cross_entropy", [x, t], kwargs)


@pytest.mark.parametrize("shape", CLASS_SHAPES, ids=str)
@pytest.mark.parametrize("weighted,ignore", list(itertools.product((False, True), (False, True))))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_matches_torch(torch_ref, shape, weighted, ignore, reduction):
    x, t, w = _class_case(shape, ignore, seed=1)
    kwargs = dict(reduction=reduction, ignore_index=-100)
    if weighted:
        kwargs["weight"] = w
    _compare(torch_ref, "nll_loss", [x, t], kwargs)


def test_class_losses_with_nonnegative_ignore_index_and_uint8_targets(torch_ref):
    x, t, w = _class_case((8, 4), ignore=False, seed=2)
    _compare(torch_ref, "cross_entropy", [x, t], dict(weight=w, ignore_index=2, label_smoothing=0.1))
    _compare(torch_ref, "nll_loss", [x, t.astype(np.uint8)], dict(ignore_index=0, reduction="sum"))


def test_cross_entropy_mean_divides_by_kept_weights():
    """Hand reference: mean = sum of weighted losses / sum of weights of non-ignored targets."""
    x = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [2.0, 2.0, 2.0]])
    t = np.array([1, -100, 0])
    w = np.array([0.5, 2.0, 1.0])
    lp = x - np.log(np.exp(x).sum(1, keepdims=True))
    expected = (w[1] * -lp[0, 1] + w[0] * -lp[2, 0]) / (w[1] + w[0])
    got = F.cross_entropy(ember.tensor(x), ember.tensor(t), weight=ember.tensor(w))
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_all_ignored_mean_is_nan_and_sum_is_zero():
    x, t = ember.randn(4, 3), ember.full((4,), -100, dtype=ember.int64)
    assert math.isnan(F.cross_entropy(x, t).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0.0


@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_class_losses_gradcheck_and_double_backward(fn, reduction):
    x, t, w = _class_case((3, 4, 2), ignore=True, seed=3)
    xt = ember.tensor(x, requires_grad=True)
    kwargs = dict(weight=ember.tensor(w), reduction=reduction)
    if fn is F.cross_entropy:
        kwargs["label_smoothing"] = 0.2
    loss = lambda z: fn(z, ember.tensor(t), **kwargs)  # noqa: E731
    assert gradcheck(loss, (xt,))
    assert gradgradcheck(loss, (xt,))


def test_cross_entropy_gradient_penalty_matches_torch(torch_ref):
    """d/dx of ||d loss / dx||^2 (a gradient penalty) through the fused kernel's double backward."""
    x, t, w = _class_case((4, 5), ignore=True, seed=4)
    results = []
    for lib in (ember, torch_ref):
        xt = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xt, lib.tensor(t), weight=lib.tensor(w), label_smoothing=0.1)
        (g,) = lib.autograd.grad(loss, xt, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), xt)
        results.append(gg.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9, atol=1e-12)


def test_cross_entropy_is_stable_for_huge_logits(torch_ref):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4], [5e3, 5e3, -1e4]], dtype=np.float32)
    t = np.array([1, 2, 0])
    _compare(torch_ref, "cross_entropy", [x, t], dict(reduction="none"), rtol=1e-6, atol=1e-3)
    out = F.cross_entropy(ember.tensor(x), ember.tensor(t), reduction="none").numpy()
    assert np.all(np.isfinite(out))
    assert out[0] == pytest.approx(2e4, rel=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_class_losses_keep_input_dtype(torch_ref, dtype):
    x, t, w = _class_case((5, 4), ignore=True, seed=5)
    x = x.astype(dtype)
    w = w.astype(dtype)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    for reduction in REDUCTIONS:
        _compare(torch_ref, "cross_entropy", [x, t], dict(weight=w, reduction=reduction, label_smoothing=0.1),
                 **tol)
        _compare(torch_ref, "nll_loss", [x, t], dict(reduction=reduction), **tol)


def test_class_losses_large_inputs_take_the_parallel_path(torch_ref):
    """Enough work for the parallel kernels (cpu_kernels.elementwise.PARALLEL_MIN elements)."""
    x, t, w = _class_case((300, 256), ignore=True, seed=11)
    _compare(torch_ref, "cross_entropy", [x, t], dict(weight=w, label_smoothing=0.1))
    _compare(torch_ref, "nll_loss", [x, t], dict(weight=w, reduction="none"))


def test_cross_entropy_non_contiguous_input(torch_ref):
    x, t, _ = _class_case((4, 6), ignore=False, seed=12)
    theirs = torch_ref.nn.functional.cross_entropy(torch_ref.tensor(x).t(), torch_ref.tensor(t[:1].repeat(6)))
    ours = F.cross_entropy(ember.tensor(x).t(), ember.tensor(t[:1].repeat(6)))
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 5), c=st.integers(1, 5), extra=st.lists(st.integers(1, 3), max_size=2),
       seed=st.integers(0, 2**16), smoothing=st.sampled_from([0.0, 0.4]))
def test_cross_entropy_matches_numpy_reference(n, c, extra, seed, smoothing):
    rng = _rng(seed)
    x = rng.standard_normal((n, c, *extra))
    t = rng.integers(0, c, size=(n, *extra))
    out = F.cross_entropy(ember.tensor(x), ember.tensor(t), reduction="none", label_smoothing=smoothing).numpy()
    peak = x.max(1, keepdims=True)
    lp = x - peak - np.log(np.exp(x - peak).sum(1, keepdims=True))
    picked = np.take_along_axis(lp, t[:, None], 1)[:, 0]
    expected = -(1 - smoothing) * picked - smoothing / c * lp.sum(1)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


# ---- cross-entropy against class probabilities --------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 3, 2, 2)], ids=str)
@pytest.mark.parametrize("weighted,smoothing", list(itertools.product((False, True), (0.0, 0.25))))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities_match_torch(torch_ref, shape, weighted, smoothing, reduction):
    rng = _rng(6)
    x = rng.standard_normal(shape)
    p = rng.random(shape)
    class_dim = 0 if len(shape) == 1 else 1
    p /= p.sum(class_dim, keepdims=True)
    kwargs = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        kwargs["weight"] = rng.uniform(0.5, 2.0, shape[class_dim])
    _compare(torch_ref, "cross_entropy", [x, p], kwargs, grad_idx=(0, 1))


def test_cross_entropy_probabilities_gradcheck():
    rng = _rng(7)
    x = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    p = ember.tensor(rng.random((3, 4)), requires_grad=True)
    assert gradgradcheck(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1), (x, p))


# ---- pointwise and embedding losses: one table, every reduction ---------------------------------------------------

def _randn(*shape, seed=0):
    return _rng(seed).standard_normal(shape)


def _uniform(lo, hi, *shape, seed=0):
    return _rng(seed).uniform(lo, hi, shape)


def _signs(*shape, seed=0):
    return _rng(seed).choice([-1.0, 1.0], shape)


def _multilabel_targets():
    return np.array([[0, 3, -1, 1], [1, -1, 0, 0], [3, 2, 1, 0]], dtype=np.int64)


# (function name, input arrays, kwargs, indices of inputs whose gradients are compared)
POINTWISE = [
    ("mse_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {}, (0, 1)),
    ("mse_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {"weight": _uniform(0.1, 2, 3, 4)}, (0, 1)),
    ("l1_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {}, (0, 1)),
    ("l1_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {"weight": _uniform(0.1, 2, 3, 4)}, (0, 1)),
    ("smooth_l1_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {"beta": 0.5}, (0, 1)),
    ("smooth_l1_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {"beta": 0.0}, (0, 1)),
    ("huber_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {"delta": 0.7}, (0, 1)),
    ("huber_loss", [_randn(3, 4), _randn(3, 4, seed=1)], {"delta": 0.7, "weight": _uniform(0.1, 2, 3, 4)}, (0, 1)),
    ("binary_cross_entropy", [_uniform(0.05, 0.95, 3, 4), _uniform(0, 1, 3, 4, seed=1)], {}, (0, 1)),
    ("binary_cross_entropy", [_uniform(0.05, 0.95, 3, 4), _uniform(0, 1, 3, 4, seed=1)],
     {"weight": _uniform(0.1, 2, 4)}, (0, 1)),
    ("binary_cross_entropy_with_logits", [_randn(3, 4) * 3, _uniform(0, 1, 3, 4, seed=1)], {}, (0, 1)),
    ("binary_cross_entropy_with_logits", [_randn(3, 4) * 3, _uniform(0, 1, 3, 4, seed=1)],
     {"weight": _uniform(0.1, 2, 3, 1), "pos_weight": _uniform(0.5, 3, 4)}, (0, 1)),
    ("kl_div", [np.log(_uniform(0.05, 1, 3, 4)), _uniform(0.05, 1, 3, 4, seed=1)], {}, (0, 1)),
    ("kl_div", [np.log(_uniform(0.05, 1, 3, 4)), np.log(_uniform(0.05, 1, 3, 4, seed=1))], {"log_target": True},
     (0, 1)),
    ("margin_ranking_loss", [_randn(6), _randn(6, seed=1), _signs(6)], {"margin": 0.3}, (0, 1)),
    ("cosine_embedding_loss", [_randn(5, 3), _randn(5, 3, seed=1), _signs(5)], {"margin": -0.2}, (0, 1)),
    ("cosine_embedding_loss", [_randn(3), _randn(3, seed=1), np.array(-1.0)], {}, (0, 1)),
    ("triplet_margin_loss", [_randn(4, 3), _randn(4, 3, seed=1), _randn(4, 3, seed=2)], {"margin": 1.5}, (0, 1, 2)),
    ("triplet_margin_loss", [_randn(4, 3), _randn(4, 3, seed=1), _randn(4, 3, seed=2)],
     {"p": 1, "swap": True, "eps": 1e-3, "margin": 2.0}, (0, 1, 2)),
    ("triplet_margin_with_distance_loss", [_randn(2, 4, 3), _randn(2, 4, 3, seed=1), _randn(2, 4, 3, seed=2)],
     {"margin": 2.0, "swap": True}, (0, 1, 2)),
    ("hinge_embedding_loss", [_randn(3, 4), _signs(3, 4, seed=1)], {"margin": 0.5}, (0,)),
    ("soft_margin_loss", [_randn(3, 4) * 3, _signs(3, 4, seed=1)], {}, (0,)),
    ("multilabel_soft_margin_loss", [_randn(3, 4), _rng(1).integers(0, 2, (3, 4)).astype(float)],
     {"weight": _uniform(0.5, 2, 4)}, (0,)),
    ("multi_margin_loss", [_randn(5, 4), np.array([0, 3, 1, 1, 2])], {}, (0,)),
    ("multi_margin_loss", [_randn(5, 4), np.array([0, 3, 1, 1, 2])],
     {"p": 2, "margin": 0.7, "weight": _uniform(0.5, 2, 4)}, (0,)),
    ("multi_margin_loss", [_randn(4), np.array(2)], {}, (0,)),
    ("multilabel_margin_loss", [_randn(3, 4), _multilabel_targets()], {}, (0,)),
    ("multilabel_margin_loss", [_randn(4), _multilabel_targets()[0]], {}, (0,)),
    ("gaussian_nll_loss", [_randn(3, 4), _randn(3, 4, seed=1), _uniform(0.1, 2, 3, 4)], {"full": True}, (0, 1, 2)),
    ("gaussian_nll_loss", [_randn(3, 4), _randn(3, 4, seed=1), _uniform(0.1, 2, 3)], {}, (0, 1, 2)),
    ("gaussian_nll_loss", [_randn(3, 4), _randn(3, 4, seed=1), _uniform(0.1, 2, 3, 1)], {"eps": 0.5}, (0, 1, 2)),
    ("poisson_nll_loss", [_randn(3, 4), _uniform(0, 4, 3, 4, seed=1)], {}, (0, 1)),
    ("poisson_nll_loss", [_uniform(0.1, 3, 3, 4), _uniform(0, 4, 3, 4, seed=1)], {"log_input": False, "full": True},
     (0,)),
]


def _case_id(case) -> str:
    return case[0] + "-" + "-".join(f"{k}" for k in case[2])


@pytest.mark.parametrize("case", POINTWISE, ids=_case_id)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses_match_torch(torch_ref, case, reduction):
    name, arrays, kwargs, grad_idx = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(torch_ref, name, arrays, {**kwargs, "reduction": reduction}, grad_idx)


def _ember_case(name, arrays, kwargs, grad_idx, reduction):
    """A POINTWISE case as (function of its ember tensors, those tensors) for the grad checks."""
    fn = getattr(F, name)
    kw = {k: _to(ember, v) for k, v in kwargs.items()}
    tensors = [_to(ember, a, i in grad_idx) for i, a in enumerate(arrays)]
    return (lambda *ts: fn(*ts, reduction=reduction, **kw)), tensors


@pytest.mark.parametrize("case", POINTWISE, ids=_case_id)
def test_pointwise_losses_gradcheck(case):
    name, arrays, kwargs, grad_idx = case
    if name == "gaussian_nll_loss":
        # var clamped up to eps passes its gradient through unchanged (torch's choice): invisible to finite
        # differences, so check the unclamped case here; the torch comparison covers the clamped one.
        kwargs = {**kwargs, "eps": 1e-6}
    fn, tensors = _ember_case(name, arrays, kwargs, grad_idx, "none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(fn, tensors)


@pytest.mark.parametrize("name", ["mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
                                  "gaussian_nll_loss", "cosine_embedding_loss"])
def test_losses_double_backward(name):
    case = next(c for c in POINTWISE if c[0] == name)
    _, arrays, kwargs, grad_idx = case
    fn, tensors = _ember_case(name, arrays, kwargs, grad_idx, "sum")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradgradcheck(fn, tensors)


def test_kl_div_batchmean_and_mean_warning(torch_ref):
    x, y = np.log(_uniform(0.05, 1, 3, 4)), _uniform(0.05, 1, 3, 4, seed=1)
    _compare(torch_ref, "kl_div", [x, y], {"reduction": "batchmean"}, (0, 1))
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(ember.tensor(x), ember.tensor(y))


def test_mse_loss_broadcasts_with_a_warning(torch_ref):
    with pytest.warns(UserWarning, match="different to the input size"):
        out = F.mse_loss(ember.tensor(_randn(3, 4)), ember.tensor(_randn(4, seed=1)))
    expected = ((_randn(3, 4) - _randn(4, seed=1)) ** 2).mean()
    assert out.item() == pytest.approx(expected, rel=1e-12)


def test_bce_with_logits_is_stable_for_huge_logits(torch_ref):
    x = np.array([1e4, -1e4, 0.0, 50.0, -50.0], dtype=np.float32)
    y = np.array([0.0, 1.0, 0.5, 0.0, 1.0], dtype=np.float32)
    _compare(torch_ref, "binary_cross_entropy_with_logits", [x, y], {"reduction": "none"}, (0, 1), rtol=1e-6)
    _compare(torch_ref, "binary_cross_entropy_with_logits", [x, y],
             {"reduction": "none", "pos_weight": np.array(3.0, dtype=np.float32)}, (0, 1), rtol=1e-6)
    # torch's soft_margin_loss overflows to inf for margins beyond ~88 in float32; ember's stays finite.
    soft = F.soft_margin_loss(ember.tensor(x), ember.tensor(y * 2 - 1), reduction="none").numpy()
    np.testing.assert_allclose(soft, [1e4, 1e4, math.log(2), 50.0, 50.0], rtol=1e-6)


def test_bce_clamps_log_at_minus_100(torch_ref):
    x, y = np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5])
    out = F.binary_cross_entropy(ember.tensor(x), ember.tensor(y), reduction="none").numpy()
    np.testing.assert_allclose(out, [100.0, 100.0, math.log(2)])
    _compare(torch_ref, "binary_cross_entropy", [x, y], {"reduction": "none"}, (0,))


@pytest.mark.parametrize("x, y", [([0.5, 1.5], [0.5, 0.5]), ([0.5, 0.5], [0.5, -0.5]), ([math.nan, 0.5], [0.5, 2.0]),
                                  ([0.5, 0.5], [math.nan, 0.5]), ([0.5, 0.5], [math.inf, 0.5])])
def test_bce_refuses_values_outside_0_1_like_torch(torch_ref, x, y):
    """NaN and inf are outside [0, 1] too; the input is checked before the target."""
    with pytest.raises(RuntimeError) as theirs:
        torch_ref.nn.functional.binary_cross_entropy(torch_ref.tensor(x), torch_ref.tensor(y))
    with pytest.raises(RuntimeError) as ours:
        F.binary_cross_entropy(ember.tensor(x), ember.tensor(y))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("target_dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_probabilities_of_empty_int_logits(torch_ref, target_dtype, reduction):
    """torch's log_softmax passes an empty int tensor through, so the loss is the float reduction of nothing."""
    results = [lib.nn.functional.cross_entropy(lib.zeros(0, 3, dtype=lib.int64),
                                               lib.zeros(0, 3, dtype=getattr(lib, target_dtype)), reduction=reduction)
               for lib in (ember, torch_ref)]
    assert str(results[0].dtype).split(".")[-1] == target_dtype == str(results[1].dtype).split(".")[-1]
    np.testing.assert_array_equal(results[0].numpy(), results[1].numpy())
    with pytest.raises(NotImplementedError, match="log_softmax_lastdim_kernel_impl"):
        F.cross_entropy(ember.zeros(2, 3, dtype=ember.int64), ember.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities"):
        F.cross_entropy(ember.zeros(2, 3, dtype=ember.int64), ember.zeros(2, 3, dtype=ember.int64))


@pytest.mark.parametrize("legacy,expected", [((None, False), "none"), ((False, None), "sum"),
                                             ((True, True), "mean"), ((True, None), "mean"),
                                             ((False, True), "sum"), ((True, False), "none")])
def test_legacy_size_average_reduce(legacy, expected):
    x, y = ember.tensor(_randn(3, 4)), ember.tensor(_randn(3, 4, seed=1))
    with pytest.warns(UserWarning, match=f"reduction='{expected}'"):
        out = F.mse_loss(x, y, size_average=legacy[0], reduce=legacy[1])
    np.testing.assert_allclose(out.numpy(), F.mse_loss(x, y, reduction=expected).numpy())
    with pytest.warns(UserWarning):
        assert enn.L1Loss(size_average=legacy[0], reduce=legacy[1]).reduction == expected


# ---- errors ---------------------------------------------------------------------------------------------------------

def _t(*shape, dtype=ember.float32):
    return ember.zeros(*shape, dtype=dtype)


_long = ember.int64
ERRORS = [
    (lambda: F.cross_entropy(_t(5, 4), ember.tensor([0, 4, 1, 1, 1])), IndexError, "Target 4 is out of bounds"),
    (lambda: F.nll_loss(_t(5, 4), ember.tensor([0, -1, 1, 1, 1])), IndexError, "Target -1 is out of bounds"),
    (lambda: F.cross_entropy(_t(5, 4), _t(4, dtype=_long)), ValueError, r"batch_size \(5\) to match target"),
    (lambda: F.cross_entropy(_t(5, 4), _t(5, dtype=ember.int32)), RuntimeError, "Long or Byte, but got Int"),
    (lambda: F.cross_entropy(_t(5, 4), _t(5, dtype=_long), weight=_t(3)), RuntimeError,
     "all 4 classes or no classes"),
    (lambda: F.nll_loss(_t(5, 4), _t(5, dtype=_long), weight=_t(4, dtype=ember.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: F.cross_entropy(_t(5, 4), _t(5, dtype=_long), label_smoothing=1.5), RuntimeError,
     "label_smoothing must be between"),
    (lambda: F.cross_entropy(_t(2, 3, 4), _t(2, 5, dtype=_long)), RuntimeError, r"Expected target size \[2, 4\]"),
    (lambda: F.cross_entropy(_t(2, 3), _t(2, 3, dtype=_long)), RuntimeError, "Expected floating point type"),
    (lambda: F.cross_entropy(_t(2, 3), _t(2, 3), ignore_index=1), RuntimeError, "ignore_index is not supported"),
    (lambda: F.cross_entropy(_t(5, 4), _t(5, dtype=_long), reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda: F.nll_loss(_t(3), _t(2, dtype=_long)), ValueError, "1D target must have size 1"),
    (lambda: F.nll_loss(_t(), _t(dtype=_long)), ValueError, r"Expected 1 or more dimensions \(got 0\)"),
    (lambda: F.nll_loss(_t(3, 4, dtype=_long), _t(3, dtype=_long)), NotImplementedError, "not implemented for"),
    (lambda: F.binary_cross_entropy(_t(3), _t(2)), ValueError, "different to the input size"),
    (lambda: F.binary_cross_entropy(_t(3), _t(3, dtype=ember.float64)), RuntimeError,
     "Found dtype Double but expected Float"),
    (lambda: F.binary_cross_entropy_with_logits(_t(3), _t(2)), ValueError, "must be the same as input size"),
    (lambda: F.mse_loss(_t(3), _t(3), weight=_t(2)), ValueError, "Weights and input must have the same size"),
    (lambda: F.smooth_l1_loss(_t(3), _t(3), beta=-1.0), RuntimeError, "negative values for beta"),
    (lambda: F.huber_loss(_t(3), _t(3), delta=0.0), RuntimeError, "non-positive values for delta"),
    (lambda: F.kl_div(_t(3), _t(3), reduction="bad"), ValueError, "not a valid value for reduction"),
    (lambda: F.margin_ranking_loss(_t(3, 4), _t(3), _t(3)), RuntimeError, "should have same dimension"),
    (lambda: F.cosine_embedding_loss(_t(4), _t(4), _t(1)), RuntimeError, "1D target tensor expects 2D input"),
    (lambda: F.cosine_embedding_loss(_t(3, 4), _t(3, 4), _t(3, 1)), RuntimeError, "multi-target not supported"),
    (lambda: F.triplet_margin_loss(_t(3, 4), _t(4), _t(3, 4)), RuntimeError, "same number of dimensions"),
    (lambda: F.triplet_margin_loss(_t(3, 4), _t(3, 4), _t(3, 4), margin=0), ValueError,
     "margin must be greater than 0"),
    (lambda: F.multi_margin_loss(_t(3, 4), ember.tensor([0, 4, 1])), RuntimeError, "target out of range"),
    (lambda: F.multi_margin_loss(_t(3, 4), ember.tensor([0, 3])), RuntimeError, "Expected target size"),
    (lambda: F.multi_margin_loss(_t(3, 4), ember.tensor([0, 1, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: F.multi_margin_loss(_t(3, 4), ember.tensor([0, 1, 1]), weight=_t(3)), RuntimeError,
     "inconsistent weight size"),
    (lambda: F.multilabel_margin_loss(_t(3, 4), ember.tensor([[0, 4, -1, 1]] * 3)), RuntimeError, "out of range"),
    (lambda: F.multilabel_margin_loss(_t(3, 4), _t(2, 4, dtype=_long)), RuntimeError, "inconsistent target size"),
    (lambda: F.gaussian_nll_loss(_t(3, 4), _t(3, 4), -ember.ones(3, 4)), ValueError, "negative entry"),
    (lambda: F.gaussian_nll_loss(_t(3, 4), _t(3, 4), ember.ones(2)), ValueError, "var is of incorrect size"),
    (lambda: F.poisson_nll_loss(_t(3), _t(3), reduction="bad"), ValueError, "not a valid value for reduction"),
    (lambda: enn.TripletMarginLoss(margin=0), ValueError, "expected margin to be greater than 0"),
    (lambda: enn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_match_torch_types(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---- CTC ------------------------------------------------------------------------------------------------------------

def _ctc_case(seed=0, steps=7, batch=3, classes=5, longest=3):
    rng = _rng(seed)
    logits = rng.standard_normal((steps, batch, classes))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = rng.integers(1, classes, (batch, longest))
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between them
    input_lengths = np.array([steps, steps - 2, 4][:batch])
    target_lengths = np.array([longest, 2, 0][:batch])
    return log_probs, targets, input_lengths, target_lengths


def _ctc_brute_force(log_probs, target, steps):
    """-log of the summed probability of every length-``steps`` path that collapses to ``target`` (blank 0)."""
    total = 0.0
    for path in itertools.product(range(log_probs.shape[1]), repeat=steps):
        collapsed = [c for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]
        if collapsed == list(target):
            total += math.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
    return -math.log(total)


def test_ctc_matches_brute_force_enumeration():
    rng = _rng(8)
    logits = rng.standard_normal((4, 3))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    for target in ([1, 2], [1, 1], [2], []):
        out = F.ctc_loss(ember.tensor(lp[:, None, :]), ember.tensor([target or [0]]), [4], [len(target)],
                         reduction="none")
        assert out.numpy()[0] == pytest.approx(_ctc_brute_force(lp, target, 4), rel=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_matches_torch(torch_ref, reduction, concatenated, dtype):
    lp, targets, in_len, tgt_len = _ctc_case()
    if concatenated:
        targets = np.concatenate([targets[b, :tgt_len[b]] for b in range(len(tgt_len))])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else {}

    def call(lib):
        return lambda x, t: lib.nn.functional.ctc_loss(x, t, lib.tensor(in_len), lib.tensor(tgt_len),
                                                       reduction=reduction)

    _compare(torch_ref, "ctc_loss", [lp.astype(dtype), targets], {}, (0,), ember_fn=call(ember),
             torch_fn=call(torch_ref), **tol)


def test_ctc_large_batch_takes_the_parallel_path(torch_ref):
    lp, targets, in_len, tgt_len = _ctc_case(seed=13, steps=40, batch=16, classes=6, longest=60)
    in_len = np.full(16, 40)
    tgt_len = _rng(13).integers(0, 20, 16)
    tgt_len[0] = 60  # longer than the input: infinite loss, zeroed

    def call(lib):
        return lambda x, t: lib.nn.functional.ctc_loss(x, t, lib.tensor(in_len), lib.tensor(tgt_len),
                                                       reduction="none", zero_infinity=True)

    _compare(torch_ref, "ctc_loss", [lp, targets], {}, (0,), ember_fn=call(ember), torch_fn=call(torch_ref))


def test_ctc_blank_zero_infinity_and_unbatched(torch_ref):
    lp, targets, in_len, tgt_len = _ctc_case(seed=9)
    short = np.array([2, 5, 4])  # item 0 cannot fit 3 labels (two equal) in 2 steps: infinite loss
    for zero_infinity in (False, True):
        call = lambda lib: lambda x, t: lib.nn.functional.ctc_loss(  # noqa: E731
            x, t, tuple(short), tuple(tgt_len), blank=4, reduction="none", zero_infinity=zero_infinity)
        ours = call(ember)(ember.tensor(lp), ember.tensor(targets % 4)).numpy()
        assert np.isinf(ours[0]) != zero_infinity
        if zero_infinity:
            _compare(torch_ref, "ctc_loss", [lp, targets % 4], {}, (0,), ember_fn=call(ember),
                     torch_fn=call(torch_ref))
    unbatched = lambda lib: lambda x, t: lib.nn.functional.ctc_loss(  # noqa: E731
        x, t, lib.tensor(7), lib.tensor(3))
    _compare(torch_ref, "ctc_loss", [lp[:, 0], targets[0]], {}, (0,), ember_fn=unbatched(ember),
             torch_fn=unbatched(torch_ref))


def test_ctc_gradcheck_through_log_softmax():
    lp, targets, in_len, tgt_len = _ctc_case(seed=10, steps=5, batch=2, classes=4, longest=2)
    logits = ember.tensor(lp, requires_grad=True)
    loss = lambda z: F.ctc_loss(z - z.logsumexp(-1, keepdim=True), ember.tensor(targets),  # noqa: E731
                                ember.tensor(in_len[:2]), ember.tensor(tgt_len[:2]), reduction="sum")
    assert gradcheck(loss, (logits,))


CTC_ERRORS = [
    (dict(input_lengths=[8, 5, 4]), "input_lengths to have value at most 7"),
    (dict(input_lengths=[-1, 5, 4]), "input_lengths to have value at least 0"),
    (dict(target_lengths=[4, 2, 0]), "size at least 4 at dimension 1"),
    (dict(input_lengths=[7, 5]), "input_lengths must be of size batch_size"),
    (dict(blank=5), "blank must be in label range"),
    (dict(targets=np.zeros((3, 3, 1), dtype=np.int64)), "Expected 1 to 2 dimensions"),
    (dict(targets=np.ones(4, dtype=np.int64)), "size 5 at dimension 0"),
    (dict(targets=np.full((3, 3), 7)), "target labels must be in"),
]


@pytest.mark.parametrize("change,match", CTC_ERRORS)
def test_ctc_errors(change, match):
    lp, targets, in_len, tgt_len = _ctc_case()
    args = dict(log_probs=ember.tensor(lp), targets=targets, input_lengths=list(in_len),
                target_lengths=list(tgt_len), blank=0)
    args.update(change)
    args["targets"] = ember.tensor(args["targets"])
    with pytest.raises(RuntimeError, match=match):
        F.ctc_loss(**args)


# ---- modules --------------------------------------------------------------------------------------------------------

MODULES = [
    ("L1Loss", {}, [_randn(3, 4), _randn(3, 4, seed=1)]),
    ("MSELoss", {"reduction": "sum"}, [_randn(3, 4), _randn(3, 4, seed=1)]),
    ("SmoothL1Loss", {"beta": 0.5}, [_randn(3, 4), _randn(3, 4, seed=1)]),
    ("HuberLoss", {"delta": 0.5, "reduction": "none"}, [_randn(3, 4), _randn(3, 4, seed=1)]),
    ("CrossEntropyLoss", {"weight": _uniform(0.5, 2, 4), "label_smoothing": 0.1, "ignore_index": 1},
     [_randn(5, 4), np.array([0, 1, 2, 3, 3])]),
    ("NLLLoss", {"weight": _uniform(0.5, 2, 4)}, [_randn(5, 4), np.array([0, 1, 2, 3, 3])]),
    ("BCELoss", {"weight": _uniform(0.5, 2, 4)}, [_uniform(0.1, 0.9, 3, 4), _uniform(0, 1, 3, 4, seed=1)]),
    ("BCEWithLogitsLoss", {"pos_weight": _uniform(0.5, 2, 4)}, [_randn(3, 4), _uniform(0, 1, 3, 4, seed=1)]),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, [_randn(3, 4), _randn(3, 4, seed=1)]),
    ("MarginRankingLoss", {"margin": 0.2}, [_randn(5), _randn(5, seed=1), _signs(5)]),
    ("CosineEmbeddingLoss", {"margin": 0.1}, [_randn(5, 3), _randn(5, 3, seed=1), _signs(5)]),
    ("TripletMarginLoss", {"p": 1.0, "swap": True}, [_randn(4, 3), _randn(4, 3, seed=1), _randn(4, 3, seed=2)]),
    ("TripletMarginWithDistanceLoss", {"margin": 0.5},
     [_randn(4, 3), _randn(4, 3, seed=1), _randn(4, 3, seed=2)]),
    ("HingeEmbeddingLoss", {"margin": 2.0}, [_randn(3, 4), _signs(3, 4)]),
    ("SoftMarginLoss", {}, [_randn(3, 4), _signs(3, 4)]),
    ("MultiLabelSoftMarginLoss", {"weight": _uniform(0.5, 2, 4)},
     [_randn(3, 4), _rng(1).integers(0, 2, (3, 4)).astype(float)]),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5}, [_randn(5, 4), np.array([0, 1, 2, 3, 3])]),
    ("MultiLabelMarginLoss", {}, [_randn(3, 4), _multilabel_targets()]),
    ("GaussianNLLLoss", {"full": True}, [_randn(3, 4), _randn(3, 4, seed=1), _uniform(0.5, 2, 3, 4)]),
    ("PoissonNLLLoss", {"log_input": False}, [_uniform(0.1, 2, 3, 4), _uniform(0, 3, 3, 4, seed=1)]),
]


@pytest.mark.parametrize("name,kwargs,arrays", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_match_torch(torch_ref, name, kwargs, arrays):
    ours = getattr(enn, name)(**{k: _to(ember, v) for k, v in kwargs.items()})
    theirs = getattr(torch_ref.nn, name)(**{k: _to(torch_ref, v) for k, v in kwargs.items()})
    assert isinstance(ours, enn.Module)
    assert repr(ours) == repr(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _compare(torch_ref, name, arrays, {}, (0,), ember_fn=ours, torch_fn=theirs)


def test_ctc_module_matches_functional():
    lp, targets, in_len, tgt_len = _ctc_case()
    module = enn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    args = (ember.tensor(lp), ember.tensor(targets), ember.tensor(in_len), ember.tensor(tgt_len))
    assert module(*args).item() == F.ctc_loss(*args, reduction="sum", zero_infinity=True).item()


def test_loss_weight_is_a_buffer_that_follows_dtype_casts():
    loss = enn.CrossEntropyLoss(weight=ember.tensor([1.0, 2.0, 3.0]))
    assert [name for name, _ in loss.named_buffers()] == ["weight"]
    assert list(loss.parameters()) == []
    loss.double()
    assert loss.weight.dtype is ember.float64
    out = loss(ember.randn(4, 3, dtype=ember.float64), ember.tensor([0, 1, 2, 1]))
    assert out.dtype is ember.float64
    assert enn.BCEWithLogitsLoss().state_dict() == {}


def test_top_level_torch_functions_are_exported():
    from ember.nn.functional import loss

    for name in ("binary_cross_entropy_with_logits", "cosine_embedding_loss", "ctc_loss", "hinge_embedding_loss",
                 "kl_div", "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss"):
        exported = getattr(ember, name)
        assert exported is getattr(F, name) and inspect.unwrap(exported) is loss.TORCH_FUNCTIONS[name]
