"""ember.autograd.functional against torch.autograd.functional and float64 finite differences.

Every function is written against a ``lib`` argument, so the same code runs with ember and with torch.
"""
import numpy as np
import pytest

import ember
import ember.autograd.functional as EF

torch = pytest.importorskip("torch")
import torch.autograd.functional as TF  # noqa: E402

LIBS = {"ember": (ember, EF), "torch": (torch, TF)}
RNG = np.random.default_rng(1234)
W_NP = RNG.standard_normal((3, 2))


def _W(lib):
    return lib.tensor(W_NP, dtype=lib.float64)


# name -> (function(lib, *inputs), input shapes, inputs given as a tuple?)
CASES = {
    "single_in_scalar_out": (lambda lib, x: (x ** 3).sum(), [(4,)], False),
    "single_in_vec_out": (lambda lib, x: x.exp() * x.sum(), [(2, 3)], False),
    "single_in_tuple_out": (lambda lib, x: (x ** 2, x.sum()), [(3,)], False),
    "tuple_in_single_out": (lambda lib, x, y: (x @ _W(lib)).tanh() * y, [(4, 3), (2,)], True),
    "tuple_in_tuple_out": (lambda lib, x, y: (x * y.exp(), x.sin()), [(3,), (3,)], True),
    "one_tuple_in_tuple_out": (lambda lib, x: (x.cos(), (x @ _W(lib)).sum()), [(2, 3)], True),
}

SCALAR_CASES = {
    "single": (lambda lib, x: (x ** 3).sum() + (x.sin() * x).sum(), [(4,)], False),
    "matrix": (lambda lib, x: ((x @ _W(lib)).tanh() ** 2).sum(), [(2, 3)], False),
    "tuple": (lambda lib, x, y: (x ** 2).sum() * y.exp().sum() + ((x @ _W(lib)) * y ** 2).sum(), [(3,), (2,)], True),
    "tuple_of_one": (lambda lib, x: (x.exp() * x).sum(), [(3,)], True),
}


def _arrays(shapes):
    return [RNG.standard_normal(s) for s in shapes]


def _wrap(lib, arrays, as_tuple, requires_grad=False):
    ts = tuple(lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad) for a in arrays)
    return ts if as_tuple else ts[0]


def _assert_same(e, t, rtol=1e-10, atol=1e-12, path="result"):
    """Same nesting (Tensor vs tuple, lengths), shapes, dtype float64 and values."""
    if isinstance(t, tuple):
        assert isinstance(e, tuple), f"{path}: ember gave {type(e).__name__}, torch a tuple"
        assert len(e) == len(t), f"{path}: lengths {len(e)} != {len(t)}"
        for i, (a, b) in enumerate(zip(e, t)):
            _assert_same(a, b, rtol, atol, f"{path}[{i}]")
        return
    assert isinstance(e, ember.Tensor), f"{path}: ember gave {type(e).__name__}, torch a Tensor"
    assert tuple(e.shape) == tuple(t.shape), f"{path}: shape {tuple(e.shape)} != {tuple(t.shape)}"
    assert e.dtype == ember.float64
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol, err_msg=path)


def _flat(res):
    return [r for x in res for r in _flat(x)] if isinstance(res, tuple) else [res]


def _both(op, fn, arrays, as_tuple, v_arrays=None, v_tuple=None, **kw):
    out = {}
    for name, (lib, F) in LIBS.items():
        inputs = _wrap(lib, arrays, as_tuple)
        args = {}
        if v_arrays is not None:
            args["v"] = _wrap(lib, v_arrays, v_tuple)
        out[name] = getattr(F, op)(lambda *a: fn(lib, *a), inputs, **args, **kw)
    return out["ember"], out["torch"]


# ---------------------------------------------------------------------------------------------------- jacobian

@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_jacobian_matches_torch(case, vectorize):
    fn, shapes, as_tuple = CASES[case]
    e, t = _both("jacobian", fn, _arrays(shapes), as_tuple, vectorize=vectorize)
    _assert_same(e, t)
    assert not any(r.requires_grad for r in _flat(e))


