"""ember.nn.utils: gradient clipping, vector conversion, parametrize, weight_norm and spectral_norm vs torch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import parametrizations, parametrize

torch = pytest.importorskip("torch")


def e2t(t):
    return torch.from_numpy(np.array(t.detach().numpy()))


def twin_linear(cls_e=None, cls_t=None, *args):
    """An ember Linear and a torch Linear with the same weights."""
    m = (cls_e or nn.Linear)(*args or (5, 4))
    tm = (cls_t or torch.nn.Linear)(*args or (5, 4))
    tm.load_state_dict({k: e2t(v) for k, v in m.state_dict().items()})
    return m, tm


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy(), np.float64), b.detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol)


# ---- clipping --------------------------------------------------------------------------------------------------------

def _grads_pair(seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) * 3 for s in [(3, 4), (5,), (2, 2, 2)]]
    ours = [ember.zeros(a.shape, requires_grad=True) for a in arrays]
    theirs = [torch.zeros(a.shape, requires_grad=True) for a in arrays]
    for p, tp, a in zip(ours, theirs, arrays):
        p.grad, tp.grad = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.5, 3])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, theirs = _grads_pair()
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.shape == () and total.dtype == ember.float32
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-5)
    for p, tp in zip(ours, theirs):
        close(p.grad, tp.grad)


def test_clip_grad_norm_edge_cases():
    p = ember.zeros(3, requires_grad=True)
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0  # no grads at all
    p.grad = ember.tensor([3.0, 4.0, 0.0])
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)  # a single tensor
    assert np.linalg.norm(p.grad.numpy()) == pytest.approx(1.0, rel=1e-5)
    p.grad = ember.tensor([float("nan"), 1.0, 0.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isnan(nn.utils.clip_grad_norm_([p], 1.0).item())


def test_total_norm_and_clip_with_norm_match_torch():
    ours, theirs = _grads_pair(1)
    total = nn.utils.get_total_norm([p.grad for p in ours], 2.0)
    ttotal = torch.nn.utils.get_total_norm([p.grad for p in theirs], 2.0)
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-6)
    nn.utils.clip_grads_with_norm_(ours, 1.0, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 1.0, ttotal)
    for p, tp in zip(ours, theirs):
        close(p.grad, tp.grad)


def test_clip_grad_value_matches_torch():
    ours, theirs = _grads_pair(2)
    assert nn.utils.clip_grad_value_(ours, 1.5) is None
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for p, tp in zip(ours, theirs):
        close(p.grad, tp.grad, 0)
    assert max(float(p.grad.abs().max()) for p in ours) == 1.5


def test_deprecated_clip_grad_norm_warns():
    p = ember.zeros(2, requires_grad=True)
    p.grad = ember.ones(2)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        nn.utils.clip_grad_norm(p, 1.0)


# ---- vectors ---------------------------------------------------------------------------------------------------------

def test_parameters_vector_roundtrip():
    m = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(vec.detach().numpy()[:6], m.weight.detach().numpy().ravel())
    (vec * ember.arange(8.0)).sum().backward()
    np.testing.assert_array_equal(m.bias.grad.numpy(), [6.0, 7.0])  # differentiable
    weight = m.weight
    nn.utils.vector_to_parameters(ember.arange(8.0), m.parameters())
    assert m.weight is weight and m.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and m.bias.tolist() == [6, 7]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], m.parameters())


# ---- parametrize -----------------------------------------------------------------------------------------------------

class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


class Scale(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


def test_register_parametrization_symmetric():
    m = nn.Linear(3, 3)
    raw = m.weight.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert type(nn.Linear(2, 2)).__name__ == "Linear"  # other instances untouched
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    np.testing.assert_array_equal(np.triu(w), np.triu(raw))
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert "weight" not in dict(m.named_parameters())
    m(ember.ones(2, 3)).sum().backward()
    assert m.parametrizations.weight.original.grad is not None


def test_right_inverse_assignment_and_chain():
    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Scale())
    original = m.parametrizations.weight.original
    m.weight = ember.full((2, 2), 4.0)
    assert m.parametrizations.weight.original is original and original.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert m.weight.tolist() == [[4.0, 4.0], [4.0, 4.0]]
    parametrize.register_parametrization(m, "weight", Scale())
    assert m.weight.tolist() == [[8.0, 8.0], [8.0, 8.0]] and len(m.parametrizations.weight) == 2
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and m.weight.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert isinstance(m.weight, nn.Parameter) and not hasattr(m, "parametrizations")


def test_remove_leave_parametrized_keeps_value():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    value = m.weight.detach().numpy().copy()
    parametrize.remove_parametrizations(m, "weight")
    np.testing.assert_array_equal(m.weight.detach().numpy(), value)
    assert set(m.state_dict()) == {"weight", "bias"} and isinstance(m.weight, nn.Parameter)


def test_cached_computes_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Counting())
    calls.clear()
    with parametrize.cached():
        a, b = m.weight, m.weight
    assert a is b and len(calls) == 1
    m.weight, m.weight
    assert len(calls) == 3


def test_parametrize_errors():
    m = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name "
                                         "'nope'"):
        parametrize.register_parametrization(m, "nope", Symmetric())

    class Shrink(nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        parametrize.register_parametrization(m, "weight", Shrink())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(nn.Linear(2, 2), "weight")
    parametrize.register_parametrization(m, "weight", Scale())
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(m, "weight", Shrink())
    n = nn.Linear(2, 2)
    parametrize.register_parametrization(n, "weight", Symmetric())
    with pytest.raises(RuntimeError, match="parametrization Symmetric does not implement right_inverse"):
        n.weight = ember.zeros(2, 2)


# ---- weight norm -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim):
    m, tm = twin_linear()
    parametrizations.weight_norm(m, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert list(m.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        close(m.state_dict()[k], v)
    close(m.weight, tm.weight)
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    m(ember.from_numpy(x)).pow(2).sum().backward()
    tm(torch.from_numpy(x)).pow(2).sum().backward()
    for name in ("original0", "original1"):
        close(getattr(m.parametrizations.weight, name).grad, getattr(tm.parametrizations.weight, name).grad, 1e-4)


def test_weight_norm_loads_torch_checkpoint():
    tm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3))
    m = parametrizations.weight_norm(nn.Linear(4, 3))
    m.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    close(m.weight, tm.weight)


def test_legacy_weight_norm_matches_torch_and_removes():
    m, tm = twin_linear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(m)
        torch.nn.utils.weight_norm(tm)
    assert set(m.state_dict()) == set(tm.state_dict()) == {"bias", "weight_g", "weight_v"}
    with torch.no_grad():
        tm.weight_g.mul_(2)
    with ember.no_grad():
        m.weight_g.mul_(2)
    x = np.ones((2, 5), np.float32)
    close(m(ember.from_numpy(x)), tm(torch.from_numpy(x)))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        _legacy_apply_twice(m)
    _check_legacy_removal(m, tm, "weight_norm")


def _check_legacy_removal(m, tm, kind):
    """``remove_<kind>`` restores a plain ``weight`` Parameter equal to torch's, and refuses a second removal."""
    remove, torch_remove = getattr(nn.utils, f"remove_{kind}"), getattr(torch.nn.utils, f"remove_{kind}")
    remove(m)
    torch_remove(tm)
    assert isinstance(m.weight, nn.Parameter) and set(m.state_dict()) == {"weight", "bias"}
    close(m.weight, tm.weight)
    with pytest.raises(ValueError, match=f"{kind} of 'weight' not found in"):
        remove(m)


