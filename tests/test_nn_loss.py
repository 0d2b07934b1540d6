"""Loss functions and modules: values and gradients against torch with first and second derivatives (declared once
for the op harness, so they run on every backend), NumPy references, errors."""
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
from op_harness import Case, Input, op_tests

REDUCTIONS = ("none", "mean", "sum")
pytestmark = pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")  # kl_div's


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


def _randn(*shape, seed=0):
    return _rng(seed).standard_normal(shape)


def _uniform(lo, hi, *shape, seed=0):
    return _rng(seed).uniform(lo, hi, shape)


def _signs(*shape, seed=0):
    return _rng(seed).choice([-1.0, 1.0], shape)


def _multilabel_targets():
    return np.array([[0, 3, -1, 1], [1, -1, 0, 0], [3, 2, 1, 0]], dtype=np.int64)


# ---- declared once for the op harness: values and input gradients against torch, gradcheck, gradgradcheck ---------

def _loss(label: str, name: str, inputs: list[Input], options: tuple[str, ...] = (), *, shapes: tuple = (),
          grad_inputs: list[Input] | None = None, gradgrad: bool = False, all_outputs: bool = False,
          **kwargs) -> Case:
    """``F.<name>`` with every reduction (one output each), in float64 (test_class_losses_keep_input_dtype checks the
    narrower dtypes); the last ``len(options)`` inputs go in as those keywords. The forward test compares every
    reduction's gradients with torch's; gradcheck takes reduction='none' and gradgradcheck 'sum', unless
    ``all_outputs`` (the fullest class-loss variants: their kernels reduce)."""
    positional = len(inputs) - len(options)

    def op(m, *tensors):
        keywords = dict(zip(options, tensors[positional:]), **kwargs)
        return tuple(getattr(m.nn.functional, name)(*tensors[:positional], reduction=r, **keywords)
                     for r in REDUCTIONS)

    return Case(label, op, inputs, dtypes=("float64",), shapes=shapes, grad_inputs=grad_inputs, gradgrad=gradgrad,
                grad_outputs=None if all_outputs else (0,), gradgrad_outputs=None if all_outputs else (2,))


def _class_targets(ignore: bool):
    """Class indices of 5 classes, every third one ``ignore_index`` (-100) when ``ignore``."""
    def draw(rng, shape):
        t = rng.integers(0, 5, shape)
        if ignore and t.ndim:
            t.reshape(-1)[::3] = -100
        return t
    return draw


def _probabilities(rng, shape):
    p = rng.random(shape)
    return p / p.sum(0 if len(shape) == 1 else 1, keepdims=True)


def _data(*shape, low=-2.0, high=2.0):
    return Input(shape, low, high)


def _fixed(*shape, low=0.1, high=2.0):
    """A float input the losses take no gradient for (weights)."""
    return Input(shape, low, high, grad=False)


def _sign_targets(*shape):
    return Input(shape, values=lambda rng, shape: rng.choice([-1.0, 1.0], shape), grad=False)


MULTILABEL = _multilabel_targets()
# logits of 5 classes at dim 1 (or dim 0), their targets, their class weights: each case runs on every shape set
CLASS_SHAPES = (((6, 5), (6,), (5,)), ((5,), (), (5,)), ((3, 5, 2, 3), (3, 2, 3), (5,)))
PROBABILITY_SHAPES = (((3,), (3,), (3,)), ((2, 3, 2, 2), (2, 3, 2, 2), (3,)))

PROBABILITIES = Input((4, 3), values=_probabilities)
LOGITS, WEIGHTS = _data(3, 4, low=-6, high=6), (_fixed(3, 1), _fixed(4, low=0.5, high=3))
CLASS_INDICES = [Input((3, 2), dtype="int64", values=_class_targets(ignore)) for ignore in (False, True)]
MULTI_MARGIN_TARGETS = Input(values=np.array([0, 3, 1, 1, 2]), dtype="int64")

