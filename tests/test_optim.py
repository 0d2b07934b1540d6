"""ember.optim against torch.optim: same gradients in, same parameter trajectories and state out."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.optim as optim
from ember.tensor.tensor import Tensor

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]
# float32: ember's kernels keep intermediates in float64, torch rounds each op to float32 -> ulp-level differences
TOL = {"float32": dict(rtol=1e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
STATE_TOL = {"float32": dict(rtol=1e-5, atol=2e-6), "float64": dict(rtol=1e-11, atol=1e-13)}

# (optimizer, options): every option of every optimizer appears at least once.
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.02, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True, betas=(0.5, 0.9))),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, betas=(0.7, 0.9), eps=1e-4, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.02, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.02, betas=(0.9, 0.5), weight_decay=0.1)),  # rho_t > 5 from step 1 on: rectified branch
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, eps=1e-4)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-6)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
]


def _grads(arrays: list[np.ndarray], k: int) -> list[np.ndarray]:
    """A deterministic, non-linear gradient field (so trajectories depend on the parameters)."""
    return [(np.sin(a) + 0.1 * a ** 3 - 0.5 + 0.1 * i + 0.05 * k).astype(a.dtype) for i, a in enumerate(arrays)]


def _initial(dtype: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def _make_pair(torch, name, kwargs, dtype, seed=0):
    init = _initial(dtype, seed)
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    ep = [ember.tensor(a.copy(), requires_grad=True) for a in init]
    return tp, getattr(torch.optim, name)(tp, **kwargs), ep, getattr(optim, name)(ep, **kwargs)


def _run(params, opt, wrap, steps, start=0, skip=None):
    """``steps`` updates; at step ``skip`` the first parameter gets no gradient (it must stay put)."""
    for k in range(start, start + steps):
        arrays = [np.array(p.detach().numpy()) for p in params]
        for i, (p, g) in enumerate(zip(params, _grads(arrays, k))):
            p.grad = None if (k == skip and i == 0) else wrap(g)
        opt.step()


def _assert_params(tp, ep, dtype):
    for t, e in zip(tp, ep):
        assert e.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL[dtype])


def _assert_states(t_opt, e_opt, dtype):
    ts, es = t_opt.state_dict(), e_opt.state_dict()
    assert set(ts["state"]) == set(es["state"])
    for key, t_state in ts["state"].items():
        e_state = es["state"][key]
        assert set(t_state) == set(e_state)
        for name, value in t_state.items():
            np.testing.assert_allclose(np.asarray(e_state[name]._array), value.numpy(), **STATE_TOL[dtype],
                                       err_msg=name)
            assert e_state[name].dtype.name == str(value.dtype).replace("torch.", "")
    assert ts["param_groups"] == es["param_groups"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_torch(torch_ref, name, kwargs, dtype):
    torch = torch_ref
    tp, t_opt, ep, e_opt = _make_pair(torch, name, kwargs, dtype)
    _run(tp, t_opt, torch.tensor, 8, skip=3)
    _run(ep, e_opt, ember.tensor, 8, skip=3)
    _assert_params(tp, ep, dtype)
    _assert_states(t_opt, e_opt, dtype)


@pytest.mark.parametrize("name,kwargs", [CASES[2], CASES[8], CASES[15], CASES[21], CASES[24], CASES[27]])
def test_state_dict_round_trip(name, kwargs):
    """Save after 3 steps, load into a fresh optimizer over copies of the parameters, continue: identical."""
    init = _initial("float32", 1)  # float32: loading casts NAdam's float32 mu_product to a float64 param's dtype
    ep = [ember.tensor(a.copy(), requires_grad=True) for a in init]
    e_opt = getattr(optim, name)(ep, **kwargs)
    _run(ep, e_opt, ember.tensor, 3)
    saved = copy.deepcopy(e_opt.state_dict())
    fresh = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ep]
    f_opt = getattr(optim, name)(fresh, **{**kwargs, "lr": 123.0})
    f_opt.load_state_dict(saved)
    assert f_opt.param_groups[0]["lr"] == e_opt.param_groups[0]["lr"]
    assert f_opt.param_groups[0]["params"][0] is fresh[0]
    _run(ep, e_opt, ember.tensor, 4, start=3)
    _run(fresh, f_opt, ember.tensor, 4, start=3)
    for a, b in zip(ep, fresh):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("name,kwargs", [CASES[1], CASES[8], CASES[14], CASES[20]])
def test_torch_state_dict_loads_into_ember(torch_ref, name, kwargs):
    """A state dict written by torch (tensors converted) continues the same trajectory in ember."""
    torch = torch_ref
    tp, t_opt, ep, e_opt = _make_pair(torch, name, kwargs, "float32")
    _run(tp, t_opt, torch.tensor, 3)
    sd = t_opt.state_dict()
    converted = {
        "state": {k: {n: ember.tensor(v.numpy().copy()) for n, v in s.items()} for k, s in sd["state"].items()},
        "param_groups": copy.deepcopy(sd["param_groups"]),
    }
    for e, t in zip(ep, tp):
        e.detach().numpy()[...] = t.detach().numpy()
    e_opt.load_state_dict(converted)
    _run(tp, t_opt, torch.tensor, 4, start=3)
    _run(ep, e_opt, ember.tensor, 4, start=3)
    _assert_params(tp, ep, "float32")


def test_param_groups_hyperparameters_and_repr(torch_ref):
    torch = torch_ref
    init = _initial("float32")
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    ep = [ember.tensor(a, requires_grad=True) for a in init]
    t_opt = torch.optim.SGD([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.5, "momentum": 0.5}], lr=0.1)
    e_opt = optim.SGD([{"params": ep[:2]}, {"params": ep[2:], "lr": 0.5, "momentum": 0.5}], lr=0.1)
    assert repr(e_opt) == repr(t_opt)
    assert e_opt.defaults == t_opt.defaults
    _run(tp, t_opt, torch.tensor, 4)
    _run(ep, e_opt, ember.tensor, 4)
    _assert_params(tp, ep, "float32")
    _assert_states(t_opt, e_opt, "float32")


def test_add_param_group_and_duplicates():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([b])


def test_named_parameters_recorded(torch_ref):
    torch = torch_ref
    named_t = [("w", torch.zeros(2, requires_grad=True)), ("b", torch.zeros(1, requires_grad=True))]
    named_e = [("w", ember.zeros(2, requires_grad=True)), ("b", ember.zeros(1, requires_grad=True))]
    t_sd = torch.optim.Adam(named_t).state_dict()
    e_opt = optim.Adam(named_e)
    assert e_opt.state_dict()["param_groups"] == t_sd["param_groups"]
    assert e_opt.param_groups[0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        e_opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})


@pytest.mark.parametrize("make,message", [
    (lambda p: optim.SGD(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.AdamW(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adam(p, weight_decay=-1e-2), "Invalid weight_decay value: -0.01"),
    (lambda p: optim.NAdam(p, momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
    (lambda p: optim.RMSprop(p, alpha=-0.5), "Invalid alpha value: -0.5"),
    (lambda p: optim.Adagrad(p, lr_decay=-0.5), "Invalid lr_decay value: -0.5"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1.0), "Invalid initial_accumulator_value value: -1.0"),
    (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: optim.LBFGS(p, lr=-2.0), "Invalid learning rate: -2.0"),
    (lambda p: optim.SGD([], lr=0.1), "optimizer got an empty parameter list"),
    (lambda p: optim.LBFGS([{"params": p}, {"params": [ember.zeros(1, requires_grad=True)]}]),
     "LBFGS doesn't support per-parameter options"),
])
def test_invalid_arguments_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make([ember.zeros(2, requires_grad=True)])


def test_invalid_params_type_errors():
    t = ember.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got torch.FloatTensor"):
        optim.SGD(t, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {t}}], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([1], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([t * 2], lr=0.1)


def test_load_state_dict_mismatch_errors():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)


def test_zero_grad_and_closure_loss():
    p = ember.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    p.grad = ember.ones(3)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3, np.float32))
    opt.zero_grad()
    assert p.grad is None

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 3.0
    np.testing.assert_allclose(p.detach().numpy(), np.zeros(3))  # p - 0.5 * 2p
    assert p._version.value > 0


def test_step_hooks_run_and_can_be_removed():
    p = ember.ones(2, requires_grad=True)
    opt = optim.Adam([p])
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    global_pre = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global", True)))
    opt.step()
    assert calls == [("global", True), ("pre", True), ("post", True)]
    pre.remove()
    post.remove()
    global_pre.remove()
    opt.step()
    assert len(calls) == 3


def test_state_dict_hooks():
    p = ember.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    seen = []
    opt.register_load_state_dict_pre_hook(lambda o, sd: seen.append(sd.get("extra")))
    sd = opt.state_dict()
    assert sd["extra"] == 1
    opt.load_state_dict(sd)
    assert seen == [1]


def test_end_to_end_autograd_matches_torch(torch_ref):
    """Gradients from ember's autograd drive the optimizer like torch's do (linear least squares, SGD momentum)."""
    torch = torch_ref
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((16, 4)).astype(np.float32), rng.standard_normal((16, 1)).astype(np.float32)
    w0 = rng.standard_normal((4, 1)).astype(np.float32)
    results = []
    for lib, opt_mod in ((torch, torch.optim), (ember, optim)):
        w = lib.tensor(w0.copy(), requires_grad=True)
        b = lib.zeros(1, requires_grad=True)
        opt = opt_mod.SGD([w, b], lr=0.05, momentum=0.9, nesterov=True)
        xt, yt = lib.tensor(x), lib.tensor(y)
        for _ in range(6):
            opt.zero_grad()
            loss = ((xt.matmul(w) + b - yt) ** 2).mean()
            loss.backward()
            opt.step()
        results.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    for t, e in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_float16_and_noncontiguous_parameters(torch_ref):
    """float16 updates are computed in float32; a transposed (non-contiguous) parameter is updated in place."""
    torch = torch_ref
    base = np.random.default_rng(5).standard_normal((4, 3))
    tp = [torch.tensor(base.astype(np.float16), requires_grad=True),
          torch.tensor(base.T.copy().astype(np.float32)).t().detach().requires_grad_()]
    e_t = ember.tensor(base.T.copy().astype(np.float32)).t().detach().requires_grad_()
    ep = [ember.tensor(base.astype(np.float16), requires_grad=True), e_t]
    assert not e_t.is_contiguous()
    t_opt, e_opt = torch.optim.Adam(tp, lr=0.05), optim.Adam(ep, lr=0.05)
    _run_pairs = [(tp, t_opt, torch.tensor), (ep, e_opt, ember.tensor)]
    for params, opt, wrap in _run_pairs:
        _run(params, opt, wrap, 5)
    assert ep[0].dtype == ember.float16 and e_opt.state[ep[0]]["exp_avg"].dtype == ember.float16
    np.testing.assert_allclose(ep[0].detach().numpy().astype(np.float32), tp[0].detach().numpy().astype(np.float32),
                               rtol=5e-3, atol=5e-3)
    np.testing.assert_allclose(ep[1].detach().numpy(), tp[1].detach().numpy(), **TOL["float32"])
    assert not ep[1].is_contiguous()


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 40), lr=st.floats(1e-4, 1.0), wd=st.sampled_from([0.0, 0.05]),
       amsgrad=st.booleans())
def test_adam_matches_numpy_reference(n, lr, wd, amsgrad):
    """The fused kernel against the textbook formula in NumPy float64, any length (including empty)."""
    rng = np.random.default_rng(n)
    p0, grads = rng.standard_normal(n), [rng.standard_normal(n) for _ in range(3)]
    p = ember.tensor(p0.copy(), requires_grad=True)
    opt = optim.Adam([p], lr=lr, weight_decay=wd, amsgrad=amsgrad)
    ref, m, v, vmax = p0.copy(), np.zeros(n), np.zeros(n), np.zeros(n)
    for t, g in enumerate(grads, 1):
        p.grad = ember.tensor(g)
        opt.step()
        g = g + wd * ref
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt((vmax if amsgrad else v) / (1 - 0.999 ** t)) + 1e-8
        ref = ref - lr / (1 - 0.9 ** t) * m / denom
    np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-10, atol=1e-12)


def test_large_parameter_uses_same_rule(torch_ref):
    """A parameter big enough for the parallel kernel path gives the same result as torch."""
    torch = torch_ref
    init = np.random.default_rng(9).standard_normal(70000).astype(np.float32)
    tp, ep = torch.tensor(init.copy(), requires_grad=True), ember.tensor(init.copy(), requires_grad=True)
    t_opt, e_opt = torch.optim.SGD([tp], lr=0.1, momentum=0.9), optim.SGD([ep], lr=0.1, momentum=0.9)
    _run([tp], t_opt, torch.tensor, 3)
    _run([ep], e_opt, ember.tensor, 3)
    np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy(), **TOL["float32"])


# ----------------------------------------------------------------------------- LBFGS
def _rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
    f = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


def _mild(x: np.ndarray) -> tuple[float, np.ndarray]:
    """A well-conditioned objective, for float32 comparisons (Rosenbrock amplifies rounding differences)."""
    w, c = np.array([1.0, 2.0, 0.5, 3.0]), np.array([0.3, -0.2, 0.7, 0.1])
    return np.sum(w * (x - c) ** 2) + 0.1 * np.sum(x ** 4), 2 * w * (x - c) + 0.4 * x ** 3


def _lbfgs_run(lib, opt_cls, dtype, steps, objective=_rosenbrock, **kwargs):
    x0 = np.array([-1.2, 1.0, -0.5, 0.8], dtype=dtype)
    a = lib.tensor(x0[:2].copy(), requires_grad=True)
    b = lib.tensor(x0[2:].copy(), requires_grad=True)
    opt = opt_cls([a, b], **kwargs)

    def closure():
        x = np.concatenate([a.detach().numpy(), b.detach().numpy()])
        f, g = objective(x.astype(np.float64))
        a.grad, b.grad = lib.tensor(g[:2].astype(dtype)), lib.tensor(g[2:].astype(dtype))
        return lib.tensor(np.asarray(f, dtype))

    losses = [float(opt.step(closure)) for _ in range(steps)]
    return np.concatenate([a.detach().numpy(), b.detach().numpy()]), losses, opt


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", [
    dict(lr=0.1, max_iter=5),
    dict(lr=1, max_iter=10, history_size=3, line_search_fn="strong_wolfe"),
    dict(lr=0.5, max_iter=4, max_eval=6, tolerance_change=1e-5, line_search_fn="strong_wolfe"),
])
def test_lbfgs_matches_torch(torch_ref, dtype, kwargs):
    torch = torch_ref
    objective = _mild if dtype == "float32" else _rosenbrock
    t_x, t_losses, t_opt = _lbfgs_run(torch, torch.optim.LBFGS, dtype, 3, objective, **kwargs)
    e_x, e_losses, e_opt = _lbfgs_run(ember, optim.LBFGS, dtype, 3, objective, **kwargs)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(e_x, t_x, **tol)
    np.testing.assert_allclose(e_losses, t_losses, **tol)
    t_state, e_state = t_opt.state_dict()["state"][0], e_opt.state_dict()["state"][0]
    assert e_state["func_evals"] == t_state["func_evals"] and e_state["n_iter"] == t_state["n_iter"]
    assert len(e_state["old_dirs"]) == len(t_state["old_dirs"])
    assert isinstance(e_state["d"], Tensor)


def test_lbfgs_converges_on_rosenbrock():
    x, losses, _ = _lbfgs_run(ember, optim.LBFGS, "float64", 10, lr=1, max_iter=20,
                              line_search_fn="strong_wolfe")
    np.testing.assert_allclose(x, np.ones(4), atol=1e-5)
    assert losses[-1] < 1e-8


def test_lbfgs_unknown_line_search():
    p = ember.ones(2, requires_grad=True)
    opt = optim.LBFGS([p], line_search_fn="armijo")

    def closure():
        p.grad = ember.ones(2)
        return ember.tensor(1.0)

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_no_warning_from_plain_step():
    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.RMSprop([p]).step()


def test_custom_optimizer_subclass_gets_hooks():
    """A user-written Optimizer subclass (torch's documented pattern) steps and fires hooks once per call."""

    class PlainSGD(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        @ember.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])

    class Halved(PlainSGD):
        def step(self, closure=None):
            super().step(closure)

    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    opt = Halved([p], lr=0.25)
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.step()
    assert calls == ["pre"]
    np.testing.assert_allclose(p.detach().numpy(), [0.75, 0.75])


def test_pickle_round_trip_keeps_state_identity():
    import pickle

    p = ember.ones(3, requires_grad=True)
    p.grad = ember.full((3,), 0.5)
    opt = optim.Adam([p], lr=0.1)
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    q = clone.param_groups[0]["params"][0]
    assert q is not p and q in clone.state
    np.testing.assert_array_equal(clone.state[q]["exp_avg"].numpy(), opt.state[p]["exp_avg"].numpy())
    q.grad = ember.full((3,), 0.5)
    clone.step()
    opt.step()
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


def test_mismatched_gradient_shape_raises():
    p = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size '\\[4\\]'"):   # as torch
        p.grad = ember.ones(4)
    optim.Adam([p]).step()
    np.testing.assert_array_equal(p.detach().numpy(), np.ones(3, np.float32))


def test_assigning_a_grad_of_another_dtype_or_size_is_refused():
    p = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype 'double' to a tensor with "
                                           "grad_dtype 'Float'"):
        p.grad = ember.ones(2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[3\]' to a tensor of size"):
        p.grad = ember.ones(3)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type int"):
        p.grad = 3
    p.grad = ember.full((2,), 4.0)
    ember.optim.SGD([p], lr=0.5).step()
    assert p.tolist() == [-1.0, -1.0]
