"""ember.utils.checkpoint: same gradients as the plain call, RNG preserved, intermediates not kept; vs torch."""
from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")
import torch.utils.checkpoint as tcp  # noqa: E402

BOTH = pytest.mark.parametrize("reentrant", [True, False])
RNG = np.random.default_rng(0)
XA = RNG.standard_normal((3, 4))
WA = RNG.standard_normal((4, 5))


def _leaves(lib, rg_x=True):
    return lib.tensor(XA, requires_grad=rg_x), lib.tensor(WA, requires_grad=True)


def _segment(x, w, scale):
    h = (x @ w).tanh()
    return h.sin() * scale + h * h


def _ckpt(lib):
    return checkpoint if lib is ember else tcp.checkpoint


def _np(t):
    return t.detach().numpy()


@BOTH
def test_grads_match_plain_and_torch(reentrant):
    grads = {}
    for lib in (ember, torch):
        x, w = _leaves(lib)
        out = _ckpt(lib)(_segment, x, w, 1.5, use_reentrant=reentrant)
        assert out.requires_grad
        (out ** 2).sum().backward()
        grads[lib] = (_np(x.grad), _np(w.grad), _np(out))
    x, w = _leaves(ember)
    plain = _segment(x, w, 1.5)
    (plain ** 2).sum().backward()
    for got, plain_value in zip(grads[ember], (_np(x.grad), _np(w.grad), _np(plain))):
        np.testing.assert_allclose(got, plain_value, rtol=1e-12)
    for a, b in zip(grads[ember], grads[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _dropout_segment(x, w):
    h = EF.dropout((x @ w).tanh(), p=0.5, training=True)
    return h * h  # Mul saves the dropout output: a recomputation with another mask changes the gradient


def _dropout_grads(reentrant, mode):
    x, w = _leaves(ember)
    ember.manual_seed(7)
    if mode == "plain":
        out = _dropout_segment(x, w)
    else:
        out = checkpoint(_dropout_segment, x, w, use_reentrant=reentrant, preserve_rng_state=(mode == "preserve"))
    after = ember.rand(3).numpy()  # where the generator stands after the forward
    ember.manual_seed(123)  # backward must not depend on the state the generator has by then
    out.sum().backward()
    return _np(x.grad), _np(w.grad), after, ember.rand(3).numpy()


@BOTH
def test_dropout_inside_gives_identical_grads(reentrant):
    gx, gw, after, post_backward = _dropout_grads(reentrant, "plain")
    cx, cw, c_after, c_post_backward = _dropout_grads(reentrant, "preserve")
    np.testing.assert_array_equal(cx, gx)
    np.testing.assert_array_equal(cw, gw)
    np.testing.assert_array_equal(c_after, after)  # the forward advanced the generator as the plain call did
    ember.manual_seed(123)
    # backward's recomputation restored the surrounding generator state (fork_rng)
    np.testing.assert_array_equal(c_post_backward, ember.rand(3).numpy())
    np.testing.assert_array_equal(post_backward, c_post_backward)
    # control: without preserving the RNG state the recomputation draws another mask
    nx, _, _, _ = _dropout_grads(reentrant, "no_preserve")
    assert not np.array_equal(nx, gx)


@BOTH
def test_non_tensor_args_and_tuple_outputs(reentrant):
    results = {}
    for lib in (ember, torch):
        x, w = _leaves(lib)

        def f(x, w, mode, k):
            h = x @ w
            a = h.exp() if mode == "exp" else h.sin()
            return a * k, (h * h).sum(1), mode

        a, b, mode = _ckpt(lib)(f, x, w, "exp", 0.5, use_reentrant=reentrant)
        assert mode == "exp"
        (a.sum() + (b * b).sum()).backward()
        results[lib] = (_np(a), _np(b), _np(x.grad), _np(w.grad))
    for e, t in zip(results[ember], results[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-10)


@BOTH
def test_one_output_unused(reentrant):
    grads = {}
    for lib in (ember, torch):
        x, w = _leaves(lib)
        a, b = _ckpt(lib)(lambda x, w: ((x @ w).tanh(), (x @ w).exp()), x, w, use_reentrant=reentrant)
        b.sum().backward()
        grads[lib] = (_np(x.grad), _np(w.grad))
    for e, t in zip(grads[ember], grads[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-10)


def test_input_without_grad_reentrant_warns_and_returns_no_grad_output():
    seen = {}
    for lib in (ember, torch):
        x, w = _leaves(lib, rg_x=False)
        w = w.detach()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            out = _ckpt(lib)(_segment, x, w, 2.0, use_reentrant=True)
        seen[lib] = (out.requires_grad, any("None of the inputs have requires_grad=True" in str(r.message)
                                            for r in rec))
    assert seen[ember] == seen[torch] == (False, True)


def test_module_params_get_grads_when_input_needs_none_non_reentrant():
    grads = {}
    for lib, nn in ((ember, enn), (torch, torch.nn)):
        lin = nn.Linear(4, 2).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(WA[:, :2].T.copy()))
            lin.bias.fill_(0.25)
        x = lib.tensor(XA)
        out = _ckpt(lib)(lambda t: lin(t).tanh(), x, use_reentrant=False)
        out.sum().backward()
        grads[lib] = (_np(lin.weight.grad), _np(lin.bias.grad), x.grad)
    np.testing.assert_allclose(grads[ember][0], grads[torch][0], rtol=1e-10)
    np.testing.assert_allclose(grads[ember][1], grads[torch][1], rtol=1e-10)
    assert grads[ember][2] is None and grads[torch][2] is None


def test_kwargs_and_autograd_grad_non_reentrant():
    out = {}
    for lib in (ember, torch):
        x, w = _leaves(lib)
        y = _ckpt(lib)(lambda x, w, scale=1.0: _segment(x, w, scale), x, w, use_reentrant=False, scale=3.0)
        gx, gw = lib.autograd.grad(y.sum(), (x, w))
        out[lib] = (_np(gx), _np(gw))
        assert x.grad is None
    for e, t in zip(out[ember], out[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-10)


def test_retain_graph_backward_twice_non_reentrant():
    x, w = _leaves(ember)
    y = checkpoint(_segment, x, w, 1.0, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = _np(x.grad).copy()
    y.backward()
    np.testing.assert_allclose(_np(x.grad), 2 * first, rtol=1e-12)


def test_warnings_and_errors_like_torch():
    for lib in (ember, torch):
        x, w = _leaves(lib)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            _ckpt(lib)(_segment, x, w, 1.0)
        assert any("use_reentrant parameter should be passed explicitly" in str(r.message) for r in rec), lib
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            _ckpt(lib)(_segment, x, w, use_reentrant=True, scale=1.0)
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            _ckpt(lib)(_segment, x, w, 1.0, use_reentrant=True, debug=True)
        with pytest.raises(ValueError, match="determinism_check should be one of"):
            _ckpt(lib)(_segment, x, w, 1.0, use_reentrant=False, determinism_check="bogus")
        seq_fn = checkpoint_sequential if lib is ember else tcp.checkpoint_sequential
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            seq_fn([lambda t: t * 2, lambda t: t + 1], 2, x)
        assert any("checkpoint_sequential: the use_reentrant" in str(r.message) for r in rec), lib


def test_recomputation_mismatch_raises_checkpoint_error():
    for lib in (ember, torch):
        calls = []

        def f(x):
            calls.append(1)
            n = 3 if len(calls) == 1 else 2  # the recomputation sees a different shape
            return (x[:n] * x[:n]).exp().sum()

        x = lib.tensor(XA[:, 0].copy(), requires_grad=True)
        y = _ckpt(lib)(f, x, use_reentrant=False)
        err = CheckpointError if lib is ember else tcp.CheckpointError
        with pytest.raises(err, match="Recomputed values for the following tensors have different metadata"):
            y.backward()


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_sequential_matches_torch(reentrant):
    res = {}
    for lib, nn in ((ember, enn), (torch, torch.nn)):
        lib.manual_seed(0)
        layers = [nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6), nn.Sigmoid(), nn.Linear(6, 3)]
        seq = nn.Sequential(*layers).double()
        rng = np.random.default_rng(3)
        with lib.no_grad():
            for p in seq.parameters():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
        x = lib.tensor(XA, requires_grad=True)
        fn = checkpoint_sequential if lib is ember else tcp.checkpoint_sequential
        out = fn(seq, 3, x, use_reentrant=reentrant)
        (out ** 2).sum().backward()
        res[lib] = [_np(out), _np(x.grad)] + [_np(p.grad) for p in seq.parameters()]
    assert len(res[ember]) == len(res[torch]) == 8
    for e, t in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["plain", "reentrant", "non_reentrant"])
def test_forward_keeps_no_intermediates_alive(mode):
    x, w = _leaves(ember)
    refs = []

    def f(x, w):  # ops that keep what they need through save_for_backward (binary ops also keep ctx.scalars)
        h = x @ w
        a = h.tanh()
        b = a.sin()
        c = b @ w.t()
        refs.extend(weakref.ref(t) for t in (h, a, b, c))
        return c.exp().sum(1)

    if mode == "plain":
        out = f(x, w)
    else:
        out = checkpoint(f, x, w, use_reentrant=(mode == "reentrant"))
    gc.collect()
    alive = sum(r() is not None for r in refs)
    if mode == "plain":
        assert alive >= 2  # the control: the graph keeps the saved intermediates
    else:
        assert alive == 0
    out.sum().backward()
    x2, w2 = _leaves(ember)
    f(x2, w2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(x2.grad), rtol=1e-12)
    np.testing.assert_allclose(_np(w.grad), _np(w2.grad), rtol=1e-12)
