"""GradScaler: the same scale trajectory, skipped steps and parameters as torch's over a run with injected infs
and NaNs, unscale_ (gradient clipping), the per-iteration state machine and its errors, enabled=False as a
pass-through, state_dict/load_state_dict and pickling, the deprecated aliases."""
from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _models():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    mine = ember.nn.Sequential(ember.nn.Linear(6, 8), ember.nn.Tanh(), ember.nn.Linear(8, 2))
    mine.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return mine, ref


def _step(lib, model, opt, scaler, x, y, poison):
    opt.zero_grad()
    loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
    scaler.scale(loss).backward()
    if poison is not None:
        first = next(iter(model.parameters()))
        with lib.no_grad():
            first.grad[0, 0] = poison
    result = scaler.step(opt)
    scaler.update()
    return result


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_the_scale_trajectory_is_torchs(optimizer):
    mine, ref = _models()
    opt = getattr(ember.optim, optimizer)(mine.parameters(), lr=0.05)
    opt_ref = getattr(torch.optim, optimizer)(ref.parameters(), lr=0.05)
    kwargs = dict(init_scale=2.0 ** 10, growth_factor=3.0, backoff_factor=0.25, growth_interval=3)
    scaler, scaler_ref = ember.amp.GradScaler("cpu", **kwargs), torch.amp.GradScaler("cpu", **kwargs)
    rng = np.random.default_rng(0)
    poisons = {2: math.inf, 3: -math.inf, 9: math.nan, 10: math.inf, 15: math.nan}
    skipped = 0
    for i in range(22):
        x, y = rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((5, 2)).astype(np.float32)
        _step(ember, mine, opt, scaler, x, y, poisons.get(i))
        _step(torch, ref, opt_ref, scaler_ref, x, y, poisons.get(i))
        assert scaler.get_scale() == scaler_ref.get_scale(), i
        assert scaler._get_growth_tracker() == scaler_ref._get_growth_tracker(), i
        assert scaler.state_dict() == scaler_ref.state_dict()
        skipped += i in poisons
        for p, p_ref in zip(mine.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), p_ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert skipped == 5 and scaler.get_scale() != kwargs["init_scale"]


def test_unscale_then_clip_as_torch():
    mine, ref = _models()
    opt, opt_ref = ember.optim.SGD(mine.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    scaler, scaler_ref = ember.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    for lib, model, o, s in ((ember, mine, opt, scaler), (torch, ref, opt_ref, scaler_ref)):
        s.scale(model(lib.tensor(x)).sum()).backward()
        s.unscale_(o)
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        s.step(o)
        s.update()
    for p, p_ref in zip(mine.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), p_ref.grad.numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(p.detach().numpy(), p_ref.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_scale_of_tensors_and_nested_iterables():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
    assert scaler.get_scale() == 4.0 and scaler._scale is None
    loss = ember.tensor(1.5)
    scaled = scaler.scale(loss)
    assert scaled.item() == 6.0 and scaler._scale.dtype is ember.float32 and scaler._scale.shape == ()
    a, (b, c) = scaler.scale([ember.ones(2), (ember.ones(1), ember.tensor(2.0).bfloat16())])
    assert a.tolist() == [4.0, 4.0] and b.tolist() == [4.0] and c.dtype is ember.float32
    assert list(scaler.scale(iter([ember.ones(1)])))[0].item() == 4.0
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([1.0])


def test_the_iteration_state_machine():
    model, _ = _models()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None"):
        scaler.unscale_(opt)
    scaler.scale(model(ember.ones(1, 6)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    assert scaler.step(opt) is None  # SGD.step returns None; the step was taken
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    with pytest.raises(AssertionError, match="may only be pickled at the beginning of an iteration"):
        pickle.dumps(scaler)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        scaler.update()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0.0)
    half = ember.nn.Parameter(ember.ones(2).half())
    half_opt, half_scaler = ember.optim.SGD([half], lr=0.1), ember.amp.GradScaler("cpu", init_scale=2.0)
    half_scaler.scale(half.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        half_scaler.unscale_(half_opt)


def test_update_with_a_new_scale():
    scaler = ember.amp.GradScaler("cpu")
    scaler.scale(ember.ones(1))
    scaler.update(8.0)
    assert scaler.get_scale() == 8.0
    scaler.update(ember.tensor(2.0))
    assert scaler.get_scale() == 2.0
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        scaler.update(ember.tensor([2.0, 3.0]))
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        scaler.update(ember.tensor(2.0, requires_grad=True))


def test_a_disabled_scaler_passes_everything_through():
    model, _ = _models()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    loss = model(ember.ones(1, 6)).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    before = [p.detach().clone() for p in model.parameters()]
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert all(not np.array_equal(b.numpy(), p.detach().numpy()) for b, p in zip(before, model.parameters()))
    scaler.load_state_dict({})  # ignored when disabled


def test_state_dict_and_pickling_round_trip():
    scaler = ember.amp.GradScaler("cpu", init_scale=16.0, growth_interval=5)
    scaler.scale(ember.ones(1))
    scaler._growth_tracker.fill_(3)
    state = scaler.state_dict()
    assert state == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                     "_growth_tracker": 3}
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        fresh.load_state_dict({})
    torch_scaler = torch.amp.GradScaler("cpu")
    torch_scaler.load_state_dict(state)
    assert torch_scaler.state_dict() == state
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy.state_dict() == state and copy._scale is None


def test_factor_checks_and_setters():
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        ember.amp.GradScaler("cpu", backoff_factor=1.0)
    scaler = ember.amp.GradScaler("cpu")
    scaler.set_growth_factor(4.0), scaler.set_backoff_factor(0.125), scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (4.0, 0.125, 7)


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.GradScaler\(args...\)` is deprecated"):
        scaler = ember.cpu.amp.GradScaler(init_scale=2.0)
    assert isinstance(scaler, ember.amp.GradScaler) and scaler.get_scale() == 2.0
    if not ember.cuda.is_available():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cuda_scaler = ember.cuda.amp.GradScaler()
        assert {w.category for w in caught} == {FutureWarning, UserWarning} and not cuda_scaler.is_enabled()


def test_bfloat16_gradients_unscale_in_float32():
    p = ember.nn.Parameter(ember.ones(3).bfloat16())
    opt = ember.optim.SGD([p], lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=3.0)
    scaler.scale((p.float() * ember.tensor([1.0, 2.0, 3.0])).sum()).backward()
    scaler.unscale_(opt)
    assert p.grad.dtype is ember.bfloat16 and p.grad.float().tolist() == [1.0, 2.0, 3.0]
