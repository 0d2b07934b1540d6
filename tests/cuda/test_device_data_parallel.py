"""nn.DataParallel over two simulated GPUs: the batch is split, each half runs on its device, outputs and
gradients equal the single-device run's.

Run in its own process: ``NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_data_parallel.py``.
The ``two_gpus`` fixture (two fake devices, every launch checked to touch only the current device's buffers) is
the one of ``test_device_multi_gpu.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from test_device_multi_gpu import two_gpus  # noqa: E402,F401  (the fixture)


def _host(x: ember.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def _model() -> nn.Module:
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


class _Pair(nn.Module):
    """Takes a tuple, a dict and a keyword tensor; returns a dict and a tuple (containers both ways)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(ember.tensor([[2.0], [-1.0]]))

    def forward(self, pair, named, scale=None):
        out = pair[0] * self.weight + pair[1] * named["w"] * scale
        return {"out": out, "parts": (out.sum(0, keepdim=True), None)}


def test_outputs_and_gradients_match_the_single_device_run(two_gpus):
    reference = _model().to("cuda:0")
    model = _model().to("cuda:0")
    x = ember.randn(4, 3).to("cuda:0")
    dp = nn.DataParallel(model, device_ids=[0, 1])
    assert dp.module is model and dp.device_ids == [0, 1] and dp.output_device == 0 and dp.dim == 0
    assert list(dp.state_dict()) == ["module." + key for key in model.state_dict()]
    before = two_gpus.launches_on(1)
    out = dp(x)
    assert two_gpus.launches_on(1) > before  # the second half ran on the second device
    assert out.device == ember.device("cuda", 0) and out.shape == (4, 2)
    expected = reference(x)
    np.testing.assert_allclose(_host(out), _host(expected), rtol=1e-5, atol=1e-6)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.grad is not None and p.grad.device == ember.device("cuda", 0)
        np.testing.assert_allclose(_host(p.grad), _host(q.grad), rtol=1e-5, atol=1e-6)


def test_containers_kwargs_dim_and_output_device(two_gpus):
    model = _Pair().to("cuda:0")
    a, b, w = (ember.randn(2, 4).to("cuda:0") for _ in range(3))
    scale = ember.full((2, 4), 2.0).to("cuda:0")
    dp = nn.DataParallel(model, device_ids=["cuda:0", ember.device("cuda", 1)], output_device=1, dim=1)
    out = dp((a.t().contiguous().t(), b), {"w": w}, scale=scale)  # the batch is dim 1: 4 -> 2 + 2
    assert set(out) == {"out", "parts"} and out["parts"][1] is None
    assert out["out"].device == ember.device("cuda", 1) and out["out"].shape == (2, 4)
    expected = model((a, b), {"w": w}, scale=scale)
    np.testing.assert_allclose(_host(out["out"]), _host(expected["out"]), rtol=1e-6)
    np.testing.assert_allclose(_host(out["parts"][0]), _host(expected["parts"][0]), rtol=1e-6)
    out["parts"][0].sum().backward()
    np.testing.assert_allclose(_host(model.weight.grad), _host(a).sum(1, keepdims=True), rtol=1e-5)


def test_functional_form_and_a_batch_smaller_than_the_devices(two_gpus):
    model = _model().to("cuda:0")
    x = ember.randn(1, 3).to("cuda:0")
    out = nn.parallel.data_parallel(model, x, device_ids=[0, 1])  # one chunk: only device 0 is used
    np.testing.assert_allclose(_host(out), _host(model(x)), rtol=1e-6)
    out2 = nn.parallel.data_parallel(model, (ember.randn(2, 3).to("cuda:0"),), output_device=1)
    assert out2.device == ember.device("cuda", 1) and out2.shape == (2, 2)


def test_module_off_device_ids_0_is_torchs_error(two_gpus):
    model = _model().to("cuda:1")
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cuda:0 "
                                           r"\(device_ids\[0\]\) but found one of them on device: cuda:1"):
        nn.DataParallel(model, device_ids=[0, 1])(ember.zeros(2, 3).to("cuda:0"))


def test_batch_norm_statistics_of_the_first_replica_reach_the_module(two_gpus):
    model = nn.BatchNorm1d(2).to("cuda:0")
    x = ember.tensor([[1.0, 2.0], [3.0, 6.0], [10.0, 0.0], [30.0, 0.0]]).to("cuda:0")
    nn.DataParallel(model, device_ids=[0, 1])(x)
    # as torch: only the first half's statistics (device 0's replica shares the module's buffers) are kept
    np.testing.assert_allclose(_host(model.running_mean), [0.2, 0.4], rtol=1e-6)
    assert int(model.num_batches_tracked.item()) == 1


def test_one_device_moves_the_module_there_and_runs_it(two_gpus):
    model = _model()
    x = ember.randn(3, 3)
    expected = _host(model(x))
    dp = nn.DataParallel(model, device_ids=[1])
    assert model[0].weight.device == ember.device("cuda", 1) and dp.output_device == 1
    out = dp(x)  # the CPU batch is copied to the device
    assert out.device == ember.device("cuda", 1)
    np.testing.assert_allclose(_host(out), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError, match="device_ids is empty"):
        nn.DataParallel(model, device_ids=[])
