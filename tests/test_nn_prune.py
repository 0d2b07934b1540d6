"""nn.utils.prune against torch: the deterministic methods give torch's masks on the same (untied) weights, the
reparametrisation (``_orig``, ``_mask``, the hook, ``remove``) leaves the same names in the same order, iterative
pruning composes as torch's PruningContainer, errors match; random methods are checked by counts and structure.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.utils.prune as prune

torch = pytest.importorskip("torch")
import torch.nn.utils.prune as torch_prune  # noqa: E402


def _twins(kind: str = "linear", seed: int = 0):
    """The same layer in torch and in ember (weights drawn in NumPy: no ties among magnitudes)."""
    rng = np.random.default_rng(seed)
    if kind == "linear":
        pair = torch.nn.Linear(6, 4), nn.Linear(6, 4)
    else:
        pair = torch.nn.Conv2d(3, 4, 2), nn.Conv2d(3, 4, 2)
    for (name, ref), mine in zip(pair[0].named_parameters(), pair[1].parameters()):
        values = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
        with torch.no_grad():
            ref.copy_(torch.from_numpy(values))
        with ember.no_grad():
            mine.copy_(ember.tensor(values))
    return pair


def _state(module) -> tuple:
    """What pruning changes: names in order, the mask and pruned tensor, the hooks' classes."""
    mask = getattr(module, "weight_mask", None)
    return (list(module._parameters), list(module._buffers), list(module.state_dict()),
            None if mask is None else mask.detach().numpy().tolist(),
            np.round(module.weight.detach().numpy(), 6).tolist(),
            [type(h).__name__ for h in module._forward_pre_hooks.values()])


def _same(ref, mine) -> None:
    assert _state(mine) == _state(ref)


STEPS = {
    "l1 fraction": lambda lib, m: lib.l1_unstructured(m, "weight", amount=0.3),
    "l1 count": lambda lib, m: lib.l1_unstructured(m, "weight", amount=5),
    "ln rows": lambda lib, m: lib.ln_structured(m, "weight", amount=1, n=2, dim=0),
    "ln cols l1": lambda lib, m: lib.ln_structured(m, "weight", amount=0.4, n=1, dim=-1),
    "ln inf": lambda lib, m: lib.ln_structured(m, "weight", amount=2, n=float("inf"), dim=1),
    "identity": lambda lib, m: lib.identity(m, "weight"),
}


@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("sequence", [["l1 fraction"], ["ln rows"], ["l1 count", "ln rows", "l1 fraction"],
                                      ["ln inf", "l1 count"], ["identity", "ln cols l1", "ln rows"]])
def test_deterministic_pruning_matches_torch_step_by_step(kind, sequence):
    ref, mine = _twins(kind)
    for step in sequence:
        STEPS[step](torch_prune, ref)
        STEPS[step](prune, mine)
        _same(ref, mine)
    hook_ref, hook = next(iter(ref._forward_pre_hooks.values())), next(iter(mine._forward_pre_hooks.values()))
    if len(sequence) > 1:
        assert [type(m).__name__ for m in hook] == [type(m).__name__ for m in hook_ref]


