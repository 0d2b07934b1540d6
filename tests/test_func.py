"""torch.func's transforms against torch.func itself (and float64 finite differences through gradcheck)."""
import warnings

import numpy as np
import pytest

import ember
from ember import func as ef
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")
tf = torch.func


def _both(array):
    return ember.tensor(array), torch.tensor(array)


def _close(ours, theirs, **tol):
    """Pytrees of tensors equal leaf by leaf (same structure)."""
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs)
        for k in theirs:
            _close(ours[k], theirs[k], **tol)
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b, **tol)
    else:
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **({"rtol": 1e-10} | tol))


RNG = np.random.default_rng(0)
X = RNG.standard_normal(4)
Y = RNG.standard_normal((3, 4))


def f_scalar(lib):
    return lambda x, y: ((lib.sin(x) * y).sum(-1) ** 2).sum() + (x * x).sum()


def f_vector(lib):
    return lambda x, y: {"a": lib.tanh(y @ x), "b": (x * x, x.exp())}


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), -1])
def test_grad_and_grad_and_value(argnums):
    (x, tx), (y, ty) = _both(X), _both(Y)
    _close(ef.grad(f_scalar(ember), argnums)(x, y), tf.grad(f_scalar(torch), argnums)(tx, ty))
    _close(ef.grad_and_value(f_scalar(ember), argnums)(x, y), tf.grad_and_value(f_scalar(torch), argnums)(tx, ty))


def test_grad_has_aux_pytree_inputs_and_errors():
    def loss(lib):
        return lambda p, x: ((p["w"] * x).sum() + p["b"][0] ** 2, {"n": x.sum()})
    p = {"w": X, "b": np.array([0.5, 2.0])}
    ours = ef.grad(loss(ember), has_aux=True)({k: ember.tensor(v) for k, v in p.items()}, ember.tensor(X))
    theirs = tf.grad(loss(torch), has_aux=True)({k: torch.tensor(v) for k, v in p.items()}, torch.tensor(X))
    _close(ours, theirs)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        ef.grad(lambda x: x * 2)(ember.tensor(X))
    with pytest.raises(RuntimeError, match="argnums"):
        ef.grad(f_scalar(ember), argnums=2)(ember.tensor(X), ember.tensor(Y))
    with pytest.raises(RuntimeError, match="tuple"):
        ef.grad(lambda x: x.sum(), has_aux=True)(ember.tensor(X))


def test_grad_composes_and_stays_in_the_callers_graph():
    (x, tx) = _both(X)
    _close(ef.grad(lambda x: ef.grad(lambda y: (y ** 3).sum())(x).sum())(x),
           tf.grad(lambda x: tf.grad(lambda y: (y ** 3).sum())(x).sum())(tx))
    x.requires_grad_()
    g = ef.grad(lambda y: (y.sin() ** 2).sum())(x)
    assert g.requires_grad
    assert gradcheck(lambda v: ef.grad(lambda y: (y.sin() ** 2).sum())(v), (x,))
    assert not ef.grad(lambda y: (y.sin() ** 2).sum())(x.detach()).requires_grad


