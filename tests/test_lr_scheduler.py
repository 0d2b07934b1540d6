"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the same lr (and momentum) sequences."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import ember
import ember.optim as optim
from ember.optim import lr_scheduler as sched

STEPS = 30


def _optimizer(lib_optim, lib, name="SGD"):
    """Two param groups with different lrs (momentum / betas present for the cycling schedulers)."""
    a, b = lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)
    if name == "SGD":
        return lib_optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, momentum=0.9)
    return lib_optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1)


def _torch_then_ember(torch, build, opt_name="SGD"):
    """Build the same scheduler on a torch and on an ember optimizer."""
    t_opt, e_opt = _optimizer(torch.optim, torch, opt_name), _optimizer(optim, ember, opt_name)
    return (t_opt, build(torch.optim.lr_scheduler, t_opt)), (e_opt, build(sched, e_opt))


def _trace(opt, scheduler, steps=STEPS, metrics=None):
    """lrs (and momentum / beta1) of every group after construction and after each step."""
    def snapshot():
        return [(g["lr"], g.get("momentum"), g.get("betas", (None,))[0]) for g in opt.param_groups]

    out = [snapshot()]
    for k in range(steps):
        opt.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[k])
        out.append(snapshot())
        assert scheduler.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return out


def _assert_traces(t_trace, e_trace):
    assert len(t_trace) == len(e_trace)
    for t_row, e_row in zip(t_trace, e_trace):
        for t_vals, e_vals in zip(t_row, e_row):
            for tv, ev in zip(t_vals, e_vals):
                if tv is None:
                    assert ev is None
                else:
                    assert ev == pytest.approx(tv, rel=1e-12, abs=1e-15)


SCHEDULERS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9 ** e]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9),
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=12),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=1e-3),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=1e-4),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=3,
                                                    step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range",
                                                  gamma=0.97, base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-custom": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 1 / (x + 1),
                                               scale_mode="iterations", cycle_momentum=False),
    "OneCycleLR-cos": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS),
    "OneCycleLR-linear-3phase": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], epochs=5, steps_per_epoch=6,
                                                          anneal_strategy="linear", three_phase=True,
                                                          pct_start=0.4),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.ExponentialLR(o, gamma=0.9),
            m.StepLR(o, step_size=3)], milestones=[5, 15]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4),
                                                         m.ExponentialLR(o, gamma=0.95)]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_lr_sequence_matches_torch(torch_ref, name):
    (t_opt, t_s), (e_opt, e_s) = _torch_then_ember(torch_ref, SCHEDULERS[name])
    _assert_traces(_trace(t_opt, t_s), _trace(e_opt, e_s))


@pytest.mark.parametrize("name", ["CyclicLR-triangular", "OneCycleLR-cos", "OneCycleLR-linear-3phase"])
def test_momentum_cycles_adam_beta1(torch_ref, name):
    (t_opt, t_s), (e_opt, e_s) = _torch_then_ember(torch_ref, SCHEDULERS[name], "Adam")
    e_trace = _trace(e_opt, e_s)
    _assert_traces(_trace(t_opt, t_s), e_trace)
    assert len({row[0][2] for row in e_trace}) > 3  # beta1 really moves
    assert e_opt.param_groups[0]["betas"][1] == 0.999


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(mode="max", factor=0.5, patience=2, threshold=0.1, threshold_mode="abs", cooldown=2, min_lr=0.02),
    dict(patience=1, min_lr=[0.03, 0.001], eps=1e-3),
])
def test_reduce_lr_on_plateau_matches_torch(torch_ref, kwargs):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.9, 0.9, 0.91, 0.92] * 3
    (t_opt, t_s), (e_opt, e_s) = _torch_then_ember(
        torch_ref, lambda m, o: m.ReduceLROnPlateau(o, **kwargs))
    e_trace = _trace(e_opt, e_s, metrics=metrics)
    _assert_traces(_trace(t_opt, t_s, metrics=metrics), e_trace)
    assert e_trace[-1][0][0] < 0.1  # it did reduce


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "PolynomialLR", "ConstantLR"])
def test_closed_form_epoch_argument_matches_torch(torch_ref, name):
    (t_opt, t_s), (e_opt, e_s) = _torch_then_ember(torch_ref, SCHEDULERS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 8, 2, 11]:
            t_opt.step()
            e_opt.step()
            t_s.step(epoch)
            e_s.step(epoch)
            assert e_s.get_last_lr() == pytest.approx(t_s.get_last_lr(), rel=1e-12)


def test_warm_restarts_fractional_epochs(torch_ref):
    (t_opt, t_s), (e_opt, e_s) = _torch_then_ember(torch_ref, SCHEDULERS["CosineAnnealingWarmRestarts"])
    for epoch in [0.5, 1.25, 3.9, 4.0, 9.5, 13.0, 30.2]:
        t_s.step(epoch)
        e_s.step(epoch)
        assert e_s.get_last_lr() == pytest.approx(t_s.get_last_lr(), rel=1e-12)
        assert e_s.T_i == t_s.T_i and e_s.last_epoch == t_s.last_epoch


