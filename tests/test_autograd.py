"""Autograd engine semantics, custom Functions, and gradient checks."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import Function, gradcheck, gradgradcheck


def leaf(a, rg=True):
    return ember.tensor(np.array(a, dtype=np.float64), requires_grad=rg)


def test_backward_accumulates():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    assert x.is_leaf and x.grad_fn is None


def test_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1)
    z = (x.exp() * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.backward()


def test_create_graph_second_derivative():
    x = leaf([0.5, -1.0, 2.0])
    (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([0.5, -1.0, 2.0]) ** 2)
    (h,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * np.array([0.5, -1.0, 2.0]))


def test_grad_allow_unused():
    x, y = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError):
        ember.autograd.grad((x * 2).sum(), [x, y])
    gx, gy = ember.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert gx.tolist() == [2.0] and gy is None
    assert x.grad is None  # autograd.grad does not accumulate


def test_nonscalar_backward_needs_gradient():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(ember.tensor([1.0, 10.0], dtype=ember.float64))
    assert x.grad.tolist() == [2.0, 20.0]


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1.0)
    with ember.no_grad():
        x.add_(1.0)
    assert x.tolist() == [2.0]


def test_saved_tensor_modified_inplace_raises():
    x = leaf([1.0, 2.0])
    y = x * 1.0
    z = y.exp()   # saves its output
    w = y * y     # saves y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()
    del z


def test_inplace_on_nonleaf_gradient_correct():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_grad_modes():
    x = leaf([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    @ember.enable_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad
    with ember.no_grad():
        assert g(x).requires_grad
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled()
        assert not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled()

    @ember.inference_mode()
    def h(t):
        return t * 2

    assert not h(x).requires_grad
    ember.set_grad_enabled(False)
    try:
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)


def test_requires_grad_int_raises():
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError):
        ember.tensor([1, 2], requires_grad=True)


def test_detach_shares_storage():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1.0)
    assert x.tolist() == [2.0, 3.0]
    assert d._version_value == x._version_value


def test_retain_grad_and_hooks():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    z = y * y
    z.sum().backward()
    assert y.grad.tolist() == [4.0, 8.0]
    assert x.grad.tolist() == [8.0, 16.0]

    a = leaf([1.0, 1.0])
    seen = []
    b = a * 3
    h = b.register_hook(lambda g: (seen.append(g.tolist()), g * 10)[1])
    b.sum().backward()
    assert seen == [[1.0, 1.0]]
    assert a.grad.tolist() == [30.0, 30.0]
    h.remove()
    a.grad = None
    (a * 3).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]


class Cube(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x ** 3 * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad[0] is True
        return g * 3 * x ** 2 * ctx.k, None


def test_custom_function():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 16.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 24.0])
    assert gradcheck(lambda t: Cube.apply(t, 1.5), (leaf([0.3, -0.7]),))
    assert gradgradcheck(lambda t: Cube.apply(t, 1.5), (leaf([0.3, -0.7]),))


class _DetachedCube(Function):
    """x**3 whose backward detaches x: first derivatives right, second derivatives zero (wrong)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = leaf([0.3, -0.7])
    assert gradcheck(_DetachedCube.apply, (x,))
    assert not gradgradcheck(_DetachedCube.apply, (x,), raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradgradcheck(_DetachedCube.apply, (x,))


def test_needs_input_grad_and_non_differentiable():
    flags = {}

    class SortLike(Function):
        @staticmethod
        def forward(ctx, a, b):
            flags["needs"] = ctx.needs_input_grad
            idx = (a > 0).long()
            ctx.mark_non_differentiable(idx)
            return a * b, idx

        @staticmethod
        def backward(ctx, g, gidx):
            return g * 2, None

    a, b = leaf([1.0, -1.0]), leaf([1.0, 1.0], rg=False)
    out, idx = SortLike.apply(a, b)
    assert flags["needs"] == (True, False)
    assert out.requires_grad and not idx.requires_grad
    out.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_once_differentiable():
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ember.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf([3.0])
    (g,) = ember.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [6.0]
    with pytest.raises(RuntimeError):
        g.sum().backward()


def test_deep_chain_no_recursion_error():
    x = leaf([1.0])
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** 5000], rtol=1e-9)


rng = np.random.default_rng(7)


def R(*shape, lo=-1.0, hi=1.0):
    return leaf(rng.uniform(lo, hi, size=shape))


