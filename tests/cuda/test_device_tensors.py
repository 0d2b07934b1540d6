"""CUDA tensors through the public API: moving, creating, modules and optimizers, and the errors torch gives."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn

CUDA0 = ember.device("cuda", 0)


def test_to_cuda_and_back_keeps_values_and_reports_the_device():
    host = ember.arange(12.0).reshape(3, 4)
    dev = host.to("cuda")
    assert dev.device == CUDA0 and dev.is_cuda and not dev.is_cpu and dev.get_device() == 0
    assert host.cuda().device == CUDA0 and dev.cuda() is dev and dev.to("cuda:0") is dev
    back = dev.cpu()
    assert back.device == ember.device("cpu") and back.get_device() == -1
    np.testing.assert_array_equal(back.numpy(), host.numpy())
    assert repr(dev).endswith("device='cuda:0')")


def test_views_share_the_device_buffer():
    x = ember.zeros(3, 4, device="cuda")
    x.t()[1, 2] = 5.0  # element (2, 1) of x, written through a transposed view
    x[:, 0] += 1
    expected = np.zeros((3, 4), np.float32)
    expected[2, 1] = 5.0
    expected[:, 0] += 1
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    assert x.t().stride() == (1, 4) and x[1:].storage_offset() == 4


@pytest.mark.parametrize("make", [
    lambda: ember.zeros(2, 3, device="cuda"), lambda: ember.ones(2, 3, device="cuda"),
    lambda: ember.full((2, 3), 7.0, device="cuda"), lambda: ember.arange(6, device="cuda"),
    lambda: ember.linspace(0, 1, 5, device="cuda"), lambda: ember.eye(3, device="cuda"),
    lambda: ember.randn(2, 3, device="cuda"), lambda: ember.randint(0, 5, (4,), device="cuda"),
    lambda: ember.tensor([1.0, 2.0], device="cuda"), lambda: ember.zeros_like(ember.ones(2, device="cuda")),
    lambda: ember.ones(2, device="cuda").new_zeros(3), lambda: ember.rand_like(ember.ones(2, device="cuda")),
])
def test_creation_functions_place_on_the_device(make):
    assert make().device == CUDA0


def test_seeded_sampling_gives_the_same_values_on_both_devices():
    ember.manual_seed(3)
    a = ember.randn(5)
    ember.manual_seed(3)
    b = ember.randn(5, device="cuda")
    np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())


def test_gradients_flow_back_across_devices():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x.cuda() * x.cuda()).sum().backward()
    assert x.grad.device == ember.device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_module_to_cuda_keeps_parameters_and_the_optimizer_state_follows():
    ember.manual_seed(0)
    model = nn.Linear(4, 2)
    weight = model.weight
    optimizer = ember.optim.Adam(model.parameters(), lr=0.1)
    assert model.to("cuda") is model and model.weight is weight and weight.device == CUDA0
    loss = model(ember.randn(3, 4, device="cuda")).square().mean()
    loss.backward()
    assert weight.grad.device == CUDA0
    before = weight.detach().cpu().numpy().copy()
    optimizer.step()
    assert optimizer.state[weight]["exp_avg"].device == CUDA0
    assert not np.array_equal(weight.detach().cpu().numpy(), before)


def test_mixing_devices_is_torchs_runtime_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cuda:0 and cpu!"):
        ember.ones(3, device="cuda") + ember.ones(3)
    # a 0-d CPU tensor and a Python number may meet a CUDA tensor, as in torch
    out = ember.ones(3, device="cuda") * ember.tensor(2.0) + 1
    np.testing.assert_array_equal(out.cpu().numpy(), [3.0, 3.0, 3.0])


def test_host_conversion_and_missing_kernels_are_clear_errors():
    x = ember.randn(3, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(x)
    with pytest.raises(NotImplementedError, match="Could not run 'sort' on the CUDA backend"):
        x.sort()
    with pytest.raises(TypeError, match="does not support dtype float16"):
        x.half()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.zeros(2, device="cuda:7")