@pytest.mark.parametrize("name", ["LambdaLR", "StepLR", "CosineAnnealingLR", "CyclicLR-exp_range", "OneCycleLR-cos",
                                  "SequentialLR", "ChainedScheduler", "CosineAnnealingWarmRestarts"])
def test_state_dict_round_trip(name):
    """Save after 10 steps; a fresh optimizer + scheduler that loads both continues the same sequence."""
    build = SCHEDULERS[name]
    opt = _optimizer(optim, ember)
    s = build(sched, opt)
    _trace(opt, s, steps=10)
    opt_state, s_state = copy.deepcopy(opt.state_dict()), copy.deepcopy(s.state_dict())
    assert "optimizer" not in s_state
    expected = _trace(opt, s, steps=15)

    opt2 = _optimizer(optim, ember)
    s2 = build(sched, opt2)
    s2.load_state_dict(s_state)
    opt2.load_state_dict(opt_state)
    assert s2.get_last_lr() == [lr for lr, _, _ in expected[0]]
    _assert_traces(expected, _trace(opt2, s2, steps=15))


def test_reduce_lr_on_plateau_state_dict_round_trip():
    opt = _optimizer(optim, ember)
    s = sched.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    for m in [1.0, 1.0, 1.0]:
        s.step(m)
    s2 = sched.ReduceLROnPlateau(_optimizer(optim, ember), mode="max")
    s2.load_state_dict(copy.deepcopy(s.state_dict()))
    assert (s2.mode, s2.best, s2.num_bad_epochs, s2.mode_worse) == (s.mode, s.best, s.num_bad_epochs, s.mode_worse)


def test_scheduler_step_before_optimizer_step_warns():
    opt = _optimizer(optim, ember)
    s = sched.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    opt2 = _optimizer(optim, ember)
    s2 = sched.StepLR(opt2, step_size=2)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2.step()


def test_get_lr_outside_step_warns_and_initial_lr_recorded():
    opt = _optimizer(optim, ember)
    s = sched.ExponentialLR(opt, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert s.base_lrs == [0.1, 0.05]
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()


def test_scheduler_drives_optimizer_updates():
    """The lr a scheduler writes is the lr the next optimizer step uses."""
    p = ember.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    s = sched.MultiStepLR(opt, milestones=[1], gamma=0.1)
    for _ in range(2):
        p.grad = ember.ones(1)
        opt.step()
        s.step()
    np.testing.assert_allclose(p.detach().numpy(), [-1.1])


@pytest.mark.parametrize("make,exc,message", [
    (lambda o: sched.StepLR(object(), 3), TypeError, "object is not an Optimizer"),
    (lambda o: sched.ConstantLR(o, factor=1.5), ValueError, "between 0 and 1"),
    (lambda o: sched.LinearLR(o, start_factor=0), ValueError, "greater than 0"),
    (lambda o: sched.LinearLR(o, end_factor=1.5), ValueError, "Ending multiplicative factor"),
    (lambda o: sched.LambdaLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: sched.MultiplicativeLR(o, 0.9), TypeError, "lr_lambda should be a function"),
    (lambda o: sched.StepLR(o, 3, last_epoch=4), KeyError, "initial_lr"),
    (lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0"),
    (lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "T_mult >= 1"),
    (lambda o: sched.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda o: sched.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode avg is unknown!"),
    (lambda o: sched.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda o: sched.CyclicLR(o, 0.01, 0.1, mode="zigzag"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: sched.CyclicLR(o, [0.01], 0.1), ValueError, "base_lr must have the same length"),
    (lambda o: sched.OneCycleLR(o, max_lr=0.1), ValueError, "You must define either total_steps OR"),
    (lambda o: sched.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of"),
    (lambda o: sched.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1), ValueError, "pct_start"),
    (lambda o: sched.SequentialLR(o, [sched.StepLR(o, 2)], milestones=[3]), ValueError,
     "one more than the number of milestone points"),
    (lambda o: sched.ChainedScheduler([]), ValueError, "at least one scheduler to be chained"),
    (lambda o: sched.ChainedScheduler([sched.ReduceLROnPlateau(o)]), ValueError,
     "does not support `ReduceLROnPlateau`"),
])
def test_invalid_arguments(make, exc, message):
    with pytest.raises(exc, match=message):
        make(_optimizer(optim, ember))


def test_cycle_momentum_needs_momentum_and_one_cycle_overrun():
    p = ember.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        sched.CyclicLR(optim.Adagrad([p]), 0.01, 0.1)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(2):
        opt.step()
        s.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        s.step()
        s.step()