def _legacy_apply_twice(m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(m)


# ---- spectral norm ---------------------------------------------------------------------------------------------------

def _copy_uv(src_u, src_v, dst_u, dst_v):
    with torch.no_grad():
        dst_u.copy_(e2t(src_u))
        dst_v.copy_(e2t(src_v))


@pytest.mark.parametrize("n_iter", [1, 3])
def test_spectral_norm_parametrization_matches_torch(n_iter):
    m, tm = twin_linear()
    parametrizations.spectral_norm(m, n_power_iterations=n_iter)
    torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=n_iter)
    assert list(m.state_dict()) == list(tm.state_dict())
    sn, tsn = m.parametrizations.weight[0], tm.parametrizations.weight[0]
    _copy_uv(sn._u, sn._v, tsn._u, tsn._v)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    for _ in range(2):  # training forwards run the power iteration
        y, ty = m(ember.from_numpy(x)), tm(torch.from_numpy(x))
        close(y, ty)
        close(sn._u, tsn._u)
    y.sum().backward()
    ty.sum().backward()
    close(m.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad, 1e-4)
    m.eval()
    tm.eval()
    u_before = sn._u.numpy().copy()
    close(m.weight, tm.weight)
    np.testing.assert_array_equal(sn._u.numpy(), u_before)  # eval: no iteration


def test_spectral_norm_converges_to_unit_sigma_and_conv_dims():
    ember.manual_seed(0)
    m = parametrizations.spectral_norm(nn.Linear(6, 4), n_power_iterations=30)
    assert np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, rel=1e-4)
    w = ember.randn(4, 3, 2)
    holder = nn.Module()
    holder.weight = nn.Parameter(w)
    parametrizations.spectral_norm(holder, dim=1)
    assert holder.parametrizations.weight[0]._u.shape == (3,) and holder.parametrizations.weight[0]._v.shape == (8,)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), name="kernel")


def test_spectral_norm_of_vector():
    holder = nn.Module()
    holder.weight = nn.Parameter(ember.tensor([3.0, 4.0]))
    parametrizations.spectral_norm(holder)
    np.testing.assert_allclose(holder.weight.detach().numpy(), [0.6, 0.8], rtol=1e-6)


def test_legacy_spectral_norm_matches_torch_and_removes():
    m, tm = twin_linear()
    nn.utils.spectral_norm(m)
    torch.nn.utils.spectral_norm(tm)
    assert set(m.state_dict()) == set(tm.state_dict()) == {"bias", "weight_orig", "weight_u", "weight_v"}
    _copy_uv(m.weight_u, m.weight_v, tm.weight_u, tm.weight_v)
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    for _ in range(2):
        close(m(ember.from_numpy(x)), tm(torch.from_numpy(x)))
        close(m.weight_u, tm.weight_u)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        nn.utils.spectral_norm(m)
    _check_legacy_removal(m, tm, "spectral_norm")
