"""Forward-mode AD (ember.autograd.forward_ad) and the functional API built on it.

Tangents are checked against float64 central differences, against reverse-mode jacobians, and against torch's
forward AD where torch is installed (those tests skip cleanly without it).
"""
import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
import ember.autograd.functional as EF
import ember.nn.functional as F
from ember.autograd.function import Function, _APPLY_WRAPPERS

RNG = np.random.default_rng(7)


def _t(array, requires_grad=False):
    return ember.tensor(np.asarray(array, dtype=np.float64), dtype=ember.float64, requires_grad=requires_grad)


def _arrays(*shapes, low=-1.5, high=1.5):
    return [RNG.uniform(low, high, s) for s in shapes]


def _push(f, primals, tangents):
    """``f``'s output and tangent (NumPy) at ``primals`` pushed by ``tangents`` (NumPy arrays) in forward mode."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(_t(p), _t(t)) for p, t in zip(primals, tangents)]
        out, tangent = fwAD.unpack_dual(f(*duals))
        assert tangent is not None, "the output carries no tangent"
        assert tuple(tangent.shape) == tuple(out.shape)
        return out.detach().numpy(), tangent.numpy()


def _central(f, primals, tangents, eps=1e-6):
    """The directional derivative by float64 central differences."""
    def at(sign):
        return f(*[_t(p + sign * eps * t) for p, t in zip(primals, tangents)]).detach().numpy()
    return (at(1) - at(-1)) / (2 * eps)


def _check(f, primals, tangents=None, rtol=1e-6, atol=1e-7):
    tangents = tangents if tangents is not None else [RNG.standard_normal(np.shape(p)) for p in primals]
    out, tangent = _push(f, primals, tangents)
    np.testing.assert_allclose(out, f(*[_t(p) for p in primals]).detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tangent, _central(f, primals, tangents), rtol=rtol, atol=atol)
    return tangent


# ------------------------------------------------------------------------------------------------ elementwise
UNARY = ["neg", "abs", "exp", "expm1", "log", "log1p", "log2", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt",
         "rsqrt", "reciprocal", "relu", "erf", "atan", "sinh", "square", "asin", "frac"]
POSITIVE_ONLY = {"log", "log2", "sqrt", "rsqrt", "reciprocal"}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_central_differences(name):
    low, high = (0.3, 0.9) if name in POSITIVE_ONLY or name == "asin" else (-1.2, 1.2)
    x = RNG.uniform(low, high, (2, 3))
    x[np.abs(x) < 0.1] = 0.4  # away from the kinks of abs and relu
    _check(lambda a: getattr(a, name)(), [x])


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b + 3),
    "pow": lambda a, b: (a.abs() + 0.5) ** b,
    "maximum": lambda a, b: ember.maximum(a, b),
    "atan2": lambda a, b: ember.atan2(a, b + 3),
    "add_alpha": lambda a, b: ember.add(a, b, alpha=2.5),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((1, 3), (2, 1))], ids=str)
def test_binary_ops_with_broadcasting(name, shapes):
    _check(BINARY[name], _arrays(*shapes))


@pytest.mark.parametrize("which", [0, 1])
def test_binary_op_with_one_dual_operand(which):
    a, b = _arrays((2, 3), (3,))
    plain = [a, b][1 - which]
    if which == 0:
        _check(lambda x: x * _t(plain) + x / 2, [a])
    else:
        _check(lambda y: _t(plain) * y - 3 ** y, [b])


def test_where_and_clamp_and_python_scalars():
    x = RNG.uniform(-1, 1, (4, 3))
    x[np.abs(x - 0.2) < 0.05] = 0.5
    _check(lambda a: ember.where(a > 0.2, a * a, 2.0) + a.clamp(-0.5, 0.5) * 3 - 1 / (a + 4), [x])


# ------------------------------------------------------------------------------------------------ reductions
REDUCTIONS = {
    "sum_all": lambda a: a.sum(),
    "sum_dim": lambda a: a.sum(1, keepdim=True),
    "mean_dim": lambda a: a.mean(0),
    "prod": lambda a: a.prod(1),
    "amax": lambda a: a.amax(1),
    "norm": lambda a: a.norm(),
    "logsumexp": lambda a: a.logsumexp(1),
    "var": lambda a: a.var(0),
    "cumsum": lambda a: a.cumsum(1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name):
    _check(REDUCTIONS[name], _arrays((3, 4)))


# ------------------------------------------------------------------------------------------------ matmul
MATMULS = {
    "mm": ((3, 4), (4, 2), lambda a, b: a @ b),
    "batched_broadcast": ((2, 3, 4), (4, 5), lambda a, b: ember.matmul(a, b)),
    "matrix_vector": ((3, 4), (4,), lambda a, b: a @ b),
    "vector_matrix": ((4,), (4, 2), lambda a, b: a @ b),
    "dot": ((4,), (4,), lambda a, b: ember.dot(a, b)),
    "bmm": ((2, 3, 4), (2, 4, 2), lambda a, b: ember.bmm(a, b)),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul_variants(name):
    sa, sb, f = MATMULS[name]
    _check(f, _arrays(sa, sb))


# ------------------------------------------------------------------------------------------------ views, indexing
VIEWS = {
    "reshape": lambda a: a.reshape(4, 3) * 2,
    "transpose": lambda a: a.t().exp(),
    "slice": lambda a: a[1:, ::2].sin(),
    "permute_unsqueeze": lambda a: a.permute(1, 0).unsqueeze(0).expand(2, 4, 3),
    "flatten_view": lambda a: a.flatten().view(2, 6),
    "select": lambda a: a[2] * a[0],
    "non_contiguous_reshape": lambda a: a.t().reshape(-1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views(name):
    _check(VIEWS[name], _arrays((3, 4)))


def test_view_tangent_is_a_view_of_the_tangent():
    x, t = _t(np.arange(6.0)), _t(np.ones(6))
    with fwAD.dual_level():
        view_tangent = fwAD.unpack_dual(fwAD.make_dual(x, t)[2:5]).tangent
        t.mul_(3)
        np.testing.assert_array_equal(view_tangent.numpy(), [3.0, 3.0, 3.0])


INDEXING = {
    "advanced": lambda a: a[[0, 2, 2]] * 2,
    "mask": lambda a: a[a.detach() > 0] + 1,
    "gather": lambda a: a.gather(1, ember.tensor([[0, 3], [1, 1], [2, 0]])),
    "index_select": lambda a: a.index_select(1, ember.tensor([3, 0])),
    "cat_stack": lambda a: ember.cat([a, a.exp()], 0) + ember.stack([a, a], 0).sum(0).repeat(2, 1),
    "flip_roll": lambda a: a.flip(0).roll(1, 1) * a,
    "tril_pad": lambda a: F.pad(a.tril(), (1, 2), value=3.0),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_and_joins(name):
    _check(INDEXING[name], _arrays((3, 4)))


# ------------------------------------------------------------------------------------------------ nn ops
NN = {
    "linear": (((2, 4), (3, 4), (3,)), lambda x, w, b: F.linear(x, w, b)),
    "linear_no_bias": (((5, 4), (3, 4)), lambda x, w: F.linear(x, w)),
    "conv2d": (((1, 2, 5, 5), (3, 2, 3, 3), (3,)), lambda x, w, b: F.conv2d(x, w, b, padding=1)),
    "softmax": (((3, 5),), lambda x: F.softmax(x, dim=1)),
    "log_softmax": (((3, 5),), lambda x: F.log_softmax(x, dim=0)),
    "cross_entropy": (((4, 5),), lambda x: F.cross_entropy(x, ember.tensor([0, 4, 2, 1]))),
    "layer_norm": (((3, 6), (6,), (6,)), lambda x, w, b: F.layer_norm(x, (6,), w, b)),
    "gelu": (((3, 4),), lambda x: F.gelu(x)),
    "silu_mse": (((3, 4), (3, 4)), lambda x, y: F.mse_loss(F.silu(x), y)),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_ops_match_central_differences(name):
    shapes, f = NN[name]
    _check(f, _arrays(*shapes), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["conv2d", "layer_norm", "cross_entropy"])
def test_generic_rule_ops_have_no_formula(name):
    """These go through the double-backward rule: guard that they really do (else the test above proves less)."""
    from ember.tensor.fused.conv import _Conv
    from ember.tensor.fused.losses import _ClassNLL
    from ember.tensor.fused.normalization import _RowsNorm

    cls = {"conv2d": _Conv, "layer_norm": _RowsNorm, "cross_entropy": _ClassNLL}[name]
    assert not hasattr(cls, "jvp_rule") and not hasattr(cls, "jvp")


# Ops whose Function carries its own ``jvp_rule`` (the generic double-backward rule must not be needed for them).
OWN_RULE = {
    "unary": (((2, 3),), lambda a: a.sin()),
    "binary": (((2, 3), (3,)), lambda a, b: a * b - b),
    "where": (((2, 3), (2, 3)), lambda a, b: ember.where(a.detach() > 0, a, b)),
    "sum_view_cat_index": (((3, 4),), lambda a: ember.cat([a.sum(1), a.t()[1], a[[0, 2]].reshape(-1)])),
    "matmul": (((2, 3), (3, 4)), lambda a, b: a @ b),
    "linear": (((2, 4), (3, 4), (3,)), lambda x, w, b: F.linear(x, w, b)),
    "activation_softmax_pad": (((3, 4),), lambda a: F.pad(F.gelu(a).log_softmax(1), (1, 1))),
}


def _no_generic_rule(monkeypatch):
    def generic(cls, *_):
        raise AssertionError(f"{cls.__name__} took the generic rule")

    monkeypatch.setattr(fwAD, "_generic", generic)


@pytest.mark.parametrize("name", sorted(OWN_RULE))
def test_ops_with_their_own_jvp_rule_skip_the_generic_rule(name, monkeypatch):
    _no_generic_rule(monkeypatch)
    shapes, f = OWN_RULE[name]
    _check(f, _arrays(*shapes), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_ops_match_torch_forward_ad(name, torch_ref):
    import torch.autograd.forward_ad as tfw
    import torch.nn.functional as TF

    shapes, f = NN[name]
    primals = _arrays(*shapes)
    tangents = [RNG.standard_normal(s) for s in shapes]
    torch_f = {
        "linear": lambda x, w, b: TF.linear(x, w, b), "linear_no_bias": lambda x, w: TF.linear(x, w),
        "conv2d": lambda x, w, b: TF.conv2d(x, w, b, padding=1), "softmax": lambda x: TF.softmax(x, dim=1),
        "log_softmax": lambda x: TF.log_softmax(x, dim=0),
        "cross_entropy": lambda x: TF.cross_entropy(x, torch_ref.tensor([0, 4, 2, 1])),
        "layer_norm": lambda x, w, b: TF.layer_norm(x, (6,), w, b), "gelu": lambda x: TF.gelu(x),
        "silu_mse": lambda x, y: TF.mse_loss(TF.silu(x), y),
    }[name]
    with tfw.dual_level():
        duals = [tfw.make_dual(torch_ref.tensor(p), torch_ref.tensor(t)) for p, t in zip(primals, tangents)]
        expected = tfw.unpack_dual(torch_f(*duals)).tangent.numpy()
    np.testing.assert_allclose(_push(f, primals, tangents)[1], expected, rtol=1e-9, atol=1e-10)


def test_tangent_matches_reverse_mode_jacobian():
    x, w = _arrays((2, 3), (4, 3))
    t = RNG.standard_normal((2, 3))

    def mlp(a):
        return (F.linear(a, _t(w)).tanh() ** 2).softmax(-1) * a.sum()

    jac = EF.jacobian(mlp, _t(x)).numpy()
    np.testing.assert_allclose(_push(mlp, [x], [t])[1], np.tensordot(jac, t, axes=2), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dropout", [F.dropout, F.alpha_dropout])
def test_dropout_tangent_uses_the_same_mask(dropout, monkeypatch):
    _no_generic_rule(monkeypatch)  # dropout's own rule, with its generator rewound (the generic one would redraw)
    x, t = _arrays((4, 6), (4, 6))
    leaf = _t(x, requires_grad=True)
    ember.manual_seed(3)
    with fwAD.dual_level():
        out = dropout(fwAD.make_dual(leaf, _t(t)), 0.4, training=True)
        tangent = fwAD.unpack_dual(out).tangent.numpy()
        out.sum().backward()
        after = ember.rand(3).numpy()
    mult = leaf.grad.numpy()  # the gradient of the same call: scale where kept, 0 where dropped
    assert 0 < np.count_nonzero(mult) < mult.size
    np.testing.assert_allclose(tangent, t * mult)
    ember.manual_seed(3)
    dropout(_t(x), 0.4, training=True)
    np.testing.assert_array_equal(ember.rand(3).numpy(), after)  # the generator advanced as without forward AD


def test_op_with_once_differentiable_backward_raises():
    log_probs = ember.tensor(RNG.standard_normal((5, 1, 3)), dtype=ember.float64).log_softmax(2)
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="_CTC.*once_differentiable"):
        F.ctc_loss(fwAD.make_dual(log_probs, ember.ones_like(log_probs)), ember.tensor([[1, 2]]), [5], [2])


# ------------------------------------------------------------------------------------------------ in place
def test_inplace_op_on_a_copy_of_a_dual():
    x, t = _arrays((3,), (3,))
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(x), _t(t))
        y = d.clone()
        y.mul_(d).add_(1)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), 2 * x * t)
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), t)  # the input's tangent is untouched


def test_inplace_op_with_a_dual_operand_makes_a_plain_tensor_dual():
    x, t = _arrays((3,), (3,))
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(x), _t(t))
        y = _t([1.0, 2.0, 3.0])
        y *= d
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [1, 2, 3] * t)


def test_writing_a_dual_into_a_view_gives_the_base_a_tangent():
    x, t = _arrays((3,), (3,))
    with fwAD.dual_level():
        d = fwAD.make_dual(_t(x), _t(t))
        z = ember.zeros(5, dtype=ember.float64)
        z[1:4] = d
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), np.concatenate([[0], t, [0]]))
        w = ember.zeros(4, dtype=ember.float64)
        w[:3].copy_(d * 2)
        w[3] = d[0]
        np.testing.assert_allclose(fwAD.unpack_dual(w).tangent.numpy(), np.append(2 * t, t[0]))


def test_inplace_on_a_view_of_a_dual_updates_the_base_tangent():
    x, t = _arrays((4,), (4,))
    with fwAD.dual_level():
        y = fwAD.make_dual(_t(x), _t(t)).clone()
        y[:2].mul_(3)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), t * [3, 3, 1, 1])


def test_inplace_under_grad_recording_keeps_both_modes():
    x, t = _arrays((3,), (3,))
    leaf = _t(x, requires_grad=True)
    with fwAD.dual_level():
        y = fwAD.make_dual(leaf, _t(t)) * 1
        y.exp_()
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), np.exp(x) * t)
        y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.exp(x))


# ------------------------------------------------------------------------------------------------ custom Functions
class _Cube(Function):
    """Saves different tensors for jvp and backward: each must get its own through ``ctx.saved_tensors``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x * x * 3)
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g

    @staticmethod
    def jvp(ctx, t):
        (slope,) = ctx.saved_tensors
        return slope * t


