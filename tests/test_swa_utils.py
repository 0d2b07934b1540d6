"""optim.swa_utils against torch on the same weights: averaged parameters and buffers after several updates (SWA,
EMA, custom functions, ``use_buffers``), the SWALR lr sequence, update_bn's recomputed statistics, and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.optim import swa_utils

torch = pytest.importorskip("torch")
from torch.optim import swa_utils as torch_swa  # noqa: E402


def _build(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def _twins():
    return _build(torch), _build(ember)


def _load(ref, mine, rng: np.random.Generator) -> None:
    """Give both models the same fresh weights and running statistics."""
    for (name, t), e in zip(ref.state_dict().items(), mine.state_dict().values()):
        if t.dtype == torch.int64:
            values = rng.integers(0, 5, size=tuple(t.shape))
        else:
            values = rng.random(tuple(t.shape)).astype(np.float32) + (0.5 if "var" in name else -0.5)
        t.copy_(torch.from_numpy(np.asarray(values)))
        e.copy_(ember.tensor(np.asarray(values)))


def _numpy(state) -> dict:
    return {k: v.detach().cpu().numpy() for k, v in state.items()}


def _assert_same_state(ref, mine, rtol: float = 0.0) -> None:
    expected, got = _numpy(ref.state_dict()), _numpy(mine.state_dict())
    assert list(got) == list(expected)
    for key in expected:
        assert got[key].dtype == expected[key].dtype, key
        np.testing.assert_allclose(got[key], expected[key], rtol=rtol, atol=rtol, err_msg=key)


@pytest.mark.parametrize("make", [
    lambda lib: {},
    lambda lib: {"use_buffers": True},
    lambda lib: {"avg_fn": lib.get_ema_avg_fn(0.9)},
    lambda lib: {"multi_avg_fn": lib.get_ema_multi_avg_fn(0.8)},
    lambda lib: {"multi_avg_fn": lib.get_swa_multi_avg_fn()},
    lambda lib: {"multi_avg_fn": lib.get_ema_multi_avg_fn(0.5), "use_buffers": True},
], ids=["swa", "swa buffers", "ema", "ema multi", "swa multi", "ema multi buffers"])
def test_averaged_model_matches_torch_after_several_updates(make):
    (ref, mine), rng = _twins(), np.random.default_rng(0)
    avg_ref = torch_swa.AveragedModel(ref, **make(torch_swa))
    avg = swa_utils.AveragedModel(mine, **make(swa_utils))
    assert list(avg.state_dict()) == list(avg_ref.state_dict())
    for _ in range(4):
        _load(ref, mine, rng)
        avg_ref.update_parameters(ref)
        avg.update_parameters(mine)
    # the multi-tensor EMA/SWA are lerps: ember's float32 lerp may round its multiply-add differently by an ulp
    _assert_same_state(avg_ref, avg, rtol=1e-6)
    assert int(avg.n_averaged) == 4 and avg.n_averaged.dtype == ember.int64
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    avg_ref.eval()
    avg.eval()
    np.testing.assert_allclose(avg(ember.tensor(x)).detach().numpy(), avg_ref(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_the_average_is_a_copy_and_equal_weight_swa_is_exact():
    (ref, mine), rng = _twins(), np.random.default_rng(1)
    avg_ref, avg = torch_swa.AveragedModel(ref), swa_utils.AveragedModel(mine)
    assert avg.module is not mine and avg.module[0].weight is not mine[0].weight
    for _ in range(3):
        _load(ref, mine, rng)
        avg_ref.update_parameters(ref)
        avg.update_parameters(mine)
    _assert_same_state(avg_ref, avg)  # the per-tensor CPU formula: bit for bit


def test_averaging_functions_and_their_errors():
    ema, swa = swa_utils.get_ema_avg_fn(0.75), swa_utils.get_swa_avg_fn()
    a, b = ember.tensor([4.0, 8.0]), ember.tensor([0.0, 4.0])
    assert ema(a, b, 0).tolist() == [3.0, 7.0]
    assert swa(a, b, ember.tensor(3)).tolist() == [3.0, 7.0]
    ints = [ember.tensor([10, 20])]  # as torch: the multi-tensor mean refuses integer tensors
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating"):
        swa_utils.get_swa_multi_avg_fn()(ints, [ember.tensor([20, 40])], 1)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        swa_utils.get_swa_multi_avg_fn()(ints, [ember.tensor([20, 40])], ember.tensor(1))
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"Invalid decay value {bad} provided"):
            swa_utils.get_ema_avg_fn(bad)
        with pytest.raises(ValueError, match=f"Invalid decay value {bad} provided"):
            swa_utils.get_ema_multi_avg_fn(bad)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        swa_utils.AveragedModel(ember.nn.Linear(1, 1), avg_fn=ema, multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


def _lrs(lib, steps: int, **kwargs) -> list:
    optimizer = lib.optim.SGD([{"params": [lib.nn.Parameter(lib.zeros(1))]},
                               {"params": [lib.nn.Parameter(lib.zeros(1))], "lr": 0.5}], lr=1.0)
    scheduler = lib.optim.swa_utils.SWALR(optimizer, **kwargs)
    seen = [scheduler.get_last_lr()]
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        seen.append(scheduler.get_last_lr())
    return seen


@pytest.mark.parametrize("kwargs", [
    {"swa_lr": 0.05},
    {"swa_lr": [0.1, 0.2], "anneal_epochs": 3, "anneal_strategy": "linear"},
    {"swa_lr": 0.3, "anneal_epochs": 0},
    {"swa_lr": 0.01, "anneal_epochs": 4, "anneal_strategy": "cos"},
], ids=["default", "per group linear", "no annealing", "cos 4"])
def test_swalr_sequence_matches_torch(kwargs):
    got, expected = _lrs(ember, 12, **kwargs), _lrs(torch, 12, **kwargs)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_swalr_errors_and_state_dict_round_trip(torch_ref):
    for lib in (ember, torch_ref):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        schedule = lib.optim.swa_utils.SWALR
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got step"):
            schedule(optimizer, 0.1, anneal_strategy="step")
        for epochs in (-1, 2.0):
            with pytest.raises(ValueError, match=f"anneal_epochs must be equal or greater than 0, got {epochs}"):
                schedule(optimizer, 0.1, anneal_epochs=epochs)
        with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups. swa_lr "
                                             "has 2 values, param_groups has 1."):
            schedule(optimizer, [0.1, 0.2])
    optimizer = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
    scheduler = swa_utils.SWALR(optimizer, 0.1, anneal_epochs=5, anneal_strategy="linear")
    optimizer.step()
    scheduler.step()
    state = scheduler.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state and state["_anneal_strategy"] == "linear"
    other = swa_utils.SWALR(optimizer, 0.1)
    other.load_state_dict(state)
    assert other.anneal_func(0.25) == 0.25 and other.anneal_epochs == 5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scheduler.get_lr()
    assert any("get_last_lr()" in str(w.message) for w in caught)


def _update_bn_run(lib, batches: list, train: bool, as_tuples: bool) -> tuple:
    model = _build(lib)
    with lib.no_grad():
        for p in model.parameters():
            p.fill_(0.3)
        model[1].running_mean.fill_(5.0)
    model.train(train)
    loader = [(lib.tensor(b), lib.zeros(len(b))) if as_tuples else lib.tensor(b) for b in batches]
    lib.optim.swa_utils.update_bn(loader, model)
    bn = model[1]
    return (bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(), int(bn.num_batches_tracked),
            bn.momentum, model.training)


@pytest.mark.parametrize("train, as_tuples", [(True, False), (False, True)])
def test_update_bn_matches_torch(train, as_tuples):
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((n, 3)).astype(np.float32) for n in (4, 2, 5)]
    got, expected = _update_bn_run(ember, batches, train, as_tuples), _update_bn_run(torch, batches, train,
                                                                                       as_tuples)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)
    assert got[2:] == expected[2:] == (3, 0.1, train)


def test_update_bn_without_batch_norm_leaves_the_model_alone():
    model = ember.nn.Linear(2, 2).eval()
    swa_utils.update_bn([ember.ones(1, 2)], model)
    assert not model.training
