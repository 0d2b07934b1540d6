"""The optimizers' multi-tensor CUDA path: one launch per group and dtype, equal to the per-parameter path.

Each case steps the same parameters three ways: on the GPU with ``foreach`` left at its default (the
multi-tensor path), on the GPU with ``foreach=False`` (one launch per parameter) and on the CPU. The
first two run the same element functions and must agree bit for bit; the CPU within rounding.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="needs a GPU or NUMBA_ENABLE_CUDASIM=1")

import ember  # noqa: E402
from ember import optim  # noqa: E402
from ember.kernels.cuda import multi_tensor  # noqa: E402

STEPS = 3
# (shape, dtype, layout) of a group's parameters: an empty one, a transposed (non-contiguous) one that takes the
# slow path, one that never gets a gradient, and a float64 and a float16 one mixed into the float32 group.
PARAMS = [((5, 7), np.float32, "plain"), ((45,), np.float32, "plain"), ((0,), np.float32, "plain"),
          ((4, 3), np.float32, "transposed"), ((3,), np.float32, "no grad"), ((2, 3, 4), np.float32, "plain"),
          ((6,), np.float64, "plain"), ((2, 5), np.float64, "plain"), ((7,), np.float16, "plain")]

CASES = [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (optim.Adam, dict(lr=0.01)),
    (optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    (optim.AdamW, dict(lr=0.01, amsgrad=True, betas=(0.3, 0.9))),
    (optim.Adamax, dict(lr=0.01, weight_decay=0.1)),
    (optim.NAdam, dict(lr=0.01)),
    (optim.NAdam, dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True, maximize=True)),
    (optim.RAdam, dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1)),  # a small beta2: rectified by step 3
    (optim.RMSprop, dict(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    (optim.Adadelta, dict(lr=1.0, weight_decay=0.1, maximize=True)),
]
IDS = [f"{cls.__name__}-{i}" for i, (cls, _) in enumerate(CASES)]


def _params(device: str, seed: int = 0) -> list[ember.Tensor]:
    rng = np.random.default_rng(seed)
    params = []
    for shape, dtype, layout in PARAMS:
        a = rng.standard_normal(shape).astype(dtype)
        if layout == "transposed":
            t = ember.tensor(np.ascontiguousarray(a.T), device=device).t().requires_grad_()
            assert not t.is_contiguous()
        else:
            t = ember.tensor(a, device=device, requires_grad=True)
        params.append(t)
    return params


def _set_grads(params: list[ember.Tensor], rng: np.random.Generator) -> None:
    for p, (shape, dtype, layout) in zip(params, PARAMS):
        g = rng.standard_normal(shape).astype(dtype)
        p.grad = None if layout == "no grad" else ember.tensor(g, device=p.device)


def _host(tensors: list[ember.Tensor]) -> list[np.ndarray]:
    return [t.detach().cpu().numpy() for t in tensors]


def _train(cls, options: dict, device: str, foreach: bool | None, steps: int = STEPS):
    params = _params(device)
    opt = cls(params, foreach=foreach, **options)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        _set_grads(params, rng)
        opt.step()
    return params, opt


def _states(opt, params) -> list[dict[str, np.ndarray]]:
    return [{k: v.detach().cpu().numpy() for k, v in opt.state[p].items()} for p in params]


@contextmanager
def _launches() -> Iterator[dict[str, int]]:
    """Count the launches of the update kernels (``one`` per parameter, ``many`` per bucket) under the simulator."""
    from numba.cuda.simulator import kernel as sim

    counts = {"one": 0, "many": 0}
    launch = sim.FakeCUDAKernel.__call__

    def counting(self, *args):
        if not self._device and self.fn.__module__ == multi_tensor.__name__:
            counts[self.fn.__name__] += 1
        return launch(self, *args)

    sim.FakeCUDAKernel.__call__ = counting
    try:
        yield counts
    finally:
        sim.FakeCUDAKernel.__call__ = launch


@pytest.mark.parametrize("cls,options", CASES, ids=IDS)
def test_multi_tensor_step_matches_the_per_parameter_and_cpu_steps(cls, options):
    with _launches() as counts:
        fused, fused_opt = _train(cls, options, "cuda", None)
    assert counts["many"] == 2 * STEPS  # the float32 and the float64 parameters, each step
    single, single_opt = _train(cls, options, "cuda", False)
    host, host_opt = _train(cls, options, "cpu", None)
    for (shape, dtype, layout), a, b, c in zip(PARAMS, _host(fused), _host(single), _host(host)):
        np.testing.assert_array_equal(a, b, err_msg=f"{shape} {layout}")
        tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, c, **tol, err_msg=f"{shape} {layout}")
    for a, b in zip(_states(fused_opt, fused), _states(single_opt, single)):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    untouched = PARAMS.index(((3,), np.float32, "no grad"))
    np.testing.assert_array_equal(_host(fused)[untouched], _host(_params("cpu"))[untouched])
    assert not fused_opt.state[fused[untouched]] or cls is optim.Adagrad  # Adagrad makes state up front


@pytest.mark.parametrize("foreach,expected", [(None, {"many": 2, "one": 2}), (True, {"many": 2, "one": 2}),
                                              (False, {"many": 0, "one": 7})])
def test_one_launch_per_group_and_dtype(foreach, expected):
    """Group 1 holds the plain float32 parameters: one launch (the empty one adds no work). Group 2 holds the
    rest: one launch for the float64 pair, and the transposed and the float16 parameter one launch each (through
    contiguous float32 work copies). Without ``foreach`` every parameter with elements and a gradient launches."""
    params = _params("cuda")
    plain = [p for p, (_, dtype, layout) in zip(params, PARAMS) if dtype == np.float32 and layout == "plain"]
    rest = [p for p in params if all(p is not q for q in plain)]
    opt = optim.Adam([{"params": plain}, {"params": rest, "lr": 0.5}], foreach=foreach)
    _set_grads(params, np.random.default_rng(1))
    with _launches() as counts:
        opt.step()
    assert counts == expected


def test_parameters_at_different_steps_are_bucketed_by_step():
    """A parameter that first gets a gradient a step late has other bias corrections: its own launch."""
    results = []
    for foreach in (None, False):
        params = _params("cuda")[:2] + _params("cuda", seed=3)[:2]
        opt = optim.Adam(params, lr=0.1, foreach=foreach)
        rng = np.random.default_rng(2)
        for step in range(3):
            for i, p in enumerate(params):
                grad = rng.standard_normal(p.shape).astype(np.float32)
                p.grad = None if (step == 0 and i == 3) else ember.tensor(grad, device="cuda")
            with _launches() as counts:
                opt.step()
        assert counts == ({"many": 1, "one": 1} if foreach is None else {"many": 0, "one": 4})
        results.append(_host(params))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls,options", [CASES[2], CASES[4], CASES[11], CASES[13]], ids=["SGD", "Adam", "RMSprop",
                                                                                           "Adadelta"])
def test_state_dict_round_trip(cls, options, tmp_path):
    """A state saved after multi-tensor steps and loaded into a new optimizer continues the same trajectory."""
    params, opt = _train(cls, options, "cuda", None, steps=2)
    ember.save(opt.state_dict(), tmp_path / "optimizer.pt")
    twins = [p.detach().clone().requires_grad_() for p in params]
    twin_opt = cls(twins, **options)
    twin_opt.load_state_dict(ember.load(tmp_path / "optimizer.pt"))
    rng = np.random.default_rng(5)
    for _ in range(2):
        _set_grads(params, rng)
        for p, t in zip(params, twins):
            t.grad = None if p.grad is None else p.grad.clone()
        opt.step()
        twin_opt.step()
    for a, b in zip(_host(params), _host(twins)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_states(opt, params), _states(twin_opt, twins)):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