def test_forward_uses_the_mask_and_gradients_reach_orig_only_where_kept():
    ref, mine = _twins("linear")
    torch_prune.l1_unstructured(ref, "weight", amount=0.5)
    prune.l1_unstructured(mine, "weight", amount=0.5)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
    out_ref, out = ref(torch.from_numpy(x)), mine(ember.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    out_ref.square().sum().backward()
    out.square().sum().backward()
    np.testing.assert_allclose(mine.weight_orig.grad.numpy(), ref.weight_orig.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert (mine.weight_orig.grad.numpy()[mine.weight_mask.numpy() == 0] == 0).all()
    with ember.no_grad():  # the hook recomputes the pruned tensor from _orig before every call
        mine.weight_orig.fill_(1.0)
    mine(ember.tensor(x))
    assert mine.weight.detach().numpy().tolist() == mine.weight_mask.numpy().tolist()


def test_importance_scores_and_custom_masks_match_torch():
    ref, mine = _twins("conv")
    scores = np.random.default_rng(1).random((4, 3, 2, 2)).astype(np.float32)
    torch_prune.l1_unstructured(ref, "weight", amount=10, importance_scores=torch.from_numpy(scores))
    prune.l1_unstructured(mine, "weight", amount=10, importance_scores=ember.tensor(scores))
    _same(ref, mine)
    torch_prune.ln_structured(ref, "weight", 0.5, 2, 0, importance_scores=torch.from_numpy(scores))
    prune.ln_structured(mine, "weight", 0.5, 2, 0, importance_scores=ember.tensor(scores))
    _same(ref, mine)
    bias_mask = np.array([1, 0, 1, 0], dtype=np.float32)
    torch_prune.custom_from_mask(ref, "bias", torch.from_numpy(bias_mask))
    prune.custom_from_mask(mine, "bias", ember.tensor(bias_mask))
    assert list(mine.state_dict()) == list(ref.state_dict())
    assert mine.bias.detach().numpy().tolist() == pytest.approx(ref.bias.detach().numpy().tolist())
    assert prune.is_pruned(mine) and not prune.is_pruned(nn.Linear(1, 1))


def test_global_unstructured_matches_torch():
    (ref_a, mine_a), (ref_b, mine_b) = _twins("linear", 2), _twins("conv", 3)
    torch_prune.l1_unstructured(ref_b, "weight", amount=6)  # an existing mask is honoured
    prune.l1_unstructured(mine_b, "weight", amount=6)
    bias_scores = np.arange(4, dtype=np.float32)
    torch_prune.global_unstructured([(ref_a, "weight"), (ref_a, "bias"), (ref_b, "weight")],
                                    torch_prune.L1Unstructured, amount=0.4,
                                    importance_scores={(ref_a, "bias"): torch.from_numpy(bias_scores)})
    prune.global_unstructured([(mine_a, "weight"), (mine_a, "bias"), (mine_b, "weight")], prune.L1Unstructured,
                              amount=0.4, importance_scores={(mine_a, "bias"): ember.tensor(bias_scores)})
    _same(ref_a, mine_a)
    _same(ref_b, mine_b)
    assert mine_a.bias_mask.numpy().tolist() == ref_a.bias_mask.numpy().tolist()


def test_remove_makes_pruning_permanent_as_torch():
    ref, mine = _twins("linear")
    for lib, m in ((torch_prune, ref), (prune, mine)):
        lib.l1_unstructured(m, "weight", amount=0.5)
        lib.ln_structured(m, "weight", amount=1, n=1, dim=0)
        lib.remove(m, "weight")
    _same(ref, mine)
    assert isinstance(mine.weight, nn.Parameter) and not prune.is_pruned(mine)
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned before pruning can be "
                                         "removed"):
        prune.remove(mine, "weight")


def _error(action) -> tuple:
    try:
        action()
    except Exception as error:  # noqa: BLE001 - compared with torch's
        return type(error).__name__, str(error).replace("torch.nn.utils.prune", "PRUNE") \
            .replace("ember.nn.utils.prune", "PRUNE").replace("torch.Size", "Size").replace("ember.Size", "Size")
    return ("no error",)


@pytest.mark.parametrize("case", [
    lambda lib, m: lib.l1_unstructured(m, "weight", amount=-1),
    lambda lib, m: lib.l1_unstructured(m, "weight", amount=1.5),
    lambda lib, m: lib.l1_unstructured(m, "weight", amount="0.3"),
    lambda lib, m: lib.l1_unstructured(m, "weight", amount=25),
    lambda lib, m: lib.random_unstructured(m, "weight", amount=-0.1),
    lambda lib, m: lib.ln_structured(m, "bias", amount=0.5, n=2, dim=0),
    lambda lib, m: lib.ln_structured(m, "weight", amount=0.5, n=2, dim=2),
    lambda lib, m: lib.random_structured(m, "weight", amount=5, dim=0),
    lambda lib, m: lib.global_unstructured(3, lib.L1Unstructured, amount=0.2),
    lambda lib, m: lib.global_unstructured([(m, "weight")], lib.L1Unstructured, importance_scores=[1], amount=0.2),
    lambda lib, m: lib.global_unstructured([(m, "weight")], lib.RandomStructured, amount=0.2),
    lambda lib, m: lib.PruningContainer(lib.L1Unstructured(0.2), 3),
    lambda lib, m: lib.PruningContainer(3),
], ids=["negative count", "fraction over one", "string", "count over size", "negative fraction", "structured 1-d",
        "dim out of range", "too many channels", "not iterable", "scores not dict", "structured global",
        "container of many", "container of a number"])
def test_errors_match_torch(case):
    ref, mine = _twins("linear")
    assert _error(lambda: case(prune, mine)) == _error(lambda: case(torch_prune, ref))
    assert list(mine._parameters) == list(ref._parameters)


def test_a_failed_pruning_puts_the_parameter_back_as_torch():
    ref, mine = _twins("linear")
    torch_error = _error(lambda: torch_prune.custom_from_mask(ref, "weight", torch.ones(4)))
    assert torch_error[0] == "AssertionError"
    assert _error(lambda: prune.custom_from_mask(mine, "weight", ember.ones(4))) == torch_error
    assert list(mine._parameters) == list(ref._parameters) == ["bias", "weight"]
    assert not prune.is_pruned(mine)
    with pytest.raises(AssertionError, match="importance_scores should have the same shape as parameter weight"):
        prune.l1_unstructured(mine, "weight", 0.5, importance_scores=ember.ones(3))


def test_container_rejects_other_tensors_and_non_methods():
    first = prune.L1Unstructured(0.2)
    first._tensor_name = "weight"
    container = prune.PruningContainer(first)
    other = prune.L1Unstructured(0.2)
    other._tensor_name = "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter named 'weight'"):
        container.add_pruning_method(other)
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        container.add_pruning_method(3)
    assert len(container) == 1 and container[0] is first and list(container) == [first]