def test_vjp_and_jvp():
    (x, tx), (y, ty) = _both(X), _both(Y)
    out, fn = ef.vjp(f_vector(ember), x, y)
    tout, tfn = tf.vjp(f_vector(torch), tx, ty)
    _close(out, tout)
    cts = {"a": RNG.standard_normal(3), "b": (RNG.standard_normal(4), RNG.standard_normal(4))}
    _close(fn({"a": ember.tensor(cts["a"]), "b": tuple(ember.tensor(c) for c in cts["b"])}),
           tfn({"a": torch.tensor(cts["a"]), "b": tuple(torch.tensor(c) for c in cts["b"])}))
    with pytest.raises(RuntimeError, match="pytree structure"):
        fn(ember.ones(3))
    ct = ember.ones(4, dtype=ember.float64, requires_grad=True)
    _, square_vjp = ef.vjp(lambda v: v * v, x)
    (pulled,) = square_vjp(ct)
    assert pulled.requires_grad and not square_vjp(ct, create_graph=False)[0].requires_grad
    tangents = (RNG.standard_normal(4), RNG.standard_normal((3, 4)))
    _close(ef.jvp(f_vector(ember), (x, y), tuple(ember.tensor(t) for t in tangents)),
           tf.jvp(f_vector(torch), (tx, ty), tuple(torch.tensor(t) for t in tangents)))
    with pytest.raises(RuntimeError, match="same shape"):
        ef.jvp(ember.sin, (x,), (ember.ones(2, dtype=ember.float64),))
    with pytest.raises(RuntimeError, match="independent of the inputs"):
        ef.jvp(lambda v: ember.ones(2), (x,), (x,), strict=True)
    _close(ef.jvp(lambda v: ember.ones(2, dtype=ember.float64), (x,), (x,)),
           tf.jvp(lambda v: torch.ones(2, dtype=torch.float64), (tx,), (tx,)))


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacrev_jacfwd_hessian(argnums):
    (x, tx), (y, ty) = _both(X), _both(Y)
    want = tf.jacrev(f_vector(torch), argnums)(tx, ty)
    _close(ef.jacrev(f_vector(ember), argnums)(x, y), want)
    _close(ef.jacrev(f_vector(ember), argnums, chunk_size=3)(x, y), want)
    _close(ef.jacfwd(f_vector(ember), argnums)(x, y), tf.jacfwd(f_vector(torch), argnums)(tx, ty))
    _close(ef.hessian(f_scalar(ember), argnums)(x, y), tf.hessian(f_scalar(torch), argnums)(tx, ty))


def test_jacfwd_randomness_modes():
    x = ember.tensor(X)
    noisy = lambda v: v * ember.rand(())  # noqa: E731
    with pytest.raises(RuntimeError, match="randomness"):
        ef.jacfwd(noisy)(x)
    jac = ef.jacfwd(noisy, randomness="same")(x)
    assert np.allclose(np.diag(jac.numpy()), jac.numpy()[0, 0])  # one random factor for every column
    with pytest.raises(RuntimeError, match="randomness"):
        ef.jacfwd(noisy, randomness="sometimes")


