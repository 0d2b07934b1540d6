"""nn.Module's contract, the containers, Linear/Bilinear/LazyLinear, Flatten/Unflatten, against torch."""
from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck


def make_net(lib):
    """The same nested model built from ``lib`` (ember or torch): containers, shared names, buffers."""
    nn_ = lib.nn

    class Net(nn_.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn_.Sequential(nn_.Linear(4, 3), nn_.Identity(), nn_.Linear(3, 3, bias=False))
            self.heads = nn_.ModuleDict({"a": nn_.Linear(3, 2), "b": nn_.Flatten()})
            self.blocks = nn_.ModuleList([nn_.Linear(2, 2)])
            self.scale = nn_.Parameter(lib.ones(2))
            self.register_buffer("running", lib.zeros(2))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)

        def forward(self, x):
            return self.blocks[0](self.heads["a"](self.features(x))) * self.scale

    return Net()


def Net():
    return make_net(ember)


def torch_net(torch):
    return make_net(torch)


def copy_from_torch(ours: nn.Module, theirs) -> None:
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


# ---- registration and traversal ---------------------------------------------------------------------------------
def test_names_match_torch(torch_ref):
    ours, theirs = Net(), torch_net(torch_ref)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert repr(ours) == repr(theirs)


def test_shared_parameters_listed_once():
    lin = nn.Linear(2, 2)
    model = nn.Sequential(lin, lin)
    assert len(list(model.parameters())) == 2
    assert len(list(model.named_parameters(remove_duplicate=False))) == 4
    assert len(list(model.modules())) == 2
    assert [n for n, _ in model.named_parameters(prefix="m")] == ["m.0.weight", "m.0.bias"]
    assert [n for n, _ in model.named_parameters(recurse=False)] == []