@pytest.mark.parametrize("case", list(CASES))
def test_jacobian_vectorize_identical(case):
    fn, shapes, as_tuple = CASES[case]
    arrays = _arrays(shapes)
    a = EF.jacobian(lambda *x: fn(ember, *x), _wrap(ember, arrays, as_tuple), vectorize=False)
    b = EF.jacobian(lambda *x: fn(ember, *x), _wrap(ember, arrays, as_tuple), vectorize=True)
    for p, q in zip(_flat(a), _flat(b)):
        assert tuple(p.shape) == tuple(q.shape)
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def _numeric_jacobian(f, arrays, eps=1e-6):
    """Central differences of the flattened outputs w.r.t. each flattened input: list over outputs of lists
    over inputs of (out.size, in.size) arrays."""
    base = [np.asarray(o) for o in f(*arrays)]
    jac = [[np.zeros((o.size, a.size)) for a in arrays] for o in base]
    for j, a in enumerate(arrays):
        for k in range(a.size):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[j].reshape(-1)[k] += eps
            minus[j].reshape(-1)[k] -= eps
            for i, (op, om) in enumerate(zip(f(*plus), f(*minus))):
                jac[i][j][:, k] = (np.asarray(op) - np.asarray(om)).reshape(-1) / (2 * eps)
    return jac