GRAD_OPS = {
    "exp": (lambda x: x.exp(), [(3, 2)], -1, 1),
    "log": (lambda x: x.log(), [(3, 2)], 0.5, 2),
    "sin": (lambda x: x.sin(), [(3, 2)], -1, 1),
    "tanh": (lambda x: x.tanh(), [(3, 2)], -1, 1),
    "sigmoid": (lambda x: x.sigmoid(), [(3, 2)], -1, 1),
    "sqrt": (lambda x: x.sqrt(), [(3, 2)], 0.5, 2),
    "rsqrt": (lambda x: x.rsqrt(), [(3, 2)], 0.5, 2),
    "asin": (lambda x: x.asin(), [(3, 2)], -0.8, 0.8),
    "atanh": (lambda x: x.atanh(), [(3, 2)], -0.8, 0.8),
    "erf": (lambda x: x.erf(), [(3, 2)], -1, 1),
    "reciprocal": (lambda x: x.reciprocal(), [(3, 2)], 0.5, 2),
    "abs": (lambda x: x.abs(), [(3, 2)], 0.2, 1),
    "add_bcast": (lambda a, b: a + b, [(3, 1), (4,)], -1, 1),
    "mul_bcast": (lambda a, b: a * b, [(2, 3), (3,)], -1, 1),
    "div_bcast": (lambda a, b: a / b, [(2, 3), (2, 1)], 0.5, 2),
    "pow_tt": (lambda a, b: a ** b, [(2, 3), (3,)], 0.5, 2),
    "atan2": (lambda a, b: ember.atan2(a, b), [(2, 3), (2, 3)], 0.5, 2),
    "maximum": (lambda a, b: ember.maximum(a, b), [(4,), (4,)], -1, 1),
    "where": (lambda a, b: ember.where(a > 0, a, b), [(2, 3), (3,)], -1, 1),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), [(3, 4)], -1, 1),
    "sum_dim": (lambda a: a.sum(1, keepdim=True), [(2, 3, 2)], -1, 1),
    "mean_dims": (lambda a: a.mean((0, 2)), [(2, 3, 2)], -1, 1),
    "prod": (lambda a: a.prod(1), [(2, 3)], 0.5, 1.5),
    "amax": (lambda a: a.amax(0), [(3, 2)], -1, 1),
    "var": (lambda a: a.var(1), [(2, 4)], -1, 1),
    "std": (lambda a: a.std(0, keepdim=True), [(4, 2)], -1, 1),
    "norm": (lambda a: a.norm(), [(2, 3)], 0.2, 1),
    "logsumexp": (lambda a: a.logsumexp(1), [(2, 3)], -1, 1),
    "cumsum": (lambda a: a.cumsum(1), [(2, 3)], -1, 1),
    "matmul": (lambda a, b: a @ b, [(2, 3, 4), (4, 2)], -1, 1),
    "mm": (lambda a, b: ember.mm(a, b), [(2, 3), (3, 2)], -1, 1),
    "bmm": (lambda a, b: ember.bmm(a, b), [(2, 2, 3), (2, 3, 2)], -1, 1),
    "dot": (lambda a, b: ember.dot(a, b), [(3,), (3,)], -1, 1),
    "mv": (lambda a, b: ember.mv(a, b), [(2, 3), (3,)], -1, 1),
    "view_chain": (lambda a: a.transpose(0, 1).reshape(-1).narrow(0, 1, 3), [(2, 3)], -1, 1),
}


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_gradcheck_and_gradgradcheck(name):
    fn, shapes, lo, hi = GRAD_OPS[name]
    inputs = tuple(R(*s, lo=lo, hi=hi) for s in shapes)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_gradcheck_detects_wrong_gradient():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    assert not gradcheck(Wrong.apply, (leaf([1.0, 2.0]),), raise_exception=False)


@pytest.mark.parametrize("expr", [
    lambda m, a, b: ((a * b).sin() + a.exp() / (1 + b * b)).sum(),
    lambda m, a, b: (a @ b.transpose(0, 1)).tanh().mean(),
    lambda m, a, b: m.logsumexp(a - b, 1).sum() + (a.sigmoid() * b).var(),
    lambda m, a, b: m.where(a > b, a * a, b * 3).sum() + a.clamp(-0.3, 0.3).prod(),
    lambda m, a, b: m.where(a > b, a * a, b * 3).sum() + (a.clamp(-0.3, 0.3) * b).amax(1).sum(),
])
def test_composite_gradients_vs_torch(torch_ref, expr):
    r = np.random.default_rng(11)
    an, bn = r.standard_normal((3, 4)), r.standard_normal((3, 4))
    ea, eb = leaf(an), leaf(bn)
    ta = torch_ref.tensor(an, requires_grad=True)
    tb = torch_ref.tensor(bn, requires_grad=True)
    ey, ty = expr(ember, ea, eb), expr(torch_ref, ta, tb)
    np.testing.assert_allclose(ey.item(), ty.item(), rtol=1e-12)
    ey.backward()
    ty.backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cumprod_gradient_with_zeros_matches_finite_differences():
    x = ember.tensor([[2.0, 0.0, 3.0, 0.5], [1.0, 2.0, 0.0, 0.0]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: t.cumprod(1), (x,))
    assert ember.autograd.gradgradcheck(lambda t: t.cumprod(1), (x,))


def test_named_function_records_under_the_given_name_and_shares_the_op():
    from ember.tensor.reduce import Sum

    over_dims = Sum.named("SumBackward1")
    assert over_dims is Sum.named("SumBackward1") and issubclass(over_dims, Sum) and over_dims.__name__ == "Sum"
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = over_dims.apply(x, (1,), False, x.dtype)
    assert y.grad_fn.name() == "SumBackward1" and y.grad_fn._saved_dim == (1,) and y.grad_fn._saved_keepdim is False
    assert Sum.apply(x, (1,), False, x.dtype).grad_fn.name() == "SumBackward0"
    (y * ember.tensor([1.0, 10.0], dtype=ember.float64)).sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0], [10.0, 10.0]]


def _python_calls(fn) -> list[str]:
    import sys

    names = []
    sys.setprofile(lambda frame, event, arg: names.append(frame.f_code.co_name) if event == "call" else None)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return names


@pytest.mark.parametrize("op, node", [
    (lambda a: a.sum(1), "SumBackward1"), (lambda a: a.t(), "TBackward0"), (lambda a: a.transpose(0, 1),
    "TransposeBackward0"), (lambda a: ember.stack([a, a]), "StackBackward0"),
    (lambda a: a.index_select(0, ember.tensor([1])), "IndexSelectBackward0"),
    (lambda a: a.matmul(a[None]), "UnsafeViewBackward0"), (lambda a: ember.aminmax(a).min, "AminmaxBackward0"),
])
def test_naming_nodes_costs_no_call_when_nothing_is_recorded(op, node):
    calls = _python_calls(lambda: op(ember.ones(2, 2)))
    assert "name_node" not in calls and "node_class" not in calls
    assert op(ember.ones(2, 2, requires_grad=True)).grad_fn.name() == node