def test_assignment_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'weight'"):
        m.weight = ember.ones(2, 2)
    m.bias = None
    assert m.bias is None and "bias" in m._parameters
    m.extra = nn.Parameter(ember.ones(1))
    assert "extra" in dict(m.named_parameters())
    with pytest.raises(TypeError, match="cannot assign 'Identity' as parameter 'extra'"):
        m.extra = nn.Identity()
    m.child = nn.Identity()
    m.child = nn.Parameter(ember.ones(1))
    assert "child" in m._parameters and "child" not in m._modules
    with pytest.raises(KeyError, match="attribute 'in_features' already exists"):
        m.register_buffer("in_features", ember.ones(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="to buffer"):
        m.register_buffer("buf", 3)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nothing'"):
        m.nothing
    del m.weight
    assert "weight" not in m._parameters
    m.buf = nn.Buffer(ember.ones(3), persistent=False)
    assert "buf" in dict(m.named_buffers()) and "buf" not in m.state_dict()


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("features.0") is net.features[0]
    assert net.get_parameter("heads.a.bias") is net.heads["a"].bias
    assert net.get_buffer("running") is net.running
    with pytest.raises(AttributeError):
        net.get_submodule("features.9")


def test_train_eval_requires_grad_zero_grad_apply():
    net = Net()
    assert net.training and all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")
    net(ember.ones(1, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"


def test_to_keeps_parameter_objects_and_casts_floats_only():
    net = Net()
    weight = net.features[0].weight
    net.register_buffer("counts", ember.zeros(2, dtype=ember.int64))
    net.double()
    assert net.features[0].weight is weight and weight.dtype == ember.float64
    assert net.counts.dtype == ember.int64 and net.running.dtype == ember.float64
    net.to(ember.float32)
    assert weight.dtype == ember.float32
    net.half()
    assert weight.dtype == ember.float16
    net.to("cpu", dtype=ember.float32)
    assert weight.dtype == ember.float32 and weight.requires_grad
    with pytest.raises(TypeError, match="floating point"):
        net.to(ember.int32)


def test_deepcopy_gives_independent_parameters():
    net = Net()
    twin = copy.deepcopy(net)
    assert isinstance(twin.scale, nn.Parameter) and twin.scale is not net.scale
    with ember.no_grad():
        twin.scale.fill_(5.0)
    assert net.scale.numpy(force=True).tolist() == [1.0, 1.0]


# ---- state dict ---------------------------------------------------------------------------------------------------
def test_state_dict_round_trip_from_torch(torch_ref):
    theirs = torch_net(torch_ref)
    ours = Net()
    copy_from_torch(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(ember.tensor(x)).detach().numpy(),
                               theirs(torch_ref.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_state_dict_shares_storage_and_is_detached():
    lin = nn.Linear(2, 2)
    sd = lin.state_dict()
    assert not sd["weight"].requires_grad
    with ember.no_grad():
        lin.weight.fill_(3.0)
    assert sd["weight"].numpy().tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert lin.state_dict(keep_vars=True)["weight"] is lin.weight
    assert list(lin.state_dict(prefix="p.")) == ["p.weight", "p.bias"]


def test_load_state_dict_errors_match_torch(torch_ref):
    ours, theirs = nn.Linear(2, 3), torch_ref.nn.Linear(2, 3)
    bad_ours = {"weight": ember.zeros(3, 3), "extra": ember.zeros(1)}
    bad_theirs = {"weight": torch_ref.zeros(3, 3), "extra": torch_ref.zeros(1)}
    with pytest.raises(RuntimeError) as mine:
        ours.load_state_dict(bad_ours)
    with pytest.raises(RuntimeError) as ref:
        theirs.load_state_dict(bad_theirs)
    assert str(mine.value).replace("ember.Size", "torch.Size") == str(ref.value)
    result = nn.Linear(2, 3).load_state_dict({"weight": ember.zeros(3, 2), "extra": ember.ones(1)}, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        nn.Linear(2, 3).load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)


def test_load_state_dict_copies_and_assign_replaces():
    lin = nn.Linear(2, 2)
    weight = lin.weight
    lin.load_state_dict({"weight": ember.full((2, 2), 2.0, dtype=ember.float64), "bias": ember.zeros(2)})
    assert lin.weight is weight and lin.weight.dtype == ember.float32
    assert lin.weight.numpy(force=True).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    new = ember.ones(2, 2)
    lin.load_state_dict({"weight": new, "bias": ember.zeros(2)}, assign=True)
    assert lin.weight is not weight and isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad


# ---- hooks ----------------------------------------------------------------------------------------------------------
def test_forward_hooks_replace_inputs_and_outputs():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(ember.ones(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(lin.bias.detach().numpy() + 1, (3, 2)))
    assert calls == [ember.Size([3, 2])]
    h1.remove()
    h2.remove()
    assert lin(ember.zeros(1, 2)).detach().numpy().tolist() == [lin.bias.detach().numpy().tolist()]
    order = []
    lin.register_forward_pre_hook(lambda m, a, k: order.append("second") or (a, k), with_kwargs=True)
    lin.register_forward_pre_hook(lambda m, a: order.append("first"), prepend=True)
    lin.register_forward_hook(lambda m, a, k, o: order.append(sorted(k)), with_kwargs=True)
    lin(input=ember.zeros(1, 2))
    assert order == ["first", "second", ["input"]]


def test_forward_hook_always_call():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError):
        m(ember.ones(1))
    assert seen == [None]


def test_full_backward_hooks_match_torch(torch_ref):
    def run(lib, tensor):
        lin = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            lin.weight.copy_(tensor(np.arange(6.0).reshape(2, 3) / 7))
            lin.bias.fill_(0.5)
        seen = {}

        def pre(module, grad_output):
            seen["pre"] = grad_output[0].detach().numpy().copy()
            return (grad_output[0] * 2,)

        def hook(module, grad_input, grad_output):
            seen["in"] = grad_input[0].detach().numpy().copy()
            seen["out"] = grad_output[0].detach().numpy().copy()
            return (grad_input[0] * 3,)

        lin.register_full_backward_pre_hook(pre)
        lin.register_full_backward_hook(hook)
        x = tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)
        (lin(x) ** 2).sum().backward()
        return seen, x.grad.numpy(), lin.weight.grad.numpy()

    ours = run(ember, lambda a, **k: ember.tensor(a, dtype=ember.float64, **k))
    theirs = run(torch_ref, lambda a, **k: torch_ref.tensor(a, dtype=torch_ref.float64, **k))
    for key in ("pre", "in", "out"):
        np.testing.assert_allclose(ours[0][key], theirs[0][key], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)


def test_backward_hook_without_input_grad_gets_nones():
    lin = nn.Linear(2, 1)
    got = []
    lin.register_full_backward_hook(lambda m, gi, go: got.append((gi, go[0].shape)))
    lin(ember.ones(3, 2)).sum().backward()
    assert got == [((None,), ember.Size([3, 1]))]


# ---- containers -----------------------------------------------------------------------------------------------------
def test_sequential_list_behaviour():
    a, b, c = nn.Linear(2, 2), nn.Identity(), nn.Flatten()
    seq = nn.Sequential(a, b)
    seq.append(c)
    assert len(seq) == 3 and seq[-1] is c and list(seq) == [a, b, c]
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and seq[0] is b
    seq.insert(0, a)
    assert list(seq) == [a, b, c]
    assert seq.pop(1) is b and list(seq) == [a, c]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]
    named = nn.Sequential(OrderedDict([("first", a), ("second", c)]))
    assert list(named._modules) == ["first", "second"] and named[1] is c
    assert list(seq + named) == [a, c, a, c]
    x = ember.ones(1, 2)
    np.testing.assert_allclose(seq(x).detach().numpy(), a(x).detach().numpy())


def test_module_list_dict():
    ml = nn.ModuleList([nn.Identity()])
    ml += [nn.Flatten()]
    ml.extend([nn.Identity()])
    assert len(ml) == 3 and isinstance(ml[1], nn.Flatten) and len(ml[:2]) == 2
    with pytest.raises(TypeError):
        ml.append(3)
    md = nn.ModuleDict([("x", nn.Identity())])
    md.update({"y": nn.Flatten()})
    assert list(md.keys()) == ["x", "y"] and "y" in md and len(md) == 2
    assert isinstance(md.pop("x"), nn.Identity) and list(md) == ["y"]
    with pytest.raises(ValueError, match="has length 1"):
        md.update([("z",)])


def test_parameter_list_dict(torch_ref):
    pl = nn.ParameterList([ember.ones(3), nn.Parameter(ember.ones(2, 2))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    assert repr(pl) == repr(torch_ref.nn.ParameterList([torch_ref.ones(3), torch_ref.ones(2, 2)]))
    pd = nn.ParameterDict({"a": ember.ones(3)})
    assert repr(pd) == repr(torch_ref.nn.ParameterDict({"a": torch_ref.ones(3)}))
    pd["b"] = ember.zeros(1)
    assert list(pd.keys()) == ["a", "b"] and [n for n, _ in pd.named_parameters()] == ["a", "b"]
    assert pd.pop("a").shape == (3,) and list(pd) == ["b"]


# ---- layers ---------------------------------------------------------------------------------------------------------
def test_linear_matches_torch_values_and_grads(torch_ref):
    theirs = torch_ref.nn.Linear(5, 3)
    ours = nn.Linear(5, 3)
    copy_from_torch(ours, theirs)
    x = np.random.default_rng(1).standard_normal((2, 4, 5)).astype(np.float32)
    xt, xe = torch_ref.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    (theirs(xt) ** 2).sum().backward()
    (ours(xe) ** 2).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert repr(ours) == repr(theirs)


def test_linear_gradcheck_and_double_backward():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(F.linear, (x, w, b))
    assert ember.autograd.gradgradcheck(F.linear, (x, w, b))
    assert gradcheck(lambda v: F.linear(v, w), (ember.randn(4, dtype=ember.float64, requires_grad=True),))


def test_linear_default_init_bounds():
    ember.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / 20
    w = lin.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.002
    assert np.abs(lin.bias.detach().numpy()).max() <= bound


def test_linear_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x2\)"):
        F.linear(ember.ones(3, 4), ember.ones(2, 5))
    with pytest.raises(RuntimeError, match="must have the same dtype"):
        F.linear(ember.ones(3, 4, dtype=ember.float64), ember.ones(2, 4))


def test_bilinear_matches_torch(torch_ref):
    theirs = torch_ref.nn.Bilinear(3, 4, 2).double()
    ours = nn.Bilinear(3, 4, 2).double()
    copy_from_torch(ours, theirs)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(ours(ember.tensor(a), ember.tensor(b)).detach().numpy(),
                               theirs(torch_ref.tensor(a), torch_ref.tensor(b)).detach().numpy(), rtol=1e-12)
    assert repr(ours) == repr(theirs)
    w = ember.randn(2, 3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, y: F.bilinear(x, y, w), (ember.tensor(a[:2], requires_grad=True),
                                                         ember.tensor(b[:2], requires_grad=True)))


def test_lazy_linear_materialises_on_first_call():
    lazy = nn.LazyLinear(3)
    assert repr(lazy) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    out = lazy(ember.ones(2, 7))
    assert type(lazy) is nn.Linear and lazy.weight.shape == (3, 7) and out.shape == (2, 3)
    assert isinstance(lazy.weight, nn.Parameter) and lazy.weight.requires_grad
    assert np.abs(lazy.weight.detach().numpy()).max() <= 1 / np.sqrt(7)


def test_flatten_unflatten_identity(torch_ref):
    x = ember.arange(24.0).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(1, (3, 1))(x).shape == (2, 3, 1, 4)
    assert repr(nn.Unflatten(1, (2, 2))) == repr(torch_ref.nn.Unflatten(1, (2, 2)))
    assert repr(nn.Flatten()) == repr(torch_ref.nn.Flatten())
    assert nn.Identity(3, unused=True)(x) is x
    with pytest.raises(TypeError, match="unflattened_size"):
        nn.Unflatten(1, 3)


def test_missing_forward_raises():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(ember.ones(1))


def test_extra_state_and_load_pre_hook():
    class Counter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    a, b = Counter(), Counter()
    a.count = 7
    sd = a.state_dict()
    assert list(sd) == ["_extra_state"]
    b.load_state_dict(sd)
    assert b.count == 7
    with pytest.raises(RuntimeError, match='Missing key.*"_extra_state"'):
        b.load_state_dict({})
    renamed = []
    lin = nn.Linear(1, 1)
    lin.register_load_state_dict_pre_hook(
        lambda m, sd, prefix, *rest: renamed.append(prefix) or sd.__setitem__("bias", sd.pop("b")))
    lin.load_state_dict({"weight": ember.ones(1, 1), "b": ember.zeros(1)})
    assert renamed == [""] and lin.bias.detach().numpy().tolist() == [0.0]


def test_module_list_repr_groups_repeats(torch_ref):
    def build(lib):
        return lib.nn.ModuleList([lib.nn.Linear(2, 2), lib.nn.Linear(2, 2), lib.nn.Identity(), lib.nn.Linear(2, 2)])

    assert repr(build(ember)) == repr(build(torch_ref))
    assert repr(nn.ModuleList()) == "ModuleList()"