LOSS_CASES = [
    # gradgradcheck (gradgrad=True) for the losses with backward Functions of their own (bce, bce with logits, the
    # class losses) and a few composites; the others compose ops whose second derivatives tests/test_elementwise.py
    # and test_reductions.py check
    _loss("mse", "mse_loss", [_data(3, 4), _data(3, 4)]),
    _loss("mse-weight", "mse_loss", [_data(3, 4), _data(3, 4), _fixed(3, 4)], ("weight",), gradgrad=True),
    _loss("l1", "l1_loss", [_data(3, 4), _data(3, 4)]),
    _loss("l1-weight", "l1_loss", [_data(3, 4), _data(3, 4), _fixed(3, 4)], ("weight",)),
    _loss("smooth_l1-beta", "smooth_l1_loss", [_data(3, 4), _data(3, 4)], beta=0.5),
    _loss("smooth_l1-beta0", "smooth_l1_loss", [_data(3, 4), _data(3, 4)], beta=0.0),
    _loss("huber", "huber_loss", [_data(3, 4), _data(3, 4)], delta=0.7),
    _loss("huber-weight", "huber_loss", [_data(3, 4), _data(3, 4), _fixed(3, 4)], ("weight",), delta=0.7),
    _loss("bce", "binary_cross_entropy", [_data(3, 4, low=0.05, high=0.95), _data(3, 4, low=0, high=1)]),
    _loss("bce-weight", "binary_cross_entropy", [_data(3, 4, low=0.05, high=0.95), _data(3, 4, low=0, high=1),
                                                 _fixed(4)], ("weight",), gradgrad=True),
    _loss("bce_logits", "binary_cross_entropy_with_logits", [LOGITS, _data(3, 4, low=0, high=1)]),
    _loss("bce_logits-weights", "binary_cross_entropy_with_logits", [LOGITS, _data(3, 4, low=0, high=1), *WEIGHTS],
          ("weight", "pos_weight"), gradgrad=True),
    _loss("kl_div", "kl_div", [_data(3, 4, low=-3, high=0), _data(3, 4, low=0.05, high=1)], gradgrad=True),
    _loss("kl_div-log_target", "kl_div", [_data(3, 4, low=-3, high=0), _data(3, 4, low=-3, high=0)], log_target=True),
    _loss("margin_ranking", "margin_ranking_loss", [_data(6), _data(6), _sign_targets(6)], margin=0.3),
    _loss("cosine_embedding", "cosine_embedding_loss", [_data(5, 3), _data(5, 3), _sign_targets(5)], margin=-0.2,
          grad_inputs=[_data(3, 3), _data(3, 3), _sign_targets(3)], gradgrad=True),
    _loss("cosine_embedding-1d", "cosine_embedding_loss", [_data(3), _data(3), Input(values=np.array(-1.0),
                                                                                     grad=False)]),
    # fewer rows for the gradient checks of the distances: finite differences cost two passes per element
    _loss("triplet", "triplet_margin_loss", [_data(4, 3)] * 3, margin=1.5, grad_inputs=[_data(2, 3)] * 3),
    _loss("triplet-p1-swap", "triplet_margin_loss", [_data(4, 3)] * 3, p=1, swap=True, eps=1e-3, margin=2.0,
          grad_inputs=[_data(2, 3)] * 3),
    _loss("triplet_distance", "triplet_margin_with_distance_loss", [_data(2, 4, 3)] * 3, margin=2.0, swap=True,
          grad_inputs=[_data(1, 2, 3)] * 3),
    _loss("hinge_embedding", "hinge_embedding_loss", [_data(3, 4), _sign_targets(3, 4)], margin=0.5),
    _loss("soft_margin", "soft_margin_loss", [LOGITS, _sign_targets(3, 4)]),
    _loss("multilabel_soft_margin", "multilabel_soft_margin_loss", [_data(3, 4), Input(
        (3, 4), values=lambda rng, shape: rng.integers(0, 2, shape), grad=False), _fixed(4, low=0.5)], ("weight",)),
    _loss("multi_margin", "multi_margin_loss", [_data(5, 4), MULTI_MARGIN_TARGETS]),
    _loss("multi_margin-p2-weight", "multi_margin_loss", [_data(5, 4), MULTI_MARGIN_TARGETS, _fixed(4, low=0.5)],
          ("weight",), p=2, margin=0.7),
    _loss("multi_margin-1d", "multi_margin_loss", [_data(4), Input(values=np.array(2), dtype="int64")]),
    _loss("multilabel_margin", "multilabel_margin_loss", [_data(3, 4), Input(values=MULTILABEL, dtype="int64")]),
    _loss("multilabel_margin-1d", "multilabel_margin_loss", [_data(4), Input(values=MULTILABEL[0], dtype="int64")]),
    _loss("gaussian_nll-full", "gaussian_nll_loss", [_data(3, 4), _data(3, 4), _data(3, 4, low=0.1)], full=True,
          gradgrad=True),
    _loss("gaussian_nll-var_rows", "gaussian_nll_loss", [_data(3, 4), _data(3, 4), _data(3, low=0.1)]),
    # var below eps is clamped up and passes its gradient through unchanged (torch's choice), which finite
    # differences cannot see: the gradient checks take variances above eps, the torch comparison the clamped ones
    _loss("gaussian_nll-eps", "gaussian_nll_loss", [_data(3, 4), _data(3, 4), _data(3, 1, low=0.1)], eps=0.5,
          grad_inputs=[_data(3, 4), _data(3, 4), _data(3, 1, low=0.6)]),
    _loss("poisson_nll", "poisson_nll_loss", [_data(3, 4), _data(3, 4, low=0, high=4)]),
    _loss("poisson_nll-full", "poisson_nll_loss", [_data(3, 4, low=0.1, high=3), _fixed(3, 4, low=0, high=4)],
          log_input=False, full=True),
    *(_loss(f"cross_entropy-weight{w:d}-ignore{i:d}-smoothing{s}", "cross_entropy", [_data(3, 5, 2), CLASS_INDICES[i],
            *[_fixed(5, low=0.2)] * w], ("weight",) * w, label_smoothing=s, gradgrad=bool(w and i and s),
            all_outputs=bool(w and i and s), shapes=tuple(shapes[:2 + w] for shapes in CLASS_SHAPES))
      for w, i, s in itertools.product((0, 1), (0, 1), (0.0, 0.3))),
    *(_loss(f"nll-weight{w:d}-ignore{i:d}", "nll_loss", [_data(3, 5, 2), CLASS_INDICES[i], *[_fixed(5, low=0.2)] * w],
            ("weight",) * w, gradgrad=bool(w and i), all_outputs=bool(w and i),
            shapes=tuple(shapes[:2 + w] for shapes in CLASS_SHAPES)) for w, i in itertools.product((0, 1), (0, 1))),
    *(_loss(f"cross_entropy_probabilities-weight{w:d}-smoothing{s}", "cross_entropy", [_data(4, 3), PROBABILITIES,
            *[_fixed(3, low=0.5)] * w], ("weight",) * w, label_smoothing=s, gradgrad=bool(w and s), shapes=tuple(
            shapes[:2 + w] for shapes in PROBABILITY_SHAPES)) for w, s in itertools.product((0, 1), (0.0, 0.25))),
]
test_forward, test_gradcheck, test_gradgradcheck = op_tests(LOSS_CASES)


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
    """Enough work for the parallel kernels (ember.kernels.cpu.elementwise.PARALLEL_MIN elements)."""
    x, t, w = _class_case((300, 256), ignore=True, seed=11)
    _compare(torch_ref, "cross_entropy", [x, t], dict(weight=w, label_smoothing=0.1))
    _compare(torch_ref, "nll_loss", [x, t], dict(weight=w, reduction="none"))


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


# ---- pointwise losses ---------------------------------------------------------------------------------------------

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