class _NoJvp(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _WrongJvp(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def jvp(ctx, t):
        return t[:1]


def test_custom_function_jvp_is_used():
    x, t = _arrays((4,), (4,))
    np.testing.assert_allclose(_push(_Cube.apply, [x], [t])[1], 3 * x * x * t)


def test_custom_function_jvp_and_backward_together():
    x, t = _arrays((4,), (4,))
    leaf = _t(x, requires_grad=True)
    with fwAD.dual_level():
        out = _Cube.apply(fwAD.make_dual(leaf, _t(t)))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), 3 * x * x * t)
        out.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 3 * x * x)


def test_custom_function_without_jvp_raises():
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="must implement the jvp function"):
        _NoJvp.apply(fwAD.make_dual(_t([1.0]), _t([1.0])))
    np.testing.assert_allclose(_NoJvp.apply(_t([1.0])).numpy(), [2.0])  # without a tangent it just runs


def test_custom_jvp_of_the_wrong_shape_raises():
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="different size"):
        _WrongJvp.apply(fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 1.0])))


def test_torch_custom_function_jvp_agrees(torch_ref):
    import torch.autograd.forward_ad as tfw

    class TorchCube(torch_ref.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t

    x, t = _arrays((4,), (4,))
    with tfw.dual_level():
        expected = tfw.unpack_dual(TorchCube.apply(tfw.make_dual(torch_ref.tensor(x), torch_ref.tensor(t)))).tangent
    np.testing.assert_allclose(_push(_Cube.apply, [x], [t])[1], expected.numpy(), rtol=1e-12)


# ------------------------------------------------------------------------------------------------ levels, API, errors
def test_make_dual_and_unpack_dual_semantics():
    x, t = _t([1.0, 2.0]), _t([0.5, -1.0])
    assert fwAD.unpack_dual(x) == (x, None)  # outside a level: the tensor, no tangent
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        assert d is not x and d._base is x and not d.requires_grad
        primal, tangent = fwAD.unpack_dual(d)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        assert tangent is t  # as-is
        assert fwAD.unpack_dual(primal).tangent is None  # the primal carries no tangent
        np.testing.assert_array_equal(primal.numpy(), x.numpy())
        assert fwAD.unpack_dual(x).tangent is None  # the original stays plain
        assert fwAD.unpack_dual(d, level=3).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None
        assert fwAD.unpack_dual(d.argmax()).tangent is None and fwAD.unpack_dual(d > 0).tangent is None
        with ember.no_grad():  # forward AD does not depend on grad mode
            np.testing.assert_array_equal(fwAD.unpack_dual(d * 2).tangent.numpy(), [1.0, -2.0])
    assert fwAD.unpack_dual(d).tangent is None  # leaving the level drops its tangents
    assert not _APPLY_WRAPPERS and Function.__dict__["apply"] is not None  # the wrapper is gone


def test_make_dual_is_differentiable_backward():
    leaf = _t([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(leaf, _t([1.0, 1.0]))
        assert d.requires_grad
        (d * d).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 4.0])


def test_levels_can_be_reentered_and_used_as_decorator():
    @fwAD.dual_level()
    def tangent_of_square(x, t):
        return fwAD.unpack_dual(fwAD.make_dual(x, t) ** 2).tangent

    np.testing.assert_array_equal(tangent_of_square(_t([3.0]), _t([1.0])).numpy(), [6.0])
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level(level=0)
    assert not _APPLY_WRAPPERS


ERRORS = {
    "make_dual_outside_level": (RuntimeError, "no level exists", lambda: fwAD.make_dual(_t([1.0]), _t([1.0]))),
    "exit_without_level": (RuntimeError, "Dual level must be a positive number", fwAD.exit_dual_level),
}
IN_LEVEL_ERRORS = {
    "nested": (RuntimeError, "Nested forward mode AD is not supported", fwAD.enter_dual_level),
    "wrong_exit": (RuntimeError, "not the last one", lambda: fwAD.exit_dual_level(level=2)),
    "size": (RuntimeError, r"Tensor is of size \[2\] while the given forward gradient is of size \[3\]",
             lambda: fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 2.0, 3.0]))),
    "integer_primal": (ValueError, "Expected primal to be floating point",
                       lambda: fwAD.make_dual(ember.tensor([1, 2]), _t([1.0, 2.0]))),
    "integer_tangent": (ValueError, "Expected tangent to be floating point",
                        lambda: fwAD.make_dual(_t([1.0, 2.0]), ember.tensor([1, 2]))),
    "bad_level": (RuntimeError, "Invalid level given to _make_dual",
                  lambda: fwAD.make_dual(_t([1.0]), _t([1.0]), level=4)),
    "already_dual": (RuntimeError, "already has a forward gradient",
                     lambda: fwAD.make_dual(fwAD.make_dual(_t([1.0]), _t([1.0])), _t([1.0]))),
    "dual_tangent": (RuntimeError, "itself has a forward gradient",
                     lambda: fwAD.make_dual(_t([1.0]), fwAD.make_dual(_t([1.0]), _t([1.0])))),
    "not_a_tensor": (TypeError, "must be Tensor", lambda: fwAD.make_dual(1.0, _t([1.0]))),
    "unpack_not_a_tensor": (TypeError, "must be Tensor", lambda: fwAD.unpack_dual(1.0)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_outside_a_level(name):
    error, message, call = ERRORS[name]
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("name", sorted(IN_LEVEL_ERRORS))
def test_errors_inside_a_level(name):
    error, message, call = IN_LEVEL_ERRORS[name]
    with fwAD.dual_level():
        with pytest.raises(error, match=message):
            call()
    assert not _APPLY_WRAPPERS  # the level still closed cleanly


def test_nested_level_is_refused_like_torch(torch_ref):
    import torch.autograd.forward_ad as tfw

    for module in (tfw, fwAD):
        with module.dual_level(), pytest.raises(RuntimeError, match="Nested forward mode AD"):
            module.enter_dual_level()


# ------------------------------------------------------------------------------------------------ functional
FUNCTIONS = {
    "single": (lambda x: (x ** 3).sin(), [(4,)], False),
    "tuple_in_tuple_out": (lambda x, y: (x * y.exp(), (x @ y.reshape(3, 1)).tanh()), [(2, 3), (3,)], True),
    "mlp": (lambda x, w: (F.linear(x, w).tanh() ** 2).sum(-1), [(2, 3), (4, 3)], True),
}


def _inputs(shapes, as_tuple):
    ts = tuple(_t(a) for a in _arrays(*shapes))
    return ts if as_tuple else ts[0]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_functional_jvp_forward_mode_matches_double_backward(name):
    f, shapes, as_tuple = FUNCTIONS[name]
    inputs, v = _inputs(shapes, as_tuple), _inputs(shapes, as_tuple)
    out, jv = EF.jvp(f, inputs, v)
    out_ref, jv_ref = EF.jvp(f, inputs, v, create_graph=True)  # the double-backward path
    for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (jv, jv_ref))):
        assert not a.requires_grad
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (out, out_ref))):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy())


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_forward_mode_jacobian_matches_reverse_mode(name):
    f, shapes, as_tuple = FUNCTIONS[name]
    inputs = _inputs(shapes, as_tuple)
    forward = EF.jacobian(f, inputs, vectorize=True, strategy="forward-mode")
    reverse = EF.jacobian(f, inputs)

    def leaves(x):
        return [y for item in x for y in leaves(item)] if isinstance(x, tuple) else [x]

    assert type(forward) is type(reverse) and len(leaves(forward)) == len(leaves(reverse))
    for a, b in zip(leaves(forward), leaves(reverse)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_functional_jvp_and_jacobian_match_torch(torch_ref):
    import torch.autograd.functional as TF

    x_np, w_np, v_np = _arrays((2, 3), (4, 3), (2, 3))

    def f(lib):
        return lambda x: (x @ lib.tensor(w_np).T).tanh().exp()

    _, jv = EF.jvp(f(ember), _t(x_np), _t(v_np))
    _, jv_ref = TF.jvp(f(torch_ref), torch_ref.tensor(x_np), torch_ref.tensor(v_np))
    np.testing.assert_allclose(jv.numpy(), jv_ref.numpy(), rtol=1e-10)
    jac = EF.jacobian(f(ember), _t(x_np), vectorize=True, strategy="forward-mode")
    jac_ref = TF.jacobian(f(torch_ref), torch_ref.tensor(x_np), vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(jac.numpy(), jac_ref.numpy(), rtol=1e-10)


def test_forward_over_reverse_hessian():
    x = _t(_arrays((4,))[0])

    def f(a):
        return (a.sin() * a.exp()).sum() + (a[:2] * a[2:]).prod()

    forward = EF.hessian(f, x, vectorize=True, outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(forward.numpy(), EF.hessian(f, x).numpy(), rtol=1e-10, atol=1e-12)


def test_jvp_default_v_and_outputs_independent_of_input():
    out, jv = EF.jvp(lambda x: (x * 3, ember.ones(2, dtype=ember.float64)), _t([2.0]))
    np.testing.assert_array_equal(jv[0].numpy(), [3.0])
    np.testing.assert_array_equal(jv[1].numpy(), [0.0, 0.0])
    jac = EF.jacobian(lambda x: ember.ones(2, dtype=ember.float64) + 0 * x.sum(), _t([1.0, 2.0]), vectorize=True,
                      strategy="forward-mode")
    np.testing.assert_array_equal(jac.numpy(), np.zeros((2, 2)))


def test_forward_mode_jacobian_errors_kept():
    x = _t([1.0])
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        EF.jacobian(lambda a: a, x, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="strict=True"):
        EF.jacobian(lambda a: a, x, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        EF.jacobian(lambda a: a, x, strategy="forward-mode")