def test_random_unstructured_prunes_the_count_among_what_is_left():
    ember.manual_seed(0)
    m = nn.Linear(10, 10)
    prune.random_unstructured(m, "weight", amount=0.3)
    assert int((m.weight_mask == 0).sum()) == 30
    first = m.weight_mask.numpy().copy()
    prune.random_unstructured(m, "weight", amount=20)  # 20 more, all among the 70 still kept
    mask = m.weight_mask.numpy()
    assert int((mask == 0).sum()) == 50 and (mask[first == 0] == 0).all()
    assert (m.weight.detach().numpy()[mask == 0] == 0).all()


def test_random_structured_prunes_whole_channels():
    ember.manual_seed(0)
    m = nn.Conv2d(2, 6, 3)
    prune.random_structured(m, "weight", amount=2, dim=0)
    per_channel = m.weight_mask.numpy().reshape(6, -1)
    assert sorted(per_channel.min(1) == per_channel.max(1)) == [True] * 6
    assert int((per_channel[:, 0] == 0).sum()) == 2
    prune.random_structured(m, "weight", amount=0.5, dim=0)  # half of the 4 channels left
    assert int((m.weight_mask.numpy().reshape(6, -1)[:, 0] == 0).sum()) == 4


def test_prune_method_on_a_bare_tensor():
    t = ember.tensor([[0.5, -3.0, 0.1], [2.0, -0.2, 1.0]])
    method = prune.L1Unstructured(amount=2)
    assert np.allclose(method.prune(t).numpy(), [[0.5, -3.0, 0], [2.0, 0, 1.0]])
    scores = ember.tensor([[9.0, 0.0, 9.0], [0.0, 9.0, 9.0]])
    assert np.allclose(method.prune(t, importance_scores=scores).numpy(), [[0.5, 0, 0.1], [0, -0.2, 1]])
    with pytest.raises(AssertionError, match="importance_scores should have the same shape as tensor t"):
        method.prune(t, importance_scores=ember.ones(3))