def _ember_np(fn):
    def run(*arrays):
        with ember.no_grad():
            out = fn(ember, *(ember.tensor(a, dtype=ember.float64) for a in arrays))
        return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    return run


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("case", ["single_in_vec_out", "tuple_in_single_out", "tuple_in_tuple_out"])
def test_jacobian_finite_differences(case, vectorize):
    fn, shapes, as_tuple = CASES[case]
    arrays = _arrays(shapes)
    jac = EF.jacobian(lambda *a: fn(ember, *a), _wrap(ember, arrays, as_tuple), vectorize=vectorize)
    num = _numeric_jacobian(_ember_np(fn), arrays)
    n_out = len(num)
    jac = jac if isinstance(jac, tuple) else (jac,)
    if not as_tuple:
        jac = tuple((j,) for j in jac)
    elif n_out == 1:
        jac = (jac,)
    for i in range(n_out):
        for j in range(len(arrays)):
            got = jac[i][j].numpy().reshape(num[i][j].shape)
            np.testing.assert_allclose(got, num[i][j], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("case", ["single_in_vec_out", "tuple_in_tuple_out"])
def test_jacobian_create_graph_differentiates_again(case, vectorize):
    fn, shapes, as_tuple = CASES[case]
    arrays = _arrays(shapes)
    grads = {}
    for name, (lib, F) in LIBS.items():
        inputs = _wrap(lib, arrays, as_tuple, requires_grad=True)
        jac = F.jacobian(lambda *a: fn(lib, *a), inputs, create_graph=True, vectorize=vectorize)
        flat = _flat(jac)
        assert all(r.requires_grad for r in flat if r.abs().sum().item() > 0)
        total = sum((r.sin() * (k + 1)).sum() for k, r in enumerate(flat))
        ins = inputs if as_tuple else (inputs,)
        grads[name] = lib.autograd.grad(total, ins, allow_unused=True)
    for a, b in zip(grads["ember"], grads["torch"]):
        if b is None:
            assert a is None or float(abs(a).sum().item()) == 0.0
        else:
            _assert_same(a, b, rtol=1e-9)


def test_jacobian_of_captured_input_is_not_confused():
    # the function closes over the tensor that is also passed as input: only the argument is differentiated
    a = RNG.standard_normal(3)
    res = {}
    for name, (lib, F) in LIBS.items():
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        res[name] = F.jacobian(lambda z: z * x, x)
    _assert_same(res["ember"], res["torch"])
    np.testing.assert_allclose(res["ember"].numpy(), np.diag(a))


# ---------------------------------------------------------------------------------------------------- vjp / jvp

def _out_shapes(fn, shapes, as_tuple):
    out = fn(torch, *(torch.zeros(s, dtype=torch.float64) for s in shapes))
    return ([tuple(o.shape) for o in out], True) if isinstance(out, tuple) else ([tuple(out.shape)], False)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_vjp_matches_torch(case, create_graph):
    fn, shapes, as_tuple = CASES[case]
    out_shapes, out_tuple = _out_shapes(fn, shapes, as_tuple)
    e, t = _both("vjp", fn, _arrays(shapes), as_tuple, v_arrays=_arrays(out_shapes), v_tuple=out_tuple,
                 create_graph=create_graph)
    _assert_same(e, t)
    if not create_graph:
        assert not any(r.requires_grad for r in _flat(e))


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_jvp_matches_torch(case, create_graph):
    fn, shapes, as_tuple = CASES[case]
    e, t = _both("jvp", fn, _arrays(shapes), as_tuple, v_arrays=_arrays(shapes), v_tuple=as_tuple,
                 create_graph=create_graph)
    _assert_same(e, t)


def test_vjp_and_jvp_default_v_for_scalars():
    a = RNG.standard_normal(())
    res = {}
    for name, (lib, F) in LIBS.items():
        x = lib.tensor(a, dtype=lib.float64)
        res[name] = (F.vjp(lambda z: (z ** 3).exp(), x), F.jvp(lambda z: z.sin() * z, x))
    _assert_same(res["ember"], res["torch"])


def test_jvp_create_graph_differentiates_again():
    fn, shapes, _ = CASES["tuple_in_tuple_out"]
    arrays, v_arrays = _arrays(shapes), _arrays(shapes)
    res = {}
    for name, (lib, F) in LIBS.items():
        x = _wrap(lib, arrays, True, requires_grad=True)
        v = _wrap(lib, v_arrays, True, requires_grad=True)
        _, jv = F.jvp(lambda *a: fn(lib, *a), x, v, create_graph=True)
        assert all(r.requires_grad for r in jv)
        total = (jv[0] ** 2).sum() + (jv[1] * 3).sum()
        res[name] = lib.autograd.grad(total, x + v)
    _assert_same(res["ember"], res["torch"], rtol=1e-9)


# ---------------------------------------------------------------------------------------------------- hessian & co.

@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("case", list(SCALAR_CASES))
def test_hessian_matches_torch(case, vectorize):
    fn, shapes, as_tuple = SCALAR_CASES[case]
    e, t = _both("hessian", fn, _arrays(shapes), as_tuple, vectorize=vectorize)
    _assert_same(e, t)


@pytest.mark.parametrize("case", ["single", "tuple"])
def test_hessian_finite_differences_of_gradient(case):
    fn, shapes, as_tuple = SCALAR_CASES[case]
    arrays = _arrays(shapes)

    def grad_np(*arrs):
        xs = tuple(ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in arrs)
        return [g.numpy() for g in ember.autograd.grad(fn(ember, *xs), xs)]

    num = _numeric_jacobian(grad_np, arrays)
    for vectorize in (False, True):
        h = EF.hessian(lambda *a: fn(ember, *a), _wrap(ember, arrays, as_tuple), vectorize=vectorize)
        h = h if as_tuple else ((h,),)
        for i in range(len(arrays)):
            for j in range(len(arrays)):
                np.testing.assert_allclose(h[i][j].numpy().reshape(num[i][j].shape), num[i][j], rtol=1e-6, atol=1e-7)


def test_hessian_create_graph_differentiates_again():
    fn, shapes, _ = SCALAR_CASES["tuple"]
    arrays = _arrays(shapes)
    res = {}
    for name, (lib, F) in LIBS.items():
        x = _wrap(lib, arrays, True, requires_grad=True)
        h = F.hessian(lambda *a: fn(lib, *a), x, create_graph=True)
        total = sum((r * r).sum() for r in _flat(h))
        res[name] = lib.autograd.grad(total, x)
    _assert_same(res["ember"], res["torch"], rtol=1e-9)


@pytest.mark.parametrize("op", ["hvp", "vhp"])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", list(SCALAR_CASES))
def test_hvp_vhp_match_torch(op, case, create_graph):
    fn, shapes, as_tuple = SCALAR_CASES[case]
    e, t = _both(op, fn, _arrays(shapes), as_tuple, v_arrays=_arrays(shapes), v_tuple=as_tuple,
                 create_graph=create_graph)
    _assert_same(e, t)


def test_hvp_equals_hessian_times_v():
    fn, shapes, _ = SCALAR_CASES["matrix"]
    x, v = _arrays(shapes)[0], _arrays(shapes)[0]
    f = lambda z: fn(ember, z)  # noqa: E731
    h = EF.hessian(f, ember.tensor(x)).numpy().reshape(x.size, x.size)
    _, hv = EF.hvp(f, ember.tensor(x), ember.tensor(v))
    np.testing.assert_allclose(hv.numpy().reshape(-1), h @ v.reshape(-1), rtol=1e-10, atol=1e-12)


def test_hvp_create_graph_differentiates_again():
    fn, shapes, _ = SCALAR_CASES["tuple"]
    arrays, v_arrays = _arrays(shapes), _arrays(shapes)
    res = {}
    for name, (lib, F) in LIBS.items():
        x = _wrap(lib, arrays, True, requires_grad=True)
        v = _wrap(lib, v_arrays, True, requires_grad=True)
        _, hv = F.hvp(lambda *a: fn(lib, *a), x, v, create_graph=True)
        res[name] = lib.autograd.grad(sum((r.exp()).sum() for r in hv), x + v)
    _assert_same(res["ember"], res["torch"], rtol=1e-9)


# ---------------------------------------------------------------------------------------------------- errors

def _errors(call):
    """Run ``call(lib, F)`` for both libraries; both must raise the same type and (modulo the library's name)
    the same message."""
    got = {}
    for name, (lib, F) in LIBS.items():
        with pytest.raises(Exception) as info:
            call(lib, F)
        got[name] = info
    e, t = got["ember"], got["torch"]
    assert e.type is t.type, (e.value, t.value)
    assert str(e.value) == str(t.value).replace("torch.", "ember."), (str(e.value), str(t.value))
    return e


def _x(lib, n=3):
    return lib.tensor(np.linspace(0.5, 1.5, n), dtype=lib.float64)


STRICT_CALLS = {
    # an input the output does not use
    "vjp_unused": lambda lib, F: F.vjp(lambda x, y: x ** 2, (_x(lib), _x(lib)), (_x(lib),), strict=True),
    "jvp_unused": lambda lib, F: F.jvp(lambda x, y: x ** 2, (_x(lib), _x(lib)), (_x(lib), _x(lib)), strict=True),
    "jacobian_unused": lambda lib, F: F.jacobian(lambda x, y: x ** 2, (_x(lib), _x(lib)), strict=True),
    "hessian_unused": lambda lib, F: F.hessian(lambda x, y: (x ** 3).sum(), (_x(lib), _x(lib)), strict=True),
    "hvp_unused": lambda lib, F: F.hvp(lambda x, y: (x ** 3).sum(), (_x(lib), _x(lib)), (_x(lib), _x(lib)),
                                       strict=True),
    "vhp_unused": lambda lib, F: F.vhp(lambda x, y: (x ** 3).sum(), (_x(lib), _x(lib)), (_x(lib), _x(lib)),
                                       strict=True),
    # an output that does not require grad at all
    "vjp_const_output": lambda lib, F: F.vjp(lambda x: lib.ones(3, dtype=lib.float64), _x(lib), _x(lib),
                                             strict=True),
    "jacobian_const_output": lambda lib, F: F.jacobian(lambda x: (x * 2, lib.ones(2, dtype=lib.float64)), _x(lib),
                                                       strict=True),
    # linear function: the jacobian does not depend on the input
    "hessian_linear": lambda lib, F: F.hessian(lambda x: (x * 2).sum(), _x(lib), strict=True),
    "hvp_linear": lambda lib, F: F.hvp(lambda x: (x * 2).sum(), _x(lib), _x(lib), strict=True),
    "vhp_linear": lambda lib, F: F.vhp(lambda x: (x * 2).sum(), _x(lib), _x(lib), strict=True),
    # jacobian constant in the input, asked for with create_graph
    "jacobian_linear_create_graph": lambda lib, F: F.jacobian(lambda x: x * 2, _x(lib), strict=True,
                                                              create_graph=True),
    "vjp_linear_create_graph": lambda lib, F: F.vjp(lambda x: x * 2, _x(lib), _x(lib), strict=True,
                                                    create_graph=True),
    "strict_and_vectorize": lambda lib, F: F.jacobian(lambda x: x ** 2, _x(lib), strict=True, vectorize=True),
}


@pytest.mark.parametrize("name", list(STRICT_CALLS))
def test_strict_errors_match_torch(name):
    e = _errors(STRICT_CALLS[name])
    assert e.type is RuntimeError


def test_non_strict_unused_input_gives_zeros():
    res = {}
    for name, (lib, F) in LIBS.items():
        xs = (_x(lib), _x(lib))
        res[name] = (F.jacobian(lambda x, y: x ** 2, xs), F.jacobian(lambda x, y: x ** 2, xs, vectorize=True),
                     F.vjp(lambda x, y: x ** 2, xs, _x(lib)), F.hessian(lambda x, y: (x ** 3).sum(), xs),
                     F.hvp(lambda x, y: (x ** 3).sum(), xs, xs), F.jvp(lambda x: lib.ones(3, dtype=lib.float64),
                                                                       _x(lib), _x(lib)))
    _assert_same(res["ember"], res["torch"])
    np.testing.assert_array_equal(res["ember"][0][1].numpy(), np.zeros((3, 3)))


VALIDATION_CALLS = {
    "vjp_v_tuple_length": lambda lib, F: F.vjp(lambda x, y: (x, y), (_x(lib), _x(lib)), (_x(lib),)),
    "vjp_v_single_length": lambda lib, F: F.vjp(lambda x: x * 2, _x(lib), (_x(lib), _x(lib))),
    "vjp_v_size": lambda lib, F: F.vjp(lambda x: x * 2, _x(lib), _x(lib, 4)),
    "vjp_v_entry_size": lambda lib, F: F.vjp(lambda x: (x, x), _x(lib), (_x(lib), _x(lib, 2))),
    "vjp_v_none": lambda lib, F: F.vjp(lambda x: x * 2, _x(lib)),
    "jvp_v_none": lambda lib, F: F.jvp(lambda x: x * 2, _x(lib)),
    "jvp_v_size": lambda lib, F: F.jvp(lambda x, y: x * y, (_x(lib), _x(lib)), (_x(lib), _x(lib, 2))),
    "hvp_v_none": lambda lib, F: F.hvp(lambda x: (x ** 2).sum(), _x(lib)),
    "vhp_v_size": lambda lib, F: F.vhp(lambda x: (x ** 2).sum(), _x(lib), _x(lib, 5)),
    "hvp_tuple_output": lambda lib, F: F.hvp(lambda x: ((x ** 2).sum(),), _x(lib), _x(lib)),
    "vhp_non_scalar": lambda lib, F: F.vhp(lambda x: x ** 2, _x(lib), _x(lib)),
    "hessian_non_scalar": lambda lib, F: F.hessian(lambda x: x ** 2, _x(lib)),
    "hessian_tuple_output": lambda lib, F: F.hessian(lambda x: ((x ** 2).sum(),), _x(lib)),
    "inputs_not_tensor": lambda lib, F: F.jacobian(lambda x: x, 3.0),
    "inputs_tuple_not_tensor": lambda lib, F: F.vjp(lambda x, y: x, (_x(lib), 2), _x(lib)),
    "output_not_tensor": lambda lib, F: F.jacobian(lambda x: [x], _x(lib)),
    "v_not_tensor": lambda lib, F: F.jvp(lambda x: x, _x(lib), [1.0, 2.0, 3.0]),
    "bad_strategy": lambda lib, F: F.jacobian(lambda x: x, _x(lib), strategy="sideways"),
    "bad_hessian_strategy": lambda lib, F: F.hessian(lambda x: x.sum(), _x(lib), outer_jacobian_strategy="up"),
    "forward_mode_create_graph": lambda lib, F: F.jacobian(lambda x: x, _x(lib), create_graph=True,
                                                           strategy="forward-mode"),
    "forward_mode_strict": lambda lib, F: F.jacobian(lambda x: x, _x(lib), strict=True, strategy="forward-mode"),
    "forward_mode_not_vectorized": lambda lib, F: F.jacobian(lambda x: x, _x(lib), strategy="forward-mode"),
}


@pytest.mark.parametrize("name", list(VALIDATION_CALLS))
def test_validation_errors_match_torch(name):
    _errors(VALIDATION_CALLS[name])


def test_forward_mode_vectorized_matches_torch():
    def f(x):
        return (x * 2).exp()

    _assert_same(EF.jacobian(f, _x(ember), strategy="forward-mode", vectorize=True),
                 TF.jacobian(f, _x(torch), strategy="forward-mode", vectorize=True))


def test_results_leave_grad_mode_and_inputs_untouched():
    x = ember.tensor(np.arange(3.0), requires_grad=True)
    with ember.no_grad():
        out, g = EF.vjp(lambda z: (z ** 2).sum(), x)
        jac = EF.jacobian(lambda z: z ** 2, x)
    assert ember.is_grad_enabled()
    np.testing.assert_allclose(g.numpy(), 2 * np.arange(3.0))
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * np.arange(3.0)))
    assert x.grad is None and not g.requires_grad and not out.requires_grad
    assert ember.autograd.functional.__all__ == ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def test_grad_is_grads_batched_matches_torch(torch_ref):
    """autograd.grad(is_grads_batched=True) gives one gradient row per grad_output row (it used to ignore the flag)."""
    x_np = np.array([0.3, -1.2, 2.0])
    basis = np.eye(3)
    x = ember.tensor(x_np, requires_grad=True)
    (jac,) = ember.autograd.grad(x.sin() * x, x, ember.tensor(basis), is_grads_batched=True)
    xt = torch_ref.tensor(x_np, requires_grad=True)
    (expected,) = torch_ref.autograd.grad(xt.sin() * xt, xt, torch_ref.tensor(basis), is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), expected.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="leading batch dimension"):
        ember.autograd.grad((x * 2).sum(), x, ember.tensor(1.0), is_grads_batched=True)
