"""ember.distributions.transforms and constraints against torch's: values, inverses, log-determinants, domains,
shapes and signs of every transform, the biject_to/transform_to registries, and the constraints' checks."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.distributions import constraints as C, transforms as T

_R = np.random.default_rng(5)


def _f64(lib, values):
    return lib.tensor(values, dtype=lib.float64)


# name -> (builder of the transform from a transforms module and a tensor library, input shape)
TRANSFORMS = {
    "exp": (lambda t, lib: t.ExpTransform(), (3, 2)),
    "affine": (lambda t, lib: t.AffineTransform(_f64(lib, [1.0, 2.0]), _f64(lib, [-0.5, 3.0])), (3, 2)),
    "affine_numbers": (lambda t, lib: t.AffineTransform(1.5, -2.0), (3, 2)),
    "affine_event": (lambda t, lib: t.AffineTransform(0.5, _f64(lib, [2.0, 3.0]), event_dim=1), (3, 2)),
    "sigmoid": (lambda t, lib: t.SigmoidTransform(), (3, 2)),
    "tanh": (lambda t, lib: t.TanhTransform(), (3, 2)),
    "softplus": (lambda t, lib: t.SoftplusTransform(), (3, 2)),
    "power": (lambda t, lib: t.PowerTransform(_f64(lib, [0.5, 2.0])), (3, 2)),
    "stick_breaking": (lambda t, lib: t.StickBreakingTransform(), (3, 4)),
    "lower_cholesky": (lambda t, lib: t.LowerCholeskyTransform(), (2, 3, 3)),
    "positive_definite": (lambda t, lib: t.PositiveDefiniteTransform(), (2, 3, 3)),
    "corr_cholesky": (lambda t, lib: t.CorrCholeskyTransform(), (2, 6)),
    "reshape": (lambda t, lib: t.ReshapeTransform((2, 3), (6,)), (4, 2, 3)),
    "independent": (lambda t, lib: t.IndependentTransform(t.ExpTransform(), 1), (3, 2)),
    "compose": (lambda t, lib: t.ComposeTransform([t.AffineTransform(0.3, 2.0), t.TanhTransform(),
                                                   t.AffineTransform(1.0, 0.5)]), (3, 2)),
    "compose_events": (lambda t, lib: t.ComposeTransform([t.ExpTransform(), t.StickBreakingTransform()]), (3, 2)),
    "inverse": (lambda t, lib: t.SigmoidTransform().inv, (3, 2)),
    "cat": (lambda t, lib: t.CatTransform([t.ExpTransform(), t.AffineTransform(1.0, 2.0)], dim=1, lengths=[1, 2]),
            (3, 3)),
    "cat_batch": (lambda t, lib: t.CatTransform([t.ExpTransform(), t.SigmoidTransform()], dim=0, lengths=[2, 1]),
                  (3, 2)),
    "stack": (lambda t, lib: t.StackTransform([t.ExpTransform(), t.SigmoidTransform()], dim=1), (4, 2)),
    "softmax": (lambda t, lib: t.SoftmaxTransform(), (3, 4)),
    "abs": (lambda t, lib: t.AbsTransform(), (3,)),
    "cdf": (lambda t, lib: t.CumulativeDistributionTransform(
        (lib.distributions if lib is not ember else D).Normal(_f64(lib, 0.5), _f64(lib, 2.0))), (3,)),
}


def _input(name, shape):
    x = _R.normal(size=shape) * 0.7
    if name == "power":
        return np.abs(x) + 0.1
    if name == "inverse":  # the inverse of a sigmoid takes the unit interval
        return 1 / (1 + np.exp(-x))
    return x


def _sign(transform):
    try:
        sign = transform.sign
    except NotImplementedError:
        return "none"
    return sign.numpy() if hasattr(sign, "numpy") else sign


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_torch(torch_ref, name):
    build, shape = TRANSFORMS[name]
    t, e = build(torch_ref.distributions.transforms, torch_ref), build(T, ember)
    x = _input(name, shape)
    tx, ex = torch_ref.tensor(x), ember.tensor(x)
    ty, ey = t(tx), e(ex)
    np.testing.assert_allclose(ey.numpy(), ty.numpy(), rtol=1e-10, atol=1e-12)
    for attr in ("domain", "codomain"):
        assert repr(getattr(e, attr)) == repr(getattr(t, attr))
        assert getattr(e, attr).event_dim == getattr(t, attr).event_dim
    assert e.bijective == t.bijective and repr(e) == repr(t)
    assert np.array_equal(_sign(e), _sign(t))
    assert tuple(e.forward_shape(ember.Size(shape))) == tuple(t.forward_shape(torch_ref.Size(shape)))
    assert tuple(e.inverse_shape(ey.shape)) == tuple(t.inverse_shape(ty.shape))
    np.testing.assert_allclose(e.inv(ey).numpy(), t.inv(ty).numpy(), rtol=1e-8, atol=1e-10)
    try:
        expected = t.log_abs_det_jacobian(tx, ty).numpy()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            e.log_abs_det_jacobian(ex, ey)
        return
    got = e.log_abs_det_jacobian(ex, ey).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["exp", "affine", "sigmoid", "tanh", "softplus", "power", "stick_breaking",
                                  "corr_cholesky", "compose"])
def test_bijections_invert_and_their_log_determinants_are_the_jacobians(name):
    """x -> t(x) -> t.inv back to x, and log|det J| from the Jacobian itself (autograd, per sample)."""
    build, shape = TRANSFORMS[name]
    transform = build(T, ember)
    x = ember.tensor(_input(name, shape))
    y = transform(x)
    np.testing.assert_allclose(transform.inv(y).numpy(), x.numpy(), rtol=1e-7, atol=1e-9)
    log_det = transform.log_abs_det_jacobian(x, y).numpy()
    for i in range(shape[0]):
        row = x[i].detach().clone()
        jacobian = ember.autograd.functional.jacobian(lambda v: transform(v).reshape(-1), row).numpy()
        jacobian = jacobian.reshape(-1, row.numel())
        if name == "stick_breaking":  # K - 1 inputs, K outputs on the simplex: drop the last (dependent) one
            jacobian = jacobian[:-1]
        if name == "corr_cholesky":  # only the strictly lower triangle of the output is free
            n = int(round((0.25 + 2 * row.numel()) ** 0.5 + 0.5))
            jacobian = jacobian[np.tril_indices(n, -1)[0] * n + np.tril_indices(n, -1)[1]]
        if transform.domain.event_dim == 0:  # elementwise: log |dy_j/dx_j| per entry
            np.testing.assert_allclose(log_det[i], np.log(np.abs(np.diag(jacobian))), rtol=1e-8)
        else:
            np.testing.assert_allclose(log_det[i], np.linalg.slogdet(jacobian)[1], rtol=1e-8)


def test_transform_caching_inverse_identity_and_equality():
    exp = T.ExpTransform(cache_size=1)
    x = ember.randn(3)
    y = exp(x)
    assert exp.inv(y) is x and exp(x) is y
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    t = T.SigmoidTransform()
    assert t.inv.inv is t
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    assert T.identity_transform(x) is x
    assert T.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    with pytest.raises(ValueError, match="Please use either .domain.event_dim or .codomain.event_dim"):
        T.CorrCholeskyTransform().event_dim
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2, 3), (5,))


CONSTRAINTS = {
    "real": lambda c: c.real, "positive": lambda c: c.positive, "nonnegative": lambda c: c.nonnegative,
    "greater_than": lambda c: c.greater_than(1.5), "greater_than_eq": lambda c: c.greater_than_eq(-1.0),
    "less_than": lambda c: c.less_than(2.0), "unit_interval": lambda c: c.unit_interval,
    "interval": lambda c: c.interval(-1.0, 3.0), "half_open_interval": lambda c: c.half_open_interval(0.0, 2.0),
    "simplex": lambda c: c.simplex, "real_vector": lambda c: c.real_vector,
    "independent": lambda c: c.independent(c.positive, 1), "corr_cholesky": lambda c: c.corr_cholesky,
    "lower_cholesky": lambda c: c.lower_cholesky, "positive_definite": lambda c: c.positive_definite,
    "positive_semidefinite": lambda c: c.positive_semidefinite,
    "cat": lambda c: c.cat([c.positive, c.real], 0, [1, 2]),
    "stack": lambda c: c.stack([c.positive, c.unit_interval], -1),
}
# the unconstrained input shape each constraint's transforms take
_SHAPES = {"simplex": (4, 3), "real_vector": (4, 3), "independent": (4, 3), "corr_cholesky": (4, 6),
           "lower_cholesky": (4, 3, 3), "positive_definite": (4, 3, 3), "positive_semidefinite": (4, 3, 3),
           "cat": (3, 4), "stack": (4, 2)}


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registries_match_torch_and_land_in_the_constraint(torch_ref, name, registry):
    t_constraint = CONSTRAINTS[name](torch_ref.distributions.constraints)
    e_constraint = CONSTRAINTS[name](C)
    try:
        expected = getattr(torch_ref.distributions, registry)(t_constraint)
    except NotImplementedError as err:
        with pytest.raises(NotImplementedError, match=str(err)):
            getattr(D, registry)(e_constraint)
        return
    transform = getattr(D, registry)(e_constraint)
    assert repr(transform) == repr(expected) and type(transform).__name__ == type(expected).__name__
    x = _R.normal(size=_SHAPES.get(name, (4, 3)))
    y = transform(ember.tensor(x))
    np.testing.assert_allclose(y.numpy(), expected(torch_ref.tensor(x)).numpy(), rtol=1e-9, atol=1e-12)
    assert e_constraint.check(y).all()


def test_registering_a_new_constraint():
    class _Odd(C.Constraint):
        def check(self, value):
            return value % 2 == 1

    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(_Odd)
    def _to_odd(constraint):
        return T.AffineTransform(1.0, 2.0)

    assert isinstance(registry(_Odd()), T.AffineTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        registry(C.real)
    with pytest.raises(TypeError):
        registry.register(int, _to_odd)


@pytest.mark.parametrize("name, values", [
    ("positive", [-1.0, 0.0, 2.0]), ("nonnegative", [-1.0, 0.0, 2.0]), ("unit_interval", [-0.1, 0.0, 1.0, 1.1]),
    ("half_open_interval", [0.0, 1.9, 2.0]), ("interval", [-1.0, 3.0, 3.5]), ("real", [0.0, float("nan")]),
    ("less_than", [1.0, 2.0]), ("greater_than", [1.5, 2.0]), ("greater_than_eq", [-1.0, -2.0]),
])
def test_elementwise_constraints_match_torch(torch_ref, name, values):
    t_check = CONSTRAINTS[name](torch_ref.distributions.constraints).check(torch_ref.tensor(values))
    e_check = CONSTRAINTS[name](C).check(ember.tensor(values))
    assert e_check.tolist() == t_check.tolist()


def test_structured_constraints_match_torch(torch_ref):
    tc = torch_ref.distributions.constraints
    samples = {
        "simplex": [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]],
        "one_hot": [[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]],
        "boolean": [0.0, 1.0, 0.5],
        "nonnegative_integer": [0.0, 2.0, -1.0, 1.5],
        "positive_integer": [0.0, 2.0],
        "lower_triangular": [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]]],
        "lower_cholesky": [[[1.0, 0.0], [2.0, 3.0]], [[-1.0, 0.0], [0.0, 1.0]]],
        "corr_cholesky": [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.5, 0.5]]],
        "square": [[[1.0, 2.0], [3.0, 4.0]]],
        "symmetric": [[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]],
        "positive_definite": [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]],
        "positive_semidefinite": [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]],
    }
    for name, values in samples.items():
        assert getattr(C, name).check(ember.tensor(values)).tolist() == \
            getattr(tc, name).check(torch_ref.tensor(values)).tolist(), name
        assert repr(getattr(C, name)) == repr(getattr(tc, name))
        assert (getattr(C, name).event_dim, getattr(C, name).is_discrete) == \
            (getattr(tc, name).event_dim, getattr(tc, name).is_discrete), name
    assert C.multinomial(3).check(ember.tensor([[1.0, 2.0], [2.0, 2.0]])).tolist() == [True, False]
    assert C.integer_interval(0, 3).check(ember.tensor([0.0, 3.0, 4.0, 1.5])).tolist() == [True, True, False, False]
    assert C.independent(C.real, 1).check(ember.tensor([[0.0, float("nan")], [1.0, 2.0]])).tolist() == [False, True]
    with pytest.raises(ValueError, match="Expected value.dim\\(\\) >= 2 but got 1"):
        C.independent(C.real, 2).check(ember.ones(3))
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(ember.ones(1))
    assert C.is_dependent(C.dependent) and C.is_dependent(D.Uniform.support) and not C.is_dependent(C.real)
    assert C.dependent(event_dim=1).event_dim == 1
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        C.dependent.event_dim
    mixture = C.MixtureSameFamilyConstraint(C.real_vector)
    assert repr(mixture) == repr(tc.MixtureSameFamilyConstraint(tc.real_vector)) and mixture.event_dim == 1


def test_transformed_distribution_matches_torch(torch_ref):
    loc, scale = _R.normal(size=3), _R.uniform(0.5, 2.0, 3)
    x = _R.uniform(0.1, 0.9, (5, 3))

    def build(lib, module):
        base = module.Normal(lib.tensor(loc), lib.tensor(scale))
        return module.TransformedDistribution(base, [module.transforms.AffineTransform(1.0, -2.0),
                                                     module.transforms.SigmoidTransform()])

    t, e = build(torch_ref, torch_ref.distributions), build(ember, D)
    for method in ("log_prob", "cdf"):
        np.testing.assert_allclose(getattr(e, method)(ember.tensor(x)).numpy(),
                                   getattr(t, method)(torch_ref.tensor(x)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(e.icdf(ember.tensor(x)).numpy(), t.icdf(torch_ref.tensor(x)).numpy(), rtol=1e-10)
    assert repr(e.support) == repr(t.support) and e.has_rsample
    # a vector-valued transform reinterprets the base's batch dimension as its event
    flow = D.TransformedDistribution(D.Normal(ember.zeros(2, 3), ember.ones(2, 3)), T.StickBreakingTransform())
    assert flow.batch_shape == ember.Size([2]) and flow.event_shape == ember.Size([4])
    assert isinstance(flow.base_dist, D.Independent)
    assert flow.log_prob(flow.sample((5,))).shape == ember.Size([5, 2])