def _models():
    ember.manual_seed(0)
    ours = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.BatchNorm1d(6), ember.nn.ReLU(), ember.nn.Linear(6, 3))
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def test_functional_call_swaps_and_restores():
    ours, theirs = _models()
    params = {k: RNG.standard_normal(tuple(v.shape)) for k, v in ours.named_parameters()}
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    got = ef.functional_call(ours, {k: ember.tensor(v, dtype=ember.float32) for k, v in params.items()},
                             (ember.tensor(x),))
    want = tf.functional_call(theirs, {k: torch.tensor(v, dtype=torch.float32) for k, v in params.items()},
                              (torch.tensor(x),))
    _close(got, want, rtol=1e-5, atol=1e-6)
    assert isinstance(ours[0].weight, ember.nn.Parameter)  # restored
    _close(ours(ember.tensor(x)), theirs(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="Missing key"):
        ef.functional_call(ours, {"0.weight": ember.zeros(6, 4)}, (ember.tensor(x),), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        ef.functional_call(ours, ({"0.bias": ember.zeros(6)}, {"0.bias": ember.zeros(6)}), (ember.tensor(x),))


def test_functional_call_ties_weights():
    model = ember.nn.Sequential(ember.nn.Linear(3, 3, bias=False), ember.nn.Linear(3, 3, bias=False))
    model[1].weight = model[0].weight
    w = ember.eye(3) * 2
    out = ef.functional_call(model, {"0.weight": w}, ember.ones(1, 3))
    np.testing.assert_allclose(out.numpy(), [[4.0, 4.0, 4.0]])
    out = ef.functional_call(model, {"0.weight": w}, ember.ones(1, 3), tie_weights=False)
    np.testing.assert_allclose(out.detach().numpy(), (ember.ones(1, 3) @ (w.T @ model[1].weight.T)).detach().numpy(),
                               rtol=1e-6)


def test_stack_module_state():
    models = [ember.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = ef.stack_module_state(models)
    assert buffers == {} and params["weight"].shape == (4, 2, 3) and params["weight"].is_leaf
    assert params["weight"].requires_grad
    np.testing.assert_array_equal(params["bias"][2].detach().numpy(), models[2].bias.detach().numpy())
    with pytest.raises(RuntimeError, match="at least one model"):
        ef.stack_module_state([])


@pytest.mark.parametrize("in_dims,out_dims", [(0, 0), (1, 0), ((0, None), 1), ((-1, None), -1)])
def test_vmap_dims(in_dims, out_dims):
    a = RNG.standard_normal((3, 4))
    dim = in_dims[0] if isinstance(in_dims, tuple) else in_dims
    example_shape = np.delete(np.array(a.shape), dim).tolist()
    b = RNG.standard_normal(example_shape if isinstance(in_dims, tuple) else (3, 4))
    fn = lambda lib: (lambda u, v: (lib.sin(u) * v).cumsum(0))  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ef.vmap(fn(ember), in_dims, out_dims)(ember.tensor(a), ember.tensor(b))
    _close(got, tf.vmap(fn(torch), in_dims, out_dims)(torch.tensor(a), torch.tensor(b)))


def test_vmap_nested_pytrees_chunks_and_errors():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4))
    _close(ef.vmap(ef.vmap(ember.dot))(ember.tensor(a), ember.tensor(b)),
           tf.vmap(tf.vmap(torch.dot))(torch.tensor(a), torch.tensor(b)))
    fn = lambda lib: (lambda d: {"s": d["x"].sum(), "p": (d["x"] * d["y"],)})  # noqa: E731
    _close(ef.vmap(fn(ember), chunk_size=1)({"x": ember.tensor(a[0]), "y": ember.tensor(b[0])}),
           tf.vmap(fn(torch), chunk_size=1)({"x": torch.tensor(a[0]), "y": torch.tensor(b[0])}))
    with pytest.raises(ValueError, match="same size"):
        ef.vmap(ember.add)(ember.ones(2), ember.ones(3))
    with pytest.raises(ValueError, match="at least one input"):
        ef.vmap(ember.sin, in_dims=None)(ember.ones(2))
    with pytest.raises(ValueError, match="dimensionality"):
        ef.vmap(ember.sin, in_dims=2)(ember.ones(2))
    with pytest.raises(ValueError, match="chunk_size"):
        ef.vmap(ember.sin, chunk_size=0)


def test_vmap_randomness():
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match="randomness"):
        ef.vmap(lambda v: v + ember.rand(()))(x)
    same = ef.vmap(lambda v: v + ember.rand(()), randomness="same")(x)
    assert len(set(same.tolist())) == 1
    different = ef.vmap(lambda v: v + ember.rand(()), randomness="different")(x)
    assert len(set(different.tolist())) == 3


def test_per_sample_gradients_tutorial():
    """torch.func's per-sample-gradient tutorial, with ``ember`` in place of torch."""
    ours, theirs = _models()
    ours.eval(), theirs.eval()
    data = RNG.standard_normal((6, 4)).astype(np.float32)
    targets = RNG.integers(0, 3, 6)

    def run(lib, model):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            predictions = lib.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(predictions, target.unsqueeze(0))

        per_sample = lib.func.vmap(lib.func.grad(compute_loss), in_dims=(None, None, 0, 0))
        return per_sample(params, buffers, lib.tensor(data), lib.tensor(targets))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(run(ember, ours), run(torch, theirs), rtol=1e-5, atol=1e-6)
